// Package nodestatus registers the kubelet's Node, keeps its status
// (capacity, info, addresses, conditions, images) and renews its Lease.
// See README.md.
package nodestatus

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/apiserver/validation"
	"minik/client"
	"minik/client/record"
	"minik/internal/volumeutil"
	"minik/kubelet/runtime"
)

// Config is what the node status manager needs from the kubelet.
type Config struct {
	NodeName string
	// NodeIP is the node's InternalIP.
	NodeIP string
	// RootDir is the kubelet's directory: its file system is the node's
	// ephemeral-storage capacity.
	RootDir string
	// PodCIDR is the pod range used while node.spec.podCIDR is empty.
	PodCIDR string
	// NodeLabels are added to the well-known labels at registration.
	NodeLabels map[string]string
	// RegisterWithTaints are set on the Node at registration.
	RegisterWithTaints []corev1.Taint
	// LocalPathDir is where the node keeps local-path volumes (published
	// as an annotation).
	LocalPathDir string
	// MaxPods is the node's pod capacity.
	MaxPods int
	// LeaseDuration is the Lease's duration, renewed every
	// LeaseRenewInterval; ReportInterval is the longest time between two
	// status writes when nothing changes.
	LeaseDuration, LeaseRenewInterval, ReportInterval time.Duration
	// ServingPort is the kubelet's HTTPS port (0: none);
	// RuntimeVersion is "name://version".
	ServingPort    int32
	RuntimeVersion string
	Client         *client.Client
	// Runtime is told the pod range (UpdatePodCIDR, whose answer makes
	// the node Ready or not) and lists the node's images.
	Runtime runtime.Runtime
	// Pressure returns the node conditions the eviction manager holds True.
	Pressure func() []corev1.NodeConditionType
	Recorder *record.Recorder
	Clock    clock.Clock
	Log      *slog.Logger
}

// Manager keeps the kubelet's Node: its registration, status and Lease.
type Manager struct {
	cfg  Config
	kick chan struct{} // wakes the status loop

	mu   sync.Mutex
	node *corev1.Node // the last Node seen or written
	// networkErr is why pods cannot get a network (the runtime's answer
	// to the last UpdatePodCIDR), nil when they can.
	networkErr error
}

// New returns a Manager; Register creates the Node.
func New(cfg Config) *Manager {
	return &Manager{cfg: cfg, kick: make(chan struct{}, 1)}
}

// Kick wakes the status loop (a pressure condition changed).
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Ref is the involved object of node events; as in the kubelet, its UID
// is the node's name.
func Ref(nodeName string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: types.UID(nodeName)}}
}

// KubeletVersion is reported in nodeInfo.
const KubeletVersion = "v1.37.2-minik"

const leaseNamespace = "kube-node-lease"

// Node is the last Node seen or written, nil before registration.
func (m *Manager) Node() *corev1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node
}

func (m *Manager) setNode(n *corev1.Node) {
	m.mu.Lock()
	m.node = n
	m.mu.Unlock()
}

// checkNetwork asks the runtime whether pods can get a network in the
// node's pod range. Every status pass and every Node seen re-check it, so
// that a repaired network makes the node Ready again within a pass.
func (m *Manager) checkNetwork(n *corev1.Node) {
	cidr := n.Spec.PodCIDR
	if cidr == "" {
		cidr = m.cfg.PodCIDR
	}
	if cidr != "" {
		m.setNetworkErr(m.cfg.Runtime.UpdatePodCIDR(context.Background(), cidr))
	}
}

// setNetworkErr keeps the runtime's verdict on the pod network and wakes
// the node status loop when it changed.
func (m *Manager) setNetworkErr(err error) {
	m.mu.Lock()
	changed := (err == nil) != (m.networkErr == nil) || err != nil && err.Error() != m.networkErr.Error()
	m.networkErr = err
	m.mu.Unlock()
	if !changed {
		return
	}
	if err != nil {
		m.cfg.Log.Error("pod network not ready; the node reports NotReady", "err", err)
	} else {
		m.cfg.Log.Info("pod network ready")
	}
	m.Kick()
}

