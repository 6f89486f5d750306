package apiserver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"minik/apiserver/allocator"
)

// svcSpec builds a Service from a spec, for the strategy tables.
func svcSpec(spec corev1.ServiceSpec) *corev1.Service {
	return &corev1.Service{Spec: spec}
}

func TestNormalizeClusterIPs(t *testing.T) {
	tests := []struct {
		name    string
		old, in *corev1.Service
		wantIP  string
		wantIPs []string
	}{
		{"a create with clusterIP only gets clusterIPs", nil, svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.5"}), "10.96.0.5", []string{"10.96.0.5"}},
		{"a create with neither leaves both for allocation", nil, svcSpec(corev1.ServiceSpec{}), "", nil},
		{"an update from an old client without clusterIPs keeps them",
			svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"}}),
			svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.5"}), "10.96.0.5", []string{"10.96.0.5"}},
		{"an update that clears clusterIP clears clusterIPs on its behalf",
			svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"}}),
			svcSpec(corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.5"}}), "", nil},
		{"an update that changes clusterIP only changes clusterIPs too (for validation to refuse)",
			svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"}}),
			svcSpec(corev1.ServiceSpec{ClusterIP: "10.96.0.6", ClusterIPs: []string{"10.96.0.5"}}), "10.96.0.6", []string{"10.96.0.6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			normalizeClusterIPs(tc.in, tc.old)
			if tc.in.Spec.ClusterIP != tc.wantIP || !cmp.Equal(tc.in.Spec.ClusterIPs, tc.wantIPs) {
				t.Errorf("clusterIP %q, clusterIPs %v; want %q, %v", tc.in.Spec.ClusterIP, tc.in.Spec.ClusterIPs, tc.wantIP, tc.wantIPs)
			}
		})
	}
}

func TestPatchAllocatedValuesAndDropTypeDependentFields(t *testing.T) {
	nodePortSvc := func() *corev1.Service {
		return svcSpec(corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "https", Port: 443, NodePort: 30443}}})
	}
	tests := []struct {
		name string
		old  *corev1.Service
		edit func(*corev1.Service)
		want func(*corev1.Service)
	}{
		{
			name: "a PUT without clusterIP and node ports keeps the allocated ones",
			old:  nodePortSvc(),
			edit: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0
			},
			want: func(s *corev1.Service) {},
		},
		{
			name: "a node port the client moved to another port is not patched back",
			old:  nodePortSvc(),
			edit: func(s *corev1.Service) { s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 30080 },
			want: func(s *corev1.Service) { s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 30080 },
		},
		{
			name: "NodePort to ClusterIP drops the node ports and externalTrafficPolicy",
			old:  nodePortSvc(),
			edit: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeClusterIP, ""
				s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort = 0, 0
			},
		},
		{
			name: "NodePort to ClusterIP with a new node port keeps it, for validation to refuse",
			old:  nodePortSvc(),
			edit: func(s *corev1.Service) { s.Spec.Type, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 31000 },
			want: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeClusterIP, ""
				s.Spec.Ports[0].NodePort = 31000
			},
		},
		{
			name: "to ExternalName drops the cluster IPs and families",
			old: svcSpec(corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack)}),
			edit: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
			},
			want: func(s *corev1.Service) {
				*s = *svcSpec(corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, want := tc.old.DeepCopy(), tc.old.DeepCopy()
			tc.edit(got)
			tc.want(want)
			patchAllocatedValues(got, tc.old)
			normalizeClusterIPs(got, tc.old)
			dropTypeDependentFields(got, tc.old)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInitIPFamilies(t *testing.T) {
	r, err := allocator.ParseIPRange("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	a := &serviceAllocators{ips: allocator.NewIPs(r, nil), family: corev1.IPv4Protocol}
	single, require, prefer := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicyPreferDualStack
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	tests := []struct {
		name       string
		spec       corev1.ServiceSpec
		wantPolicy *corev1.IPFamilyPolicy
		wantFams   []corev1.IPFamily
		wantErr    string // a field path
	}{
		{"a service gets SingleStack IPv4", corev1.ServiceSpec{Selector: map[string]string{"a": "b"}}, &single, []corev1.IPFamily{v4}, ""},
		{"PreferDualStack gets the one family this cluster has", corev1.ServiceSpec{IPFamilyPolicy: &prefer}, &prefer, []corev1.IPFamily{v4}, ""},
		{"a headless service with a selector is single-stack", corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}, Selector: map[string]string{"a": "b"}},
			&single, []corev1.IPFamily{v4}, ""},
		{"a headless selectorless service requires dual-stack, as upstream", corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}},
			&require, []corev1.IPFamily{v4, v6}, ""},
		{"RequireDualStack is refused on this cluster", corev1.ServiceSpec{IPFamilyPolicy: &require}, nil, nil, "spec.ipFamilyPolicy"},
		{"an IPv6 family is refused on this cluster", corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{v6}}, nil, nil, "spec.ipFamilies[0]"},
		{"an IPv6 cluster IP is refused on this cluster", corev1.ServiceSpec{ClusterIP: "fd00::5", ClusterIPs: []string{"fd00::5"}}, nil, nil, "spec.clusterIPs[0]"},
		{"an ExternalName service gets no families", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}, nil, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := svcSpec(tc.spec)
			errs := a.initIPFamilies(svc, nil)
			if tc.wantErr != "" {
				if len(errs) == 0 || errs[0].Field != tc.wantErr {
					t.Fatalf("errors %v, want one at %s", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if !cmp.Equal(svc.Spec.IPFamilyPolicy, tc.wantPolicy) || !cmp.Equal(svc.Spec.IPFamilies, tc.wantFams) {
				t.Errorf("policy %v, families %v; want %v, %v", ptr.Deref(svc.Spec.IPFamilyPolicy, ""), svc.Spec.IPFamilies, ptr.Deref(tc.wantPolicy, ""), tc.wantFams)
			}
		})
	}
}
