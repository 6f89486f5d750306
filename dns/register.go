package dns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"minik/client"
	"minik/client/informer"
)

// The kube-dns Service, as kubeadm sets it up.
const (
	ServiceNamespace = "kube-system"
	ServiceName      = "kube-dns"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// slices a DNS keeps for itself; the EndpointSlice controller leaves
	// slices managed by others alone.
	ManagedBy = "minik-dns"
)

// DefaultServiceCIDR is Kubernetes' default --service-cluster-ip-range.
const DefaultServiceCIDR = "10.96.0.0/12"

// ServiceIP returns the kube-dns ClusterIP for a service range: its tenth
// address, as kubeadm chooses it (10.96.0.10 for 10.96.0.0/12).
func ServiceIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("service range %q: %w", cidr, err)
	}
	ip := slices.Clone(n.IP)
	carry := 10
	for i := len(ip) - 1; i >= 0 && carry > 0; i-- {
		sum := int(ip[i]) + carry
		ip[i], carry = byte(sum), sum>>8
	}
	if !n.Contains(ip) {
		return nil, fmt.Errorf("service range %q has no tenth address", cidr)
	}
	return ip, nil
}

// registrar keeps the kube-dns Service and this DNS's own EndpointSlice
// in the API, so that the node proxy sends the ClusterIP's traffic here.
// The Service has no selector: its endpoints are the slices DNS servers
// write for themselves, one each.
type registrar struct {
	services  *client.Typed[corev1.Service]
	slices    *client.Typed[discoveryv1.EndpointSlice]
	serviceIP net.IP
	addr      net.IP
	port      int32
	nodeName  string
	sliceName string
	log       *slog.Logger
	kick      chan struct{}
	warned    map[string]bool
	swept     bool // stale slices of this node removed
}

func newRegistrar(c *client.Client, serviceIP, addr net.IP, port int32, nodeName string, log *slog.Logger) *registrar {
	return &registrar{
		services:  client.For[corev1.Service](c, ServicesResource),
		slices:    client.For[discoveryv1.EndpointSlice](c, EndpointSlicesResource),
		serviceIP: serviceIP, addr: addr, port: port, nodeName: nodeName,
		sliceName: SliceName(addr, port),
		log:       log,
		kick:      make(chan struct{}, 1),
		warned:    map[string]bool{},
	}
}

// SliceName is the name of the EndpointSlice of the DNS at addr:port:
// kube-dns-10-0-0-5, with the port appended when it is not 53.
func SliceName(addr net.IP, port int32) string {
	name := "kube-dns-" + strings.NewReplacer(".", "-", ":", "-").Replace(addr.String())
	if port != 53 {
		name += "-" + strconv.Itoa(int(port))
	}
	return strings.Trim(name, "-")
}

// recheck asks run to compare the API with what it should hold again.
func (r *registrar) recheck() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// handlers call recheck when the kube-dns Service or this DNS's slice
// changes, e.g. when someone deletes them.
func (r *registrar) serviceHandler() informer.Handler[corev1.Service] {
	on := func(svc *corev1.Service) {
		if svc.Namespace == ServiceNamespace && svc.Name == ServiceName {
			r.recheck()
		}
	}
	return informer.Handler[corev1.Service]{OnAdd: on, OnUpdate: func(_, svc *corev1.Service) { on(svc) }, OnDelete: on}
}

func (r *registrar) sliceHandler() informer.Handler[discoveryv1.EndpointSlice] {
	on := func(sl *discoveryv1.EndpointSlice) {
		if sl.Namespace == ServiceNamespace && sl.Name == r.sliceName {
			r.recheck()
		}
	}
	return informer.Handler[discoveryv1.EndpointSlice]{OnAdd: on, OnUpdate: func(_, sl *discoveryv1.EndpointSlice) { on(sl) }, OnDelete: on}
}

