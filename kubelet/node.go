package kubelet

import (
	"context"
	"fmt"
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

	"minik/internal/volumeutil"
)

// KubeletVersion is reported in nodeInfo.
const KubeletVersion = "v1.37.2-minik"

const leaseNamespace = "kube-node-lease"

func (k *Kubelet) currentNode() *corev1.Node {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.node
}

func (k *Kubelet) setNode(n *corev1.Node) {
	k.mu.Lock()
	k.node = n
	k.mu.Unlock()
	// Each Node seen (at least every status pass) re-checks the pod
	// network, so a repaired one makes the node Ready again.
	cidr := n.Spec.PodCIDR
	if cidr == "" {
		cidr = k.cfg.PodCIDR
	}
	if cidr != "" {
		k.setNetworkErr(k.rt.UpdatePodCIDR(context.Background(), cidr))
	}
}

// setNetworkErr keeps the runtime's verdict on the pod network and wakes
// the node status loop when it changed.
func (k *Kubelet) setNetworkErr(err error) {
	k.mu.Lock()
	changed := (err == nil) != (k.networkErr == nil) || err != nil && err.Error() != k.networkErr.Error()
	k.networkErr = err
	k.mu.Unlock()
	if !changed {
		return
	}
	if err != nil {
		k.log.Error("pod network not ready; the node reports NotReady", "err", err)
	} else {
		k.log.Info("pod network ready")
	}
	select {
	case k.nodeStatusKick <- struct{}{}:
	default:
	}
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

// observeNode takes a watched version of our Node unless the kubelet
// already holds a newer one (from its own status update).
func (k *Kubelet) observeNode(n *corev1.Node) {
	if cur := k.currentNode(); cur != nil && rvNumber(cur.ResourceVersion) > rvNumber(n.ResourceVersion) {
		return
	}
	k.setNode(n)
}

func rvNumber(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// nodeLabels are the well-known labels plus --node-labels.
func (k *Kubelet) nodeLabels() map[string]string {
	l := map[string]string{
		corev1.LabelHostname: k.cfg.NodeName,
		corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH,
	}
	for key, v := range k.cfg.NodeLabels {
		l[key] = v
	}
	return l
}

// nodeAnnotations publishes where this node keeps local-path volumes.
func (k *Kubelet) nodeAnnotations() map[string]string {
	return map[string]string{volumeutil.AnnLocalPathDir: k.localPathDir()}
}

// registerNode creates the Node, or takes over an existing one.
func (k *Kubelet) registerNode(ctx context.Context) error {
	// The pod range is set from the Node once it is known (setNode), not
	// from --pod-cidr first: on a restart that would reconcile the bridge
	// away from the range the node's running pods use.
	nodes := k.cfg.Client.Nodes()
	for attempt := 0; ; attempt++ {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: k.nodeLabels(), Annotations: k.nodeAnnotations()},
			Spec:       corev1.NodeSpec{Taints: k.cfg.RegisterWithTaints},
		}
		created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			existing, gerr := nodes.Get(ctx, "", k.cfg.NodeName, metav1.GetOptions{})
			if gerr != nil {
				err = gerr
			} else {
				err = nil
				changed := false
				if existing.Labels == nil {
					existing.Labels = map[string]string{}
				}
				for key, v := range k.nodeLabels() {
					if existing.Labels[key] != v {
						existing.Labels[key] = v
						changed = true
					}
				}
				for key, v := range k.nodeAnnotations() {
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
			k.setNode(created)
			if err = k.updateNodeStatus(ctx, true); err == nil {
				k.log.Info("node registered", "podCIDR", created.Spec.PodCIDR)
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k.log.Warn("registering the node; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-k.cfg.Clock.After(time.Duration(min(attempt+1, 7)) * time.Second):
		}
	}
}

// nodeStatusLoop sends NodeStatus when it changes (checked every 10s) and
// at least every NodeStatusReportInterval.
func (k *Kubelet) nodeStatusLoop(ctx context.Context) error {
	last := k.cfg.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.cfg.Clock.After(10 * time.Second):
		case <-k.nodeStatusKick:
		}
		force := k.cfg.Clock.Now().Sub(last) >= k.cfg.NodeStatusReportInterval
		if err := k.updateNodeStatus(ctx, force); err != nil {
			k.log.Warn("updating node status", "err", err)
			continue
		}
		if force {
			last = k.cfg.Clock.Now()
		}
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
func (k *Kubelet) updateNodeStatus(ctx context.Context, force bool) error {
	for attempt := 0; ; attempt++ {
		err := k.tryUpdateNodeStatus(ctx, force, attempt > 0)
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
	}
}

func (k *Kubelet) tryUpdateNodeStatus(ctx context.Context, force, read bool) error {
	nodes := k.cfg.Client.Nodes()
	node := k.currentNode()
	if read || node == nil {
		var err error
		if node, err = nodes.Get(ctx, "", k.cfg.NodeName, metav1.GetOptions{}); err != nil {
			return err
		}
		k.setNode(node)
	}
	want := k.nodeStatus(ctx, node.Status)
	if !force && apiequality.Semantic.DeepEqual(stripHeartbeats(want), stripHeartbeats(node.Status)) {
		return nil
	}
	oldConditions := node.Status.Conditions
	node = node.DeepCopy()
	node.Status = want
	updated, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	k.setNode(updated)
	k.recordConditionEvents(oldConditions, want.Conditions)
	return nil
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
func (k *Kubelet) nodeStatus(ctx context.Context, old corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.NewTime(k.cfg.Clock.Now().Truncate(time.Second))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(host().memTotal, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(k.cfg.MaxPods), resource.DecimalSI),
	}
	var fs syscall.Statfs_t
	if syscall.Statfs(k.cfg.RootDir, &fs) == nil {
		capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	s := corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity.DeepCopy(),
		Phase: "",
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.cfg.NodeIP},
			{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.servingPort}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: host().machineID, BootID: host().bootID,
			KernelVersion: host().kernel, OSImage: host().osImage,
			ContainerRuntimeVersion: k.runtimeVersion, KubeletVersion: KubeletVersion, KubeProxyVersion: "",
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
	pressure := k.evictions.Conditions()
	for _, p := range pressureConditions {
		c := p.ok
		if slices.Contains(pressure, p.typ) {
			c = p.pressure
		}
		s.Conditions = append(s.Conditions, cond(p.typ, c.status, c.reason, c.message))
	}
	k.mu.Lock()
	ready := readyCondition(k.networkErr)
	k.mu.Unlock()
	s.Conditions = append(s.Conditions, cond(corev1.NodeReady, ready.status, ready.reason, ready.message))
	if imgs, err := k.rt.ListImages(ctx); err == nil {
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
func (k *Kubelet) recordConditionEvents(old, cur []corev1.NodeCondition) {
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
			k.recorder.Eventf(k.nodeRef(), corev1.EventTypeNormal, reason, "Node %s status is now: %s", k.cfg.NodeName, reason)
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

// leaseLoop renews the node's Lease in kube-node-lease every
// LeaseRenewInterval: the node lifecycle controller's heartbeat. As the
// kubelet's lease controller, it renews the Lease it last wrote without
// reading it first, and reads it again only when that write fails.
func (k *Kubelet) leaseLoop(ctx context.Context) error {
	leases := k.cfg.Client.Leases()
	var last *coordinationv1.Lease
	for {
		var err error
		if last, err = k.renewLease(ctx, leases, last); err != nil && ctx.Err() == nil {
			k.log.Warn("renewing the node lease", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-k.cfg.Clock.After(k.cfg.LeaseRenewInterval):
		}
	}
}

// renewLease renews last (the Lease as last written, nil for none) and
// returns the Lease written, nil after a failure.
func (k *Kubelet) renewLease(ctx context.Context, leases interface {
	Get(context.Context, string, string, metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(context.Context, *coordinationv1.Lease, metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
}, last *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(k.cfg.Clock.Now())
	holder := k.cfg.NodeName
	dur := int32(k.cfg.LeaseDuration / time.Second)
	if last != nil {
		lease := last.DeepCopy()
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &dur, &now
		if written, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			return written, nil
		}
		// Changed or gone meanwhile: read it as it is now.
	}
	lease, err := leases.Get(ctx, leaseNamespace, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: leaseNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now},
		}
		if n := k.currentNode(); n != nil && n.UID != "" {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}
		}
		return leases.Create(ctx, lease, metav1.CreateOptions{})
	} else if err != nil {
		return nil, err
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &holder, &dur, &now
	return leases.Update(ctx, lease, metav1.UpdateOptions{})
}
