package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/podstep"
	"minik/kubelet/runtime"
	"minik/proto/cri"
	"minik/scheduler/framework"
)

// maxRounds bounds the steps of one sync: a step's actions are done, the
// runtime is observed again and the step runs again, until it asks for
// nothing (a new pod takes admission, sandbox, start: 4 rounds).
const maxRounds = 6

// podWorker is the driver of one pod's step (podstep.Step): it feeds the
// step what happened (pod updates, container changes from pleg.go,
// probe verdicts, evictions, the outcome of each action), performs the
// actions it returns and sleeps until the next event or the step's wake
// time. Only the step writes the state.
type podWorker struct {
	k    *Kubelet
	uid  types.UID
	kick chan struct{}

	mu      sync.Mutex // guards everything below but the sync-only fields
	pod     *corev1.Pod
	removed bool // gone from the apiserver (or from the manifest dir)
	static  bool
	// inbox holds the events for the next step.
	inbox []podstep.Event
	// state is the step's; it runs under mu, so that admission and the
	// HTTPS server may read it.
	state *podstep.State
	// cleanedUp is closed once an evicted pod's containers are stopped
	// and its volumes removed (the eviction loop waits for it).
	cleanedUp  chan struct{}
	lastStatus *corev1.PodStatus // the last status sent
	// info is the scheduler's view of pod (podInfoLocked).
	info *framework.PodInfo

	// startObserved: the pod's start is in kubelet_pod_start_sli_duration_seconds;
	// pulling is the time spent pulling its images, which the SLI leaves out.
	startObserved bool
	pulling       time.Duration

	// runtimeSeq counts the runtime's changes to the pod that the pleg
	// saw (events, relists); lastObs is the sync's last observation of
	// the runtime, made when runtimeSeq was lastObsSeq, and nil once the
	// pod's own actions may have changed the runtime. A sync that nothing
	// has outdated steps on lastObs instead of asking the runtime again,
	// as upstream's pod workers read the PLEG's cache: a pod's status PUT
	// and its own containers' events each wake it once more.
	runtimeSeq atomic.Uint64
	lastObs    *runtime.Pod
	lastObsSeq uint64
}

