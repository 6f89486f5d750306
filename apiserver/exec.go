package apiserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

// exec serves pods/exec and attach pods/attach by proxying the client's
// protocol upgrade to the kubelet of the pod's node, which runs the
// command or attaches to the container:
//
//	kubectl exec   → apiserver /api/v1/namespaces/NS/pods/P/exec?command=…&stdin=true
//	               → https://NODE:10250/exec/NS/P/C?command=…&input=1
//	kubectl attach → …/pods/P/attach?stdin=true&tty=true → https://NODE:10250/attach/NS/P/C?input=1&tty=1
//
// Both carriers pass: WebSocket (v5.channel.k8s.io, kubectl's first
// choice) and SPDY/3.1 (v4.channel.k8s.io, its fallback). Once the
// kubelet switches protocols, the two connections are spliced; if it
// refuses (the container is not running), its reason is the answer, on
// either carrier.
func (h *resourceHandler) exec(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, ok := h.admitConnect(w, r, ri)
	if !ok {
		return
	}
	o := opts.(*corev1.PodExecOptions)
	if len(o.Command) == 0 {
		writeError(w, r, apierrors.NewBadRequest("you must specify at least 1 command"))
		return
	}
	h.streamToKubelet(w, r, ri, "exec", o.Container, o.Command, streamFlags{o.Stdin, o.Stdout, o.Stderr, o.TTY})
}

func (h *resourceHandler) attach(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, ok := h.admitConnect(w, r, ri)
	if !ok {
		return
	}
	o := opts.(*corev1.PodAttachOptions)
	h.streamToKubelet(w, r, ri, "attach", o.Container, nil, streamFlags{o.Stdin, o.Stdout, o.Stderr, o.TTY})
}

// streamFlags are the streams of an exec or attach.
type streamFlags struct{ stdin, stdout, stderr, tty bool }

// streamToKubelet reaches the kubelet with the admitted options (the
// mutating webhooks may have changed them, as upstream allows).
func (h *resourceHandler) streamToKubelet(w http.ResponseWriter, r *http.Request, ri *requestInfo, endpoint, containerName string,
	command []string, streams streamFlags) {
	ctx := r.Context()
	obj, err := h.store.Get(ctx, ri.namespace, ri.name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pod := obj.(*corev1.Pod)
	container, err := podContainer(pod, containerName)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("cannot %s into a container in a completed pod; current phase is %s", endpoint, pod.Status.Phase)))
		return
	}
	spdyUpgrade := strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && !spdyUpgrade {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("pods/%s needs an upgrade to WebSocket (%s) or SPDY/3.1", endpoint, remotecommand.StreamProtocolV5Name)))
		return
	}
	// PodExecOptions and PodAttachOptions become the kubelet's parameters.
	params := url.Values{}
	if len(command) > 0 {
		params["command"] = command
	}
	for kubelet, on := range map[string]bool{"input": streams.stdin, "output": streams.stdout, "error": streams.stderr, "tty": streams.tty} {
		if on {
			params.Set(kubelet, "1")
		}
	}
	client, req, nodeName, err := h.kubeletRequest(ctx, pod, endpoint, container, params)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if spdyUpgrade {
		req.Method = http.MethodPost
	}
	for _, k := range []string{"Connection", "Upgrade", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions", "X-Stream-Protocol-Version"} {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
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

// kubeletError is the Status for a kubelet's refusal: its message, with
// the reason of its code.
func kubeletError(code int, msg string) error {
	return statusError(int32(code), reasonForCode(code), msg)
}

// splice answers the client with the kubelet's 101 response, then copies
// bytes both ways until either side closes.
func splice(conn net.Conn, buf *bufio.ReadWriter, resp *http.Response, backend io.ReadWriteCloser) {
	fmt.Fprintf(buf, "HTTP/1.1 101 Switching Protocols\r\n")
	if err := resp.Header.Write(buf); err != nil {
		return
	}
	buf.WriteString("\r\n")
	if err := buf.Flush(); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent past the request, then the rest.
		_, _ = io.Copy(backend, buf.Reader)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, backend)
		done <- struct{}{}
	}()
	<-done
}
