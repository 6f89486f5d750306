package printers

import (
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestWebhookConfigurationTablesMatchGolden(t *testing.T) {
	two := []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com"}, {Name: "b.example.com"}}
	assertGoldenTables(t, []goldenTable{
		{
			name: "validating webhook configurations show how many webhooks they hold",
			kind: "ValidatingWebhookConfiguration",
			objs: []runtime.Object{
				&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: objectMeta("ingress-nginx-admission", time.Hour), Webhooks: two},
				&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: objectMeta("empty", time.Minute)},
			},
			golden: "validatingwebhookconfiguration.golden",
		},
		{
			name: "mutating webhook configurations show how many webhooks they hold",
			kind: "MutatingWebhookConfiguration",
			objs: []runtime.Object{
				&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: objectMeta("cert-manager-webhook", 3*time.Hour),
					Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "webhook.cert-manager.io"}}},
			},
			golden: "mutatingwebhookconfiguration.golden",
		},
	})
}
