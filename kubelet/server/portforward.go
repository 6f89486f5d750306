package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// /portForward/NS/POD speaks Kubernetes' port-forward protocol
// (portforward.k8s.io) over SPDY, which the apiserver's pods/portforward
// relays from kubectl (as SPDY, or tunneled in a WebSocket):
//
//	kubectl                                 kubelet
//	stream {streamType: error, port, requestID} ──▶ (pairs them by requestID)
//	stream {streamType: data,  port, requestID} ──▶ Runtime.PortForward(sandbox, port)
//	        ◀── bytes both ways; an error message on the error stream
//
// One request is one local connection; many share the SPDY connection.

const portForwardProtocol = "portforward.k8s.io"

// portForwardIdle closes a port-forward connection without streams, as
// the kubelet's --streaming-connection-idle-timeout (4h) does.
const portForwardIdle = 4 * time.Hour

func (srv *Server) portForward(w http.ResponseWriter, r *http.Request) {
	_, _, obs, ok := srv.pathPod(w, r)
	if !ok {
		return
	}
	sb := obs.ReadySandbox()
	if sb == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s has no running sandbox", r.PathValue("namespace"), r.PathValue("pod")), http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		return // Handshake answered 403 with the protocols it supports
	}
	streams := make(chan httpstream.Stream, 4)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		if err := checkPortForwardStream(s.Headers()); err != nil {
			return err // the stream is refused
		}
		streams <- s
		return nil
	})
	if conn == nil {
		return // the upgrade failed and was answered
	}
	defer conn.Close()
	conn.SetIdleTimeout(portForwardIdle)
	pending := map[string]*portForwardPair{}
	var wg sync.WaitGroup
	defer wg.Wait()
	// Ending the connection ends its forwards, idle ports included.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			h := s.Headers()
			id := h.Get(corev1.PortForwardRequestIDHeader)
			p := pending[id]
			if p == nil {
				p = &portForwardPair{}
				pending[id] = p
			}
			if h.Get(corev1.StreamType) == corev1.StreamTypeError {
				p.errorStream = s
			} else {
				p.dataStream = s
			}
			if p.errorStream == nil || p.dataStream == nil {
				continue
			}
			delete(pending, id)
			port, _ := strconv.ParseInt(h.Get(corev1.PortHeader), 10, 32)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.RemoveStreams(p.dataStream, p.errorStream)
				if err := srv.cfg.Runtime.PortForward(ctx, sb.Id, int32(port), p.dataStream); err != nil && ctx.Err() == nil {
					fmt.Fprintf(p.errorStream, "error forwarding port %d to pod %s/%s: %v", port, ns, name, err)
				}
				p.dataStream.Close()
				p.errorStream.Close()
			}()
		}
	}
}

// portForwardPair is the error and the data stream of one request.
type portForwardPair struct {
	errorStream, dataStream httpstream.Stream
}

// checkPortForwardStream checks a new stream's headers, as the kubelet
// does: a port in 1-65535, a stream type of error or data, a request ID.
func checkPortForwardStream(h http.Header) error {
	port, err := strconv.ParseUint(h.Get(corev1.PortHeader), 10, 16)
	if err != nil || port == 0 {
		return fmt.Errorf("invalid port header %q: must be in 1-65535", h.Get(corev1.PortHeader))
	}
	switch t := h.Get(corev1.StreamType); t {
	case corev1.StreamTypeError, corev1.StreamTypeData:
	default:
		return fmt.Errorf("invalid stream type %q: must be %q or %q", t, corev1.StreamTypeError, corev1.StreamTypeData)
	}
	if h.Get(corev1.PortForwardRequestIDHeader) == "" {
		return fmt.Errorf("the %s header is required", corev1.PortForwardRequestIDHeader)
	}
	return nil
}
