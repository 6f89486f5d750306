package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client/informer"
	"minik/client/record"
	"minik/internal/hostip"
	"minik/internal/resourcemetrics"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Kubelet is one node agent. Create it with Run.
type Kubelet struct {
	cfg      Config
	log      *slog.Logger
	rt       runtime.Runtime
	recorder *record.Recorder
	pods     *informer.Informer[corev1.Pod]
	// services feeds the pods' service environment variables.
	services *serviceSource
	probes   *prober
	// tokens are the service-account tokens of projected volumes.
	tokens *tokenManager
	// evictions is the eviction policy; stats feeds it.
	evictions *eviction.Manager
	stats     StatsProvider
	// startTime is when the kubelet started; cpuSampler turns the CPU
	// counters /stats/summary reads into rates (summary.go).
	startTime  time.Time
	cpuSampler resourcemetrics.Sampler

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	node    *corev1.Node // the last Node seen or written
	// runtimeVersion is the runtime's name and version for node status.
	runtimeVersion string
	// servingPort is the HTTPS endpoint's port, once listening.
	servingPort int32
	// static is the static pod source (nil without PodManifestPath).
	static *staticPods
	// nodeStatusKick wakes the node status loop.
	nodeStatusKick chan struct{}
	// networkErr is why pods cannot get a network (the runtime's answer
	// to the last UpdatePodCIDR), nil when they can.
	networkErr error
}

// Run runs the kubelet until ctx ends: it registers the Node, keeps its
// Lease and status, and runs the pods bound to it.
func Run(ctx context.Context, cfg Config) error {
	if cfg.NodeName == "" || cfg.Client == nil || cfg.Runtime == nil || cfg.RootDir == "" {
		return errors.New("kubelet: NodeName, Client, Runtime and RootDir are required")
	}
	cfg.defaults()
	k := &Kubelet{
		cfg: cfg, log: cfg.Logger.With("component", "kubelet", "node", cfg.NodeName), rt: cfg.Runtime,
		recorder: record.NewRecorder(cfg.Client, "kubelet", cfg.NodeName),
		workers:  map[types.UID]*podWorker{}, nodeStatusKick: make(chan struct{}, 1),
		startTime: cfg.Clock.Now(), cpuSampler: resourcemetrics.Sampler{MinWindow: 10 * time.Second},
	}
	k.probes = newProber(k)
	k.tokens = newTokenManager(requestTokenFrom(func(ctx context.Context, method, path string, body, out any) error {
		return cfg.Client.Do(ctx, method, path, nil, body, out)
	}))
	k.evictions = eviction.NewManager(cfg.EvictionHard, cfg.EvictionPressureTransitionPeriod)
	k.stats = cfg.Stats
	if k.stats == nil {
		k.stats = hostStats{k}
	}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return err
	}
	v, err := k.rt.Version(ctx)
	if err != nil {
		return fmt.Errorf("kubelet: the runtime does not answer: %w", err)
	}
	k.runtimeVersion = v.RuntimeName + "://" + v.RuntimeVersion

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	goRun := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				errc <- err
			}
		}()
	}
	goRun(func(ctx context.Context) error { k.recorder.Run(ctx); return nil })

	// The HTTPS endpoint first, so that registration can report its port.
	if cfg.TLSCertFile != "" {
		l, err := net.Listen("tcp", cfg.ServingAddress)
		if err != nil {
			return fmt.Errorf("kubelet: listening on %s: %w", cfg.ServingAddress, err)
		}
		k.servingPort = int32(l.Addr().(*net.TCPAddr).Port)
		goRun(func(ctx context.Context) error { return k.serve(ctx, l) })
	}
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	goRun(k.leaseLoop)
	goRun(k.nodeStatusLoop)
	// Watch our own Node, as Kubernetes' kubelet does, so that admission
	// sees taints and labels that others change (kubectl taint, the node
	// lifecycle controller) at once, not at the next status update.
	nodes := cfg.nodeInformer(k.log)
	nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    k.observeNode,
		OnUpdate: func(_, n *corev1.Node) { k.observeNode(n) },
	})
	goRun(nodes.Run)

	// Services for the pods' environment variables: listed beside the pods,
	// so that the first containers need not wait for them.
	k.services = cfg.serviceSource(k.log)
	goRun(k.services.run)

	k.pods = cfg.podInformer(k.log)
	k.pods.AddHandler(informer.Handler[corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { k.podUpdated(ctx, p) },
		OnUpdate: func(_, p *corev1.Pod) { k.podUpdated(ctx, p) },
		OnDelete: func(p *corev1.Pod) { k.podDeleted(ctx, p) },
	})
	goRun(k.pods.Run)
	if cfg.PodManifestPath != "" {
		k.static = newStaticPods(k)
		goRun(k.static.run)
	}
	select {
	case <-k.pods.Synced():
	case <-ctx.Done():
		wg.Wait()
		return nil
	case err := <-errc:
		cancel()
		wg.Wait()
		return err
	}
	// Pods deleted while the kubelet was down: their containers go now.
	// Running containers of known pods are adopted by their workers.
	if err := k.cleanupOrphans(ctx); err != nil {
		k.log.Warn("cleaning up orphaned pods", "err", err)
	}
	goRun(k.plegLoop)
	goRun(k.evictionLoop)
	goRun(k.reclaimLoop)
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	k.log.Info("kubelet running", "runtime", k.runtimeVersion, "endpoint", fmt.Sprintf("%s:%d", cfg.NodeIP, k.servingPort),
		"evictionHard", eviction.FormatThresholds(cfg.EvictionHard))
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	wg.Wait()
	return err
}

