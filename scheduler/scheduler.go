// Package scheduler assigns pending pods to nodes. See README.md for the
// flow; the pieces are:
//
//   - queue/: the pods waiting for a node (priority order, backoff,
//     event-driven requeue);
//   - cache/: nodes and the pods on them, assumed pods, and the
//     incremental snapshot a cycle reads;
//   - framework/: the extension points and the Framework that runs them;
//   - plugins/: one package per plugin, listed in plugins/registry.go.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/leaderelection"
	"minik/client/record"
	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/plugins"
	"minik/scheduler/plugins/interpodaffinity"
	"minik/scheduler/plugins/podtopologyspread"
	"minik/scheduler/queue"
)

// EventRecorder emits Kubernetes Events; *record.Recorder is one.
type EventRecorder interface {
	Eventf(obj client.Object, eventType, reason, messageFmt string, args ...any)
}

// Config configures a scheduler. Only Client is required.
type Config struct {
	Client *client.Client
	// SchedulerName is the spec.schedulerName of the pods to schedule.
	// Default "default-scheduler".
	SchedulerName string
	// PercentageOfNodesToScore: 0 (the default) is adaptive; 100 scores
	// every feasible node. Clusters under 100 nodes are always fully scored.
	PercentageOfNodesToScore int32
	// Seed seeds the random choice among nodes with equal scores.
	// Default 0: seeded from the time.
	Seed uint64
	// Clock drives backoff and requeue timers. Default: real time.
	Clock clock.Clock
	// InitialBackoff and MaxBackoff bound the wait after a failure.
	// Defaults 1s and 10s.
	InitialBackoff, MaxBackoff time.Duration
	// LeaderElect makes the scheduler take a Lease before it schedules, so
	// that only one of several replicas is active.
	LeaderElect bool
	// LeaseNamespace holds the Lease. Default "kube-system".
	LeaseNamespace string
	// LeaseDuration is how long a silent leader keeps the lease.
	// Default 10s, so a standby takes over within about 12s.
	LeaseDuration time.Duration
	// Identity names this replica in the Lease. Default HOSTNAME_PID.
	Identity string
	// Recorder defaults to a record.Recorder on Client, run by Run.
	Recorder EventRecorder
	// Parallelism is the number of goroutines filtering and scoring.
	// Default GOMAXPROCS.
	Parallelism int
	// BindConcurrency bounds the binds under way (assumed, not yet
	// bound): the scheduling loop waits while that many are. Default 512.
	BindConcurrency int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (cfg *Config) setDefaults() error {
	if cfg.Client == nil {
		return errors.New("scheduler: Config.Client is required")
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = corev1.DefaultSchedulerName
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = "kube-system"
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 10 * time.Second
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if cfg.BindConcurrency <= 0 {
		cfg.BindConcurrency = 512
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// LeaseName is the Lease a scheduler named name elects its leader
// through: "kube-scheduler" for the default scheduler, as in Kubernetes,
// else the name itself.
func LeaseName(name string) string {
	if name == corev1.DefaultSchedulerName {
		return "kube-scheduler"
	}
	return name
}

// Run schedules pods until ctx ends. With LeaderElect it first waits to
// become the leader, and returns an error if leadership is lost.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	if !cfg.LeaderElect {
		return New(cfg).Run(ctx)
	}
	var runErr error
	err := leaderelection.Run(ctx, leaderelection.Config{
		Client: cfg.Client, Namespace: cfg.LeaseNamespace, Name: LeaseName(cfg.SchedulerName), Identity: cfg.Identity,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.LeaseDuration * 7 / 10, RetryPeriod: cfg.LeaseDuration / 5,
	}, func(ctx context.Context) {
		runErr = New(cfg).Run(ctx)
	})
	return errors.Join(err, runErr)
}

// Scheduler is one scheduler's state: informers, cache, queue, framework.
type Scheduler struct {
	cfg       Config
	log       *slog.Logger
	client    *client.Client
	fwk       *framework.Framework
	cache     *cache.Cache
	queue     *queue.Queue
	snapshot  *cache.Snapshot
	nominator *nominator
	// inflight holds preemptors until their victims are deleted
	// (preemption.go).
	inflight *preemptions
	recorder EventRecorder
	// runRecorder sends the recorder's events, if the scheduler made it.
	runRecorder func(context.Context)
	rng         *rand.Rand

	pods       *informer.Informer[corev1.Pod]
	nodes      *informer.Informer[corev1.Node]
	namespaces *informer.Informer[corev1.Namespace]
	pdbs       *informer.Informer[policyv1.PodDisruptionBudget]
	services   *informer.Informer[corev1.Service]
	storage    *storageInformers

	nextStartNodeIndex int
	// verdicts and passed are findFeasible's per-node buffers, reused
	// across cycles.
	verdicts  []*framework.Status
	passed    []bool
	bindSlots chan struct{}
	writes    chan struct{} // see write
	wg        sync.WaitGroup
	synced    chan struct{}
}

// New returns a scheduler for cfg (with defaults applied); start it with
// Run.
func New(cfg Config) *Scheduler {
	if err := cfg.setDefaults(); err != nil {
		panic(err)
	}
	profile := plugins.DefaultProfile(cfg.SchedulerName, api{cfg.Client})
	profile.PercentageOfNodesToScore = cfg.PercentageOfNodesToScore
	profile.Parallelism = cfg.Parallelism
	s := &Scheduler{
		cfg:       cfg,
		log:       cfg.Logger.With("scheduler", cfg.SchedulerName),
		client:    cfg.Client,
		fwk:       framework.New(profile),
		cache:     cache.New(),
		queue:     queue.New(queue.Config{Clock: cfg.Clock, InitialBackoff: cfg.InitialBackoff, MaxBackoff: cfg.MaxBackoff}),
		snapshot:  cache.NewEmptySnapshot(),
		nominator: newNominator(),
		inflight:  newPreemptions(),
		recorder:  cfg.Recorder,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed>>1|1)),
		bindSlots: make(chan struct{}, cfg.BindConcurrency),
		writes:    make(chan struct{}, writesInFlight),
		synced:    make(chan struct{}),
	}
	if s.recorder == nil {
		rec := record.NewRecorder(cfg.Client, cfg.SchedulerName, cfg.Identity)
		s.recorder, s.runRecorder = rec, rec.Run
	}
	s.fwk.NominatedPods = s.nominator.podsFor
	s.pods = informer.New(cfg.Client.Pods(), informer.Config{Logger: cfg.Logger})
	s.nodes = informer.New(cfg.Client.Nodes(), informer.Config{Logger: cfg.Logger})
	s.namespaces = informer.New(cfg.Client.Namespaces(), informer.Config{Logger: cfg.Logger})
	s.pdbs = informer.New(client.For[policyv1.PodDisruptionBudget](cfg.Client, client.PodDisruptionBudgets), informer.Config{Logger: cfg.Logger})
	s.services = informer.New(client.For[corev1.Service](cfg.Client, servicesResource), informer.Config{Logger: cfg.Logger})
	s.storage = newStorageInformers(cfg.Client, informer.Config{Logger: cfg.Logger})
	s.snapshot.SetStorage(s.storage)
	s.storage.requeueOn(s.queue)
	s.addEventHandlers()
	return s
}

