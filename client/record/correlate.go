package record

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The correlator applies Kubernetes' event rules before anything is sent,
// so that a busy controller writes a bounded number of events:
//
//	similar events: once one (source, object, type, reason) has had 10
//	                distinct messages, each less than 10 minutes after the
//	                last, further ones merge into one event,
//	                "(combined from similar events): <message>", whose
//	                count grows.
//	spam filter:    each (source, object) may emit a burst of 25 events,
//	                then one more every 5 minutes; the rest are dropped.
//
// Scaling a ReplicaSet to 3000 pods thus records about 25 SuccessfulCreate
// events, as in Kubernetes, not 3000.
const (
	maxSimilarEvents   = 10
	similarInterval    = 10 * time.Minute
	spamBurst          = 25
	spamRefillInterval = 5 * time.Minute
	// maxTracked bounds each map; when full it is cleared, which at worst
	// lets a few more events through.
	maxTracked = 4096
)

const combinedPrefix = "(combined from similar events): "

type similarRecord struct {
	messages map[string]struct{}
	last     time.Time
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

type correlator struct {
	similar map[string]*similarRecord
	spam    map[string]*tokenBucket
}

func newCorrelator() *correlator {
	return &correlator{similar: map[string]*similarRecord{}, spam: map[string]*tokenBucket{}}
}

// correlate decides what becomes of ev at now. It returns the key under
// which repeats of the (possibly rewritten) event are counted, and false
// when the spam filter drops it. The caller holds the recorder's lock.
func (c *correlator) correlate(ev *corev1.Event, now time.Time) (string, bool) {
	key := aggregationKey(ev)
	reasonKey := similarKey(ev)
	rec := c.similar[reasonKey]
	if rec == nil || now.Sub(rec.last) > similarInterval {
		if len(c.similar) >= maxTracked {
			c.similar = map[string]*similarRecord{}
		}
		rec = &similarRecord{messages: map[string]struct{}{}}
		c.similar[reasonKey] = rec
	}
	rec.last = now
	rec.messages[ev.Message] = struct{}{}
	if len(rec.messages) >= maxSimilarEvents {
		for m := range rec.messages { // keep the set at its bound
			delete(rec.messages, m)
			break
		}
		ev.Message = combinedPrefix + ev.Message
		key = reasonKey
	}
	return key, c.allow(spamKey(ev), now)
}

// allow takes a token from the (source, object) bucket.
func (c *correlator) allow(key string, now time.Time) bool {
	b := c.spam[key]
	if b == nil {
		if len(c.spam) >= maxTracked {
			c.spam = map[string]*tokenBucket{}
		}
		b = &tokenBucket{tokens: spamBurst, last: now}
		c.spam[key] = b
	}
	refill := now.Sub(b.last).Seconds() / spamRefillInterval.Seconds()
	b.tokens = math.Min(spamBurst, b.tokens+refill)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func objectKey(ev *corev1.Event) string {
	o := ev.InvolvedObject
	return ev.Source.Component + "\x00" + ev.Source.Host + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" +
		o.Name + "\x00" + string(o.UID) + "\x00" + o.APIVersion
}

func spamKey(ev *corev1.Event) string { return objectKey(ev) }

func similarKey(ev *corev1.Event) string {
	return objectKey(ev) + "\x00" + ev.Type + "\x00" + ev.Reason
}

// aggregationKey identifies one exact event: repeats of it raise its count.
func aggregationKey(ev *corev1.Event) string {
	return objectKey(ev) + "\x00" + ev.InvolvedObject.FieldPath + "\x00" + ev.Type + "\x00" + ev.Reason + "\x00" + ev.Message
}
