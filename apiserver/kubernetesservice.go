package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"minik/apiserver/allocator"
	"minik/apiserver/storage"
	"minik/internal/hostip"
)

// The `kubernetes` Service in default points at the apiservers, so that
// pods find the API at https://kubernetes.default.svc (10.96.0.1:443). As
// kube-apiserver's lease endpoint reconciler does, each apiserver keeps a
// lease key with a TTL under /registry/masterleases/ and writes the
// Endpoints and the EndpointSlice from the set of live leases: several
// apiservers each appear, and one that stops renewing drops out.

// masterLeasesPrefix holds one key per live apiserver, named by its
// advertised IP, as upstream names them.
const masterLeasesPrefix = "/registry/masterleases/"

// DefaultAdvertiseAddress is the host's primary IPv4 address, the one the
// kubelet reports as its node's InternalIP.
func DefaultAdvertiseAddress() string { return hostip.PrimaryIPv4() }

// kubernetesServiceIP is the first address of the service range.
func (s *Server) kubernetesServiceIP() string { return s.services.ips.Range.Item(0) }

// ensureKubernetesService creates default/kubernetes, or brings its port
// back to the apiserver's port.
func (s *Server) ensureKubernetesService(ctx context.Context, port int) error {
	h := s.handlers["/v1/services"]
	want := []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(port))}}
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: s.kubernetesServiceIP(),
			SessionAffinity: corev1.ServiceAffinityNone, Ports: want},
	}
	ri := &requestInfo{namespace: metav1.NamespaceDefault, name: "kubernetes", verb: "update"}
	_, err := h.updateObject(ctx, ri, false, func(cur runtime.Object) (runtime.Object, error) {
		svc := cur.(*corev1.Service)
		if slices.EqualFunc(svc.Spec.Ports, want, func(a, b corev1.ServicePort) bool {
			return a.Name == b.Name && a.Port == b.Port && a.Protocol == b.Protocol && a.TargetPort == b.TargetPort
		}) {
			return nil, storage.ErrNoChange
		}
		svc.Spec.Ports = want
		return svc, nil
	})
	if apierrors.IsNotFound(err) {
		_, err = h.createObject(ctx, &requestInfo{namespace: metav1.NamespaceDefault}, svc, false)
		if apierrors.IsAlreadyExists(err) {
			return nil // another apiserver made it meanwhile
		}
	}
	return err
}

// endpointReconciler keeps this apiserver's master lease and the
// `kubernetes` Endpoints and EndpointSlice.
type endpointReconciler struct {
	srv  *Server
	ip   string
	port int
	// lease holds this apiserver's master lease key. It is renewed in
	// place (no raft write), as kube-apiserver's storage reuses its
	// leases, and granted again only once etcd has lost it.
	lease clientv3.LeaseID
}

// runKubernetesEndpoints renews the lease every two thirds of its TTL and
// rewrites the endpoints from the live leases, until ctx ends; then it
// removes this apiserver's lease and endpoints.
func (s *Server) runKubernetesEndpoints(ctx context.Context, port int) {
	ip := s.cfg.AdvertiseAddress
	if addr, err := netip.ParseAddr(ip); err != nil || addr.IsLoopback() || addr.IsUnspecified() {
		slog.Warn("not adding this apiserver to the kubernetes service's endpoints: its advertise address cannot be an endpoint",
			"advertiseAddress", ip)
		ip = ""
	}
	r := &endpointReconciler{srv: s, ip: ip, port: port}
	interval := s.cfg.EndpointLeaseTTL * 2 / 3
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.reconcile(ctx, false); err != nil && ctx.Err() == nil {
			slog.Warn("reconciling the kubernetes endpoints", "err", err)
		}
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := r.reconcile(stopCtx, true); err != nil {
				slog.Debug("removing this apiserver from the kubernetes endpoints", "err", err)
			}
			cancel()
			return
		case <-t.C:
		}
	}
}

// reconcile renews (or, when leaving, deletes) the lease and writes the
// endpoints of the live leases.
func (r *endpointReconciler) reconcile(ctx context.Context, leaving bool) error {
	etcd := r.srv.cfg.Etcd
	if r.ip != "" {
		key := masterLeasesPrefix + r.ip
		if leaving {
			if _, err := etcd.Delete(ctx, key); err != nil {
				return fmt.Errorf("deleting master lease: %w", err)
			}
		} else if err := r.renewLease(ctx, key); err != nil {
			return err
		}
	}
	resp, err := etcd.Get(ctx, masterLeasesPrefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("reading master leases: %w", err)
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ips = append(ips, string(kv.Key[len(masterLeasesPrefix):]))
	}
	if r.ip != "" && !leaving && !slices.Contains(ips, r.ip) {
		// The lease lives but its key was deleted: write it again.
		if _, err := etcd.Put(ctx, masterLeasesPrefix+r.ip, strconv.Itoa(r.port), clientv3.WithLease(r.lease)); err != nil {
			return fmt.Errorf("writing master lease: %w", err)
		}
		ips = append(ips, r.ip)
	}
	slices.Sort(ips)
	if err := r.writeEndpoints(ctx, ips); err != nil {
		return err
	}
	return r.writeEndpointSlice(ctx, ips)
}

