package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// portForward serves pods/portforward: kubectl's SPDY connection
// (protocol portforward.k8s.io) reaches the kubelet of the pod's node,
// which forwards each of its streams to a port of the pod (Kubernetes'
// own arrangement). Two carriers:
//
//	kubectl 1.30+: WebSocket, subprotocol SPDY/3.1+portforward.k8s.io
//	               ──▶ apiserver: WebSocket messages ⇄ the kubelet's SPDY upgrade
//	older clients: Upgrade: SPDY/3.1 ──▶ spliced to the kubelet's SPDY upgrade
//
// In both, the SPDY frames pass through unread: the streams run from
// kubectl to the kubelet.
func (h *resourceHandler) portForward(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, ok := h.admitConnect(w, r, ri)
	if !ok {
		return
	}
	ctx := r.Context()
	tunnel := websocket.IsWebSocketUpgrade(r)
	switch {
	case tunnel && !slices.Contains(websocket.Subprotocols(r), spdyTunnelProtocol):
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("pods/portforward over WebSocket needs the subprotocol %s", spdyTunnelProtocol)))
		return
	case !tunnel && !strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1"):
		writeError(w, r, apierrors.NewBadRequest("pods/portforward needs an upgrade to SPDY/3.1, or to WebSocket with the subprotocol "+spdyTunnelProtocol))
		return
	}
	obj, err := h.store.Get(ctx, ri.namespace, ri.name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var params url.Values
	for _, p := range opts.(*corev1.PodPortForwardOptions).Ports {
		if params == nil {
			params = url.Values{}
		}
		params.Add("port", strconv.Itoa(int(p)))
	}
	client, req, nodeName, err := h.kubeletRequest(ctx, obj.(*corev1.Pod), "portForward", "", params)
	if err != nil {
		writeError(w, r, err)
		return
	}
	req.Method = http.MethodPost
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	req.Header.Set("X-Stream-Protocol-Version", portForwardProtocol)
	resp, err := client.Do(req)
	if err != nil {
		writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("reaching the kubelet on %s: %v", nodeName, err)))
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		writeError(w, r, kubeletError(resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	backend := resp.Body.(io.ReadWriteCloser) // the upgraded connection to the kubelet
	defer backend.Close()
	if tunnel {
		tunnelWebSocket(w, r, backend)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, r, apierrors.NewInternalError(fmt.Errorf("the connection cannot be upgraded")))
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	splice(conn, buf, resp, backend)
}

const (
	portForwardProtocol = "portforward.k8s.io"
	// spdyTunnelProtocol is the WebSocket subprotocol of SPDY tunneled in
	// binary messages (client-go's tunneling dialer).
	spdyTunnelProtocol = "SPDY/3.1+" + portForwardProtocol
)

var tunnelUpgrader = websocket.Upgrader{
	Subprotocols: []string{spdyTunnelProtocol},
	// Clients authenticate with certificates or tokens, not cookies: a
	// page of another origin cannot act for them.
	CheckOrigin: func(*http.Request) bool { return true },
}

// tunnelWebSocket upgrades the client to a WebSocket and copies its binary
// messages to backend, and backend's bytes to it as binary messages, until
// either side closes.
func tunnelWebSocket(w http.ResponseWriter, r *http.Request, backend io.ReadWriteCloser) {
	ws, err := tunnelUpgrader.Upgrade(w, r, nil) // answers the client itself on failure
	if err != nil {
		return
	}
	defer ws.Close()
	go func() {
		defer backend.Close() // the client is gone: so is the kubelet's connection
		for {
			kind, msg, err := ws.NextReader()
			if err != nil {
				return
			}
			if kind != websocket.BinaryMessage {
				continue
			}
			if _, err := io.Copy(backend, msg); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := backend.Read(buf)
		if n > 0 {
			if werr := ws.WriteMessage(websocket.BinaryMessage, buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			return
		}
	}
}
