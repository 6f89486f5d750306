package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/allocator"
	"minik/apiserver/storage"
	"minik/apiserver/validation"
)

// Services get their cluster IP and node ports here, between defaulting
// and validation, as upstream's service REST storage allocates them. The
// allocation keys are the Service's storage companions: the store writes
// and deletes them in the Service's own etcd transaction (storage/companions.go).

// Defaults of the service ranges (kube-apiserver's).
const (
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	DefaultServiceNodePortRange  = "30000-32767"
)

var serviceKind = corev1.SchemeGroupVersion.WithKind("Service").GroupKind()

// serviceAllocators are the cluster's two ranges.
type serviceAllocators struct {
	ips    *allocator.Allocator
	ports  *allocator.Allocator
	family corev1.IPFamily // the family of the cluster IP range
}

func newServiceAllocators(cfg Config) (*serviceAllocators, error) {
	ipRange, err := allocator.ParseIPRange(cfg.ServiceClusterIPRange)
	if err != nil {
		return nil, err
	}
	portRange, err := allocator.ParsePortRange(cfg.ServiceNodePortRange)
	if err != nil {
		return nil, err
	}
	kv := etcdKV{cfg.Etcd}
	a := &serviceAllocators{ips: allocator.NewIPs(ipRange, kv), ports: allocator.NewPorts(portRange, kv), family: corev1.IPv4Protocol}
	if ipRange.Is6() {
		a.family = corev1.IPv6Protocol
	}
	return a, nil
}

// etcdKV is the allocator's view of etcd.
type etcdKV struct{ c *clientv3.Client }

func (kv etcdKV) Exists(ctx context.Context, key string) (bool, error) {
	resp, err := kv.c.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", key, err)
	}
	return resp.Count > 0, nil
}

func (kv etcdKV) Keys(ctx context.Context, prefix string) ([]string, error) {
	resp, err := kv.c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", prefix, err)
	}
	keys := make([]string, len(resp.Kvs))
	for i, k := range resp.Kvs {
		keys[i] = string(k.Key)
	}
	return keys, nil
}

// serviceOwner is the value of a Service's allocation keys.
func serviceOwner(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// companions lists the allocation keys a Service holds: its cluster IPs
// and node ports that lie in the configured ranges (one of another range,
// say before the flag changed, is not this cluster's to record).
func (a *serviceAllocators) companions(obj runtime.Object) []storage.Companion {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil
	}
	owner := serviceOwner(svc)
	var out []storage.Companion
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != corev1.ClusterIPNone && a.ips.Contains(ip) {
			out = append(out, storage.Companion{Key: a.ips.Key(ip), Value: owner})
		}
	}
	for _, port := range heldNodePorts(svc) {
		if item := strconv.Itoa(int(port)); a.ports.Contains(item) {
			out = append(out, storage.Companion{Key: a.ports.Key(item), Value: owner})
		}
	}
	return out
}

// heldNodePorts are the node ports a Service holds, health check port
// included, each once.
func heldNodePorts(svc *corev1.Service) []int32 {
	var out []int32
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !slices.Contains(out, p.NodePort) {
			out = append(out, p.NodePort)
		}
	}
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 && !slices.Contains(out, hc) {
		out = append(out, hc)
	}
	return out
}

// admitService prepares, checks and allocates a Service being created
// (old nil) or updated: upstream's NormalizeClusterIPs, the update
// strategy's patchAllocatedValues and dropTypeDependentFields, its IP
// family defaults, validation, and then the allocation of what the Service
// needs and does not hold yet.
func (s *Server) admitService(ctx context.Context, svc, old *corev1.Service) error {
	if old != nil {
		patchAllocatedValues(svc, old)
	}
	normalizeClusterIPs(svc, old)
	if old != nil {
		dropTypeDependentFields(svc, old)
	}
	if errs := s.services.initIPFamilies(svc, old); len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	var errs field.ErrorList
	if old == nil {
		errs = validation.Create(svc, true)
	} else {
		errs = validation.Update(svc, old, true)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if err := s.services.allocateClusterIP(ctx, svc, old); err != nil {
		return err
	}
	return s.services.allocateNodePorts(ctx, svc, old)
}

// allocateClusterIP gives a Service that needs one a cluster IP, or checks
// the one it asks for.
func (a *serviceAllocators) allocateClusterIP(ctx context.Context, svc, old *corev1.Service) error {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || validation.IsHeadless(svc) {
		return nil
	}
	if len(svc.Spec.ClusterIPs) == 0 {
		ip, err := a.ips.Next(ctx, nil)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
		}
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
		return nil
	}
	ip := svc.Spec.ClusterIPs[0]
	if old != nil && slices.Contains(old.Spec.ClusterIPs, ip) {
		return nil // held already
	}
	if err := a.ips.Check(ctx, ip); err != nil {
		return clusterIPError(svc, ip, err)
	}
	return nil
}