// AddPodHandler registers h on the scheduler's pod informer, so that a
// caller (a benchmark, say) follows pods without a second watch. Call it
// before Run.
func (s *Scheduler) AddPodHandler(h informer.Handler[corev1.Pod]) { s.pods.AddHandler(h) }

// Synced is closed once the scheduler has listed nodes and pods and
// starts scheduling.
func (s *Scheduler) Synced() <-chan struct{} { return s.synced }

// Run lists and watches, then schedules one pod at a time until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	if s.runRecorder != nil {
		bg.Go(func() { s.runRecorder(ctx) })
	}
	// Budgets only guide preemption, Services only the default spreading
	// (a score): scheduling does not wait for them. Services are watched
	// only if the apiserver serves them.
	informers := []func(context.Context) error{s.pods.Run, s.nodes.Run, s.namespaces.Run, s.pdbs.Run,
		s.storage.claims.Run, s.storage.volumes.Run, s.storage.classes.Run}
	if servesServices(ctx, s.client) {
		informers = append(informers, s.services.Run)
	}
	for _, run := range informers {
		bg.Go(func() { _ = run(ctx) })
	}
	for _, c := range []<-chan struct{}{s.pods.Synced(), s.nodes.Synced(), s.namespaces.Synced(),
		s.storage.claims.Synced(), s.storage.volumes.Synced(), s.storage.classes.Synced()} {
		select {
		case <-c:
		case <-ctx.Done():
			return nil
		}
	}
	bg.Go(func() { s.queue.Run(ctx) })
	defer pending.add(s.queue)()
	s.log.Info("scheduler started", "nodes", s.cache.NodeCount())
	close(s.synced)
	for ctx.Err() == nil {
		s.scheduleOne(ctx)
	}
	s.wg.Wait() // binds in flight
	return nil
}

