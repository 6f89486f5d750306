package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client/informer"
	"minik/client/record"
	"minik/internal/hostip"
	"minik/kubelet/eviction"
	"minik/kubelet/nodestatus"
	"minik/kubelet/objectcache"
	"minik/kubelet/podstep"
	"minik/kubelet/prober"
	"minik/kubelet/runtime"
	"minik/kubelet/server"
	"minik/kubelet/volumes"
	"minik/proto/cri"
	"minik/scheduler/framework"
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
	probes   *prober.Manager
	// volumes sets up and tears down the pods' volumes.
	volumes *volumes.Manager
	// evictions is the eviction policy; stats feeds it.
	evictions *eviction.Manager
	stats     eviction.StatsProvider
	// nodes registers the Node and keeps its status and Lease.
	nodes *nodestatus.Manager
	// configMaps and secrets are the objects the pods name, each watched
	// while a pod names it.
	configMaps *objectcache.Cache[corev1.ConfigMap]
	secrets    *objectcache.Cache[corev1.Secret]

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	// static is the static pod source (nil without PodManifestPath).
	static *staticPods

	// admitMu makes admission one pod at a time, as the kubelet's
	// HandlePodAdditions; admitting holds the pods admitted whose step
	// has not yet recorded it, so that the next admission counts them.
	admitMu   sync.Mutex
	admitting map[types.UID]*corev1.Pod
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
		workers:  map[types.UID]*podWorker{}, admitting: map[types.UID]*corev1.Pod{},
	}
	k.probes = prober.New(prober.Config{Runtime: k.rt, Clock: cfg.Clock, Results: k.probeResult, PodIP: k.podIP,
		Event: func(pod *corev1.Pod, typ, reason, msg string) {
			k.recorder.Eventf(k.eventTarget(pod), typ, reason, "%s", msg)
		}})
	k.configMaps, k.secrets = cfg.objectCaches(ctx, k.log)
	k.volumes = volumes.New(volumes.Config{NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, RootDir: cfg.RootDir,
		PodDir: k.podDir, Node: func() *corev1.Node { return k.nodes.Node() }, Client: cfg.Client, Clock: cfg.Clock, Log: k.log,
		NoMounts: cfg.NoVolumeMounts, ConfigMaps: k.configMaps.Get, Secrets: k.secrets.Get})
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
	runtimeVersion := v.RuntimeName + "://" + v.RuntimeVersion

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
	var servingPort int32
	if cfg.TLSCertFile != "" {
		l, err := net.Listen("tcp", cfg.ServingAddress)
		if err != nil {
			return fmt.Errorf("kubelet: listening on %s: %w", cfg.ServingAddress, err)
		}
		servingPort = int32(l.Addr().(*net.TCPAddr).Port)
		srv := server.New(server.Config{NodeName: cfg.NodeName, RootDir: cfg.RootDir, TLSCertFile: cfg.TLSCertFile,
			TLSKeyFile: cfg.TLSKeyFile, ClientCAFile: cfg.ClientCAFile, Runtime: k.rt, Pods: podsView{k}, Clock: cfg.Clock})
		goRun(func(ctx context.Context) error { return srv.Serve(ctx, l) })
	}
	k.nodes = nodestatus.New(nodestatus.Config{NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, RootDir: cfg.RootDir,
		PodCIDR: cfg.PodCIDR, NodeLabels: cfg.NodeLabels, RegisterWithTaints: cfg.RegisterWithTaints,
		LocalPathDir: k.volumes.LocalPathDir(), MaxPods: cfg.MaxPods, LeaseDuration: cfg.LeaseDuration,
		LeaseRenewInterval: cfg.LeaseRenewInterval, ReportInterval: cfg.NodeStatusReportInterval,
		ServingPort: servingPort, RuntimeVersion: runtimeVersion, Client: cfg.Client, Runtime: k.rt,
		Pressure: k.evictions.Conditions, Recorder: k.recorder, Clock: cfg.Clock, Log: k.log})
	if err := k.nodes.Register(ctx); err != nil {
		return err
	}
	goRun(k.nodes.LeaseLoop)
	goRun(k.nodes.StatusLoop)
	// Watch our own Node, as Kubernetes' kubelet does, so that admission
	// sees taints and labels that others change (kubectl taint, the node
	// lifecycle controller) at once, not at the next status update.
	nodes := cfg.nodeInformer(k.log)
	nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    k.nodes.Observe,
		OnUpdate: func(_, n *corev1.Node) { k.nodes.Observe(n) },
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
	goRun(func(ctx context.Context) error {
		return eviction.RunLoop(ctx, eviction.LoopConfig{NodeName: cfg.NodeName, Manager: k.evictions, Stats: k.stats,
			Pods: evictionPods{k}, Interval: cfg.EvictionMonitoringInterval, PressureChanged: k.nodes.Kick,
			Recorder: k.recorder, Clock: cfg.Clock, Log: k.log})
	})
	goRun(k.volumes.ReclaimLoop)
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	k.log.Info("kubelet running", "runtime", runtimeVersion, "endpoint", fmt.Sprintf("%s:%d", cfg.NodeIP, servingPort),
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
	k.configMaps.RegisterPod(p)
	k.secrets.RegisterPod(p)
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
		w = &podWorker{k: k, uid: uid, kick: make(chan struct{}, 1), state: podstep.NewState(k.cfg.Clock.Now())}
		k.workers[uid] = w
		go w.run(ctx)
	}
	return w
}

