package printers

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webhookConfigurationColumns are upstream's for both kinds of
// configuration: NAME WEBHOOKS AGE.
var webhookConfigurationColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
	ageColumn,
}

func validatingWebhookConfigurationRow(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) metav1.TableRow {
	return row(c.Name, int64(len(c.Webhooks)), since(c.CreationTimestamp.Time, now))
}

func mutatingWebhookConfigurationRow(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) metav1.TableRow {
	return row(c.Name, int64(len(c.Webhooks)), since(c.CreationTimestamp.Time, now))
}
