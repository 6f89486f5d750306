package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/podstep"
	"minik/kubelet/runtime"
	"minik/kubelet/volumes"
	"minik/proto/cri"
)

// podWorker is the driver for one pod: it runs the step function and
// performs its actions, one sync at a time, woken by pod updates,
// container changes (pleg.go), probe results and back-off timers.
type podWorker struct {
	k    *Kubelet
	uid  types.UID
	kick chan struct{}

	mu      sync.Mutex // guards pod, removed, static and state's maps
	pod     *corev1.Pod
	removed bool // gone from the apiserver (or from the manifest dir)
	static  bool
	state   *podstep.State

	lastStatus *corev1.PodStatus // the last status sent
	// startObserved: the pod's start is in kubelet_pod_start_sli_duration_seconds;
	// pulling is the time spent pulling its images, which the SLI leaves out.
	startObserved bool
	pulling       time.Duration
}

func (w *podWorker) update(p *corev1.Pod, removed bool) {
	w.mu.Lock()
	if w.pod != nil && !removed {
		// Keep the status we sent if the informer lags behind it.
		if w.lastStatus != nil && p.Status.Phase == "" {
			p.Status = *w.lastStatus
		}
	}
	w.pod, w.removed = p, removed
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *podWorker) run(ctx context.Context) {
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-timer:
		}
		wakeAt, done := w.sync(ctx)
		if done {
			w.k.mu.Lock()
			if w.k.workers[w.uid] == w {
				delete(w.k.workers, w.uid)
			}
			w.k.mu.Unlock()
			w.k.probes.RemovePod(w.uid)
			w.k.volumes.ForgetPod(w.uid)
			return
		}
		timer = nil
		if !wakeAt.IsZero() {
			timer = w.k.cfg.Clock.After(max(wakeAt.Sub(w.k.cfg.Clock.Now()), 10*time.Millisecond))
		}
	}
}

func (w *podWorker) event(pod *corev1.Pod, typ, reason, format string, args ...any) {
	w.k.recorder.Eventf(w.k.eventTarget(pod), typ, reason, format, args...)
}

