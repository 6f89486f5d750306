package record

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func event(object, reason, message string) *corev1.Event {
	return &corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "ns", Name: object, UID: types.UID("uid-" + object)},
		Source:         corev1.EventSource{Component: "replicaset-controller"},
		Type:           corev1.EventTypeNormal, Reason: reason, Message: message,
	}
}

func TestCorrelator(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	t.Run("the 10th distinct message of one reason is combined, and later ones count on it", func(t *testing.T) {
		c := newCorrelator()
		var keys []string
		for i := 1; i <= 12; i++ {
			ev := event("rs", "SuccessfulCreate", fmt.Sprintf("Created pod: p%d", i))
			key, ok := c.correlate(ev, start)
			if !ok {
				t.Fatalf("event %d dropped", i)
			}
			combined := strings.HasPrefix(ev.Message, combinedPrefix)
			if combined != (i >= 10) {
				t.Fatalf("event %d: message %q, combined=%v", i, ev.Message, combined)
			}
			keys = append(keys, key)
		}
		if keys[9] != keys[11] || keys[0] == keys[1] {
			t.Fatalf("combined events must share one key and distinct ones must not")
		}
	})

	t.Run("similar events more than 10 minutes apart start over", func(t *testing.T) {
		c := newCorrelator()
		for i := 1; i <= 9; i++ {
			c.correlate(event("rs", "SuccessfulCreate", fmt.Sprintf("m%d", i)), start)
		}
		ev := event("rs", "SuccessfulCreate", "m10")
		c.correlate(ev, start.Add(11*time.Minute))
		if strings.HasPrefix(ev.Message, combinedPrefix) {
			t.Fatalf("combined after a quiet interval: %q", ev.Message)
		}
	})

	t.Run("one object gets 25 events, then one per 5 minutes; other objects are not affected", func(t *testing.T) {
		c := newCorrelator()
		allowed := 0
		for i := 0; i < 100; i++ {
			if _, ok := c.correlate(event("rs", fmt.Sprintf("Reason%d", i), "m"), start); ok {
				allowed++
			}
		}
		if allowed != spamBurst {
			t.Fatalf("%d of 100 events allowed at once, want %d", allowed, spamBurst)
		}
		if _, ok := c.correlate(event("other", "R", "m"), start); !ok {
			t.Fatal("another object's event was dropped")
		}
		if _, ok := c.correlate(event("rs", "Late", "m"), start.Add(4*time.Minute)); ok {
			t.Fatal("an event allowed before the bucket refilled")
		}
		if _, ok := c.correlate(event("rs", "Later", "m"), start.Add(5*time.Minute+time.Second)); !ok {
			t.Fatal("no event allowed after 5 minutes")
		}
	})
}