// renewLease keeps this apiserver's lease alive, or grants a new one and
// writes key under it when there is none yet or etcd has lost it (it
// expired while this process stood still).
func (r *endpointReconciler) renewLease(ctx context.Context, key string) error {
	etcd := r.srv.cfg.Etcd
	if r.lease != 0 {
		// KeepAliveOnce retries until its context ends while etcd is away.
		renewCtx, cancel := context.WithTimeout(ctx, r.srv.cfg.EndpointLeaseTTL)
		_, err := etcd.KeepAliveOnce(renewCtx, r.lease)
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("renewing master lease: %w", err)
		}
		r.lease = 0
	}
	ttl := int64(r.srv.cfg.EndpointLeaseTTL / time.Second)
	lease, err := etcd.Grant(ctx, max(ttl, 1))
	if err != nil {
		return fmt.Errorf("granting master lease: %w", err)
	}
	if _, err := etcd.Put(ctx, key, strconv.Itoa(r.port), clientv3.WithLease(lease.ID)); err != nil {
		return fmt.Errorf("writing master lease: %w", err)
	}
	r.lease = lease.ID
	return nil
}

func (r *endpointReconciler) ports() []corev1.EndpointPort {
	return []corev1.EndpointPort{{Name: "https", Port: int32(r.port), Protocol: corev1.ProtocolTCP}}
}

// writeEndpoints makes default/kubernetes list ips.
func (r *endpointReconciler) writeEndpoints(ctx context.Context, ips []string) error {
	var subsets []corev1.EndpointSubset
	if len(ips) > 0 {
		ss := corev1.EndpointSubset{Ports: r.ports()}
		for _, ip := range ips {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
		}
		subsets = []corev1.EndpointSubset{ss}
	}
	ep := &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: subsets}
	return r.upsert(ctx, "/v1/endpoints", ep, func(cur runtime.Object) bool {
		have := cur.(*corev1.Endpoints)
		if apiEqual(have.Subsets, subsets) && have.Labels[discoveryv1.LabelSkipMirror] == "true" {
			return false
		}
		have.Subsets = subsets
		if have.Labels == nil {
			have.Labels = map[string]string{}
		}
		have.Labels[discoveryv1.LabelSkipMirror] = "true"
		return true
	})
}

// writeEndpointSlice makes the EndpointSlice default/kubernetes list ips.
func (r *endpointReconciler) writeEndpointSlice(ctx context.Context, ips []string) error {
	addrType := discoveryv1.AddressTypeIPv4
	endpoints := []discoveryv1.Endpoint{}
	for _, ip := range ips {
		if isIPv6String(ip) {
			addrType = discoveryv1.AddressTypeIPv6
		}
		endpoints = append(endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	ports := []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(r.port)), Protocol: ptr.To(corev1.ProtocolTCP)}}
	labels := map[string]string{discoveryv1.LabelServiceName: "kubernetes"}
	slice := &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: labels},
		AddressType: addrType, Endpoints: endpoints, Ports: ports}
	return r.upsert(ctx, "discovery.k8s.io/v1/endpointslices", slice, func(cur runtime.Object) bool {
		have := cur.(*discoveryv1.EndpointSlice)
		if apiEqual(have.Endpoints, endpoints) && apiEqual(have.Ports, ports) && have.Labels[discoveryv1.LabelServiceName] == "kubernetes" {
			return false
		}
		have.Endpoints, have.Ports = endpoints, ports
		if have.Labels == nil {
			have.Labels = map[string]string{}
		}
		have.Labels[discoveryv1.LabelServiceName] = "kubernetes"
		return true
	})
}

// upsert creates obj through the resource's own admission, or changes the
// stored one with change (which reports whether it changed anything).
func (r *endpointReconciler) upsert(ctx context.Context, handler string, obj runtime.Object, change func(runtime.Object) bool) error {
	h := r.srv.handlers[handler]
	ri := &requestInfo{namespace: metav1.NamespaceDefault, name: "kubernetes", verb: "update"}
	_, err := h.updateObject(ctx, ri, false, func(cur runtime.Object) (runtime.Object, error) {
		if !change(cur) {
			return nil, storage.ErrNoChange
		}
		return cur, nil
	})
	if apierrors.IsNotFound(err) {
		_, err = h.createObject(ctx, &requestInfo{namespace: metav1.NamespaceDefault}, obj, false)
		if apierrors.IsAlreadyExists(err) {
			return nil // another apiserver was first; the next round updates it
		}
	}
	return err
}

