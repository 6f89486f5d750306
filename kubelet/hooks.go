package kubelet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/podstep"
	"minik/kubelet/prober"
)

// postStartTimeout bounds a postStart hook, which upstream does not
// bound: a hook that never ends would hold its container's start forever.
const postStartTimeout = 2 * time.Minute

// runHook runs a lifecycle handler (postStart, preStop) of container c,
// whose runtime ID is id: its command in the container, an HTTP GET (at
// the handler's host, else the pod's IP; any answer is a success, as
// upstream's), or a sleep, within timeout.
func (k *Kubelet) runHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, h *corev1.LifecycleHandler, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		resp, err := k.rt.ExecSync(ctx, id, h.Exec.Command, int64(timeout/time.Second))
		if err == nil && resp.ExitCode != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), resp.ExitCode, strings.TrimSpace(string(resp.Stdout)+string(resp.Stderr)))
		}
		if err != nil {
			return fmt.Errorf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v", h.Exec.Command, c.Name, pod.Name, err)
		}
	case h.HTTPGet != nil:
		host := h.HTTPGet.Host
		if host == "" {
			host = podIP
		}
		req, err := prober.HTTPGetRequest(ctx, h.HTTPGet, host, c)
		if err == nil {
			var resp *http.Response
			if resp, err = prober.ProbeHTTPClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, pod.Name, err)
		}
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
	}
	return nil
}

// postStart runs the container's postStart hook right after it started,
// as upstream's kubelet: a failure is a FailedPostStartHook event and
// the container is stopped (its restart policy then decides).
func (w *podWorker) postStart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return
	}
	err := w.k.runHook(ctx, pod, c, id, podIP, c.Lifecycle.PostStart, postStartTimeout)
	if err == nil {
		return
	}
	w.event(pod, corev1.EventTypeWarning, "FailedPostStartHook", "%v", err)
	if err := w.k.rt.StopContainer(ctx, id, podstep.GracePeriod(pod)); err != nil {
		w.k.log.Warn("stopping a container whose postStart hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
	}
}
