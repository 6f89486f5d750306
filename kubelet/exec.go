package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// The exec endpoint, /exec/NS/POD/CONTAINER?command=…&input=1&output=1
// &error=1&tty=1 (the kubelet's parameters), which the apiserver's
// pods/exec proxies to. It speaks the WebSocket remote command protocol
// v5.channel.k8s.io, as kubectl 1.30 and later do: every binary message
// starts with its channel, 0 stdin, 1 stdout, 2 stderr, 3 the final
// metav1.Status, 4 terminal sizes (JSON); the client sends [255, 0] when
// its input ends.

var execUpgrader = websocket.Upgrader{
	Subprotocols: []string{remotecommand.StreamProtocolV5Name},
	// Only the apiserver reaches this endpoint, with a client certificate.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (k *Kubelet) exec(w http.ResponseWriter, r *http.Request) {
	pw, container, ok := k.pathPod(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		http.Error(w, "you must specify at least 1 command", http.StatusBadRequest)
		return
	}
	obs, err := k.observe(r.Context(), pw.uid)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cur, _ := obs.latest(container)
	if cur == nil || cur.State != cri.ContainerState_CONTAINER_RUNNING {
		http.Error(w, fmt.Sprintf("container not found (%q)", container), http.StatusBadRequest)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "exec is served over WebSocket ("+remotecommand.StreamProtocolV5Name+")", http.StatusBadRequest)
		return
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the client
	}
	defer conn.Close()
	if conn.Subprotocol() != remotecommand.StreamProtocolV5Name {
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseProtocolError, "only "+remotecommand.StreamProtocolV5Name+" is supported"), time.Now().Add(time.Second))
		return
	}
	flag := func(key string) bool { return q.Get(key) == "1" || q.Get(key) == "true" }
	s := &execSession{conn: conn}
	opts := runtime.ExecOptions{Cmd: cmd, TTY: flag("tty")}
	if flag("output") {
		opts.Stdout = s.channel(remotecommand.StreamStdOut)
	}
	if flag("error") && !opts.TTY {
		opts.Stderr = s.channel(remotecommand.StreamStdErr)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var stdin *io.PipeWriter
	if flag("input") {
		var in *io.PipeReader
		in, stdin = io.Pipe()
		defer in.Close()
		opts.Stdin = in
	}
	resize := make(chan runtime.TerminalSize, 4)
	opts.Resize = resize
	go s.readInput(stdin, resize, cancel)
	code, err := k.rt.Exec(ctx, cur.Id, opts)
	s.finish(execStatus(cmd, code, err))
}

// execSession is one exec's WebSocket connection.
type execSession struct {
	conn *websocket.Conn
	mu   sync.Mutex // one writer at a time
}

func (s *execSession) send(channel byte, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.WriteMessage(websocket.BinaryMessage, append([]byte{channel}, p...))
}

// channel is a writer into one output channel.
func (s *execSession) channel(id byte) io.Writer {
	return channelWriter(func(p []byte) error { return s.send(id, p) })
}

type channelWriter func(p []byte) error

func (f channelWriter) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readInput demultiplexes the client's messages: input, its end, and
// terminal sizes. A closed connection cancels the exec.
func (s *execSession) readInput(stdin *io.PipeWriter, resize chan<- runtime.TerminalSize, cancel func()) {
	defer cancel()
	closeStdin := func() {
		if stdin != nil {
			stdin.Close()
			stdin = nil
		}
	}
	defer closeStdin()
	for {
		typ, msg, err := s.conn.ReadMessage()
		if err != nil {
			return
		}
		if typ != websocket.BinaryMessage || len(msg) == 0 {
			continue
		}
		switch msg[0] {
		case remotecommand.StreamStdIn:
			if stdin != nil && len(msg) > 1 {
				if _, err := stdin.Write(msg[1:]); err != nil {
					stdin = nil // the command stopped reading
				}
			}
		case remotecommand.StreamResize:
			var size struct{ Width, Height uint16 }
			if json.Unmarshal(msg[1:], &size) == nil {
				select {
				case resize <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
				default: // a newer size follows
				}
			}
		case remotecommand.StreamClose:
			if len(msg) > 1 && msg[1] == remotecommand.StreamStdIn {
				closeStdin()
			}
		}
	}
}

// finish sends the exec's status on the error channel and closes the
// connection normally, which ends the client's streams.
func (s *execSession) finish(status metav1.Status) {
	data, _ := json.Marshal(status)
	_ = s.send(remotecommand.StreamErr, data)
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

// execStatus is the status the kubelet reports for an exec: Success, a
// NonZeroExitCode failure carrying the code, or the error.
func execStatus(cmd []string, code int32, err error) metav1.Status {
	switch {
	case err != nil:
		return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Message: err.Error()}
	case code != 0:
		return metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(code)}}}}
	}
	return metav1.Status{Status: metav1.StatusSuccess}
}
