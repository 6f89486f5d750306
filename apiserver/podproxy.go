package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// proxyToPod serves pods/proxy: the request goes on to the pod's IP, as
// kube-apiserver's pod proxy passes it:
//
//	/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH?QUERY
//	  ─▶ SCHEME://POD_IP:PORT/PATH?QUERY   (SCHEME http by default; PORT the
//	     pod's first container port when not named, else 80)
func (h *resourceHandler) proxyToPod(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	scheme, name, port := splitProxyName(ri.name)
	obj, err := h.store.Get(r.Context(), ri.namespace, name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pod := obj.(*corev1.Pod)
	if pod.Status.PodIP == "" {
		writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s has no IP address yet", pod.Name)))
		return
	}
	if port == "" {
		port = firstContainerPort(pod)
	}
	if _, err := strconv.Atoi(port); err != nil {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q in %q", port, ri.name)))
		return
	}
	target := &url.URL{Scheme: scheme, Host: net.JoinHostPort(pod.Status.PodIP, port)}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = target.Scheme, target.Host, target.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = ri.proxyPath, ""
			pr.Out.Header.Del("Authorization") // the client's credentials are the apiserver's business
		},
		// A pod's own certificate names nothing the apiserver could check,
		// so https is not verified, as kube-apiserver's proxy transport.
		Transport: podProxyTransport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach service: %v", err)))
		},
	}
	proxy.ServeHTTP(w, r)
}

var podProxyTransport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}

// splitProxyName reads "NAME", "NAME:PORT" and "SCHEME:NAME:PORT".
func splitProxyName(id string) (scheme, name, port string) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 3:
		return parts[0], parts[1], parts[2]
	case 2:
		return "http", parts[0], parts[1]
	}
	return "http", id, ""
}

// firstContainerPort is the port a pod proxy uses when the request names
// none: the first one a container declares, else 80.
func firstContainerPort(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return strconv.Itoa(int(c.Ports[0].ContainerPort))
		}
	}
	return "80"
}
