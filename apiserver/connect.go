package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Connections (pods/exec, pods/attach, pods/portforward, pods/proxy,
// services/proxy) are admitted as upstream's ConnectResource does:
//
//	dryRun? 400 ─▶ options from the query (and the proxied path) ─▶ webhooks on CONNECT
//	   (object: the options in v1, no oldObject, name as in the URL)
//	─▶ the pod, the kubelet, the upgrade
//
// so that a refusal stops the connection before anything is dialed.

// admitConnect reads the connection's options and asks the webhooks;
// it answers the client itself and returns ok false when the
// connection must not go on. The options returned are as the mutating
// webhooks left them.
func (h *resourceHandler) admitConnect(w http.ResponseWriter, r *http.Request, ri *requestInfo) (runtime.Object, bool) {
	if len(r.URL.Query()["dryRun"]) > 0 {
		writeError(w, r, apierrors.NewBadRequest("dryRun is not supported"))
		return nil, false
	}
	opts, err := connectOptions(r, ri, h.res.Kind)
	if err == nil {
		opts, err = h.srv.objectWebhooks(r.Context(), h, admissionv1.Connect, opts.GetObjectKind().GroupVersionKind(), opts)
	}
	if err != nil {
		writeError(w, r, err)
		return nil, false
	}
	return opts, true
}

// connectOptions fills a connection's v1 options from the request as
// upstream's parameter codec does: booleans are false only when absent,
// "0" or "false"; ports may repeat or be comma-separated.
func connectOptions(r *http.Request, ri *requestInfo, kind string) (runtime.Object, error) {
	q := r.URL.Query()
	flag := func(name string) bool {
		v, ok := q[name]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	var opts runtime.Object
	var optsKind string
	switch ri.subresource {
	case "exec":
		opts = &corev1.PodExecOptions{Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), TTY: flag("tty"),
			Container: q.Get("container"), Command: q["command"]}
		optsKind = "PodExecOptions"
	case "attach":
		opts = &corev1.PodAttachOptions{Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), TTY: flag("tty"),
			Container: q.Get("container")}
		optsKind = "PodAttachOptions"
	case "portforward":
		pf := &corev1.PodPortForwardOptions{}
		for _, v := range q["ports"] {
			for _, p := range strings.Split(v, ",") {
				n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 16)
				if err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q: %v", p, err))
				}
				pf.Ports = append(pf.Ports, int32(n))
			}
		}
		opts, optsKind = pf, "PodPortForwardOptions"
	case "proxy":
		// The proxied path: "" when the URL ends at proxy, as upstream.
		path := ri.proxyPath
		if path == "/" && !strings.HasSuffix(r.URL.Path, "/") {
			path = ""
		}
		if kind == "Service" {
			opts, optsKind = &corev1.ServiceProxyOptions{Path: path}, "ServiceProxyOptions"
		} else {
			opts, optsKind = &corev1.PodProxyOptions{Path: path}, "PodProxyOptions"
		}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s is not a connection", ri.subresource))
	}
	opts.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(optsKind))
	return opts, nil
}
