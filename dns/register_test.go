package dns

import (
	"log/slog"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestServiceIP(t *testing.T) {
	tests := []struct {
		name, cidr, want string
		wantErr          bool
	}{
		{name: "the default range gives kubeadm's 10.96.0.10", cidr: "10.96.0.0/12", want: "10.96.0.10"},
		{name: "a range given by one of its addresses starts from its base", cidr: "10.100.7.9/16", want: "10.100.0.10"},
		{name: "an IPv6 range gives its tenth address", cidr: "fd00:10:96::/112", want: "fd00:10:96::a"},
		{name: "a range too small for ten addresses is refused", cidr: "10.0.0.0/29", wantErr: true},
		{name: "something that is not a range is refused", cidr: "10.96.0.10", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip, err := ServiceIP(tt.cidr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err == nil && ip.String() != tt.want {
				t.Errorf("ServiceIP(%s) = %s, want %s", tt.cidr, ip, tt.want)
			}
		})
	}
}

func TestSliceName(t *testing.T) {
	tests := []struct {
		name, addr string
		port       int32
		want       string
	}{
		{"an IPv4 address on port 53 gives kube-dns-A-B-C-D", "192.0.2.2", 53, "kube-dns-192-0-2-2"},
		{"another port is appended", "127.0.0.1", 5353, "kube-dns-127-0-0-1-5353"},
		{"an IPv6 address has dashes for colons", "fd00::5", 53, "kube-dns-fd00--5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SliceName(net.ParseIP(tt.addr), tt.port); got != tt.want {
				t.Errorf("SliceName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSliceMatches(t *testing.T) {
	r := newRegistrar(nil, net.ParseIP("10.96.0.10"), net.ParseIP("192.0.2.2"), 53, "n1", slog.New(slog.DiscardHandler))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ServiceName, UID: "u1"}}
	tests := []struct {
		name   string
		change func(sl *discoveryv1.EndpointSlice)
		want   bool
	}{
		{"the slice as written matches", func(*discoveryv1.EndpointSlice) {}, true},
		{"fields the apiserver adds do not count", func(sl *discoveryv1.EndpointSlice) {
			sl.ResourceVersion, sl.UID, sl.Generation = "7", "x", 2
			sl.Labels["extra"] = "yes"
			sl.Endpoints[0].Conditions.Terminating = nil
			sl.OwnerReferences = append(sl.OwnerReferences, metav1.OwnerReference{UID: "other"})
		}, true},
		{"another address is corrected", func(sl *discoveryv1.EndpointSlice) { sl.Endpoints[0].Addresses = []string{"192.0.2.3"} }, false},
		{"an endpoint marked not ready is corrected", func(sl *discoveryv1.EndpointSlice) { sl.Endpoints[0].Conditions.Ready = ptr.To(false) }, false},
		{"another port is corrected", func(sl *discoveryv1.EndpointSlice) { sl.Ports[1].Port = ptr.To[int32](54) }, false},
		{"a lost service-name label is corrected", func(sl *discoveryv1.EndpointSlice) { delete(sl.Labels, discoveryv1.LabelServiceName) }, false},
		{"an owner that is a former kube-dns Service is corrected", func(sl *discoveryv1.EndpointSlice) { sl.OwnerReferences[0].UID = "u0" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := r.desiredSlice(svc)
			tt.change(cur)
			if got := sliceMatches(cur, r.desiredSlice(svc)); got != tt.want {
				t.Errorf("sliceMatches = %v, want %v", got, tt.want)
			}
		})
	}
}