// scheduleOne takes the next pod and runs a scheduling cycle for it; the
// bind runs in the background.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		return
	}
	pod := qp.Pod
	if pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		return
	}
	start := time.Now()
	cycle := s.queue.SchedulingCycle()
	s.cache.UpdateSnapshot(s.snapshot)
	state := framework.NewCycleState()
	state.SetPodInfo(qp.PodInfo)

	host, err := s.schedulePod(ctx, state, pod)
	if ctx.Err() != nil {
		return // stopping
	}
	if err != nil {
		var fitErr *framework.FitError
		result := resultError
		var p *preemption
		if errors.As(err, &fitErr) {
			result = resultUnschedulable
			p = s.preempt(state, pod, fitErr)
		}
		s.observeAttempt(result, start)
		s.handleFailure(ctx, qp, cycle, err, p)
		return
	}

	// Assume: count the pod on its node now, so the next cycle sees it.
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	assumedInfo := *qp.PodInfo // what it requests and selects is the same
	assumedInfo.Pod = assumed
	if err := s.cache.AssumePodInfo(&assumedInfo); err != nil {
		s.observeAttempt(resultError, start)
		s.handleFailure(ctx, qp, cycle, err, nil)
		return
	}
	s.nominator.delete(pod)

	select {
	case s.bindSlots <- struct{}{}:
	case <-ctx.Done():
		s.cache.ForgetPod(assumed)
		return
	}
	s.wg.Go(func() {
		defer func() { <-s.bindSlots }()
		var st *framework.Status
		var bindStart time.Time
		_ = s.write(func() error {
			bindStart = time.Now()
			if st = s.fwk.RunPreBind(ctx, state, assumed, host); st.IsSuccess() {
				st = s.fwk.RunBind(ctx, assumed, host)
			}
			return nil
		})
		s.observePoint("Bind", st, bindStart)
		if !st.IsSuccess() {
			s.observeAttempt(resultError, start)
			s.cache.ForgetPod(assumed)
			s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
			s.handleFailure(ctx, qp, cycle, fmt.Errorf("binding rejected: %w", st.AsError()), nil)
			return
		}
		s.observeAttempt(resultScheduled, start)
		s.log.Debug("bound", "pod", qp.Key(), "node", host)
		s.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, host)
	})
}

// ErrNoNodesAvailable is the failure when the cluster has no nodes.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// schedulePod runs PreFilter, Filter, PreScore and Score, and returns the
// chosen node or a *framework.FitError.
func (s *Scheduler) schedulePod(ctx context.Context, state *framework.CycleState, pod *corev1.Pod) (string, error) {
	snap := s.snapshot
	all := snap.List()
	if len(all) == 0 {
		return "", ErrNoNodesAvailable
	}
	start := time.Now()
	st := s.fwk.RunPreFilter(state, pod, snap)
	s.observePoint("PreFilter", st, start)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", st.AsError()
		}
		statuses := framework.NodeToStatus{}
		for _, ni := range all {
			statuses[ni.Node().Name] = st
		}
		return "", &framework.FitError{NumAllNodes: len(all), Statuses: statuses, PreFilterMsg: st.Message()}
	}

	// A pod that preempted others tries its nominated node first.
	if nom := pod.Status.NominatedNodeName; nom != "" {
		if ni := snap.Get(nom); ni != nil && s.fwk.RunFilterWithNominated(state, pod, ni).IsSuccess() {
			return nom, nil
		}
	}

	start = time.Now()
	feasible, statuses, err := s.findFeasible(ctx, state, pod, all)
	var filterStatus *framework.Status
	switch {
	case err != nil:
		filterStatus = framework.NewStatus(framework.Error)
	case len(feasible) == 0:
		filterStatus = framework.NewStatus(framework.Unschedulable)
	}
	s.observePoint("Filter", filterStatus, start)
	if err != nil {
		return "", err
	}
	switch len(feasible) {
	case 0:
		return "", &framework.FitError{NumAllNodes: len(all), Statuses: statuses}
	case 1:
		return feasible[0].Node().Name, nil
	}
	start = time.Now()
	st = s.fwk.RunPreScore(state, pod, feasible, snap)
	s.observePoint("PreScore", st, start)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	start = time.Now()
	totals, _, st := s.fwk.RunScore(ctx, state, pod, feasible)
	s.observePoint("Score", st, start)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	return selectHost(feasible, totals, s.rng), nil
}

