package nodestatus

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReadyCondition(t *testing.T) {
	cases := []struct {
		name       string
		networkErr error
		status     corev1.ConditionStatus
		reason     string
		inMessage  string
	}{
		{"a node whose pods can get a network is ready", nil, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		{"a node whose pod network is broken is not ready, with the runtime's reason", errors.New("CNI plugin bridge not found"),
			corev1.ConditionFalse, "KubeletNotReady", "NetworkReady=false reason:NetworkPluginNotReady message:CNI plugin bridge not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := readyCondition(tc.networkErr)
			if c.status != tc.status || c.reason != tc.reason || !strings.Contains(c.message, tc.inMessage) {
				t.Fatalf("readyCondition = %+v, want %s %s containing %q", c, tc.status, tc.reason, tc.inMessage)
			}
		})
	}
}