// readyCondition is the node's Ready condition: NotReady while the
// runtime cannot give pods a network (as the kubelet reports a runtime
// whose NetworkReady is false), so that no pod is sent to a node where
// none can start.
func readyCondition(networkErr error) conditionState {
	if networkErr != nil {
		return conditionState{corev1.ConditionFalse, "KubeletNotReady",
			"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:" + networkErr.Error()}
	}
	return conditionState{corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"}
}

// Observe takes a watched version of our Node unless the kubelet
// already holds a newer one (from its own status update).
func (m *Manager) Observe(n *corev1.Node) {
	if cur := m.Node(); cur != nil && rvNumber(cur.ResourceVersion) > rvNumber(n.ResourceVersion) {
		return
	}
	m.setNode(n)
	m.checkNetwork(n)
}

func rvNumber(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// nodeLabels are the well-known labels plus --node-labels.
func (m *Manager) nodeLabels() map[string]string {
	l := map[string]string{
		corev1.LabelHostname: m.cfg.NodeName,
		corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH,
	}
	for key, v := range m.cfg.NodeLabels {
		l[key] = v
	}
	return l
}

// nodeAnnotations publishes where this node keeps local-path volumes.
func (m *Manager) nodeAnnotations() map[string]string {
	return map[string]string{volumeutil.AnnLocalPathDir: m.cfg.LocalPathDir}
}

// Register creates the Node, or takes over an existing one.
func (m *Manager) Register(ctx context.Context) error {
	// The pod range is set from the Node once it is known (setNode), not
	// from --pod-cidr first: on a restart that would reconcile the bridge
	// away from the range the node's running pods use.
	nodes := m.cfg.Client.Nodes()
	for attempt := 0; ; attempt++ {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Labels: m.nodeLabels(), Annotations: m.nodeAnnotations()},
			Spec:       corev1.NodeSpec{Taints: m.cfg.RegisterWithTaints},
		}
		created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := nodes.Get(ctx, "", m.cfg.NodeName, metav1.GetOptions{})
			if gerr != nil {
				err = gerr
			} else {
				err = nil
				changed := false
				if existing.Labels == nil {
					existing.Labels = map[string]string{}
				}
				for key, v := range m.nodeLabels() {
					if existing.Labels[key] != v {
						existing.Labels[key] = v
						changed = true
					}
				}
				for key, v := range m.nodeAnnotations() {
					if existing.Annotations[key] != v {
						metav1.SetMetaDataAnnotation(&existing.ObjectMeta, key, v)
						changed = true
					}
				}
				created = existing
				if changed {
					created, err = nodes.Update(ctx, existing, metav1.UpdateOptions{})
				}
			}
		}
		if err == nil {
			m.setNode(created)
			if _, err = m.updateNodeStatus(ctx, true); err == nil {
				m.cfg.Log.Info("node registered", "podCIDR", created.Spec.PodCIDR)
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.cfg.Log.Warn("registering the node; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.cfg.Clock.After(time.Duration(min(attempt+1, 7)) * time.Second):
		}
	}
}

// StatusLoop sends NodeStatus when it changes (checked every 10s) and
// otherwise when the report schedule says it is due.
func (m *Manager) StatusLoop(ctx context.Context) error {
	reports := reportSchedule{interval: m.cfg.ReportInterval, jitter: rand.Float64}
	reports.wrote(m.cfg.Clock.Now(), true) // Register has just written it
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.cfg.Clock.After(10 * time.Second):
		case <-m.kick:
		}
		now := m.cfg.Clock.Now()
		force := reports.due(now)
		changed, err := m.updateNodeStatus(ctx, force)
		if err != nil {
			m.cfg.Log.Warn("updating node status", "err", err)
			continue
		}
		if changed || force {
			reports.wrote(now, changed)
		}
	}
}

// reportSchedule says when a status that has not changed is written again
// (its heartbeat times renewed), as the kubelet decides it: interval after
// the last write, plus, after a write that carried a change (or at start),
// a one-time random delay in [-interval/2, interval/2). Without it, nodes
// started together would all report in the same instant for ever (1,000
// hollow nodes wrote their status within 10s every 5 minutes).
type reportSchedule struct {
	interval time.Duration
	jitter   func() float64 // uniform in [0, 1)
	last     time.Time
	delay    time.Duration
}

