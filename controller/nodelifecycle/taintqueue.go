package nodelifecycle

import (
	"maps"
	"math"
	"slices"
	"time"

	"golang.org/x/time/rate"
)

// TaintQueue holds, per zone, the not-ready nodes waiting for their
// NoExecute taint, first come first served, and lets them out at the
// zone's rate through a token bucket that holds one token, as Kubernetes'
// rate-limited tainting queues do. Time is passed in, never read, so
// tests use fixed times. It is not safe for concurrent use.
type TaintQueue struct {
	defaultRate float64
	zones       map[string]*zoneQueue
}

type zoneQueue struct {
	nodes []string
	rate  float64
	// bucket is nil while the rate is 0: nobody gets out.
	bucket *rate.Limiter
}

// NewTaintQueue returns an empty queue; a zone seen for the first time
// lets nodes out at defaultRate.
func NewTaintQueue(defaultRate float64) *TaintQueue {
	return &TaintQueue{defaultRate: defaultRate, zones: map[string]*zoneQueue{}}
}

func (q *TaintQueue) zone(name string) *zoneQueue {
	z, ok := q.zones[name]
	if !ok {
		z = &zoneQueue{rate: q.defaultRate, bucket: newBucket(q.defaultRate)}
		q.zones[name] = z
	}
	return z
}

func newBucket(r float64) *rate.Limiter {
	if r <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(r), 1)
}

// Add queues node in zone, unless it waits there already; it reports
// whether it was added. A node that moved zones leaves its old queue.
func (q *TaintQueue) Add(zone, node string) bool {
	z := q.zone(zone)
	if slices.Contains(z.nodes, node) {
		return false
	}
	q.Remove(node)
	z.nodes = append(z.nodes, node)
	return true
}

// Remove takes node out of the queue (it is Ready again, or gone).
func (q *TaintQueue) Remove(node string) bool {
	for _, z := range q.zones {
		if i := slices.Index(z.nodes, node); i >= 0 {
			z.nodes = slices.Delete(z.nodes, i, i+1)
			return true
		}
	}
	return false
}

// ZoneOf returns the zone node is queued in, if it is.
func (q *TaintQueue) ZoneOf(node string) (zone string, queued bool) {
	for name, z := range q.zones {
		if slices.Contains(z.nodes, node) {
			return name, true
		}
	}
	return "", false
}

// Waiting returns the nodes queued in zone, in order.
func (q *TaintQueue) Waiting(zone string) []string {
	if z, ok := q.zones[zone]; ok {
		return slices.Clone(z.nodes)
	}
	return nil
}

// SetRate gives zone a new rate (nodes per second; 0 lets nobody out).
// As in Kubernetes the bucket is replaced only when the rate changes, and
// a bucket that was empty at now leaves the new one empty too, so a rate
// change never lets an extra node out.
func (q *TaintQueue) SetRate(zone string, r float64, now time.Time) {
	z := q.zone(zone)
	if z.rate == r {
		return
	}
	wasEmpty := z.bucket == nil || z.bucket.TokensAt(now) < 1
	z.rate, z.bucket = r, newBucket(r)
	if wasEmpty && z.bucket != nil {
		z.bucket.AllowN(now, 1)
	}
}

// Forget drops zones other than those in keep, with their queues (their
// nodes are gone).
func (q *TaintQueue) Forget(keep map[string]ZoneState) {
	for zone := range q.zones {
		if _, ok := keep[zone]; !ok {
			delete(q.zones, zone)
		}
	}
}

// Pop returns the nodes whose turn has come at now, zone by zone in name
// order, and takes them out of the queue. A node at the head that no
// longer needs its taint (stillDue says so: it is Ready again, gone, or
// tainted already) leaves without using up its zone's token.
func (q *TaintQueue) Pop(now time.Time, stillDue func(node string) bool) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(q.zones)) {
		z := q.zones[name]
		for len(z.nodes) > 0 {
			head := z.nodes[0]
			if stillDue(head) {
				if z.bucket == nil || !z.bucket.AllowN(now, 1) {
					break
				}
				out = append(out, head)
			}
			z.nodes = z.nodes[1:]
		}
	}
	return out
}

// NextIn returns how long after now the next queued node may go; 0 if
// no queued node ever can (every zone with nodes waiting has rate 0) or
// none waits.
func (q *TaintQueue) NextIn(now time.Time) time.Duration {
	next := time.Duration(0)
	for _, z := range q.zones {
		if len(z.nodes) == 0 || z.bucket == nil {
			continue
		}
		missing := 1 - z.bucket.TokensAt(now)
		wait := time.Duration(math.Ceil(missing / z.rate * float64(time.Second)))
		if wait <= 0 {
			wait = time.Nanosecond // due now
		}
		if next == 0 || wait < next {
			next = wait
		}
	}
	return next
}
