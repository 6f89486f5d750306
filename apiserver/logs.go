package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// log serves pods/log by proxying to the kubelet of the pod's node:
//
//	kubectl logs → apiserver /api/v1/namespaces/NS/pods/P/log
//	             → https://NODE:10250/containerLogs/NS/P/C?follow=…
//
// as plain text, or as WebSocket messages when the client asks for an
// upgrade (binary.k8s.io, base64.binary.k8s.io).
func (h *resourceHandler) log(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	ctx := r.Context()
	obj, err := h.store.Get(ctx, ri.namespace, ri.name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pod := obj.(*corev1.Pod)
	q := r.URL.Query()
	if errs := validateLogOptions(q); len(errs) > 0 {
		writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, pod.Name, errs))
		return
	}
	container, err := podContainer(pod, q.Get("container"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	params := url.Values{}
	for _, k := range []string{"follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"} {
		if v := q.Get(k); v != "" {
			params.Set(k, v)
		}
	}
	client, req, nodeName, err := h.kubeletRequest(ctx, pod, "containerLogs", container, params)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("reaching the kubelet on %s: %v", nodeName, err)))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		writeError(w, r, kubeletError(resp.StatusCode, strings.TrimSpace(string(msg))))
		return
	}
	if websocket.IsWebSocketUpgrade(r) {
		streamLogWebSocket(w, r, resp.Body)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	copyChunks(resp.Body, func(chunk []byte) error {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
}

// copyChunks passes each chunk read from src to send, until either fails.
func copyChunks(src io.Reader, send func([]byte) error) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if send(buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// The WebSocket subprotocols of a log stream, as kube-apiserver's
// wsstream reader: each chunk a binary message, or a base64 text one.
const (
	binaryLogProtocol = "binary.k8s.io"
	base64LogProtocol = "base64.binary.k8s.io"
)

var logUpgrader = websocket.Upgrader{
	Subprotocols: []string{binaryLogProtocol, base64LogProtocol},
	CheckOrigin:  func(*http.Request) bool { return true }, // clients use certificates or tokens, not cookies
}

// streamLogWebSocket sends the log over a WebSocket (`pods/log` asked
// for with a WebSocket upgrade), then closes it.
func streamLogWebSocket(w http.ResponseWriter, r *http.Request, log io.Reader) {
	ws, err := logUpgrader.Upgrade(w, r, nil) // answers the client itself on failure
	if err != nil {
		return
	}
	defer ws.Close()
	base64Text := ws.Subprotocol() == base64LogProtocol
	copyChunks(log, func(chunk []byte) error {
		if base64Text {
			return ws.WriteMessage(websocket.TextMessage, []byte(base64.StdEncoding.EncodeToString(chunk)))
		}
		return ws.WriteMessage(websocket.BinaryMessage, chunk)
	})
	_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

// validateLogOptions checks the numeric pods/log options as Kubernetes'
// ValidatePodLogOptions does; the kubelet reads the rest.
func validateLogOptions(q url.Values) field.ErrorList {
	var errs field.ErrorList
	atLeast := func(name string, min int64, msg string) {
		if v := q.Get(name); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil {
				errs = append(errs, field.Invalid(field.NewPath(name), v, "must be an integer"))
			} else if n < min {
				errs = append(errs, field.Invalid(field.NewPath(name), n, msg))
			}
		}
	}
	atLeast("tailLines", 0, "must be greater than or equal to 0")
	atLeast("limitBytes", 1, "must be greater than 0")
	if q.Get("sinceSeconds") != "" && q.Get("sinceTime") != "" {
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	} else {
		atLeast("sinceSeconds", 1, "must be greater than 0")
	}
	if v := q.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("sinceTime"), v, "must be an RFC 3339 time"))
		}
	}
	return errs
}

// podContainer picks the container a log or exec request is about: the one
// named, or the only one; errors are worded as Kubernetes words them.
func podContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) != 1 {
			var names []string
			for _, c := range pod.Spec.Containers {
				names = append(names, c.Name)
			}
			return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " ")))
		}
		return pod.Spec.Containers[0].Name, nil
	}
	if !hasContainer(pod, name) {
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	return name, nil
}

// kubeletRequest is a GET of endpoint (containerLogs, exec) on the kubelet
// of the pod's node, https://NODE:PORT/ENDPOINT/NS/POD/CONTAINER?params,
// with the client that trusts and authenticates to kubelets.
func (h *resourceHandler) kubeletRequest(ctx context.Context, pod *corev1.Pod, endpoint, container string, params url.Values) (*http.Client, *http.Request, string, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil, "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	nodeObj, err := h.srv.nodes.Get(ctx, "", pod.Spec.NodeName)
	if err != nil {
		return nil, nil, "", err
	}
	node := nodeObj.(*corev1.Node)
	path := "/" + endpoint + "/" + url.PathEscape(pod.Namespace) + "/" + url.PathEscape(pod.Name)
	if container != "" { // portForward is per pod
		path += "/" + url.PathEscape(container)
	}
	client, req, err := h.srv.kubeletGet(ctx, node, path, params)
	return client, req, node.Name, err
}

// kubeletGet is a GET of path on node's kubelet, https://NODE:PORT/PATH?params,
// with the client that trusts and authenticates to kubelets.
func (s *Server) kubeletGet(ctx context.Context, node *corev1.Node, path string, params url.Values) (*http.Client, *http.Request, error) {
	host, port := nodeAddress(node), node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s reports no kubelet endpoint", node.Name))
	}
	target := fmt.Sprintf("https://%s%s?%s", net.JoinHostPort(host, strconv.Itoa(int(port))), path, params.Encode())
	client, err := s.kubeletClient()
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, nil, err
	}
	return client, req, nil
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// nodeAddress prefers the InternalIP, then the Hostname address.
func nodeAddress(node *corev1.Node) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}

// kubeletClient authenticates to kubelets with the apiserver's kubelet
// client certificate and trusts the cluster CA for their serving certs.
func (s *Server) kubeletClient() (*http.Client, error) {
	s.kubeletOnce.Do(func() {
		tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.cfg.KubeletClientCertFile != "" {
			cert, err := tls.LoadX509KeyPair(s.cfg.KubeletClientCertFile, s.cfg.KubeletClientKeyFile)
			if err != nil {
				s.kubeletErr = err
				return
			}
			tlsCfg.Certificates = []tls.Certificate{cert}
		}
		caPEM, err := os.ReadFile(s.cfg.ClientCAFile)
		if err != nil {
			s.kubeletErr = err
			return
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		tlsCfg.RootCAs = pool
		s.kubeletHTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	})
	return s.kubeletHTTP, s.kubeletErr
}