func (s *reportSchedule) due(now time.Time) bool {
	return now.Sub(s.last) >= s.interval+s.delay
}

// wrote records a write at now; changed says it carried a change.
func (s *reportSchedule) wrote(now time.Time, changed bool) {
	s.last, s.delay = now, 0
	if changed {
		s.delay = time.Duration((s.jitter() - 0.5) * float64(s.interval))
	}
}

// updateNodeStatus reads the Node, computes its status and writes it when
// it changed (or when force is set, to renew the heartbeat times). A
// conflict (the node controller wrote the Node in between: its podCIDR
// just after registration, or a taint) is retried at once on a fresh
// read, a few times, instead of waiting for the next round.
//
// The first try starts from the Node the kubelet last saw (its watch, or
// its own last write) instead of reading it, as the kubelet reads it from
// the apiserver's cache: every 10s on every node, a read would cost more
// than the rare conflict it avoids.
//
// changed says the status written differed from the Node's beyond its
// heartbeat times.
func (m *Manager) updateNodeStatus(ctx context.Context, force bool) (changed bool, err error) {
	for attempt := 0; ; attempt++ {
		changed, err := m.tryUpdateNodeStatus(ctx, force, attempt > 0)
		if !apierrors.IsConflict(err) || attempt == 4 {
			return changed, err
		}
	}
}

func (m *Manager) tryUpdateNodeStatus(ctx context.Context, force, read bool) (changed bool, err error) {
	nodes := m.cfg.Client.Nodes()
	node := m.Node()
	if read || node == nil {
		if node, err = nodes.Get(ctx, "", m.cfg.NodeName, metav1.GetOptions{}); err != nil {
			return false, err
		}
		m.setNode(node)
	}
	m.checkNetwork(node)
	want := m.nodeStatus(ctx, node.Status)
	changed = !apiequality.Semantic.DeepEqual(stripHeartbeats(want), stripHeartbeats(node.Status))
	if !force && !changed {
		return false, nil
	}
	oldConditions := node.Status.Conditions
	node = node.DeepCopy()
	node.Status = want
	updated, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return false, err
	}
	m.setNode(updated)
	m.recordConditionEvents(oldConditions, want.Conditions)
	return changed, nil
}

func stripHeartbeats(s corev1.NodeStatus) corev1.NodeStatus {
	s = *s.DeepCopy()
	for i := range s.Conditions {
		s.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return s
}

// nodeStatus is the node's status: resources read from the host, info,
// addresses, the kubelet endpoint, conditions and images.
func (m *Manager) nodeStatus(ctx context.Context, old corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.NewTime(m.cfg.Clock.Now().Truncate(time.Second))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(host().memTotal, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(m.cfg.MaxPods), resource.DecimalSI),
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(m.cfg.RootDir, &fs) == nil {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	// Extended resources others advertise (a device plugin, or an admin's
	// patch, as upstream's e2e suite makes) are kept: the kubelet owns
	// only the resources it measures, and allocatable follows capacity.
	for name, q := range old.Capacity {
		if validation.IsExtendedResourceName(name) {
			capacity[name] = q
		}
	}
	s := corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity.DeepCopy(),
		Phase: "",
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: m.cfg.NodeIP},
			{Type: corev1.NodeHostName, Address: m.cfg.NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: m.cfg.ServingPort}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: host().machineID, BootID: host().bootID,
			KernelVersion: host().kernel, OSImage: host().osImage,
			ContainerRuntimeVersion: m.cfg.RuntimeVersion, KubeletVersion: KubeletVersion, KubeProxyVersion: "",
			OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH,
		},
	}
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
	}
	pressure := m.cfg.Pressure()
	for _, p := range pressureConditions {
		c := p.ok
		if slices.Contains(pressure, p.typ) {
			c = p.pressure
		}
		s.Conditions = append(s.Conditions, cond(p.typ, c.status, c.reason, c.message))
	}
	m.mu.Lock()
	ready := readyCondition(m.networkErr)
	m.mu.Unlock()
	s.Conditions = append(s.Conditions, cond(corev1.NodeReady, ready.status, ready.reason, ready.message))
	if imgs, err := m.cfg.Runtime.ListImages(ctx); err == nil {
		for _, img := range imgs {
			names := append(append([]string{}, img.RepoDigests...), img.RepoTags...)
			s.Images = append(s.Images, corev1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		}
	}
	return s
}