// sync brings the runtime one pass closer to the pod's spec and reports
// status. It returns when to sync again (zero: on the next event) and
// whether the worker is done.
func (w *podWorker) sync(ctx context.Context) (time.Time, bool) {
	k := w.k
	w.mu.Lock()
	pod, removed := w.pod, w.removed
	w.mu.Unlock()
	if pod == nil {
		return time.Time{}, true
	}
	now := k.cfg.Clock.Now()
	if removed || pod.DeletionTimestamp != nil {
		return w.terminate(ctx, pod, removed)
	}
	st := w.state
	if !st.Admitted && st.Rejected == nil {
		if podstep.IsTerminal(pod, st) {
			// Finished before a kubelet restart: nothing to run.
			w.mu.Lock()
			st.Admitted = true
			w.mu.Unlock()
		} else if node := k.nodes.Node(); node != nil {
			res := admitUnderPressure(pod, k.evictions.Conditions())
			if res == nil {
				res = admit(node, pod, k.admittedPods(pod.UID), k.cfg.AllowedUnsafeSysctls)
			}
			w.mu.Lock()
			if res != nil {
				st.Rejected = res
			} else {
				st.Admitted = true
			}
			w.mu.Unlock()
			if res != nil {
				k.log.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", res.Reason, "message", res.Message)
				w.event(pod, corev1.EventTypeWarning, res.Reason, "%s", res.Message)
			}
		}
	}
	var wake time.Time
	var obs *runtime.Pod // what the runtime holds after the last action
	if st.Rejected == nil {
		for i := 0; i < 6; i++ {
			var err error
			obs, err = k.observe(ctx, pod.UID)
			if err != nil {
				k.log.Warn("observing the runtime", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				return now.Add(time.Second), false
			}
			w.mu.Lock()
			a := podstep.ComputeActions(pod, obs, st, now)
			w.mu.Unlock()
			wake = a.WakeAt
			if a.Empty() {
				break
			}
			err = w.execute(ctx, pod, obs, a)
			obs = nil
			if err != nil {
				if ctx.Err() != nil {
					return time.Time{}, false
				}
				k.log.Warn("sync", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				wake = now.Add(2 * time.Second)
				break
			}
			now = k.cfg.Clock.Now()
		}
	}
	if obs == nil {
		var err error
		if obs, err = k.observe(ctx, pod.UID); err != nil {
			return now.Add(time.Second), false
		}
	}
	w.mu.Lock()
	finished := podstep.IsTerminal(pod, st) && !st.VolumesRemoved
	w.mu.Unlock()
	if finished && !obs.AnyRunning() {
		// A finished pod's volumes go, as in the kubelet: an emptyDir lives
		// only as long as the pod runs.
		if err := k.volumes.Remove(string(pod.UID)); err != nil {
			k.log.Warn("removing volumes", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		} else {
			w.markCleanedUp()
		}
	}
	k.probes.Sync(pod, obs)
	w.mu.Lock()
	status := podstep.ComputeStatus(pod, obs, st, now, k.cfg.NodeIP)
	w.mu.Unlock()
	if err := w.pushStatus(ctx, pod, status); err != nil && ctx.Err() == nil {
		k.log.Warn("updating pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		if wake.IsZero() || wake.After(now.Add(time.Second)) {
			wake = now.Add(time.Second)
		}
	}
	return wake, false
}

func gracePeriod(pod *corev1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return 30
}

// execute performs one step's actions.
func (w *podWorker) execute(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod, a podstep.Actions) error {
	k := w.k
	st := w.state
	if a.KillPod {
		for _, sb := range obs.Sandboxes {
			if err := k.killSandboxContainers(ctx, sb.Id, gracePeriod(pod)); err != nil {
				return err
			}
			if err := k.rt.StopPodSandbox(ctx, sb.Id); err != nil {
				return err
			}
		}
	}
	if a.CreateSandbox {
		if err := os.MkdirAll(k.podDir(string(pod.UID)), 0o755); err != nil {
			return err
		}
		if err := k.writeSandboxFiles(pod); err != nil {
			w.event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return err
		}
		cfg := k.sandboxConfig(pod)
		cfg.Metadata.Attempt = uint32(len(obs.Sandboxes))
		start := time.Now()
		_, err := k.rt.RunPodSandbox(ctx, cfg)
		k.log.Debug("RunPodSandbox", "pod", pod.Namespace+"/"+pod.Name, "took", time.Since(start), "err", err)
		if err != nil {
			w.event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return err
		}
		return nil
	}
	if a.RefreshTokens {
		w.refreshTokens(ctx, pod, obs)
	}
	for _, id := range a.Remove {
		if err := k.rt.RemoveContainer(ctx, id); err != nil {
			return err
		}
	}
	for _, kl := range a.Kill {
		w.event(pod, corev1.EventTypeNormal, "Killing", "%s", kl.Message)
		if err := k.rt.StopContainer(ctx, kl.ID, gracePeriod(pod)); err != nil {
			return err
		}
		w.mu.Lock()
		delete(st.Unhealthy, kl.ID)
		w.mu.Unlock()
	}
	for _, name := range a.MarkPullBackOff {
		w.mu.Lock()
		wt := st.Waiting[name]
		changed := wt.Reason != podstep.ReasonImagePullBackOff
		wt.Reason = podstep.ReasonImagePullBackOff
		wt.Message = fmt.Sprintf("Back-off pulling image %q", imageOf(pod, name))
		st.Waiting[name] = wt
		w.mu.Unlock()
		if changed {
			w.event(pod, corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", imageOf(pod, name))
		}
	}
	if a.Terminal {
		grace := gracePeriod(pod)
		w.mu.Lock()
		if st.Evicted != nil {
			grace = 0 // a hard eviction threshold allows no grace period
		}
		w.mu.Unlock()
		for _, sb := range obs.Sandboxes {
			if sb.State != cri.PodSandboxState_SANDBOX_READY {
				continue
			}
			if err := k.killSandboxContainers(ctx, sb.Id, grace); err != nil {
				return err
			}
			if err := k.rt.StopPodSandbox(ctx, sb.Id); err != nil {
				return err
			}
		}
		w.mu.Lock()
		st.Terminal = true
		w.mu.Unlock()
		return nil
	}
	if len(a.Start) == 0 {
		return nil
	}
	sb := obs.ReadySandbox()
	if sb == nil {
		return errors.New("no ready sandbox")
	}
	refreshAt, err := k.prepareVolumes(ctx, pod, sb.Ip)
	if err == nil {
		w.mu.Lock()
		st.VolumesRefreshAt = refreshAt
		w.mu.Unlock()
	} else {
		msg := err.Error()
		reason, eventReason, eventMsg := podstep.ReasonCreateContainerConfigError, "Failed", "Error: "+msg
		var me *podstep.MountError
		if errors.As(err, &me) {
			// Not the container's fault: the volume is not there yet.
			reason, eventReason, eventMsg = "ContainerCreating", "FailedMount", msg
		}
		w.mu.Lock()
		for _, s := range a.Start {
			st.Waiting[s.Container.Name] = podstep.Waiting{Reason: reason, Message: msg, Until: k.cfg.Clock.Now().Add(2 * time.Second)}
		}
		w.mu.Unlock()
		w.event(pod, corev1.EventTypeWarning, eventReason, "%s", eventMsg)
		return nil
	}
	sbCfg := k.sandboxConfig(pod)
	for _, s := range a.Start {
		w.startContainer(ctx, pod, obs, sb, sbCfg, s)
	}
	return nil
}

// refreshTokens rewrites the pod's projected token volumes and records
// when they are due next; a failure is retried after volumes.TokenRetry (the
// containers keep the old token, valid until it expires).
func (w *podWorker) refreshTokens(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod) {
	k := w.k
	podIP := ""
	if sb := obs.ReadySandbox(); sb != nil {
		podIP = sb.Ip
	}
	at, err := k.volumes.RefreshTokens(ctx, pod, podIP)
	if err != nil {
		k.log.Warn("refreshing service account token volumes", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		w.event(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for the service account token: %v", err)
		at = k.cfg.Clock.Now().Add(volumes.TokenRetry)
	}
	w.mu.Lock()
	w.state.VolumesRefreshAt = at
	w.mu.Unlock()
}

func imageOf(pod *corev1.Pod, name string) string {
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return c.Image
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// fail records why a container could not start; it is retried after d.
func (w *podWorker) fail(pod *corev1.Pod, name, reason, msg string, d time.Duration) {
	w.mu.Lock()
	w.state.Waiting[name] = podstep.Waiting{Reason: reason, Message: msg, Until: w.k.cfg.Clock.Now().Add(d)}
	w.mu.Unlock()
	w.event(pod, corev1.EventTypeWarning, "Failed", "Error: %s", reason)
}

func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod, sb *cri.PodSandbox, sbCfg *cri.PodSandboxConfig, s podstep.StartContainer) {
	k := w.k
	c := s.Container
	img, ok := w.ensureImage(ctx, pod, c)
	if !ok {
		return
	}
	// Keep one dead instance (for --previous and lastState), no more.
	for _, old := range obs.Containers {
		if old.Metadata.GetName() == c.Name && old.State == cri.ContainerState_CONTAINER_EXITED && (s.Previous == nil || old.Id != s.Previous.Id) {
			_ = k.rt.RemoveContainer(ctx, old.Id)
		}
	}
	cfg, err := k.containerConfig(ctx, pod, c, s.Init, s.RestartCount, sb.Ip, img)
	if err == nil && s.Target != "" {
		if t, _ := obs.Latest(s.Target); t != nil && t.State == cri.ContainerState_CONTAINER_RUNNING {
			cfg.TargetContainerId = t.Id
		}
	}
	if err != nil {
		var ce *podstep.ConfigError
		if errors.As(err, &ce) {
			w.fail(pod, c.Name, podstep.ReasonCreateContainerConfigError, err.Error(), 2*time.Second)
			w.event(pod, corev1.EventTypeWarning, "Failed", "Error: %s", err)
		} else {
			w.fail(pod, c.Name, podstep.ReasonCreateContainerConfigError, err.Error(), 2*time.Second)
		}
		return
	}
	t0 := time.Now()
	id, err := k.rt.CreateContainer(ctx, sb.Id, cfg, sbCfg)
	k.log.Debug("CreateContainer", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "took", time.Since(t0), "err", err)
	if err != nil {
		w.fail(pod, c.Name, podstep.ReasonCreateContainerError, err.Error(), 2*time.Second)
		return
	}
	w.event(pod, corev1.EventTypeNormal, "Created", "Created container %s", c.Name)
	t0 = time.Now()
	err = k.rt.StartContainer(ctx, id)
	k.log.Debug("StartContainer", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "took", time.Since(t0), "err", err)
	if err != nil {
		w.event(pod, corev1.EventTypeWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		w.mu.Lock()
		w.state.Waiting[c.Name] = podstep.Waiting{Reason: podstep.ReasonRunContainerError, Message: err.Error(), Until: k.cfg.Clock.Now().Add(2 * time.Second)}
		w.mu.Unlock()
		_ = k.rt.RemoveContainer(ctx, id)
		return
	}
	w.event(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	w.mu.Lock()
	delete(w.state.Waiting, c.Name)
	delete(w.state.BackOff, "pull:"+c.Name)
	if s.Previous != nil {
		w.state.BackOff[c.Name] = podstep.NextBackOff(w.state.BackOff[c.Name], s.Previous)
	}
	w.mu.Unlock()
}

// ensureImage makes the container's image present according to its pull
// policy. Images loaded from an archive (local) are never pulled.
func (w *podWorker) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*cri.Image, bool) {
	k := w.k
	if _, err := runtime.NormalizeImage(c.Image); err != nil {
		w.fail(pod, c.Name, podstep.ReasonInvalidImageName, fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", c.Image, c.Image), time.Minute)
		return nil, false
	}
	img, err := k.rt.ImageStatus(ctx, c.Image)
	if err != nil {
		w.fail(pod, c.Name, podstep.ReasonErrImagePull, err.Error(), 2*time.Second)
		return nil, false
	}
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = corev1.PullIfNotPresent
		if ref, _ := runtime.NormalizeImage(c.Image); strings.HasSuffix(ref, ":latest") {
			policy = corev1.PullAlways
		}
	}
	switch {
	case policy == corev1.PullNever && img == nil:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		w.mu.Lock()
		w.state.Waiting[c.Name] = podstep.Waiting{Reason: podstep.ReasonErrImageNeverPull, Message: msg, Until: k.cfg.Clock.Now().Add(5 * time.Second)}
		w.mu.Unlock()
		w.event(pod, corev1.EventTypeWarning, podstep.ReasonErrImageNeverPull, "%s", msg)
		return nil, false
	case img != nil && (policy != corev1.PullAlways || img.Local):
		w.event(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return img, true
	}
	w.event(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, err = k.rt.PullImage(pctx, c.Image, k.insecureRegistry(c.Image))
	cancel()
	w.mu.Lock()
	w.pulling += time.Since(start)
	w.mu.Unlock()
	if err != nil {
		w.event(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		w.mu.Lock()
		key := "pull:" + c.Name
		d := w.state.BackOff[key]
		if d == 0 {
			d = podstep.InitialBackOff
		} else {
			d = min(2*d, podstep.MaxBackOff)
		}
		w.state.BackOff[key] = d
		w.state.Waiting[c.Name] = podstep.Waiting{Reason: podstep.ReasonErrImagePull, Message: err.Error(), Until: k.cfg.Clock.Now().Add(d)}
		w.mu.Unlock()
		w.event(pod, corev1.EventTypeWarning, "Failed", "Error: %s", podstep.ReasonErrImagePull)
		return nil, false
	}
	w.event(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
	img, err = k.rt.ImageStatus(ctx, c.Image)
	if err != nil || img == nil {
		w.fail(pod, c.Name, podstep.ReasonErrImagePull, fmt.Sprintf("image %q missing after pull: %v", c.Image, err), 2*time.Second)
		return nil, false
	}
	return img, true
}

func (k *Kubelet) insecureRegistry(image string) bool {
	ref, err := runtime.NormalizeImage(image)
	if err != nil {
		return false
	}
	host, _, _ := strings.Cut(ref, "/")
	return slices.Contains(k.cfg.InsecureRegistries, host)
}

// terminate stops a deleted pod's containers within its grace period,
// removes them, and then removes the pod object.
func (w *podWorker) terminate(ctx context.Context, pod *corev1.Pod, removed bool) (time.Time, bool) {
	k := w.k
	grace := gracePeriod(pod)
	obs, err := k.observe(ctx, pod.UID)
	if err != nil {
		return k.cfg.Clock.Now().Add(time.Second), false
	}
	var wg sync.WaitGroup
	for _, c := range obs.Containers {
		if c.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		w.event(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Metadata.GetName())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.rt.StopContainer(ctx, c.Id, grace); err != nil {
				k.log.Warn("stopping container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Metadata.GetName(), "err", err)
			}
		}()
	}
	wg.Wait()
	for _, sb := range obs.Sandboxes {
		if err := k.rt.StopPodSandbox(ctx, sb.Id); err != nil {
			k.log.Warn("stopping sandbox", "err", err)
			return k.cfg.Clock.Now().Add(time.Second), false
		}
	}
	// Every container is stopped: the pod no longer holds the node's
	// resources, so admission stops counting it before the API object
	// goes (the scheduler binds the next pod as soon as it does).
	w.mu.Lock()
	w.state.Terminal = true
	w.mu.Unlock()
	k.probes.RemovePod(pod.UID)
	k.volumes.ForgetPod(pod.UID)
	// Volumes go before the pod object, as in the kubelet: a pod is gone
	// from the API only once its resources are reclaimed.
	if err := k.volumes.Remove(string(pod.UID)); err != nil {
		k.log.Warn("removing volumes", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return k.cfg.Clock.Now().Add(time.Second), false
	}
	w.markCleanedUp()
	w.mu.Lock()
	static := w.static
	w.mu.Unlock()
	if !removed && !static {
		// The containers are gone: the pod object can go now.
		uid := pod.UID
		err := k.cfg.Client.Pods().Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			k.log.Warn("deleting pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			return k.cfg.Clock.Now().Add(time.Second), false
		}
	}
	for _, sb := range obs.Sandboxes {
		if err := k.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			k.log.Warn("removing sandbox", "err", err)
		}
	}
	_ = os.RemoveAll(k.podDir(string(pod.UID)))
	_ = os.RemoveAll(k.logDir(pod))
	return time.Time{}, true
}

// markCleanedUp records that the pod's volumes are gone and tells the
// eviction manager, if it waits.
func (w *podWorker) markCleanedUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.CleanedUp != nil && !w.state.VolumesRemoved {
		close(w.state.CleanedUp)
	}
	w.state.VolumesRemoved = true
}

// pushStatus sends the pod's status when it changed.
func (w *podWorker) pushStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) error {
	w.mu.Lock()
	last, static := w.lastStatus, w.static
	w.mu.Unlock()
	if last != nil && podstep.StatusEqual(*last, status) {
		return nil
	}
	ns, name, uid := pod.Namespace, pod.Name, pod.UID
	if static {
		mirror := w.k.static.mirrorFor(pod)
		if mirror == nil {
			return nil // the static source creates it; status follows
		}
		ns, name, uid = mirror.Namespace, mirror.Name, mirror.UID
	}
	// A PUT to pods/NAME/status replaces only the status, keeps everything
	// else as stored, and with no resourceVersion is unconditional; the UID
	// makes sure it is this pod and not a new one of the same name. It
	// travels as protobuf, where a merge patch would cost the apiserver a
	// JSON round trip of the whole pod.
	update := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}, Status: status}
	t0 := time.Now()
	_, err := w.k.cfg.Client.Pods().UpdateStatus(ctx, update, metav1.UpdateOptions{})
	w.k.log.Debug("status sent", "pod", ns+"/"+name, "phase", status.Phase, "took", time.Since(t0))
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or replaced by a pod of the same name (the UID differs)
		}
		return err
	}
	w.mu.Lock()
	w.lastStatus = &status
	w.observePodStart(pod, &status, time.Now())
	if w.pod != nil {
		p := w.pod.DeepCopy()
		p.Status = status
		w.pod = p
	}
	w.mu.Unlock()
	return nil
}