// findFeasible filters nodes, starting where the previous cycle stopped
// so that every node gets its turn, until NumFeasibleNodesToFind pass.
func (s *Scheduler) findFeasible(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, all []*framework.NodeInfo) ([]*framework.NodeInfo, framework.NodeToStatus, error) {
	n := len(all)
	want := int64(s.fwk.NumFeasibleNodesToFind(n))
	if cap(s.verdicts) < n {
		s.verdicts = make([]*framework.Status, n)
		s.passed = make([]bool, n)
	}
	// Only the nodes this cycle reached are looked at and cleared again
	// after: a cycle that stops at 500 of 5,000 nodes does not walk the
	// other 4,500 twice.
	verdicts, passed := s.verdicts[:n], s.passed[:n]
	var count, rejected atomic.Int64
	var failed atomic.Pointer[framework.Status]
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start, reached := s.nextStartNodeIndex, 0
	defer func() {
		for i := range reached {
			idx := (start + i) % n
			verdicts[idx], passed[idx] = nil, false
		}
	}()
	reached = framework.Parallelize(fctx, s.fwk.Parallelism, n, func(i int) {
		idx := (start + i) % n
		st := s.fwk.RunFilterWithNominated(state, pod, all[idx])
		switch {
		case st.IsSuccess():
			if count.Add(1) > want {
				cancel() // enough: this one is not counted
				return
			}
			passed[idx] = true
			if count.Load() == want {
				cancel()
			}
		case st.Code() == framework.Error:
			failed.CompareAndSwap(nil, st)
			cancel()
		default:
			verdicts[idx] = st
			rejected.Add(1)
		}
	})
	if st := failed.Load(); st != nil {
		return nil, nil, st.AsError()
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err // stopping: the search is incomplete
	}
	feasible := make([]*framework.NodeInfo, 0, min(count.Load(), want))
	// Sized at once: a pod that fits nowhere has a status from every node,
	// and growing the map node by node rehashes it again and again.
	statuses := make(framework.NodeToStatus, rejected.Load())
	processed := 0
	for i := range reached {
		idx := (start + i) % n
		switch {
		case passed[idx]:
			feasible = append(feasible, all[idx])
			processed++
		case verdicts[idx] != nil:
			statuses[all[idx].Node().Name] = verdicts[idx]
			processed++
		}
	}
	s.nextStartNodeIndex = (start + processed) % n
	return feasible, statuses, nil
}

// selectHost returns the node with the highest total (totals[i] is
// nodes[i]'s), choosing at random (with rng) among equals.
func selectHost(nodes []*framework.NodeInfo, totals []int64, rng *rand.Rand) string {
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rng.IntN(ties) == 0 { // reservoir sampling: each tie equally likely
				best = i
			}
		}
	}
	return nodes[best].Node().Name
}