// clusterIPError is upstream's answer to a requested IP it cannot give.
func clusterIPError(svc *corev1.Service, ip string, err error) error {
	if !allocator.IsRefusal(err) {
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"),
		svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", ip, err))})
}

// nodePortError is upstream's answer to a requested node port it cannot give.
func nodePortError(svc *corev1.Service, i int, port int32, err error) error {
	if !allocator.IsRefusal(err) {
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewInvalid(serviceKind, svc.Name, field.ErrorList{field.Invalid(
		field.NewPath("spec", "ports").Index(i).Child("nodePort"), port, err.Error())})
}

// needsNodePorts: NodePort and LoadBalancer services.
func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// shouldAllocateNodePorts: a LoadBalancer may opt out of node ports it
// did not ask for.
func shouldAllocateNodePorts(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return ptr.Deref(svc.Spec.AllocateLoadBalancerNodePorts, true)
	}
	return svc.Spec.Type == corev1.ServiceTypeNodePort
}

// allocateNodePorts gives each port of a NodePort or LoadBalancer service
// a node port (ports with the same number, TCP and UDP say, share one),
// checks the ones asked for, and handles the health check node port of a
// LoadBalancer with externalTrafficPolicy Local, as upstream's
// initNodePorts and allocHealthCheckNodePort do.
func (a *serviceAllocators) allocateNodePorts(ctx context.Context, svc, old *corev1.Service) error {
	held := map[int32]bool{}
	if old != nil {
		for _, p := range heldNodePorts(old) {
			held[p] = true
		}
	}
	picked := map[string]bool{}
	check := func(port int32) error {
		item := strconv.Itoa(int(port))
		if held[port] || picked[item] {
			return nil
		}
		if err := a.ports.Check(ctx, item); err != nil {
			return err
		}
		picked[item] = true
		return nil
	}
	next := func() (int32, error) {
		item, err := a.ports.Next(ctx, picked)
		if err != nil {
			return 0, err
		}
		picked[item] = true
		port, _ := strconv.Atoi(item)
		return int32(port), nil
	}
	if needsNodePorts(svc) {
		byPort := map[int32]int32{} // service port → node port
		ports := svc.Spec.Ports
		for i := range ports {
			p := &ports[i]
			if p.NodePort == 0 && !shouldAllocateNodePorts(svc) {
				continue // no new ports, but requested ones are honoured
			}
			shared := byPort[p.Port]
			switch {
			case shared == 0:
				if req := requestedNodePort(p.Port, ports[i:]); req != 0 {
					if err := check(req); err != nil {
						return nodePortError(svc, i, req, err)
					}
					p.NodePort = req
				} else {
					np, err := next()
					if err != nil {
						return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
					}
					p.NodePort = np
				}
				byPort[p.Port] = p.NodePort
			case p.NodePort == 0:
				p.NodePort = shared
			case p.NodePort != shared:
				if err := check(p.NodePort); err != nil {
					return nodePortError(svc, i, p.NodePort, err)
				}
			}
		}
	}
	if validation.NeedsHealthCheck(svc) {
		if hc := svc.Spec.HealthCheckNodePort; hc != 0 {
			if err := check(hc); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %w", hc, err))
			}
		} else {
			np, err := next()
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %w", np, err))
			}
			svc.Spec.HealthCheckNodePort = np
		}
	}
	return nil
}

// requestedNodePort is the node port the client asked for a service port
// number, among ports (the first that names one).
func requestedNodePort(port int32, ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}

// companionTaken decides what a write that lost an allocation key to a
// concurrent one answers: 422 if the client asked for that item (as if it
// had been taken before), nothing (try again with a new pick) otherwise.
func (s *Server) companionTaken(requested runtime.Object, err error, attempt int) error {
	var taken *storage.TakenError
	svc, ok := requested.(*corev1.Service)
	if !errors.As(err, &taken) || !ok || s.services == nil {
		return apierrors.NewInternalError(err)
	}
	if ip := s.services.ips.Item(taken.Key); ip != "" && slices.Contains(svc.Spec.ClusterIPs, ip) {
		return clusterIPError(svc, ip, allocator.ErrIPAllocated)
	}
	if item := s.services.ports.Item(taken.Key); item != "" {
		for i, p := range svc.Spec.Ports {
			if strconv.Itoa(int(p.NodePort)) == item {
				return nodePortError(svc, i, p.NodePort, allocator.ErrPortAllocated)
			}
		}
		if strconv.Itoa(int(svc.Spec.HealthCheckNodePort)) == item {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %w", item, allocator.ErrPortAllocated))
		}
	}
	if attempt >= 8 {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate for service %s: %w (lost %d races)", svc.Name, err, attempt))
	}
	return nil
}