// runtimeChanged tells the worker that the runtime changed the pod's
// containers (the pleg), and wakes it.
func (w *podWorker) runtimeChanged() {
	w.runtimeSeq.Add(1)
	w.wake()
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

// send queues an event for the next step and wakes the worker.
func (w *podWorker) send(e podstep.Event) {
	w.mu.Lock()
	w.inbox = append(w.inbox, e)
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
			w.k.admitted(w.uid)
			w.k.probes.RemovePod(w.uid)
			w.k.volumes.ForgetPod(w.uid)
			w.k.configMaps.UnregisterPod(w.uid)
			w.k.secrets.UnregisterPod(w.uid)
			w.closeCleanedUp()
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

// sync steps the pod until the step asks for nothing more, then writes
// its status. It returns when to sync again (zero: on the next event)
// and whether the worker is done.
func (w *podWorker) sync(ctx context.Context) (time.Time, bool) {
	k := w.k
	w.mu.Lock()
	pod, removed, static, events := w.pod, w.removed, w.static, w.inbox
	w.inbox = nil
	w.mu.Unlock()
	if pod == nil {
		return time.Time{}, true
	}
	var out podstep.Output
	obs := w.lastObs
	statusFailed := false
	stale := obs == nil || w.lastObsSeq != w.runtimeSeq.Load() // the runtime may hold something else than obs
	for round := 0; round < maxRounds; round++ {
		if stale {
			seq := w.runtimeSeq.Load() // before: a change seen meanwhile outdates obs
			var err error
			if obs, err = k.observe(ctx, pod.UID); err != nil {
				k.log.Warn("observing the runtime", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				events = append(events, podstep.ObserveFailed{Message: err.Error()})
			}
			w.lastObs, w.lastObsSeq = obs, seq
			stale = false
		}
		w.mu.Lock()
		out = podstep.Step(w.state, podstep.Input{Pod: pod, Removed: removed, Static: static, Runtime: obs,
			Events: events, Now: k.cfg.Clock.Now(), HostIP: k.cfg.NodeIP})
		cleaned, decided := w.state.VolumesRemoved, w.state.Admitted || w.state.Rejected != nil
		w.mu.Unlock()
		if decided {
			k.admitted(pod.UID)
		}
		events = nil
		if cleaned {
			w.closeCleanedUp()
		}
		if len(out.Actions) == 0 {
			if out.Status == nil || statusFailed {
				break
			}
			if err := w.pushStatus(ctx, pod, *out.Status); err != nil && ctx.Err() == nil {
				k.log.Warn("updating pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				statusFailed = true
				events = []podstep.Event{podstep.StatusFailed{Message: err.Error()}}
				continue // the step decides when to try again
			}
			break
		}
		events = w.execute(ctx, pod, obs, out.Actions)
		stale = obs == nil || slices.ContainsFunc(out.Actions, changesRuntime)
		if stale {
			w.lastObs = nil
		}
		if ctx.Err() != nil {
			return time.Time{}, false
		}
		if out.Done {
			return time.Time{}, true
		}
	}
	if len(events) > 0 {
		// Outcomes of the last round's actions: the next sync steps on them.
		w.mu.Lock()
		w.inbox = append(events, w.inbox...)
		w.mu.Unlock()
		w.wake()
	}
	if obs != nil {
		k.probes.Sync(pod, obs)
	}
	return out.WakeAt, false
}

// changesRuntime reports whether an action may change what the runtime
// holds for the pod: after the others (admission, events, volumes, the
// API object) the next step reads the same observation again.
func changesRuntime(a podstep.Action) bool {
	switch a.(type) {
	case podstep.Admit, podstep.RecordEvent, podstep.SetUpVolumes, podstep.RefreshTokens,
		podstep.RemoveVolumes, podstep.DeletePod:
		return false
	}
	return true
}

// execute performs a step's actions in order and returns their outcomes.
// It stops at the first action that fails (ActionFailed, VolumesFailed):
// the next step decides again. Consecutive container kills run at once.
func (w *podWorker) execute(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod, actions []podstep.Action) []podstep.Event {
	k := w.k
	var out []podstep.Event
	failed := func(a podstep.Action, err error) []podstep.Event {
		if ctx.Err() == nil {
			k.log.Warn("sync", "pod", pod.Namespace+"/"+pod.Name, "action", a.String(), "err", err)
		}
		return append(out, podstep.ActionFailed{Action: a.String(), Message: err.Error()})
	}
	var sbCfg *cri.PodSandboxConfig
	for i := 0; i < len(actions); i++ {
		switch a := actions[i].(type) {
		case podstep.Admit:
			out = append(out, podstep.Admission{Failure: w.admit(pod)})
		case podstep.RecordEvent:
			w.event(pod, a.Type, a.Reason, "%s", a.Message)
		case podstep.CreateSandbox:
			if err := w.createSandbox(ctx, pod, a.Attempt); err != nil {
				return failed(a, err)
			}
		case podstep.StopPod:
			for _, id := range a.SandboxIDs {
				if err := k.killSandboxContainers(ctx, id, a.Grace); err != nil {
					return failed(a, err)
				}
				if err := k.rt.StopPodSandbox(ctx, id); err != nil {
					return failed(a, err)
				}
			}
			out = append(out, podstep.PodStopped{Terminal: a.Terminal})
		case podstep.KillContainer:
			j := i
			for j < len(actions) {
				if _, ok := actions[j].(podstep.KillContainer); !ok {
					break
				}
				j++
			}
			events, err := w.killContainers(ctx, actions[i:j])
			out = append(out, events...)
			if err != nil {
				return failed(a, err)
			}
			i = j - 1
		case podstep.RunPreStop:
			w.runPreStop(ctx, pod, a)
			out = append(out, podstep.PreStopDone{ID: a.ID})
		case podstep.RemoveContainer:
			if err := k.rt.RemoveContainer(ctx, a.ID); err != nil {
				return failed(a, err)
			}
		case podstep.SetUpVolumes:
			sb := obs.ReadySandbox()
			if sb == nil {
				return failed(a, errors.New("no ready sandbox"))
			}
			refreshAt, err := k.prepareVolumes(ctx, pod, sb.Ip)
			if err != nil {
				var me *podstep.MountError
				return append(out, podstep.VolumesFailed{Names: a.Names, Mount: errors.As(err, &me), Message: err.Error()})
			}
			out = append(out, podstep.VolumesReady{RefreshAt: refreshAt})
		case podstep.StartContainer:
			sb := obs.ReadySandbox()
			if sb == nil {
				return failed(a, errors.New("no ready sandbox"))
			}
			if sbCfg == nil {
				sbCfg = k.sandboxConfig(pod)
			}
			out = append(out, w.startContainer(ctx, pod, obs, sb, sbCfg, a))
		case podstep.RefreshTokens:
			out = append(out, w.refreshTokens(ctx, pod, obs))
		case podstep.RemoveVolumes:
			if err := k.volumes.Remove(string(pod.UID)); err != nil {
				return failed(a, err)
			}
			out = append(out, podstep.VolumesRemoved{})
		case podstep.DeletePod:
			if err := w.deletePod(ctx, pod); err != nil {
				return failed(a, err)
			}
			out = append(out, podstep.PodDeleted{})
		case podstep.RemovePod:
			for _, id := range a.SandboxIDs {
				if err := k.rt.RemovePodSandbox(ctx, id); err != nil {
					k.log.Warn("removing sandbox", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
			}
			_ = os.RemoveAll(k.podDir(string(pod.UID)))
			_ = os.RemoveAll(k.logDir(pod))
		default:
			return failed(a, fmt.Errorf("unknown action %T", a))
		}
	}
	return out
}

// podInfoLocked is the scheduler's view of the worker's pod, made again
// only when the pod object changes: each admission reads it for every
// other pod on the node. Called with w.mu held.
func (w *podWorker) podInfoLocked() *framework.PodInfo {
	if w.info == nil || w.info.Pod != w.pod {
		w.info = framework.NewPodInfo(w.pod)
	}
	return w.info
}

// admit is node admission: nil admits the pod.
func (w *podWorker) admit(pod *corev1.Pod) *podstep.Failure {
	k := w.k
	node := k.nodes.Node()
	if node == nil {
		return nil // not registered yet: nothing to check against
	}
	k.admitMu.Lock()
	defer k.admitMu.Unlock()
	res := admitUnderPressure(pod, k.evictions.Conditions())
	if res == nil {
		res = admit(node, pod, k.admittedPods(pod.UID), k.cfg.AllowedUnsafeSysctls)
	}
	if res != nil {
		k.log.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", res.Reason, "message", res.Message)
		return res
	}
	k.mu.Lock()
	k.admitting[pod.UID] = pod
	k.mu.Unlock()
	return nil
}

func (w *podWorker) createSandbox(ctx context.Context, pod *corev1.Pod, attempt uint32) error {
	k := w.k
	if err := os.MkdirAll(k.podDir(string(pod.UID)), 0o755); err != nil {
		return err
	}
	if err := k.writeSandboxFiles(pod); err != nil {
		w.event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return err
	}
	cfg := k.sandboxConfig(pod)
	cfg.Metadata.Attempt = attempt
	start := time.Now()
	_, err := k.rt.RunPodSandbox(ctx, cfg)
	k.log.Debug("RunPodSandbox", "pod", pod.Namespace+"/"+pod.Name, "took", time.Since(start), "err", err)
	if err != nil {
		w.event(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
	}
	return err
}

// killContainers stops the containers of consecutive KillContainer
// actions at once.
func (w *podWorker) killContainers(ctx context.Context, kills []podstep.Action) ([]podstep.Event, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(kills))
	for i, a := range kills {
		kc := a.(podstep.KillContainer)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.k.rt.StopContainer(ctx, kc.ID, kc.Grace)
		}()
	}
	wg.Wait()
	var out []podstep.Event
	for i, a := range kills {
		if errs[i] == nil {
			out = append(out, podstep.ContainerKilled{ID: a.(podstep.KillContainer).ID})
		}
	}
	return out, errors.Join(errs...)
}

// runPreStop runs a preStop hook; a failure is an event, and the
// container is stopped all the same.
func (w *podWorker) runPreStop(ctx context.Context, pod *corev1.Pod, a podstep.RunPreStop) {
	c := podContainer(pod, a.Name)
	if c == nil {
		return
	}
	if err := w.k.runHook(ctx, pod, c, a.ID, pod.Status.PodIP, a.Handler, time.Duration(a.TimeoutSeconds)*time.Second); err != nil {
		w.event(pod, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
	}
}

// podContainer is the pod's container (app, init or ephemeral) of that
// name, nil for none.
func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// refreshTokens rewrites the pod's projected token volumes; a failure
// leaves the containers the old token, valid until it expires.
func (w *podWorker) refreshTokens(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod) podstep.Event {
	k := w.k
	podIP := ""
	if sb := obs.ReadySandbox(); sb != nil {
		podIP = sb.Ip
	}
	at, err := k.volumes.RefreshTokens(ctx, pod, podIP)
	if err != nil {
		k.log.Warn("refreshing service account token volumes", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		w.event(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for the service account token: %v", err)
		return podstep.TokensRefreshed{}
	}
	return podstep.TokensRefreshed{RefreshAt: at}
}

// deletePod deletes the API object of a pod whose containers are gone,
// with grace 0 and its UID as precondition (gone, or replaced by a pod
// of the same name, counts as done).
func (w *podWorker) deletePod(ctx context.Context, pod *corev1.Pod) error {
	uid := pod.UID
	err := w.k.cfg.Client.Pods().Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// startFailed records why a container could not start and says so to the step.
func (w *podWorker) startFailed(pod *corev1.Pod, name, reason, msg string) podstep.Event {
	w.event(pod, corev1.EventTypeWarning, "Failed", "Error: %s", reason)
	return podstep.StartFailed{Name: name, Reason: reason, Message: msg}
}

func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, obs *runtime.Pod, sb *cri.PodSandbox, sbCfg *cri.PodSandboxConfig, s podstep.StartContainer) podstep.Event {
	k := w.k
	c := s.Container
	img, failure := w.ensureImage(ctx, pod, c)
	if failure != nil {
		return failure
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
		if ce := (*podstep.ConfigError)(nil); errors.As(err, &ce) {
			w.event(pod, corev1.EventTypeWarning, "Failed", "Error: %s", err)
		}
		return w.startFailed(pod, c.Name, podstep.ReasonCreateContainerConfigError, err.Error())
	}
	t0 := time.Now()
	id, err := k.rt.CreateContainer(ctx, sb.Id, cfg, sbCfg)
	k.log.Debug("CreateContainer", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "took", time.Since(t0), "err", err)
	if err != nil {
		return w.startFailed(pod, c.Name, podstep.ReasonCreateContainerError, err.Error())
	}
	w.event(pod, corev1.EventTypeNormal, "Created", "Created container: %s", c.Name)
	t0 = time.Now()
	err = k.rt.StartContainer(ctx, id)
	k.log.Debug("StartContainer", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "took", time.Since(t0), "err", err)
	if err != nil {
		w.event(pod, corev1.EventTypeWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		_ = k.rt.RemoveContainer(ctx, id)
		return podstep.StartFailed{Name: c.Name, Reason: podstep.ReasonRunContainerError, Message: err.Error()}
	}
	w.event(pod, corev1.EventTypeNormal, "Started", "Started container %s", c.Name)
	w.postStart(ctx, pod, c, id, sb.Ip)
	return podstep.ContainerStarted{Name: c.Name, Previous: s.Previous}
}

// ensureImage makes the container's image present according to its pull
// policy; it returns the image, or the StartFailed event that says why
// not. Images loaded from an archive (local) are never pulled.
func (w *podWorker) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (*cri.Image, podstep.Event) {
	k := w.k
	if _, err := runtime.NormalizeImage(c.Image); err != nil {
		return nil, w.startFailed(pod, c.Name, podstep.ReasonInvalidImageName,
			fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", c.Image, c.Image))
	}
	img, err := k.rt.ImageStatus(ctx, c.Image)
	if err != nil {
		return nil, w.startFailed(pod, c.Name, podstep.ReasonErrImagePull, err.Error())
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
		w.event(pod, corev1.EventTypeWarning, podstep.ReasonErrImageNeverPull, "%s", msg)
		return nil, podstep.StartFailed{Name: c.Name, Reason: podstep.ReasonErrImageNeverPull, Message: msg}
	case img != nil && (policy != corev1.PullAlways || img.Local):
		w.event(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
		return img, nil
	}
	w.event(pod, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	_, err = k.rt.PullImage(pctx, c.Image, k.insecureRegistry(c.Image))
	cancel()
	w.pulling += time.Since(start)
	if err != nil {
		w.event(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		return nil, w.startFailed(pod, c.Name, podstep.ReasonErrImagePull, err.Error())
	}
	w.event(pod, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
	img, err = k.rt.ImageStatus(ctx, c.Image)
	if err != nil || img == nil {
		return nil, w.startFailed(pod, c.Name, podstep.ReasonErrImagePull, fmt.Sprintf("image %q missing after pull: %v", c.Image, err))
	}
	return img, nil
}

func (k *Kubelet) insecureRegistry(image string) bool {
	ref, err := runtime.NormalizeImage(image)
	if err != nil {
		return false
	}
	host, _, _ := strings.Cut(ref, "/")
	return slices.Contains(k.cfg.InsecureRegistries, host)
}

// evict sends the eviction to the step; the returned channel is closed
// once the pod's containers are stopped and its volumes removed.
func (w *podWorker) evict(f podstep.Failure) <-chan struct{} {
	w.mu.Lock()
	if w.cleanedUp == nil {
		w.cleanedUp = make(chan struct{})
	}
	done := w.cleanedUp
	w.inbox = append(w.inbox, podstep.Evict{Failure: f})
	w.mu.Unlock()
	w.wake()
	return done
}

// closeCleanedUp tells the eviction loop, if it waits, that the pod is
// cleaned up.
func (w *podWorker) closeCleanedUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cleanedUp != nil {
		select {
		case <-w.cleanedUp:
		default:
			close(w.cleanedUp)
		}
	}
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