// handleFailure reports a failed cycle (event and PodScheduled condition)
// and puts the pod back in the queue, unless it is gone or bound. If its
// preemption p nominated a node, the nomination goes in the same status
// patch (as upstream), written while the victims are deleted, as
// kube-scheduler's asynchronous preemption does: the preemptor's wait for
// its room is one round trip shorter.
func (s *Scheduler) handleFailure(ctx context.Context, qp *queue.QueuedPodInfo, cycle int64, err error, p *preemption) {
	pod := qp.Pod
	var fitErr *framework.FitError
	rejected := errors.As(err, &fitErr) || errors.Is(err, ErrNoNodesAvailable)
	reason := corev1.PodReasonUnschedulable
	if !rejected {
		reason = "SchedulerError"
	}
	msg := err.Error()
	s.log.Debug("unable to schedule", "pod", qp.Key(), "reason", msg)

	cur, ok := s.pods.Store().Get(pod.Namespace, pod.Name)
	if !ok || cur.UID != pod.UID || cur.Spec.NodeName != "" {
		if p != nil { // deleted or bound meanwhile: its victims may stay
			s.nominator.delete(pod)
			s.abandonPreemption(pod)
		}
		return
	}
	if cur.ResourceVersion != pod.ResourceVersion && podChangedForScheduling(pod, cur) {
		// Changed while it was being scheduled: retry the new version after
		// its backoff instead of waiting for an event.
		qp.PodInfo = framework.NewPodInfo(cur)
		rejected = false
	}
	nominated := ""
	if p != nil {
		nominated = p.node
	}
	if withNom := withNomination(qp.Pod, nominated); withNom != qp.Pod {
		qp.PodInfo = framework.NewPodInfo(withNom)
	}
	qp.UnschedulablePlugins = sets.New[string]()
	if fitErr != nil {
		for _, st := range fitErr.Statuses {
			qp.UnschedulablePlugins.Insert(st.Plugin())
		}
	}
	s.queue.AddUnschedulable(qp, cycle, rejected)
	s.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "%s", msg)
	status := statusChange(cur, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg}, nominated)
	if p == nil {
		if status != nil {
			s.patchStatus(cur, status)
		}
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, apiTimeout)
		defer cancel()
		var nominating sync.WaitGroup
		var nominateErr error
		if status != nil {
			nominating.Go(func() { nominateErr = s.patchStatusNow(ctx, cur, status) })
		}
		s.deleteVictims(ctx, pod, p)
		if nominating.Wait(); nominateErr != nil {
			s.abandonPreemption(pod) // not nominated: retry it rather than wait
		}
	})
}

// withNomination returns pod carrying the node its preemption just
// nominated (a copy; pod itself when there is none or it has it already).
// The failed cycle requeues it so, before the nomination's patch comes
// back through the informer (the queue drops updates of a pod being
// scheduled): the next cycle tries that node first and does not preempt on
// another node while the victims there terminate.
func withNomination(pod *corev1.Pod, nominated string) *corev1.Pod {
	if nominated == "" || pod.Status.NominatedNodeName == nominated {
		return pod
	}
	pod = pod.DeepCopy()
	pod.Status.NominatedNodeName = nominated
	return pod
}