// repairServiceAllocations compares the allocation keys with what the
// Services hold, at one etcd revision, and writes the difference: leaked
// keys are freed, missing ones recorded (upstream's repair controllers).
// Each write is conditional on what was read, so it is safe beside
// concurrent creates and deletes; what it skips, the next pass sees.
func (s *Server) repairServiceAllocations(ctx context.Context) error {
	list, err := s.serviceStore.List(ctx, storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing services: %w", err)
	}
	held := map[string][]string{}
	svcRev := map[string]int64{} // owner → the service's resourceVersion
	svcKey := map[string]string{}
	for _, obj := range list.Items {
		svc := obj.(*corev1.Service)
		rv, _ := strconv.ParseInt(svc.ResourceVersion, 10, 64)
		owner := serviceOwner(svc)
		svcRev[owner], svcKey[owner] = rv, s.serviceStore.Key(svc.Namespace, svc.Name)
		for _, c := range s.services.companions(svc) {
			held[c.Key] = append(held[c.Key], c.Value)
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if ip != corev1.ClusterIPNone && !s.services.ips.Contains(ip) {
				slog.Warn("a service's cluster IP is not in the service range; please recreate the service",
					"service", owner, "clusterIP", ip, "range", s.services.ips.Describe())
			}
		}
		for _, port := range heldNodePorts(svc) {
			if !s.services.ports.Contains(strconv.Itoa(int(port))) {
				slog.Warn("a service's node port is not in the node port range; please recreate the service",
					"service", owner, "nodePort", port, "range", s.services.ports.Describe())
			}
		}
	}
	recorded := map[string]string{}
	recordedRev := map[string]int64{}
	for _, prefix := range []string{allocator.ServiceIPsPrefix, allocator.ServiceNodePortsPrefix} {
		resp, err := s.cfg.Etcd.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(list.ResourceVersion))
		if err != nil {
			return fmt.Errorf("reading allocations: %w", err)
		}
		for _, kv := range resp.Kvs {
			recorded[string(kv.Key)] = string(kv.Value)
			recordedRev[string(kv.Key)] = kv.ModRevision
		}
	}
	plan := allocator.PlanRepair(held, recorded)
	for key, owners := range plan.Duplicates {
		slog.Error("an allocation is held by more than one service; recreate all but one of them", "allocation", key, "services", owners)
	}
	for _, key := range plan.Delete {
		_, err := s.cfg.Etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", recordedRev[key])).
			Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return fmt.Errorf("freeing %s: %w", key, err)
		}
		slog.Info("repair freed a leaked allocation", "allocation", key, "recordedFor", recorded[key])
	}
	for key, owner := range plan.Create {
		_, err := s.cfg.Etcd.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.ModRevision(svcKey[owner]), "=", svcRev[owner])).
			Then(clientv3.OpPut(key, owner)).Commit()
		if err != nil {
			return fmt.Errorf("recording %s: %w", key, err)
		}
		slog.Info("repair recorded an allocation a service holds", "allocation", key, "service", owner)
	}
	for key, owner := range plan.Fix {
		_, err := s.cfg.Etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", recordedRev[key]),
			clientv3.Compare(clientv3.ModRevision(svcKey[owner]), "=", svcRev[owner])).
			Then(clientv3.OpPut(key, owner)).Commit()
		if err != nil {
			return fmt.Errorf("re-recording %s: %w", key, err)
		}
	}
	return nil
}

// repairLoop runs the repair pass every interval until ctx ends.
func (s *Server) repairLoop(ctx context.Context) {
	if s.cfg.ServiceRepairInterval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.ServiceRepairInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.repairServiceAllocations(ctx); err != nil && ctx.Err() == nil {
				slog.Warn("service allocation repair failed", "err", err)
			}
		}
	}
}

// apiEqual compares API values, an empty list equal to a missing one.
func apiEqual(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }

// KubernetesServiceIP is the `kubernetes` Service's cluster IP for a
// service range: its first address (10.96.0.1 for 10.96.0.0/12).
func KubernetesServiceIP(serviceClusterIPRange string) (string, error) {
	r, err := allocator.ParseIPRange(serviceClusterIPRange)
	if err != nil {
		return "", err
	}
	return r.Item(0), nil
}

// KubernetesServiceNames are the names in-cluster clients use for the API,
// which the serving certificate must carry.
var KubernetesServiceNames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
