package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// proxy serves pods/proxy and services/proxy: the request goes on to a
// pod's IP, as kube-apiserver's proxies pass it:
//
//	/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH?QUERY
//	  ─▶ SCHEME://POD_IP:PORT/PATH?QUERY   (SCHEME http by default; PORT the
//	     pod's first container port when not named, else 80)
//	/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH?QUERY
//	  ─▶ SCHEME://ENDPOINT_IP:TARGET_PORT/PATH?QUERY   (a ready address of the
//	     Service's Endpoints, at random, with the port named PORT, or the
//	     Service port numbered PORT; unnamed: the Service's only port)
func (h *resourceHandler) proxy(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, ok := h.admitConnect(w, r, ri)
	if !ok {
		return
	}
	path := ""
	switch o := opts.(type) {
	case *corev1.PodProxyOptions:
		path = o.Path
	case *corev1.ServiceProxyOptions:
		path = o.Path
	}
	if path == "" {
		path = "/"
	}
	locate := h.podLocation
	if h.res.Resource == "services" {
		locate = h.serviceLocation
	}
	target, err := locate(r.Context(), ri)
	if err != nil {
		writeError(w, r, err)
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = target.Scheme, target.Host, target.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
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

// podLocation is where pods/proxy sends a request: the pod's IP.
func (h *resourceHandler) podLocation(ctx context.Context, ri *requestInfo) (*url.URL, error) {
	scheme, name, port := splitProxyName(ri.name)
	obj, err := h.store.Get(ctx, ri.namespace, name)
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if pod.Status.PodIP == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s has no IP address yet", pod.Name))
	}
	if port == "" {
		port = firstContainerPort(pod)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q in %q", port, ri.name))
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(pod.Status.PodIP, port)}, nil
}

// serviceLocation is where services/proxy sends a request, as
// kube-apiserver's service REST ResourceLocation picks it: a port given
// by number becomes the name of the Service port with that number; then
// a random ready address of a random subset of the Service's Endpoints
// that has a port of that name, at that port's number.
func (h *resourceHandler) serviceLocation(ctx context.Context, ri *requestInfo) (*url.URL, error) {
	scheme, name, port := splitProxyName(ri.name)
	if n, err := strconv.Atoi(port); err == nil {
		obj, err := h.store.Get(ctx, ri.namespace, name)
		if err != nil {
			return nil, err
		}
		found := false
		for _, sp := range obj.(*corev1.Service).Spec.Ports {
			if int(sp.Port) == n {
				port, found = sp.Name, true
				break
			}
		}
		if !found {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", n, name))
		}
	}
	obj, err := byIDOf(h.srv, "endpoints").Get(ctx, ri.namespace, name)
	if err != nil {
		return nil, err
	}
	subsets := obj.(*corev1.Endpoints).Subsets
	if len(subsets) == 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	first := rand.IntN(len(subsets))
	for i := range subsets {
		ss := subsets[(first+i)%len(subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name == port {
				addr := ss.Addresses[rand.IntN(len(ss.Addresses))]
				return &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))}, nil
			}
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", ri.name))
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
