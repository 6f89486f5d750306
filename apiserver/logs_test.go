package apiserver

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// A log asked for over a WebSocket comes as messages in the protocol the
// client offered first (binary.k8s.io: the bytes; base64.binary.k8s.io:
// base64 text), then a normal close, as kube-apiserver's wsstream reader.
func TestLogOverWebSocket(t *testing.T) {
	const log = "container is alive\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamLogWebSocket(w, r, strings.NewReader(log))
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name      string
		protocols []string
		wantProto string
		wantType  int
		decode    func([]byte) string
	}{
		{"binary.k8s.io sends the bytes in binary messages", []string{binaryLogProtocol}, binaryLogProtocol, websocket.BinaryMessage,
			func(b []byte) string { return string(b) }},
		{"base64.binary.k8s.io sends them base64 in text messages", []string{base64LogProtocol, binaryLogProtocol}, base64LogProtocol, websocket.TextMessage,
			func(b []byte) string { d, _ := base64.StdEncoding.DecodeString(string(b)); return string(d) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dialer := websocket.Dialer{Subprotocols: tt.protocols}
			ws, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if ws.Subprotocol() != tt.wantProto {
				t.Errorf("subprotocol %q, want %q", ws.Subprotocol(), tt.wantProto)
			}
			var got strings.Builder
			for {
				kind, msg, err := ws.ReadMessage()
				if err != nil {
					if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
						t.Errorf("ended with %v, want a normal close", err)
					}
					break
				}
				if kind != tt.wantType {
					t.Errorf("message type %d, want %d", kind, tt.wantType)
				}
				got.WriteString(tt.decode(msg))
			}
			if got.String() != log {
				t.Errorf("log %q, want %q", got.String(), log)
			}
		})
	}
}
