package podstep

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/internal/podtest"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var makePod = podtest.MakePod

// obsB builds what the runtime holds.
type obsB struct{ o *runtime.Pod }

func makeObs() *obsB { return &obsB{&runtime.Pod{}} }

func (b *obsB) Sandbox(ready bool) *obsB {
	st := cri.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = cri.PodSandboxState_SANDBOX_READY
	}
	b.o.Sandboxes = append(b.o.Sandboxes, &cri.PodSandbox{Id: "sb" + strconv.Itoa(len(b.o.Sandboxes)), State: st,
		CreatedAt: int64(len(b.o.Sandboxes) + 1), Ip: "10.0.0.2"})
	return b
}

func (b *obsB) add(name string, state cri.ContainerState, exit int32, restarts int, finished time.Time) *obsB {
	n := len(b.o.Containers)
	c := &cri.ContainerStatus{Id: name + "-" + strconv.Itoa(n), Metadata: &cri.ContainerMetadata{Name: name},
		State: state, CreatedAt: int64(100 + n), ExitCode: exit, StartedAt: finished.Add(-time.Second).UnixNano(),
		Annotations: map[string]string{runtime.AnnotationRestartCount: strconv.Itoa(restarts)}}
	if state == cri.ContainerState_CONTAINER_EXITED {
		c.FinishedAt = finished.UnixNano()
		c.Reason = "Completed"
		if exit != 0 {
			c.Reason = "Error"
		}
	}
	b.o.Containers = append(b.o.Containers, c)
	return b
}
func (b *obsB) Running(name string, restarts int) *obsB {
	return b.add(name, cri.ContainerState_CONTAINER_RUNNING, 0, restarts, t0)
}
func (b *obsB) Exited(name string, code int32, restarts int, at time.Time) *obsB {
	return b.add(name, cri.ContainerState_CONTAINER_EXITED, code, restarts, at)
}

// MadeFrom stamps the last container added with the hash of image's spec
// (the kubelet stamps every container it creates).
func (b *obsB) MadeFrom(image string) *obsB {
	c := b.o.Containers[len(b.o.Containers)-1]
	c.Annotations[runtime.AnnotationContainerHash] = ContainerHash(&corev1.Container{Name: c.Metadata.Name, Image: image})
	return b
}
func (b *obsB) Obj() *runtime.Pod { b.o.Sort(); return b.o }

func started(a plan) []string {
	var out []string
	for _, s := range a.Start {
		out = append(out, s.Container.Name+"#"+strconv.Itoa(s.RestartCount))
	}
	return out
}

func TestComputePlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		obs     *runtime.Pod
		state   func(*State)
		now     time.Time
		want    []string // containers started, as name#restartCount
		sandbox bool
		kill    int
		term    bool
		wakeAt  time.Time
	}{
		{name: "a new pod gets a sandbox first", pod: makePod("a").Obj(), obs: makeObs().Obj(), sandbox: true},
		{name: "with a sandbox every app container starts", pod: makePod("a", "b").Obj(), obs: makeObs().Sandbox(true).Obj(), want: []string{"a#0", "b#0"}},
		{name: "init containers start one at a time, before app containers", pod: makePod("a").Init("i1", "i2").Obj(),
			obs: makeObs().Sandbox(true).Obj(), want: []string{"i1#0"}},
		{name: "a running init container holds everything back", pod: makePod("a").Init("i1", "i2").Obj(),
			obs: makeObs().Sandbox(true).Running("i1", 0).Obj()},
		{name: "the next init container starts after the previous succeeded", pod: makePod("a").Init("i1", "i2").Obj(),
			obs: makeObs().Sandbox(true).Exited("i1", 0, 0, t0).Obj(), want: []string{"i2#0"}},
		{name: "app containers start once every init container succeeded", pod: makePod("a").Init("i1").Obj(),
			obs: makeObs().Sandbox(true).Exited("i1", 0, 0, t0).Obj(), want: []string{"a#0"}},
		{name: "a failed init container with restartPolicy Never fails the pod", pod: makePod("a").Init("i1").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(true).Exited("i1", 1, 0, t0).Obj(), term: true},
		{name: "a crashed container restarts at once the first time", pod: makePod("a").Obj(),
			obs: makeObs().Sandbox(true).Exited("a", 1, 0, t0).Obj(), now: t0.Add(time.Second), want: []string{"a#1"}},
		{name: "during back-off a crashed container waits and a wake-up is asked for", pod: makePod("a").Obj(),
			obs:   makeObs().Sandbox(true).Exited("a", 1, 1, t0).Obj(),
			state: func(s *State) { s.BackOff["a"] = 10 * time.Second }, now: t0.Add(3 * time.Second), wakeAt: t0.Add(10 * time.Second)},
		{name: "after the back-off the container restarts with the next count", pod: makePod("a").Obj(),
			obs:   makeObs().Sandbox(true).Exited("a", 1, 1, t0).Obj(),
			state: func(s *State) { s.BackOff["a"] = 10 * time.Second }, now: t0.Add(11 * time.Second), want: []string{"a#2"}},
		{name: "OnFailure does not restart a container that succeeded", pod: makePod("a").Policy(corev1.RestartPolicyOnFailure).Obj(),
			obs: makeObs().Sandbox(true).Exited("a", 0, 0, t0).Obj(), term: true},
		{name: "OnFailure restarts a container that failed", pod: makePod("a").Policy(corev1.RestartPolicyOnFailure).Obj(),
			obs: makeObs().Sandbox(true).Exited("a", 2, 0, t0).Obj(), want: []string{"a#1"}},
		{name: "Never leaves a failed container and ends the pod", pod: makePod("a", "b").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(true).Exited("a", 2, 0, t0).Exited("b", 0, 0, t0).Obj(), term: true},
		{name: "Never with one container still running is not terminal", pod: makePod("a", "b").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(true).Exited("a", 2, 0, t0).Running("b", 0).Obj()},
		{name: "an ephemeral container starts once its target runs", pod: makePod("a").Debug("dbg", "a").Obj(),
			obs: makeObs().Sandbox(true).Running("a", 0).Obj(), want: []string{"dbg#0"}},
		{name: "an ephemeral container waits for its target to run", pod: makePod("a").Debug("dbg", "a").Obj(),
			obs: makeObs().Sandbox(true).Obj(), want: []string{"a#0"}},
		{name: "an ephemeral container without a target starts with the pod's", pod: makePod("a").Debug("dbg", "").Obj(),
			obs: makeObs().Sandbox(true).Obj(), want: []string{"a#0", "dbg#0"}},
		{name: "an exited ephemeral container is never restarted", pod: makePod("a").Debug("dbg", "a").Obj(),
			obs: makeObs().Sandbox(true).Running("a", 0).Exited("dbg", 1, 0, t0).Obj(), now: t0.Add(time.Hour)},
		{name: "an unhealthy container is killed", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Running("a", 0).Obj(),
			state: func(s *State) { s.Unhealthy["a-0"] = "failed liveness probe" }, kill: 1},
		{name: "a running container made from the same spec is left alone", pod: makePod("a").Obj(),
			obs: makeObs().Sandbox(true).Running("a", 0).MadeFrom("busybox").Obj()},
		{name: "a running container whose image changed is killed", pod: makePod("a").Obj(),
			obs: makeObs().Sandbox(true).Running("a", 0).MadeFrom("busybox:old").Obj(), kill: 1},
		{name: "once killed for its new spec it starts again at once, even under Never", pod: makePod("a").Policy(corev1.RestartPolicyNever).Obj(),
			obs:   makeObs().Sandbox(true).Exited("a", 137, 0, t0).MadeFrom("busybox:old").Obj(),
			state: func(s *State) { s.BackOff["a"] = time.Minute }, now: t0.Add(time.Second), want: []string{"a#1"}},
		{name: "a container without a spec hash counts as unchanged", pod: makePod("a").Obj(),
			obs: makeObs().Sandbox(true).Running("a", 0).Obj()},
		{name: "an evicted pod's running containers are stopped", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Running("a", 0).Obj(),
			state: func(s *State) { s.Evicted = &Failure{Reason: "Evicted"} }, term: true},
		{name: "an evicted pod's crashed container is not restarted", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Exited("a", 1, 0, t0).Obj(),
			state: func(s *State) { s.Evicted = &Failure{Reason: "Evicted"} }, now: t0.Add(time.Minute), term: true},
		{name: "a dead sandbox is replaced", pod: makePod("a").Obj(), obs: makeObs().Sandbox(false).Exited("a", 137, 0, t0).Obj(), sandbox: true},
		{name: "a terminal pod's dead sandbox stays dead", pod: makePod("a").Phase(corev1.PodSucceeded).Obj(), obs: makeObs().Sandbox(false).Obj()},
		{name: "an image pull failure holds the container back until its back-off ends", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Obj(),
			state: func(s *State) {
				s.Waiting["a"] = Waiting{Reason: ReasonErrImagePull, Until: t0.Add(10 * time.Second)}
			}, now: t0, wakeAt: t0.Add(10 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState(time.Time{})
			if tc.state != nil {
				tc.state(st)
			}
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			a := computePlan(tc.pod, tc.obs, st, now)
			if got := started(a); len(got) != len(tc.want) || (len(got) > 0 && !equal(got, tc.want)) {
				t.Errorf("started %v, want %v", got, tc.want)
			}
			if a.CreateSandbox != tc.sandbox {
				t.Errorf("CreateSandbox = %v, want %v", a.CreateSandbox, tc.sandbox)
			}
			if len(a.Kill) != tc.kill {
				t.Errorf("killed %d containers, want %d", len(a.Kill), tc.kill)
			}
			if a.Terminal != tc.term {
				t.Errorf("Terminal = %v, want %v", a.Terminal, tc.term)
			}
			if !a.WakeAt.Equal(tc.wakeAt) {
				t.Errorf("WakeAt = %v, want %v", a.WakeAt, tc.wakeAt)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNextBackOff(t *testing.T) {
	short := &cri.ContainerStatus{StartedAt: t0.UnixNano(), FinishedAt: t0.Add(time.Second).UnixNano()}
	long := &cri.ContainerStatus{StartedAt: t0.UnixNano(), FinishedAt: t0.Add(11 * time.Minute).UnixNano()}
	for _, tc := range []struct {
		name string
		cur  time.Duration
		prev *cri.ContainerStatus
		want time.Duration
	}{
		{"the first restart sets 10s", 0, short, 10 * time.Second},
		{"the back-off doubles", 10 * time.Second, short, 20 * time.Second},
		{"the back-off stops at 5 minutes", 4 * time.Minute, short, 5 * time.Minute},
		{"10 minutes of running resets it", 5 * time.Minute, long, 10 * time.Second},
		{"a first start has none", 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextBackOff(tc.cur, tc.prev); got != tc.want {
				t.Errorf("nextBackOff(%v) = %v, want %v", tc.cur, got, tc.want)
			}
		})
	}
}

func TestStepRefreshesTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}}}
	obs := makeObs().Sandbox(true).Running("c", 0).Obj()
	tests := []struct {
		name        string
		pod         *corev1.Pod
		refreshAt   time.Time
		wantRefresh bool
		wantWake    time.Time
	}{
		{name: "tokens not written yet are due", pod: pod, wantRefresh: true},
		{name: "tokens not due yet wake the worker when they are", pod: pod, refreshAt: now.Add(time.Minute), wantWake: now.Add(time.Minute)},
		{name: "tokens due are refreshed", pod: pod, refreshAt: now, wantRefresh: true},
		{name: "a pod without token volumes has nothing to refresh", pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := NewState(time.Time{})
			st.VolumesRefreshAt = tt.refreshAt
			a := computePlan(tt.pod, obs, st, now)
			if a.RefreshTokens != tt.wantRefresh || !a.WakeAt.Equal(tt.wantWake) {
				t.Errorf("RefreshTokens %v WakeAt %v, want %v %v", a.RefreshTokens, a.WakeAt, tt.wantRefresh, tt.wantWake)
			}
		})
	}
}

func TestNewPodWritesItsTokensOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
		Volumes: []corev1.Volume{{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}}}
	st := NewState(time.Time{})
	in := Input{Pod: pod, Runtime: makeObs().Sandbox(true).Obj(), Now: now}
	p := computePlan(pod, in.Runtime, st, now)
	if !p.RefreshTokens || len(p.Start) != 1 {
		t.Fatalf("plan: RefreshTokens %v, %d to start; want the tokens due and c to start", p.RefreshTokens, len(p.Start))
	}
	// SetUpVolumes writes every volume, the token's too: no refresh before it.
	var got []string
	for _, a := range planActions(st, in, p) {
		got = append(got, fmt.Sprint(a))
	}
	if want := []string{"setup-volumes", "start c restarts=0"}; !slices.Equal(got, want) {
		t.Errorf("actions %q, want %q", got, want)
	}
}
