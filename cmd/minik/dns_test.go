package main

import (
	"net"
	"testing"
)

func TestDNSOptions(t *testing.T) {
	tests := []struct {
		name                string
		o                   dnsOptions
		wantListen, wantSvc string
		wantAdvertise       string
		wantErr             bool
	}{
		{name: "no listen address means the host's primary IPv4, port 53",
			o: dnsOptions{serviceCIDR: "10.96.0.0/12"}, wantListen: net.JoinHostPort(primaryIPv4(), "53"), wantSvc: "10.96.0.10"},
		{name: "kube-dns is the tenth address of the service range",
			o: dnsOptions{listen: "127.0.0.1:5353", serviceCIDR: "10.32.0.0/16"}, wantListen: "127.0.0.1:5353", wantSvc: "10.32.0.10"},
		{name: "an advertise address is parsed",
			o:          dnsOptions{listen: "0.0.0.0:53", serviceCIDR: "10.96.0.0/12", advertise: "192.0.2.7"},
			wantListen: "0.0.0.0:53", wantSvc: "10.96.0.10", wantAdvertise: "192.0.2.7"},
		{name: "an advertise address that is not an IP is refused",
			o: dnsOptions{serviceCIDR: "10.96.0.0/12", advertise: "node-1"}, wantErr: true},
		{name: "a service range that does not parse is refused",
			o: dnsOptions{serviceCIDR: "10.96.0.0"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := tt.o.config(nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if cfg.Listen != tt.wantListen || cfg.ServiceIP.String() != tt.wantSvc {
				t.Errorf("listen %s, service IP %s; want %s, %s", cfg.Listen, cfg.ServiceIP, tt.wantListen, tt.wantSvc)
			}
			if got := cfg.AdvertiseAddress; (got == nil) != (tt.wantAdvertise == "") || (got != nil && got.String() != tt.wantAdvertise) {
				t.Errorf("advertise %v, want %q", got, tt.wantAdvertise)
			}
		})
	}
}
