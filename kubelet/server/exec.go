package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// The exec and attach endpoints, /exec/NS/POD/CONTAINER?command=…&input=1
// &output=1&error=1&tty=1 and /attach/NS/POD/CONTAINER?input=1&… (the
// kubelet's parameters), which the apiserver's pods/exec and pods/attach
// proxy to. Two carriers, as Kubernetes' kubelet serves:
//
//	WebSocket, v5.channel.k8s.io (kubectl 1.30+): every binary message
//	  starts with its channel, 0 stdin, 1 stdout, 2 stderr, 3 the final
//	  metav1.Status, 4 terminal sizes (JSON); the client sends [255, 0]
//	  when its input ends.
//	SPDY/3.1, v4.channel.k8s.io (kubectl's fallback): one SPDY stream per
//	  channel, named by its streamType header (error, stdin, stdout,
//	  stderr, resize); the status is written on the error stream.
//
// Both end in one session: exec runs Runtime.Exec, attach Runtime.Attach.

var execUpgrader = websocket.Upgrader{
	Subprotocols: []string{remotecommand.StreamProtocolV5Name},
	// Only the apiserver reaches this endpoint, with a client certificate.
	CheckOrigin: func(*http.Request) bool { return true },
}

// streamOptions are the kubelet's exec and attach parameters.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// run is what a session does with its streams: Exec or Attach; it returns
// the final status.
type runFunc func(ctx context.Context, opts runtime.ExecOptions) metav1.Status

func (srv *Server) exec(w http.ResponseWriter, r *http.Request) {
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		http.Error(w, "you must specify at least 1 command", http.StatusBadRequest)
		return
	}
	srv.serveStreams(w, r, func(id string) runFunc {
		return func(ctx context.Context, opts runtime.ExecOptions) metav1.Status {
			opts.Cmd = cmd
			code, err := srv.cfg.Runtime.Exec(ctx, id, opts)
			return execStatus(cmd, code, err)
		}
	})
}

func (srv *Server) attach(w http.ResponseWriter, r *http.Request) {
	srv.serveStreams(w, r, func(id string) runFunc {
		return func(ctx context.Context, opts runtime.ExecOptions) metav1.Status {
			return execStatus(nil, 0, srv.cfg.Runtime.Attach(ctx, id, opts))
		}
	})
}

// serveStreams finds the running container of the request, then upgrades
// the connection and runs the session on it.
func (srv *Server) serveStreams(w http.ResponseWriter, r *http.Request, session func(containerID string) runFunc) {
	pod, container, obs, ok := srv.pathPod(w, r)
	if !ok {
		return
	}
	cur, _ := obs.Latest(container)
	switch {
	case cur == nil: // the apiserver checked the name
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, r.PathValue("pod"), srv.cfg.Pods.WaitingReason(pod.UID, container)), http.StatusBadRequest)
		return
	case cur.State != cri.ContainerState_CONTAINER_RUNNING:
		// Kubernetes' words for a container that is not running.
		http.Error(w, fmt.Sprintf("container not found (%q)", container), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	flag := func(key string) bool { return q.Get(key) == "1" || q.Get(key) == "true" }
	so := streamOptions{stdin: flag("input"), stdout: flag("output"), stderr: flag("error"), tty: flag("tty")}
	run := session(cur.Id)
	switch {
	case websocket.IsWebSocketUpgrade(r):
		serveWebSocket(w, r, so, run)
	case strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1"):
		serveSPDY(w, r, so, run)
	default:
		http.Error(w, "exec and attach need an upgrade to WebSocket ("+remotecommand.StreamProtocolV5Name+") or SPDY/3.1", http.StatusBadRequest)
	}
}