// addEventHandlers connects the informers to the cache and the queue.
func (s *Scheduler) addEventHandlers() {
	s.pods.AddHandler(informer.Handler[corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			switch {
			case p.Spec.NodeName != "":
				s.cache.AddPod(p)
				s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodAdd, podEventPlugins...)
			case s.responsibleFor(p):
				if nom := p.Status.NominatedNodeName; nom != "" {
					s.nominator.add(p, nom)
				}
				s.queue.Add(p)
			}
		},
		OnUpdate: func(old, p *corev1.Pod) {
			switch {
			case p.Spec.NodeName != "" && old.Spec.NodeName == "":
				// Bound (by us or by someone else).
				s.queue.Delete(p)
				s.nominator.delete(p)
				s.inflight.forget(p.UID)
				s.cache.AddPod(p)
				s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodAdd, podEventPlugins...)
			case p.Spec.NodeName != "":
				s.cache.UpdatePod(old, p)
				if !equality.Semantic.DeepEqual(old.Labels, p.Labels) {
					s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodUpdate, podEventPlugins...)
				}
			case s.responsibleFor(p):
				if s.cache.IsAssumedPod(p) {
					return // being bound
				}
				if len(old.Spec.SchedulingGates) > 0 {
					s.queue.Add(p) // its last scheduling gate was just removed
					return
				}
				switch nom := p.Status.NominatedNodeName; {
				case nom != "":
					s.nominator.add(p, nom)
				case old.Status.NominatedNodeName != "":
					s.nominator.delete(p) // cleared by a more important preemptor
				}
				s.queue.Update(old, p)
			default:
				// Terminating, finished, or not ours (any more).
				s.queue.Delete(p)
				s.nominator.delete(p)
				s.inflight.forget(p.UID)
			}
			if p.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				s.inflight.victimTerminating(p.UID)
			}
		},
		OnDelete: func(p *corev1.Pod) {
			if p.Spec.NodeName != "" {
				s.cache.RemovePod(p) // before podDeleted: see preemptions.start
				s.podDeleted(p)      // before the event, which then moves the preemptors it released
				s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
				return
			}
			s.queue.Delete(p)
			s.nominator.delete(p)
			s.inflight.forget(p.UID)
			if s.cache.IsAssumedPod(p) {
				s.cache.RemovePod(p) // deleted while its bind was in flight
			}
		},
	})
	s.nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd: func(n *corev1.Node) {
			s.cache.AddNode(n)
			s.nodeChanged()
			s.queue.MoveAllToActiveOrBackoff(queue.NodeAdd)
		},
		OnUpdate: func(old, n *corev1.Node) {
			s.cache.UpdateNode(old, n)
			if nodeSchedulingPropertiesChanged(old, n) {
				s.nodeChanged()
				s.queue.MoveAllToActiveOrBackoff(queue.NodeUpdate)
			}
		},
		OnDelete: func(n *corev1.Node) { s.cache.RemoveNode(n) },
	})
	s.namespaces.AddHandler(informer.Handler[corev1.Namespace]{
		OnAdd: func(ns *corev1.Namespace) { s.cache.SetNamespace(ns.Name, nonNil(ns.Labels)) },
		OnUpdate: func(old, ns *corev1.Namespace) {
			s.cache.SetNamespace(ns.Name, nonNil(ns.Labels))
			if !equality.Semantic.DeepEqual(old.Labels, ns.Labels) {
				s.queue.MoveAllToActiveOrBackoff(queue.NamespaceUpdate, interpodaffinity.Name)
			}
		},
		OnDelete: func(ns *corev1.Namespace) { s.cache.SetNamespace(ns.Name, nil) },
	})
	s.pdbs.AddHandler(informer.Handler[policyv1.PodDisruptionBudget]{
		OnAdd:    s.cache.SetPDB,
		OnUpdate: func(_, pdb *policyv1.PodDisruptionBudget) { s.cache.SetPDB(pdb) },
		OnDelete: s.cache.RemovePDB,
	})
	// A Service change wakes no pod: the default spreading only scores.
	s.services.AddHandler(informer.Handler[corev1.Service]{
		OnAdd:    s.cache.SetService,
		OnUpdate: func(_, svc *corev1.Service) { s.cache.SetService(svc) },
		OnDelete: s.cache.RemoveService,
	})
}

// servicesResource is core/v1 services.
var servicesResource = client.Resource{Version: "v1", Resource: "services", Namespaced: true}

// servesServices asks discovery whether the apiserver serves Services; a
// failed request answers yes (the informer retries its list).
func servesServices(ctx context.Context, c *client.Client) bool {
	var list metav1.APIResourceList
	if err := c.Do(ctx, http.MethodGet, "/api/v1", nil, nil, &list); err != nil {
		return true
	}
	for _, r := range list.APIResources {
		if r.Name == servicesResource.Resource {
			return true
		}
	}
	return false
}

// podEventPlugins are the plugins a pod added or relabelled on a node
// can help: those about other pods.
var podEventPlugins = []string{interpodaffinity.Name, podtopologyspread.Name}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// responsibleFor reports whether p is a pending pod for this scheduler,
// ready to schedule: no scheduling gate holds it back.
func (s *Scheduler) responsibleFor(p *corev1.Pod) bool {
	return p.Spec.SchedulerName == s.cfg.SchedulerName && p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0 &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podChangedForScheduling reports whether a pod's spec or labels changed.
func podChangedForScheduling(old, cur *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, cur.Spec) || !equality.Semantic.DeepEqual(old.Labels, cur.Labels)
}

// nodeSchedulingPropertiesChanged reports whether a node update could let
// a pod fit that did not before: labels, taints, allocatable, cordon or
// images. Heartbeats and condition changes alone do not count.
func nodeSchedulingPropertiesChanged(old, n *corev1.Node) bool {
	return old.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Status.Images, n.Status.Images)
}