// isMirror reports whether pod is the API's copy of a static pod.
func isMirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[annotationConfigMirror]
	return ok
}

func (k *Kubelet) podUpdated(ctx context.Context, p *corev1.Pod) {
	if isMirror(p) {
		if k.static != nil {
			k.static.mirrorChanged(ctx, p)
		}
		return
	}
	k.worker(ctx, p.UID).update(p.DeepCopy(), false)
}

func (k *Kubelet) podDeleted(ctx context.Context, p *corev1.Pod) {
	if isMirror(p) {
		if k.static != nil {
			k.static.mirrorChanged(ctx, nil)
		}
		return
	}
	k.mu.Lock()
	w := k.workers[p.UID]
	k.mu.Unlock()
	if w != nil {
		w.update(p.DeepCopy(), true)
	}
}

// worker returns the pod's worker, starting it if needed.
func (k *Kubelet) worker(ctx context.Context, uid types.UID) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.workers[uid]
	if !ok {
		w = &podWorker{k: k, uid: uid, kick: make(chan struct{}, 1), state: newPodState()}
		w.state.startTime = k.cfg.Clock.Now()
		k.workers[uid] = w
		go w.run(ctx)
	}
	return w
}

// runningPods are the pods admitted and not finished or being evicted
// (for the eviction manager, which must not pick a pod twice).
func (k *Kubelet) runningPods(except types.UID) []*corev1.Pod {
	return k.podsWhere(except, func(st *podState) bool { return !st.terminal && st.evicted == nil })
}

// admittedPods are the pods whose containers may still run, and so hold
// the node's resources, for admission: a pod being deleted or evicted
// counts until the kubelet has stopped its containers (the node is never
// overcommitted), and no longer once they are stopped, even while its
// sandbox and API object are still being removed (upstream's kubelet
// skips the pods its workers know terminated). Counting it longer made
// a preemptor bound as soon as its victim left the API fail with
// OutOfcpu.
func (k *Kubelet) admittedPods(except types.UID) []*corev1.Pod {
	return k.podsWhere(except, func(st *podState) bool { return !st.terminal })
}

func (k *Kubelet) podsWhere(except types.UID, keep func(*podState) bool) []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*corev1.Pod
	for uid, w := range k.workers {
		if uid == except {
			continue
		}
		w.mu.Lock()
		p, ok := w.pod, w.state.admitted && keep(w.state)
		w.mu.Unlock()
		if p != nil && ok && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// observe reads what the runtime holds for one pod.
func (k *Kubelet) observe(ctx context.Context, uid types.UID) (*observed, error) {
	sbs, err := k.rt.ListPodSandbox(ctx)
	if err != nil {
		return nil, err
	}
	obs := &observed{}
	for _, sb := range sbs {
		if sb.Metadata.GetUid() != string(uid) {
			continue
		}
		obs.Sandboxes = append(obs.Sandboxes, sb)
		sts, err := runtime.ContainerStatuses(ctx, k.rt, sb.Id)
		if err != nil {
			return nil, err
		}
		obs.Containers = append(obs.Containers, sts...)
	}
	obs.sort()
	return obs, nil
}

// cleanupOrphans removes sandboxes of pods the apiserver no longer has.
func (k *Kubelet) cleanupOrphans(ctx context.Context) error {
	sbs, err := k.rt.ListPodSandbox(ctx)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range k.pods.Store().List() {
		known[string(p.UID)] = true
	}
	if k.static != nil {
		for _, uid := range k.static.uids() {
			known[uid] = true
		}
	}
	for _, sb := range sbs {
		uid := sb.Metadata.GetUid()
		if known[uid] {
			continue
		}
		k.log.Info("removing the containers of a pod deleted while the kubelet was away", "pod", sb.Metadata.GetNamespace()+"/"+sb.Metadata.GetName(), "uid", uid)
		if err := k.killSandboxContainers(ctx, sb.Id, 2); err != nil {
			return err
		}
		if err := k.rt.StopPodSandbox(ctx, sb.Id); err != nil {
			return err
		}
		if err := k.rt.RemovePodSandbox(ctx, sb.Id); err != nil {
			return err
		}
		if err := k.removeVolumes(uid); err != nil {
			k.log.Warn("removing the volumes of a deleted pod", "uid", uid, "err", err)
		}
		_ = os.RemoveAll(k.podDir(uid))
	}
	return nil
}

func (k *Kubelet) killSandboxContainers(ctx context.Context, sandboxID string, grace int64) error {
	cs, err := k.rt.ListContainers(ctx, sandboxID)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(cs))
	for i, c := range cs {
		if c.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = k.rt.StopContainer(ctx, c.Id, grace)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// defaultNodeIP is the host's primary IPv4 address, the one the apiserver
// also advertises by default.
func defaultNodeIP() string { return hostip.PrimaryIPv4() }