// admittedPods are the pods whose containers may still run, and so hold
// the node's resources, for admission: a pod being deleted or evicted
// counts until the kubelet has stopped its containers (the node is never
// overcommitted), and no longer once they are stopped, even while its
// sandbox and API object are still being removed (upstream's kubelet
// skips the pods its workers know terminated). Counting it longer made
// a preemptor bound as soon as its victim left the API fail with
// OutOfcpu.
func (k *Kubelet) admittedPods(except types.UID) []*framework.PodInfo {
	var out []*framework.PodInfo
	k.eachPodWhere(except, func(st *podstep.State) bool { return !st.Terminal }, func(w *podWorker) {
		out = append(out, w.podInfoLocked())
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid, p := range k.admitting {
		if uid != except && !slices.ContainsFunc(out, func(q *framework.PodInfo) bool { return q.Pod.UID == uid }) {
			out = append(out, framework.NewPodInfo(p))
		}
	}
	return out
}

// admitted drops the pod from admitting once its step has recorded
// admission's answer.
func (k *Kubelet) admitted(uid types.UID) {
	k.mu.Lock()
	delete(k.admitting, uid)
	k.mu.Unlock()
}

func (k *Kubelet) podsWhere(except types.UID, keep func(*podstep.State) bool) []*corev1.Pod {
	var out []*corev1.Pod
	k.eachPodWhere(except, keep, func(w *podWorker) { out = append(out, w.pod) })
	return out
}

// eachPodWhere calls f, with the worker's lock held, for each worker but
// except's whose pod is admitted, not finished, and keep(state).
func (k *Kubelet) eachPodWhere(except types.UID, keep func(*podstep.State) bool, f func(w *podWorker)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for uid, w := range k.workers {
		if uid == except {
			continue
		}
		w.mu.Lock()
		if p := w.pod; p != nil && w.state.Admitted && keep(w.state) && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			f(w)
		}
		w.mu.Unlock()
	}
}

// podsView is the HTTPS server's view of the pods this kubelet runs.
type podsView struct{ k *Kubelet }

// Find finds a pod this kubelet runs by namespace and name.
func (v podsView) Find(ns, name string) *corev1.Pod {
	v.k.mu.Lock()
	defer v.k.mu.Unlock()
	for _, w := range v.k.workers {
		w.mu.Lock()
		p := w.pod
		w.mu.Unlock()
		if p != nil && p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

func (v podsView) All() []*corev1.Pod { return v.k.knownPods() }

func (v podsView) WaitingReason(uid types.UID, container string) string {
	v.k.mu.Lock()
	w := v.k.workers[uid]
	v.k.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		if wt, ok := w.state.Waiting[container]; ok {
			return wt.Reason
		}
	}
	return "ContainerCreating"
}

// observe reads what the runtime holds for one pod.
func (k *Kubelet) observe(ctx context.Context, uid types.UID) (*runtime.Pod, error) {
	return runtime.ObservePod(ctx, k.rt, uid)
}

// cleanupOrphans removes sandboxes of pods the apiserver no longer has.
func (k *Kubelet) cleanupOrphans(ctx context.Context) error {
	sbs, err := k.rt.ListPodSandbox(ctx, "")
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
		if err := k.volumes.Remove(uid); err != nil {
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