// run keeps the Service and the slice in place until ctx is done, then
// deletes the slice, so that the proxy stops sending queries here.
func (r *registrar) run(ctx context.Context) {
	var backoff informer.Backoff
	for ctx.Err() == nil {
		if err := r.ensure(ctx); err != nil {
			if ctx.Err() != nil {
				break
			}
			d := backoff.Next()
			r.log.Warn("dns: cannot register the kube-dns Service and its endpoint; retrying", "err", err, "retryIn", d)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			continue
		}
		backoff.Reset()
		select {
		case <-ctx.Done():
		case <-r.kick:
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch err := r.slices.Delete(dctx, ServiceNamespace, r.sliceName, metav1.DeleteOptions{}); {
	case err == nil:
		r.log.Info("dns: removed this server's kube-dns endpoint", "slice", r.sliceName)
	case !apierrors.IsNotFound(err):
		r.log.Warn("dns: cannot remove this server's kube-dns endpoint", "slice", r.sliceName, "err", err)
	}
}

// ensure creates the kube-dns Service if it is missing and creates or
// corrects this DNS's slice.
func (r *registrar) ensure(ctx context.Context) error {
	svc, err := r.services.Get(ctx, ServiceNamespace, ServiceName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc, err = r.services.Create(ctx, r.desiredService(), metav1.CreateOptions{})
		if err == nil {
			r.log.Info("dns: created the kube-dns Service", "clusterIP", r.serviceIP)
		} else if apierrors.IsAlreadyExists(err) {
			svc, err = r.services.Get(ctx, ServiceNamespace, ServiceName, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("service %s/%s: %w", ServiceNamespace, ServiceName, err)
	}
	if len(svc.Spec.Selector) > 0 {
		r.warnOnce("selector", "dns: the kube-dns Service has a selector; its pods share the ClusterIP with this server", "selector", svc.Spec.Selector)
	}
	if svc.Spec.ClusterIP != r.serviceIP.String() {
		r.warnOnce("clusterIP", "dns: the kube-dns Service has another ClusterIP than pods are told to use", "clusterIP", svc.Spec.ClusterIP, "want", r.serviceIP)
	}
	want := r.desiredSlice(svc)
	cur, err := r.slices.Get(ctx, ServiceNamespace, r.sliceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = r.slices.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			r.log.Info("dns: registered as a kube-dns endpoint", "slice", r.sliceName, "address", r.addr, "port", r.port)
		}
	case err != nil:
	case !sliceMatches(cur, want):
		want.ResourceVersion = cur.ResourceVersion
		_, err = r.slices.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", ServiceNamespace, r.sliceName, err)
	}
	if !r.swept {
		if err := r.sweep(ctx); err != nil {
			return err
		}
		r.swept = true
	}
	return nil
}

// sweep deletes the slices an earlier DNS on this node left when it did
// not stop cleanly and then came back on another address: the proxy would
// send queries to an address nothing answers on. Slices of other nodes,
// and those without a node, belong to servers this one cannot judge.
func (r *registrar) sweep(ctx context.Context) error {
	if r.nodeName == "" {
		return nil
	}
	list, err := r.slices.List(ctx, ServiceNamespace, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelManagedBy + "=" + ManagedBy + "," + discoveryv1.LabelServiceName + "=" + ServiceName})
	if err != nil {
		return fmt.Errorf("list kube-dns endpointslices: %w", err)
	}
	for _, sl := range list.Items {
		if sl.Name == r.sliceName || sl.Labels[discoveryv1.LabelManagedBy] != ManagedBy ||
			!slices.ContainsFunc(sl.Endpoints, func(e discoveryv1.Endpoint) bool { return ptrEqual(e.NodeName, &r.nodeName) }) {
			continue
		}
		if err := r.slices.Delete(ctx, ServiceNamespace, sl.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete stale endpointslice %s: %w", sl.Name, err)
		}
		r.log.Info("dns: removed a stale kube-dns endpoint of this node", "slice", sl.Name)
	}
	return nil
}

func (r *registrar) warnOnce(key, msg string, args ...any) {
	if !r.warned[key] {
		r.warned[key] = true
		r.log.Warn(msg, args...)
	}
}

func (r *registrar) desiredService() *corev1.Service {
	ip := r.serviceIP.String()
	port := func(name string, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: proto, Port: 53, TargetPort: intstr.FromInt32(53)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "minik-dns",
		}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
		},
	}
}

func (r *registrar) desiredSlice(svc *corev1.Service) *discoveryv1.EndpointSlice {
	addrType := discoveryv1.AddressTypeIPv4
	if r.addr.To4() == nil {
		addrType = discoveryv1.AddressTypeIPv6
	}
	ep := discoveryv1.Endpoint{
		Addresses:  []string{r.addr.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
	}
	if r.nodeName != "" {
		ep.NodeName = ptr.To(r.nodeName)
	}
	port := func(name string, proto corev1.Protocol) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(r.port)}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ServiceNamespace, Name: r.sliceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: ManagedBy},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: addrType,
		Endpoints:   []discoveryv1.Endpoint{ep},
		Ports:       []discoveryv1.EndpointPort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
	}
}

// sliceMatches reports whether cur holds what want says, comparing only
// the fields the registrar sets, so that fields the apiserver fills in
// never make it write again and again.
func sliceMatches(cur, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if cur.Labels[k] != v {
			return false
		}
	}
	if cur.AddressType != want.AddressType || len(cur.Endpoints) != 1 || len(cur.Ports) != len(want.Ports) {
		return false
	}
	if !slices.ContainsFunc(cur.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == want.OwnerReferences[0].UID }) {
		return false
	}
	c, w := cur.Endpoints[0], want.Endpoints[0]
	if !slices.Equal(c.Addresses, w.Addresses) || !ptrEqual(c.Conditions.Ready, w.Conditions.Ready) ||
		!ptrEqual(c.Conditions.Serving, w.Conditions.Serving) || !ptrEqual(c.NodeName, w.NodeName) {
		return false
	}
	for i, p := range want.Ports {
		q := cur.Ports[i]
		if !ptrEqual(q.Name, p.Name) || !ptrEqual(q.Protocol, p.Protocol) || !ptrEqual(q.Port, p.Port) {
			return false
		}
	}
	return true
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