func serveWebSocket(w http.ResponseWriter, r *http.Request, so streamOptions, run runFunc) {
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
	s := &execSession{conn: conn}
	opts := runtime.ExecOptions{TTY: so.tty}
	if so.stdout {
		opts.Stdout = s.channel(remotecommand.StreamStdOut)
	}
	if so.stderr && !so.tty {
		opts.Stderr = s.channel(remotecommand.StreamStdErr)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var stdin *io.PipeWriter
	if so.stdin {
		var in *io.PipeReader
		in, stdin = io.Pipe()
		defer in.Close()
		opts.Stdin = in
	}
	resize := make(chan runtime.TerminalSize, 4)
	opts.Resize = resize
	go s.readInput(stdin, resize, cancel)
	s.finish(run(ctx, opts))
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
			sendSize(resize, msg[1:])
		case remotecommand.StreamClose:
			if len(msg) > 1 && msg[1] == remotecommand.StreamStdIn {
				closeStdin()
			}
		}
	}
}

// sendSize passes on a terminal size sent as JSON, dropping it if the
// previous one was not taken yet (a newer one follows).
func sendSize(resize chan<- runtime.TerminalSize, data []byte) {
	var size struct{ Width, Height uint16 }
	if json.Unmarshal(data, &size) == nil {
		select {
		case resize <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
		default:
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

// spdyStreamWait is how long the client has to open its streams after
// the upgrade (the kubelet's default stream creation timeout).
const spdyStreamWait = 30 * time.Second

// serveSPDY runs a session over SPDY with protocol v4.channel.k8s.io:
// the client opens one stream per channel, then the session runs; the
// status is written as JSON on the error stream.
func serveSPDY(w http.ResponseWriter, r *http.Request, so streamOptions, run runFunc) {
	if _, err := httpstream.Handshake(r, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		return // Handshake answered 403 with the protocols it supports
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return // the upgrade failed and was answered
	}
	defer conn.Close()
	byType := map[string]httpstream.Stream{}
	want := map[string]bool{corev1.StreamTypeError: true, corev1.StreamTypeStdin: so.stdin,
		corev1.StreamTypeStdout: so.stdout, corev1.StreamTypeStderr: so.stderr && !so.tty, corev1.StreamTypeResize: so.tty}
	missing := func() bool {
		for t, w := range want {
			if w && byType[t] == nil {
				return true
			}
		}
		return false
	}
	timeout := time.NewTimer(spdyStreamWait)
	defer timeout.Stop()
	for missing() {
		select {
		case s := <-streams:
			byType[s.Headers().Get(corev1.StreamType)] = s
		case <-timeout.C:
			return // the client never opened its streams
		case <-conn.CloseChan():
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-conn.CloseChan(): // the client went away
			cancel()
		case <-ctx.Done():
		}
	}()
	opts := runtime.ExecOptions{TTY: so.tty}
	if s := byType[corev1.StreamTypeStdin]; s != nil {
		opts.Stdin = s
	}
	if s := byType[corev1.StreamTypeStdout]; s != nil {
		opts.Stdout = s
	}
	if s := byType[corev1.StreamTypeStderr]; s != nil {
		opts.Stderr = s
	}
	if s := byType[corev1.StreamTypeResize]; s != nil {
		resize := make(chan runtime.TerminalSize, 4)
		opts.Resize = resize
		go func() {
			dec := json.NewDecoder(s)
			for {
				var raw json.RawMessage
				if dec.Decode(&raw) != nil {
					return
				}
				sendSize(resize, raw)
			}
		}()
	}
	status := run(ctx, opts)
	data, _ := json.Marshal(status)
	errStream := byType[corev1.StreamTypeError]
	_, _ = errStream.Write(data)
	for _, s := range byType {
		_ = s.Close()
	}
}

// execStatus is the status the kubelet reports for an exec or attach:
// Success, a NonZeroExitCode failure carrying the code, or the error.
func execStatus(cmd []string, code int32, err error) metav1.Status {
	switch {
	case errors.Is(err, context.Canceled):
		return metav1.Status{Status: metav1.StatusSuccess} // the client went away
	case err != nil:
		return metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Message: err.Error()}
	case code != 0:
		return metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(code)}}}}
	}
	return metav1.Status{Status: metav1.StatusSuccess}
}
