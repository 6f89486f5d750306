package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"

	"minik/kubelet/runtime"
)

// An exec over WebSocket speaks the first channel protocol the client
// offers that is served, as kube-apiserver's: v4 and v5 end with the Status as
// JSON on channel 3; the older ones send only a failure's message there.
func TestExecOverWebSocketProtocols(t *testing.T) {
	runWith := func(status metav1.Status) runFunc {
		return func(_ context.Context, opts runtime.ExecOptions) metav1.Status {
			_, _ = opts.Stdout.Write([]byte("remote execution test\n"))
			return status
		}
	}
	failure := metav1.Status{Status: metav1.StatusFailure, Message: "command terminated with non-zero exit code: 3", Reason: "NonZeroExitCode"}
	tests := []struct {
		name       string
		offered    []string
		status     metav1.Status
		wantProto  string
		wantStatus string // on channel 3: JSON status' "status", or the text; "" for nothing
	}{
		{"the client's first choice is used, v5 ending with the JSON status", []string{"v9.channel.k8s.io", remotecommand.StreamProtocolV5Name, remotecommand.StreamProtocolV4Name},
			metav1.Status{Status: metav1.StatusSuccess}, remotecommand.StreamProtocolV5Name, "json:Success"},
		{"v4 ends with the JSON status", []string{remotecommand.StreamProtocolV4Name}, failure, remotecommand.StreamProtocolV4Name, "json:Failure"},
		{"channel.k8s.io sends nothing on channel 3 after a success", []string{remotecommand.StreamProtocolV1Name},
			metav1.Status{Status: metav1.StatusSuccess}, remotecommand.StreamProtocolV1Name, ""},
		{"channel.k8s.io sends a failure's message as text", []string{remotecommand.StreamProtocolV1Name}, failure, remotecommand.StreamProtocolV1Name,
			"text:command terminated with non-zero exit code: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				serveWebSocket(w, r, streamOptions{stdout: true}, runWith(tt.status))
			}))
			defer srv.Close()
			dialer := websocket.Dialer{Subprotocols: tt.offered}
			ws, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if ws.Subprotocol() != tt.wantProto {
				t.Errorf("protocol %q, want %q", ws.Subprotocol(), tt.wantProto)
			}
			var stdout strings.Builder
			gotStatus := ""
			for {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					break
				}
				switch msg[0] {
				case remotecommand.StreamStdOut:
					stdout.Write(msg[1:])
				case remotecommand.StreamErr:
					var st metav1.Status
					if json.Unmarshal(msg[1:], &st) == nil && st.Status != "" {
						gotStatus = "json:" + st.Status
					} else {
						gotStatus = "text:" + string(msg[1:])
					}
				}
			}
			if stdout.String() != "remote execution test\n" {
				t.Errorf("stdout %q", stdout.String())
			}
			if gotStatus != tt.wantStatus {
				t.Errorf("channel 3: %q, want %q", gotStatus, tt.wantStatus)
			}
		})
	}
}
