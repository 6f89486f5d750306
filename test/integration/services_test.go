package integration

import (
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"minik/internal/etcd"
	"minik/internal/hostip"
	"minik/internal/testcluster"
)

func makeService(name string, typ corev1.ServiceType, clusterIP string, nodePort int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: typ, ClusterIP: clusterIP, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}},
	}}
}

// wantInvalid fails unless err is a 422 whose causes include field with a
// message containing msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 || se.ErrStatus.Details == nil {
		t.Fatalf("got %v, want 422 Invalid with causes", err)
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("no cause %s %q in %+v", field, msg, se.ErrStatus.Details.Causes)
}

func TestServices(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	cs := c.Clientset()
	ctx := ctxT(t)
	svcs := cs.CoreV1().Services("default")
	_, listenPort, _ := net.SplitHostPort(c.Listen)

	t.Run("kubectl expose makes a ClusterIP service for a deployment", func(t *testing.T) {
		c.MustKubectl(t, "", "create", "deployment", "web", "--image=busybox")
		out := c.MustKubectl(t, "", "expose", "deployment", "web", "--port=80", "--target-port=8080")
		if !strings.Contains(out, "service/web exposed") {
			t.Fatalf("expose: %s", out)
		}
		svc, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := svc.Spec
		if s.Type != corev1.ServiceTypeClusterIP || s.ClusterIP == "" || !slices.Equal(s.ClusterIPs, []string{s.ClusterIP}) ||
			s.Ports[0].TargetPort != intstr.FromInt32(8080) || s.Ports[0].Protocol != corev1.ProtocolTCP ||
			s.SessionAffinity != corev1.ServiceAffinityNone || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
			!slices.Equal(s.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
			s.Selector["app"] != "web" {
			t.Fatalf("spec not defaulted and allocated as upstream: %+v", s)
		}
		if ip := net.ParseIP(s.ClusterIP); ip == nil || !(&net.IPNet{IP: net.IPv4(10, 96, 0, 0), Mask: net.CIDRMask(12, 32)}).Contains(ip) {
			t.Fatalf("cluster IP %s outside 10.96.0.0/12", s.ClusterIP)
		}
	})
	t.Run("kubectl get lists services, endpoints and endpoint slices with upstream's columns", func(t *testing.T) {
		// The apiserver writes the kubernetes Endpoints and EndpointSlice
		// after it is ready.
		var out string
		waitFor(t, func() bool {
			out = c.MustKubectl(t, "", "get", "svc,ep,endpointslices")
			return strings.Contains(out, "endpoints/kubernetes") && strings.Contains(out, "endpointslice.discovery.k8s.io/kubernetes")
		})
		for _, want := range []string{"service/kubernetes", "service/web", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "443/TCP", "80/TCP",
			"endpoints/kubernetes", "ENDPOINTS", "endpointslice.discovery.k8s.io/kubernetes", "ADDRESSTYPE", "IPv4",
			"Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"} {
			if !strings.Contains(out, want) {
				t.Errorf("missing %q in:\n%s", want, out)
			}
		}
	})
	t.Run("kubectl get all lists the service", func(t *testing.T) {
		out := c.MustKubectl(t, "", "get", "all")
		if !strings.Contains(out, "service/web") || !strings.Contains(out, "deployment.apps/web") {
			t.Fatalf("get all:\n%s", out)
		}
	})
	t.Run("kubectl describe svc prints the Endpoints line", func(t *testing.T) {
		want := net.JoinHostPort(hostip.PrimaryIPv4(), listenPort)
		var out string
		waitFor(t, func() bool {
			out = c.MustKubectl(t, "", "describe", "svc", "kubernetes")
			return regexp.MustCompile(`(?m)^Endpoints:\s+` + regexp.QuoteMeta(want) + `$`).MatchString(out)
		})
		if !regexp.MustCompile(`(?m)^IP:\s+10\.96\.0\.1$`).MatchString(out) {
			t.Fatalf("describe svc kubernetes:\n%s", out)
		}
		out = c.MustKubectl(t, "", "describe", "svc", "web")
		if !regexp.MustCompile(`(?m)^Endpoints:\s+<none>$`).MatchString(out) {
			t.Fatalf("describe svc web:\n%s", out)
		}
	})
	t.Run("field selectors on spec.type and spec.clusterIP work", func(t *testing.T) {
		list, err := svcs.List(ctx, metav1.ListOptions{FieldSelector: "spec.clusterIP=10.96.0.1"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "kubernetes" {
			t.Fatalf("by cluster IP: %v %v", list, err)
		}
		list, err = svcs.List(ctx, metav1.ListOptions{FieldSelector: "spec.type=NodePort"})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("by type: %v %v", list, err)
		}
	})

	t.Run("a requested cluster IP is honoured and a duplicate refused with 422", func(t *testing.T) {
		svc, err := svcs.Create(ctx, makeService("fixed", "", "10.96.200.10", 0), metav1.CreateOptions{})
		if err != nil || svc.Spec.ClusterIP != "10.96.200.10" {
			t.Fatalf("create: %v %v", svc, err)
		}
		_, err = svcs.Create(ctx, makeService("fixed2", "", "10.96.200.10", 0), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.clusterIPs", "failed to allocate IP 10.96.200.10: provided IP is already allocated")
		_, err = svcs.Create(ctx, makeService("outside", "", "192.168.7.7", 0), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.clusterIPs", "the provided IP (192.168.7.7) is not in the valid range. The range of valid IPs is 10.96.0.0/12")
	})
	t.Run("a requested node port is honoured and a duplicate refused with 422", func(t *testing.T) {
		svc, err := svcs.Create(ctx, makeService("np", corev1.ServiceTypeNodePort, "", 30080), metav1.CreateOptions{})
		if err != nil || svc.Spec.Ports[0].NodePort != 30080 || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			t.Fatalf("create: %v %v", svc, err)
		}
		_, err = svcs.Create(ctx, makeService("np2", corev1.ServiceTypeNodePort, "", 30080), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is already allocated")
		_, err = svcs.Create(ctx, makeService("np3", corev1.ServiceTypeNodePort, "", 8080), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is not in the valid range. The range of valid ports is 30000-32767")
	})
	t.Run("NodePort to ClusterIP frees the node port, and a delete frees the cluster IP", func(t *testing.T) {
		svc, err := svcs.Get(ctx, "np", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		if svc, err = svcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil || svc.Spec.Ports[0].NodePort != 0 || svc.Spec.ExternalTrafficPolicy != "" {
			t.Fatalf("to ClusterIP: %v %v", svc, err)
		}
		if _, err := svcs.Create(ctx, makeService("np2", corev1.ServiceTypeNodePort, "", 30080), metav1.CreateOptions{}); err != nil {
			t.Fatalf("30080 not freed: %v", err)
		}
		if err := svcs.Delete(ctx, "fixed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := svcs.Create(ctx, makeService("fixed2", "", "10.96.200.10", 0), metav1.CreateOptions{}); err != nil {
			t.Fatalf("10.96.200.10 not freed: %v", err)
		}
	})
	t.Run("the cluster IP may not change and headless NodePort is refused", func(t *testing.T) {
		svc, _ := svcs.Get(ctx, "web", metav1.GetOptions{})
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.96.200.99", nil
		_, err := svcs.Update(ctx, svc, metav1.UpdateOptions{})
		wantInvalid(t, err, "spec.clusterIPs[0]", "may not change once set")
		h := makeService("headless", corev1.ServiceTypeNodePort, corev1.ClusterIPNone, 0)
		_, err = svcs.Create(ctx, h, metav1.CreateOptions{})
		wantInvalid(t, err, "spec.clusterIPs[0]", "may not be set to 'None' for NodePort services")
	})
	t.Run("invalid services get 422 with a cause per problem", func(t *testing.T) {
		bad := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Port: 80}, {Name: "b", Port: 70000}, {Name: "c", Port: 81, NodePort: 30001}}}}
		_, err := svcs.Create(ctx, bad, metav1.CreateOptions{})
		wantInvalid(t, err, "spec.ports[0].name", "Required value")
		wantInvalid(t, err, "spec.ports[1].port", "must be between 1 and 65535")
		wantInvalid(t, err, "spec.ports[2].nodePort", "may not be used when `type` is 'ClusterIP'")
		out, kerr := c.Kubectl(ctx, "apiVersion: v1\nkind: Service\nmetadata: {name: en}\nspec: {type: ExternalName}\n", "apply", "-f", "-")
		if kerr == nil || !strings.Contains(out, `The Service "en" is invalid: spec.externalName: Required value`) {
			t.Fatalf("kubectl apply of an ExternalName without a name: %v\n%s", kerr, out)
		}
	})
	t.Run("headless, ExternalName and LoadBalancer services are served as upstream", func(t *testing.T) {
		h := makeService("db", "", corev1.ClusterIPNone, 0)
		if svc, err := svcs.Create(ctx, h, metav1.CreateOptions{}); err != nil || !slices.Equal(svc.Spec.ClusterIPs, []string{"None"}) {
			t.Fatalf("headless: %v %v", svc, err)
		}
		en := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
		if svc, err := svcs.Create(ctx, en, metav1.CreateOptions{}); err != nil || svc.Spec.ClusterIP != "" || svc.Spec.IPFamilyPolicy != nil {
			t.Fatalf("external name: %v %v", svc, err)
		}
		lb := makeService("lb", corev1.ServiceTypeLoadBalancer, "", 0)
		svc, err := svcs.Create(ctx, lb, metav1.CreateOptions{})
		if err != nil || svc.Spec.Ports[0].NodePort == 0 || svc.Spec.AllocateLoadBalancerNodePorts == nil || !*svc.Spec.AllocateLoadBalancerNodePorts {
			t.Fatalf("load balancer: %v %v", svc, err)
		}
		out := c.MustKubectl(t, "", "get", "svc", "lb", "ext")
		if !strings.Contains(out, "<pending>") || !strings.Contains(out, "example.com") {
			t.Fatalf("EXTERNAL-IP column:\n%s", out)
		}
	})

	t.Run("endpoints and endpoint slices are stored, validated and served in protobuf too", func(t *testing.T) {
		cfg := c.RESTConfig()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		pcs := kubernetes.NewForConfigOrDie(cfg)
		ready := true
		slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Port: int32p(8080)}}}
		got, err := pcs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
		if err != nil || *got.Ports[0].Protocol != corev1.ProtocolTCP || *got.Ports[0].Name != "" {
			t.Fatalf("create slice: %v %v", got, err)
		}
		list, err := pcs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list slices: %v %v", list, err)
		}
		bad := slice.DeepCopy()
		bad.Name, bad.Endpoints[0].Addresses = "web-bad", []string{"127.0.0.1"}
		_, err = pcs.DiscoveryV1().EndpointSlices("default").Create(ctx, bad, metav1.CreateOptions{})
		wantInvalid(t, err, "endpoints[0].addresses[0]", "may not be in the loopback range")
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}}, Ports: []corev1.EndpointPort{{Port: 8080}}}}}
		if _, err := pcs.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := c.MustKubectl(t, "", "get", "ep/web", "endpointslices/web-abcde")
		if !strings.Contains(out, "10.244.0.5:8080,10.244.0.6:8080") || !regexp.MustCompile(`web-abcde\s+IPv4\s+8080\s+10\.244\.0\.5\s`).MatchString(out) {
			t.Fatalf("get ep, endpointslices:\n%s", out)
		}
	})

	advertise := hostip.PrimaryIPv4()
	t.Run("the kubernetes Service, Endpoints and EndpointSlice point at the advertise address", func(t *testing.T) {
		svc, err := svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" ||
			svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != listenPort {
			t.Fatalf("kubernetes service: %+v", svc.Spec)
		}
		if advertise == "127.0.0.1" {
			t.Fatal("this host has no non-loopback IPv4 address to advertise; the test needs one")
		}
		waitFor(t, func() bool {
			ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
			return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 &&
				ep.Subsets[0].Addresses[0].IP == advertise && strconv.Itoa(int(ep.Subsets[0].Ports[0].Port)) == listenPort
		})
		slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slice.AddressType != discoveryv1.AddressTypeIPv4 || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != advertise ||
			slice.Labels[discoveryv1.LabelServiceName] != "kubernetes" || strconv.Itoa(int(*slice.Ports[0].Port)) != listenPort {
			t.Fatalf("kubernetes endpoint slice: %+v", slice)
		}
	})
	t.Run("the serving certificate names the service IP, the kubernetes names and the advertise address", func(t *testing.T) {
		conn, err := tls.Dial("tcp", c.Listen, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		cert := conn.ConnectionState().PeerCertificates[0]
		for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
			if err := cert.VerifyHostname(name); err != nil {
				t.Errorf("certificate does not cover %s: %v", name, err)
			}
		}
		for _, ip := range []string{"10.96.0.1", advertise} {
			if err := cert.VerifyHostname(ip); err != nil {
				t.Errorf("certificate does not cover %s: %v", ip, err)
			}
		}
	})

	t.Run("allocations survive a restart and the repair pass frees a leak", func(t *testing.T) {
		web, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Leak a node port and an IP, as a crash of some other writer could,
		// and lose the record of web's IP.
		etcdClient, err := etcd.Dial([]string{"unix://" + filepath.Join(c.DataDir, "etcd-client.sock")})
		if err != nil {
			t.Fatal(err)
		}
		defer etcdClient.Close()
		for key, owner := range map[string]string{
			"/registry/ranges/servicenodeports/30555":   "default/ghost",
			"/registry/ranges/serviceips/10.96.123.123": "default/ghost",
		} {
			if _, err := etcdClient.Put(ctx, key, owner); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := etcdClient.Delete(ctx, "/registry/ranges/serviceips/"+web.Spec.ClusterIP); err != nil {
			t.Fatal(err)
		}
		_, err = svcs.Create(ctx, makeService("leaked", corev1.ServiceTypeNodePort, "", 30555), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is already allocated")

		c.Restart()
		cs = c.Clientset()
		svcs = cs.CoreV1().Services("default")

		if got, err := svcs.Get(ctx, "web", metav1.GetOptions{}); err != nil || got.Spec.ClusterIP != web.Spec.ClusterIP {
			t.Fatalf("web after restart: %v %v", got, err)
		}
		_, err = svcs.Create(ctx, makeService("dup", "", web.Spec.ClusterIP, 0), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.clusterIPs", "provided IP is already allocated") // recorded again by the repair
		_, err = svcs.Create(ctx, makeService("dup", corev1.ServiceTypeNodePort, "", 30080), metav1.CreateOptions{})
		wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is already allocated") // np2 still holds it
		if _, err := svcs.Create(ctx, makeService("leaked", corev1.ServiceTypeNodePort, "10.96.123.123", 30555), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the leaked port and IP were not freed by the repair: %v", err)
		}
	})
}

// waitFor polls cond for up to 20s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
