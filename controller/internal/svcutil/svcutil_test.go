package svcutil

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	. "minik/controller/internal/testutil"
)

func TestFindPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := Pod("a").ContainerPort("http", 8080).Obj()
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "init", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 7000, Protocol: corev1.ProtocolTCP}}},
		{Name: "sidecar", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}}},
	}
	cases := []struct {
		name string
		port corev1.ServicePort
		want int32
		ok   bool
	}{
		{"a numbered targetPort is taken as it is", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, 9000, true},
		{"an unset targetPort is the Service port", corev1.ServicePort{Port: 80}, 80, true},
		{"a named targetPort is the container port of that name", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}, 8080, true},
		{"a named targetPort must match the protocol", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")}, 0, false},
		{"a sidecar's named port resolves", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("proxy")}, 15001, true},
		{"a plain init container's named port does not", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("admin")}, 0, false},
		{"an unknown name does not resolve", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FindPort(pod, &tc.port)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FindPort = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestServiceKeysForPodUpdate(t *testing.T) {
	svcs := map[string]*corev1.Service{
		"web": Service("web").Selector("app", "web").Obj(),
		"all": Service("all").Selector("tier", "front").Obj(),
		"api": Service("api").Selector("app", "api").Obj(),
	}
	servicesOf := func(l map[string]string) []*corev1.Service {
		var out []*corev1.Service
		for _, s := range svcs {
			match := true
			for k, v := range s.Spec.Selector {
				match = match && l[k] == v
			}
			if match {
				out = append(out, s)
			}
		}
		return out
	}
	base := func() *PodBuilder {
		return Pod("p").Label("app", "web").Label("tier", "front").IP("10.0.0.1").Ready(T0)
	}
	cases := []struct {
		name     string
		old, cur *corev1.Pod
		want     []string
	}{
		{"an update that changes nothing an endpoint shows queues nothing",
			base().Obj(), func() *corev1.Pod { p := base().Obj(); p.Annotations = map[string]string{"x": "y"}; return p }(), nil},
		{"a readiness change queues every Service of the pod",
			base().Obj(), Pod("p").Label("app", "web").Label("tier", "front").IP("10.0.0.1").NotReady(T0).Obj(), []string{"default/all", "default/web"}},
		{"a relabel queues only the Services the pod left or joined",
			base().Obj(), Pod("p").Label("app", "api").Label("tier", "front").IP("10.0.0.1").Ready(T0).Obj(), []string{"default/api", "default/web"}},
		{"a relabel with an endpoint change queues every Service it was or is in",
			base().Obj(), Pod("p").Label("app", "api").Label("tier", "front").IP("10.0.0.2").Ready(T0).Obj(), []string{"default/all", "default/api", "default/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ServiceKeysForPodUpdate(tc.old, tc.cur, servicesOf)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTriggerTime(t *testing.T) {
	svc := Service("web").Obj()
	a := Pod("a").Ready(T0.Add(time.Second)).Obj()
	b := Pod("b").Ready(T0.Add(2 * time.Second)).Obj()
	b2 := Pod("b").NotReady(T0.Add(5 * time.Second)).Obj()
	c := Pod("c").Ready(T0.Add(4 * time.Second)).Obj()

	got, st := TriggerTime(nil, svc, []*corev1.Pod{a, b})
	if !got.Equal(T0) {
		t.Errorf("first sync: %v, want the Service's creation %v", got, T0)
	}
	if got, st = TriggerTime(st, svc, []*corev1.Pod{a, b}); !got.IsZero() {
		t.Errorf("nothing changed: %v, want zero", got)
	}
	if got, st = TriggerTime(st, svc, []*corev1.Pod{a, b2, c}); !got.Equal(T0.Add(4 * time.Second)) {
		t.Errorf("b flipped at +5s, c came ready at +4s: %v, want the earliest change, +4s", got)
	}
	svc2 := svc.DeepCopy()
	svc2.CreationTimestamp = metav1.NewTime(T0.Add(time.Minute)) // deleted and created again
	if got, _ = TriggerTime(st, svc2, []*corev1.Pod{a, b2, c}); !got.Equal(T0.Add(time.Minute)) {
		t.Errorf("recreated Service: %v, want its creation", got)
	}
}
