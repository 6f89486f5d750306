package main

import "testing"

func TestAllIdentifiers(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want bool
	}{
		{"a usual environment keeps ash", []string{"PATH=/bin", "HOSTNAME=web-0", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "_X1=y"}, true},
		{"a name with a dash (envFrom's data-1) needs bash", []string{"PATH=/bin", "data-1=value-1"}, false},
		{"a name with a dot needs bash", []string{"a.b=c"}, false},
		{"a name starting with a digit needs bash", []string{"1A=b"}, false},
		{"an empty name needs bash", []string{"=x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allIdentifiers(tt.env); got != tt.want {
				t.Errorf("allIdentifiers(%q) = %v, want %v", tt.env, got, tt.want)
			}
		})
	}
}
