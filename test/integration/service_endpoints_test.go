package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"minik/controller"
)

// This test needs an apiserver that serves Service, Endpoints and
// EndpointSlice (issue 11). Against one that does not, creating the
// Service fails with 404 and the test fails: it is never skipped.

// readinessGate is a TCP listener the pods' readiness probes dial: open,
// they are ready; closed, they are not. Hollow kubelets probe it for real.
type readinessGate struct {
	addr string
	ln   net.Listener
}

func newReadinessGate(t *testing.T) *readinessGate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &readinessGate{addr: ln.Addr().String(), ln: ln}
	go acceptAll(ln)
	t.Cleanup(func() { g.close() })
	return g
}

func acceptAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

func (g *readinessGate) close() {
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
}

func (g *readinessGate) open(t *testing.T) {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	g.ln = ln
	go acceptAll(ln)
}

func (g *readinessGate) port() int32 {
	_, p, _ := net.SplitHostPort(g.addr)
	var n int32
	_, _ = fmt.Sscan(p, &n)
	return n
}

// endpointState is what the test compares, by pod name (two hollow
// nodes may hand out the same IP).
type endpointState struct {
	slices     int
	ips        map[string]string // from the slices: pod → IP
	ready      map[string]bool   // pod → ready
	serving    map[string]bool
	nodes      map[string]string
	ports      []int32
	epReady    []string // from the Endpoints: ready pods
	epNotReady []string
}

func observeEndpoints(ctx context.Context, cs kubernetes.Interface, ns, svc string) (endpointState, error) {
	st := endpointState{ips: map[string]string{}, ready: map[string]bool{}, serving: map[string]bool{}, nodes: map[string]string{}}
	list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		return st, err
	}
	st.slices = len(list.Items)
	for _, s := range list.Items {
		for _, p := range s.Ports {
			if p.Port != nil && !slices.Contains(st.ports, *p.Port) {
				st.ports = append(st.ports, *p.Port)
			}
		}
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || len(e.Addresses) != 1 {
				return st, fmt.Errorf("endpoint %+v: want one address and a targetRef", e)
			}
			pod := e.TargetRef.Name
			st.ips[pod] = e.Addresses[0]
			st.ready[pod] = e.Conditions.Ready != nil && *e.Conditions.Ready
			st.serving[pod] = e.Conditions.Serving != nil && *e.Conditions.Serving
			if e.NodeName != nil {
				st.nodes[pod] = *e.NodeName
			}
		}
	}
	ep, err := cs.CoreV1().Endpoints(ns).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return st, err
	}
	for _, s := range ep.Subsets {
		for _, a := range s.Addresses {
			st.epReady = append(st.epReady, a.TargetRef.Name+"="+a.IP)
		}
		for _, a := range s.NotReadyAddresses {
			st.epNotReady = append(st.epNotReady, a.TargetRef.Name+"="+a.IP)
		}
	}
	sort.Strings(st.epReady)
	sort.Strings(st.epNotReady)
	return st, nil
}