// conditionState is a node condition's status with its reason and message.
type conditionState struct {
	status          corev1.ConditionStatus
	reason, message string
}

// pressureConditions are the node conditions the eviction manager sets,
// with the kubelet's reasons and messages.
var pressureConditions = []struct {
	typ          corev1.NodeConditionType
	ok, pressure conditionState
}{
	{corev1.NodeMemoryPressure,
		conditionState{corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		conditionState{corev1.ConditionTrue, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"}},
	{corev1.NodeDiskPressure,
		conditionState{corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		conditionState{corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure"}},
	{corev1.NodePIDPressure,
		conditionState{corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		conditionState{corev1.ConditionTrue, "KubeletHasInsufficientPID", "kubelet has insufficient PID available"}},
}

// recordConditionEvents sends the kubelet's node events for conditions
// whose status changed ("Node N status is now: NodeHasDiskPressure"); the
// event reason is the condition's reason with Kubelet replaced by Node.
func (m *Manager) recordConditionEvents(old, cur []corev1.NodeCondition) {
	for _, c := range cur {
		if c.Type == corev1.NodeReady {
			continue
		}
		changed := true
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				changed = false
			}
		}
		if changed {
			reason := "Node" + strings.TrimPrefix(c.Reason, "Kubelet")
			m.cfg.Recorder.Eventf(Ref(m.cfg.NodeName), corev1.EventTypeNormal, reason, "Node %s status is now: %s", m.cfg.NodeName, reason)
		}
	}
}

// hostFacts are what the node status reports of the host that cannot
// change while the kubelet runs, read once per process as the kubelet
// reads cAdvisor's machine info once: rereading five files every 10s is
// most of an idle kubelet's status work, and thousands of hollow
// kubelets in one process would each do it.
type hostFacts struct {
	machineID, bootID, kernel, osImage string
	memTotal                           int64 // bytes
}

var host = sync.OnceValue(func() hostFacts {
	return hostFacts{machineID: readTrim("/etc/machine-id"), bootID: readTrim("/proc/sys/kernel/random/boot_id"),
		kernel: readTrim("/proc/sys/kernel/osrelease"), osImage: osImage(), memTotal: memTotal()}
})

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func osImage() string {
	for _, line := range strings.Split(readTrim("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() int64 {
	for _, line := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// LeaseLoop renews the node's Lease in kube-node-lease every
// LeaseRenewInterval: the node lifecycle controller's heartbeat. As the
// kubelet's lease controller, it renews the Lease it last wrote without
// reading it first, and reads it again only when that write fails.
func (m *Manager) LeaseLoop(ctx context.Context) error {
	leases := m.cfg.Client.Leases()
	var last *coordinationv1.Lease
	for {
		var err error
		if last, err = m.renewLease(ctx, leases, last); err != nil && ctx.Err() == nil {
			m.cfg.Log.Warn("renewing the node lease", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.cfg.Clock.After(m.cfg.LeaseRenewInterval):
		}
	}
}

// renewLease renews last (the Lease as last written, nil for none) and
// returns the Lease written, nil after a failure.
func (m *Manager) renewLease(ctx context.Context, leases interface {
	Get(context.Context, string, string, metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(context.Context, *coordinationv1.Lease, metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
}, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(m.cfg.Clock.Now())
	holder := m.cfg.NodeName
	dur := int32(m.cfg.LeaseDuration / time.Second)
	if last != nil {
		lease := last.DeepCopy()
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &dur, &now
		if written, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			return written, nil
		}
		// Changed or gone meanwhile: read it as it is now.
	}
	lease, err := leases.Get(ctx, leaseNamespace, m.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: m.cfg.NodeName, Namespace: leaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now},
		}
		if n := m.Node(); n != nil && n.UID != "" {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
		}
		return leases.Create(ctx, lease, metav1.CreateOptions{})
	} else if err != nil {
		return nil, err
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &dur, &now
	return leases.Update(ctx, lease, metav1.UpdateOptions{})
}