// TestServiceEndpointsFollowPods runs the controllers with minik's
// scheduler and two hollow kubelets: a Deployment's pods get IPs from the
// fake runtime and readiness from a real TCP probe; the Service's
// EndpointSlice and Endpoints list them, follow their readiness both
// ways, follow a scale-down, and go with the Service.
func TestServiceEndpointsFollowPods(t *testing.T) {
	_, cs, ctx, _ := startWithHollowNodes(t, controller.Config{}, "hollow-a", "hollow-b")
	ns := "default"
	gate := newReadinessGate(t)

	d := makeDeployment("web", 3, "busybox")
	c := &d.Spec.Template.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt32(gate.port())}}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	created, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service (the apiserver must serve Services): %v", err)
	}

	// pods lists the live pods with an IP: name → pod.
	pods := func() map[string]corev1.Pod {
		out := map[string]corev1.Pod{}
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return out
		}
		for _, p := range l.Items {
			if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				out[p.Name] = p
			}
		}
		return out
	}
	// addrs is how the Endpoints should list pods: "name=ip", sorted.
	addrs := func(pods map[string]corev1.Pod) []string {
		var out []string
		for name, p := range pods {
			out = append(out, name+"="+p.Status.PodIP)
		}
		sort.Strings(out)
		return out
	}
	wait := func(t *testing.T, what string, want func(st endpointState, pods map[string]corev1.Pod) bool) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() (bool, string) {
			st, err := observeEndpoints(ctx, cs, ns, "web")
			if err != nil {
				return false, err.Error()
			}
			ps := pods()
			return want(st, ps), fmt.Sprintf("pods %v; observed %+v", addrs(ps), st)
		})
	}
	allReady := func(ready bool) func(endpointState, map[string]corev1.Pod) bool {
		return func(st endpointState, pods map[string]corev1.Pod) bool {
			if len(pods) != 3 || len(st.ready) != 3 || !slices.Equal(st.ports, []int32{8080}) {
				return false
			}
			for name, p := range pods {
				r, ok := st.ready[name]
				if !ok || r != ready || st.serving[name] != ready || st.ips[name] != p.Status.PodIP || st.nodes[name] != p.Spec.NodeName {
					return false
				}
			}
			if ready {
				return slices.Equal(st.epReady, addrs(pods)) && len(st.epNotReady) == 0
			}
			return slices.Equal(st.epNotReady, addrs(pods)) && len(st.epReady) == 0
		}
	}

	t.Run("the slice and the Endpoints list the three ready pods' IPs with the resolved named port", func(t *testing.T) {
		wait(t, "3 ready endpoints", allReady(true))
		list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			ref := metav1.GetControllerOf(&s)
			if ref == nil || ref.UID != created.UID || ref.Kind != "Service" {
				t.Errorf("slice %s controller %v, want the Service", s.Name, ref)
			}
			if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.AddressType != discoveryv1.AddressTypeIPv4 {
				t.Errorf("slice %s: labels %v, addressType %s", s.Name, s.Labels, s.AddressType)
			}
			if s.GenerateName != "web-" {
				t.Errorf("slice %s generateName %q", s.Name, s.GenerateName)
			}
		}
	})
	t.Run("failing readiness makes every endpoint not ready, passing again makes them ready", func(t *testing.T) {
		gate.close()
		wait(t, "3 not-ready endpoints", allReady(false))
		gate.open(t)
		wait(t, "3 ready endpoints again", allReady(true))
	})
	t.Run("a pod relabeled out of the selector leaves; its replacement joins", func(t *testing.T) {
		var victim string
		for name := range pods() {
			victim = name
			break
		}
		patch := []byte(`{"metadata":{"labels":{"app":"gone"}}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, victim, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, "3 ready endpoints without "+victim, func(st endpointState, pods map[string]corev1.Pod) bool {
			_, listed := st.ips[victim]
			_, selected := pods[victim]
			return !listed && !selected && allReady(true)(st, pods)
		})
	})
	t.Run("scaling to one leaves one endpoint", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controller writes the status meanwhile
			scale, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = 1
			_, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wait(t, "1 endpoint", func(st endpointState, pods map[string]corev1.Pod) bool {
			for name := range pods {
				return len(pods) == 1 && len(st.ready) == 1 && st.ready[name] && slices.Equal(st.epReady, addrs(pods))
			}
			return false
		})
	})
	t.Run("deleting the Service removes its Endpoints and, through the garbage collector, its slices", func(t *testing.T) {
		if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "no Endpoints and no slices", func() (bool, string) {
			_, err := cs.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
			list, lerr := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
			if lerr != nil {
				return false, lerr.Error()
			}
			return apierrors.IsNotFound(err) && len(list.Items) == 0, fmt.Sprintf("endpoints err %v, %d slices", err, len(list.Items))
		})
	})
	// The pods go before the hollow kubelets stop.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=gone"}); err != nil {
		t.Error(err)
	}
}

// TestSelectorlessServiceEndpointsAreMirrored: a Service without selector
// gets no Endpoints or slices of the controllers' own; the Endpoints its
// user writes is mirrored into an EndpointSlice, followed on change, and
// the slice goes when the Service gains a selector.
func TestSelectorlessServiceEndpointsAreMirrored(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Service (the apiserver must serve Services): %v", err)
	}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"team": "db"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}},
			Ports: []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}}}}
	if _, err := cs.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrored := func(want ...string) func() (bool, string) {
		return func() (bool, string) {
			l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=db"})
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, s := range l.Items {
				if s.Labels[discoveryv1.LabelManagedBy] != "endpointslicemirroring-controller.k8s.io" || s.Labels["team"] != "db" {
					return false, fmt.Sprintf("slice %s labels %v", s.Name, s.Labels)
				}
				for _, e := range s.Endpoints {
					got = append(got, e.Addresses...)
				}
			}
			sort.Strings(got)
			return slices.Equal(got, want), fmt.Sprintf("%d slices with %v", len(l.Items), got)
		}
	}
	t.Run("the user's Endpoints is mirrored into a slice, and the controllers leave both alone", func(t *testing.T) {
		eventually(t, 30*time.Second, "a mirrored slice with 192.0.2.10", mirrored("192.0.2.10"))
		got, err := cs.CoreV1().Endpoints(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil || len(got.Subsets) != 1 || got.Labels["endpoints.kubernetes.io/managed-by"] != "" {
			t.Errorf("the Endpoints changed: %+v, %v", got, err)
		}
	})
	t.Run("a changed address follows", func(t *testing.T) {
		cur, err := cs.CoreV1().Endpoints(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Subsets[0].Addresses = append(cur.Subsets[0].Addresses, corev1.EndpointAddress{IP: "192.0.2.11"})
		if _, err := cs.CoreV1().Endpoints(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "both addresses mirrored", mirrored("192.0.2.10", "192.0.2.11"))
	})
	t.Run("a selector on the Service removes the mirrored slice", func(t *testing.T) {
		cur, err := cs.CoreV1().Services(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.Selector = map[string]string{"app": "db"}
		if _, err := cs.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "no mirrored slice", func() (bool, string) {
			l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
				LabelSelector: discoveryv1.LabelManagedBy + "=endpointslicemirroring-controller.k8s.io"})
			if err != nil {
				return false, err.Error()
			}
			return len(l.Items) == 0, fmt.Sprintf("%d mirrored slices", len(l.Items))
		})
	})
}
