// Package storage keeps API objects in etcd, one key per object, and fans
// one etcd watch per resource out to every HTTP watcher.
package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Store reads and writes one resource type in etcd. Objects are stored in
// Kubernetes' protobuf storage form (codec.go) without
// metadata.resourceVersion; the etcd ModRevision is the resourceVersion,
// set on every read.
type Store struct {
	client *clientv3.Client
	prefix string
	gr     schema.GroupResource
	gvk    schema.GroupVersionKind // written into the stored envelope
	newObj func() runtime.Object
	cache  *WatchCache
	// companions, if set, lists the extra keys each object owns
	// (companions.go).
	companions CompanionsFunc
	durations  [numOps]prometheus.Observer // metrics.go
	// ttl, if set, makes objects expire after their last write (ttl.go).
	ttl *ttlLeases
}

// NewStore returns a store for objects under prefix. Call Start to begin
// watching etcd for the watch cache.
func NewStore(client *clientv3.Client, prefix string, gr schema.GroupResource, gvk schema.GroupVersionKind, newObj func() runtime.Object, historySize int) *Store {
	s := &Store{client: client, prefix: prefix, gr: gr, gvk: gvk, newObj: newObj, durations: durationObservers(gr.String())}
	s.cache = newWatchCache(s, historySize)
	return s
}

// Start runs the etcd watch that feeds the watch cache until ctx ends. It
// returns once the cache is ready to serve watchers.
func (s *Store) Start(ctx context.Context) error {
	return s.cache.start(ctx)
}

// Cache returns the store's watch cache.
func (s *Store) Cache() *WatchCache { return s.cache }

// Key returns the etcd key of an object.
func (s *Store) Key(namespace, name string) string {
	if namespace == "" {
		return s.prefix + name
	}
	return s.prefix + namespace + "/" + name
}

func (s *Store) listPrefix(namespace string) string {
	if namespace == "" {
		return s.prefix
	}
	return s.prefix + namespace + "/"
}

// Decode turns stored bytes into a typed object carrying resourceVersion rev.
func (s *Store) Decode(data []byte, rev int64) (runtime.Object, error) {
	obj, err := s.decode(data)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

func setRV(obj runtime.Object, rev int64) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

// Get returns the object, or a NotFound error.
func (s *Store) Get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	defer s.observe(opGet, time.Now())
	resp, err := s.client.Get(ctx, s.Key(namespace, name))
	if err != nil {
		return nil, storageError(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(s.gr, name)
	}
	kv := resp.Kvs[0]
	return s.Decode(kv.Value, kv.ModRevision)
}

// Guard is a condition on other keys that a write commits under. Admission
// that read from a cache passes guards saying what it read, so the write
// fails (with ErrGuardFailed) instead of committing on stale facts.
type Guard struct {
	// Key is the guarded key, or with Prefix, every key under it.
	Key    string
	Prefix bool
	// ModRevision is the key's expected ModRevision (0: the key must not
	// exist). With Prefix, no key under Key may have a newer ModRevision.
	ModRevision int64
	// Put, if set, is written to Key in the same transaction: a change
	// the write makes to another object (a ResourceQuota's usage charged
	// by a create), made only if that object is still at ModRevision.
	Put []byte
}

// PutGuard returns a Guard that writes obj (read at its resourceVersion)
// along with a create, if obj has not changed since it was read.
func (s *Store) PutGuard(obj runtime.Object) (Guard, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return Guard{}, err
	}
	rev, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return Guard{}, fmt.Errorf("storage: %s %q has no resourceVersion to guard: %w", s.gr, m.GetName(), err)
	}
	data, err := s.encode(obj)
	if err != nil {
		return Guard{}, err
	}
	return Guard{Key: s.Key(m.GetNamespace(), m.GetName()), ModRevision: rev, Put: data}, nil
}

// puts returns the writes the guards carry.
func puts(guards []Guard) []clientv3.Op {
	var ops []clientv3.Op
	for _, g := range guards {
		if g.Put != nil && !g.Prefix {
			ops = append(ops, clientv3.OpPut(g.Key, string(g.Put)))
		}
	}
	return ops
}

func (g Guard) cmp() clientv3.Cmp {
	if g.Prefix {
		return clientv3.Compare(clientv3.ModRevision(g.Key), "<", g.ModRevision+1).WithPrefix()
	}
	return clientv3.Compare(clientv3.ModRevision(g.Key), "=", g.ModRevision)
}

// ErrGuardFailed says a guarded write did not commit: a guard no longer
// held (or the object already existed; the caller retries unguarded to
// find out which, after reading fresh facts).
var ErrGuardFailed = errors.New("storage: guarded write lost to a concurrent change")

// Create stores a new object; it answers AlreadyExists if the key is
// taken. With guards, any failed condition answers ErrGuardFailed. A
// companion key that exists answers a *TakenError.
func (s *Store) Create(ctx context.Context, obj runtime.Object, guards ...Guard) (runtime.Object, error) {
	defer s.observe(opCreate, time.Now())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	data, err := s.encode(obj)
	if err != nil {
		return nil, err
	}
	key := s.Key(m.GetNamespace(), m.GetName())
	comp := diffCompanions(nil, s.companionsOf(obj))
	cmps := make([]clientv3.Cmp, 0, 1+len(guards)+len(comp.add))
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
	for _, g := range guards {
		cmps = append(cmps, g.cmp())
	}
	cmps = append(cmps, comp.cmps()...)
	var resp *clientv3.TxnResponse
	for lost := false; ; lost = true {
		put, lease, err := s.putObject(ctx, key, data)
		if err != nil {
			return nil, err
		}
		resp, err = s.client.Txn(ctx).
			If(cmps...).
			Then(append(append([]clientv3.Op{put}, comp.ops()...), puts(guards)...)...).
			Else(append([]clientv3.Op{clientv3.OpGet(key, clientv3.WithKeysOnly())}, comp.reads()...)...).
			Commit()
		if err == nil {
			break
		}
		if lost || !s.leaseLost(err, lease) {
			return nil, storageError(err)
		}
	}
	if !resp.Succeeded {
		exists := len(resp.Responses[0].GetResponseRange().Kvs) > 0
		if !exists {
			if err := comp.taken(resp.Responses[1:]); err != nil {
				return nil, err
			}
		}
		if len(guards) > 0 {
			return nil, ErrGuardFailed
		}
		return nil, apierrors.NewAlreadyExists(s.gr, m.GetName())
	}
	setRV(obj, resp.Header.Revision)
	return obj, nil
}

// UpdateFunc computes the next version of an object from the current one
// (a private copy). Returning ErrNoChange keeps the object as it is.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ErrNoChange tells GuaranteedUpdate that nothing needs to be written.
var ErrNoChange = errors.New("no change")

// GuaranteedUpdate reads the object, applies update and writes the result
// if the object did not change in between, retrying on races. If the result
// is marked deleted with no finalizers left, the object is removed instead.
// It returns the stored object and whether it was deleted.
func (s *Store) GuaranteedUpdate(ctx context.Context, namespace, name string, update UpdateFunc) (runtime.Object, bool, error) {
	return s.GuardedUpdate(ctx, namespace, name, func(current runtime.Object) (runtime.Object, []Guard, error) {
		next, err := update(current)
		return next, nil, err
	})
}

// GuardedUpdateFunc is an UpdateFunc that also returns the guards its
// write commits under (the ResourceQuotas an update charges).
type GuardedUpdateFunc func(current runtime.Object) (runtime.Object, []Guard, error)

// maxGuardLosses bounds how often GuardedUpdate decides again after a
// guard failed (each loss is another writer's win).
const maxGuardLosses = 100

// GuardedUpdate is GuaranteedUpdate whose write also commits the guards
// update returns, in one transaction: when a guard fails, update runs
// again on the object as it is, and after maxGuardLosses such losses it
// answers ErrGuardFailed.
//
// As kube-apiserver's cacher does, the first try starts from the watch
// cache's copy instead of reading etcd: the write's compare on
// ModRevision catches a stale copy, and whatever the first try would
// answer without writing (an error, no change) is decided again on a
// read from etcd, so a lagging cache costs a retry, never a wrong answer.
func (s *Store) GuardedUpdate(ctx context.Context, namespace, name string, update GuardedUpdateFunc) (runtime.Object, bool, error) {
	defer s.observe(opUpdate, time.Now())
	key := s.Key(namespace, name)
	var err error
	resp, shared := s.cache.cachedRead(key)
	fromEtcd := false
	if resp == nil {
		resp, err = s.client.Get(ctx, key)
		fromEtcd = true
	}
	// readEtcd replaces a cached first try with etcd's copy; it reports
	// false when the try already came from etcd and its answer stands.
	readEtcd := func() bool {
		if fromEtcd {
			return false
		}
		resp, err = s.client.Get(ctx, key)
		fromEtcd = true
		return true
	}
	guardLosses, leaseRetried := 0, false
	for {
		if err != nil {
			return nil, false, storageError(err)
		}
		if len(resp.Kvs) == 0 {
			return nil, false, apierrors.NewNotFound(s.gr, name)
		}
		kv := resp.Kvs[0]
		// The first try may start from the cache's decoded object (read
		// only); later tries decide on what etcd answered.
		current, isShared := shared, shared != nil
		shared = nil
		if !isShared {
			if current, err = s.Decode(kv.Value, kv.ModRevision); err != nil {
				return nil, false, err
			}
		}
		next, guards, err := update(current.DeepCopyObject())
		if err != nil && readEtcd() {
			continue // perhaps only the cached copy made it fail
		}
		if errors.Is(err, ErrNoChange) {
			return current, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if ShouldDelete(next) {
			if isShared {
				current = current.DeepCopyObject() // deleteAt stamps its revision
			}
			obj, deleted, err := s.deleteAt(ctx, key, name, kv.ModRevision, current)
			if err != nil || deleted {
				return obj, deleted, err
			}
			// Lost a race (say, to a status update): read again and
			// decide afresh, rather than answer a delete that did not happen.
			if resp, err = s.client.Get(ctx, key); err != nil {
				return nil, false, storageError(err)
			}
			fromEtcd = true
			continue
		}
		data, err := s.encode(next)
		if err != nil {
			return nil, false, err
		}
		if string(data) == string(kv.Value) {
			if readEtcd() {
				continue
			}
			// Nothing changed: answer with the stored object, as Kubernetes does.
			return current, false, nil
		}
		comp := diffCompanions(s.companionsOf(current), s.companionsOf(next))
		cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)}, comp.cmps()...)
		for _, g := range guards {
			cmps = append(cmps, g.cmp())
		}
		put, lease, err := s.putObject(ctx, key, data)
		if err != nil {
			return nil, false, err
		}
		txn, txnErr := s.client.Txn(ctx).
			If(cmps...).
			Then(append(append([]clientv3.Op{put}, comp.ops()...), puts(guards)...)...).
			Else(append([]clientv3.Op{clientv3.OpGet(key)}, comp.reads()...)...).
			Commit()
		if txnErr != nil {
			if !leaseRetried && s.leaseLost(txnErr, lease) {
				leaseRetried = true
				continue // decide again on the same read, with another lease
			}
			return nil, false, storageError(txnErr)
		}
		if txn.Succeeded {
			setRV(next, txn.Header.Revision)
			return next, false, nil
		}
		fromEtcd = true // the else branch read the key
		got := txn.Responses[0].GetResponseRange()
		if len(got.Kvs) > 0 && got.Kvs[0].ModRevision == kv.ModRevision {
			// The object did not change: a companion key was taken, or
			// else a guard failed.
			if err := comp.taken(txn.Responses[1:]); err != nil {
				return nil, false, err
			}
			if guardLosses++; guardLosses == maxGuardLosses {
				return nil, false, ErrGuardFailed
			}
		}
		// Lost a race: retry on the value the failed transaction read.
		resp = (*clientv3.GetResponse)(got)
	}
}

// ShouldDelete reports whether an object marked for deletion can go now:
// no finalizers remain and no grace period is pending.
func ShouldDelete(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false // the namespace controller still has content to remove
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// Delete removes the object if precondition (given the current object)
// passes. It returns the object as it was, with the deletion's revision.
func (s *Store) Delete(ctx context.Context, namespace, name string, precondition func(runtime.Object) error) (runtime.Object, error) {
	defer s.observe(opDelete, time.Now())
	key := s.Key(namespace, name)
	for {
		resp, err := s.client.Get(ctx, key)
		if err != nil {
			return nil, storageError(err)
		}
		if len(resp.Kvs) == 0 {
			return nil, apierrors.NewNotFound(s.gr, name)
		}
		kv := resp.Kvs[0]
		current, err := s.Decode(kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if precondition != nil {
			if err := precondition(current); err != nil {
				return nil, err
			}
		}
		obj, deleted, err := s.deleteAt(ctx, key, name, kv.ModRevision, current)
		if err != nil || deleted {
			return obj, err
		}
	}
}

func (s *Store) deleteAt(ctx context.Context, key, name string, modRev int64, current runtime.Object) (runtime.Object, bool, error) {
	comp := diffCompanions(s.companionsOf(current), nil)
	txn, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
		Then(append([]clientv3.Op{clientv3.OpDelete(key)}, comp.ops()...)...).
		Commit()
	if err != nil {
		return nil, false, storageError(err)
	}
	if !txn.Succeeded {
		return nil, false, nil
	}
	setRV(current, txn.Header.Revision)
	return current, true, nil
}

// ListOptions selects and pages a list.
type ListOptions struct {
	Namespace       string
	ResourceVersion string // "" = latest; "0" = any; N = at least N (exact when paging)
	// ResourceVersionMatch is "", NotOlderThan or Exact (list.go).
	ResourceVersionMatch metav1.ResourceVersionMatch
	Limit                int64
	Continue             string
	Match                func(runtime.Object) bool // nil matches everything
}

// ListResult is one page of a list.
type ListResult struct {
	Items              []runtime.Object
	ResourceVersion    int64
	Continue           string
	RemainingItemCount *int64
}

type continueToken struct {
	RV    int64  `json:"rv"`
	Start string `json:"start"`
}

// List reads matching objects from etcd at one revision: the latest, the
// one of a continue token, or an exact resourceVersion (Exact, or a limit
// with resourceVersion=N). With a limit, it returns a continue token that
// reads the next page at the same revision. Requests go through
// ServeList, which may answer from the watch cache instead.
func (s *Store) List(ctx context.Context, opts ListOptions) (*ListResult, error) {
	defer s.observe(opList, time.Now())
	prefix := s.listPrefix(opts.Namespace)
	start := prefix
	rev, err := exactRevision(opts)
	if err != nil {
		return nil, err
	}
	if opts.Continue != "" {
		tok, err := decodeContinue(opts.Continue, prefix)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		start, rev = tok.Start, tok.RV
	}
	end := clientv3.GetPrefixRangeEnd(prefix)
	out := &ListResult{}
	batch := int64(1000)
	if opts.Limit > 0 && opts.Limit < batch {
		batch = opts.Limit
	}
	for {
		getOpts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(batch)}
		if rev > 0 {
			getOpts = append(getOpts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, getOpts...)
		if err != nil {
			return nil, listError(err, rev, opts.Continue != "")
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for i, kv := range resp.Kvs {
			obj, err := s.Decode(kv.Value, kv.ModRevision)
			if err != nil {
				return nil, err
			}
			if opts.Match != nil && !opts.Match(obj) {
				continue
			}
			out.Items = append(out.Items, obj)
			if opts.Limit > 0 && int64(len(out.Items)) >= opts.Limit {
				more := resp.More || i < len(resp.Kvs)-1
				if more {
					out.Continue = encodeContinue(continueToken{RV: rev, Start: string(kv.Key) + "\x00"})
					if opts.Match == nil {
						remaining := resp.Count - int64(i) - 1
						out.RemainingItemCount = &remaining
					}
				}
				out.ResourceVersion = rev
				return out, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	out.ResourceVersion = rev
	return out, nil
}

func encodeContinue(t continueToken) string {
	data, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s, prefix string) (continueToken, error) {
	var t continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, fmt.Errorf("invalid continue token: %w", err)
	}
	if err := json.Unmarshal(data, &t); err != nil || t.RV <= 0 || !strings.HasPrefix(t.Start, prefix) {
		return t, errors.New("invalid continue token")
	}
	return t, nil
}

// CurrentRevision returns etcd's latest revision: a linearizable read of
// one key (the prefix itself, which holds nothing), so it costs the same
// whatever the number of objects, unlike a count over the prefix.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.prefix, clientv3.WithKeysOnly())
	if err != nil {
		return 0, storageError(err)
	}
	return resp.Header.Revision, nil
}

func storageError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The request's time is up (kube-apiserver's timeout filter's
		// answer): a 504 with no Retry-After, which client-go would
		// otherwise obey ten times over before giving up.
		return apierrors.NewTimeoutError("request did not complete within requested timeout - "+err.Error(), 0)
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || strings.Contains(err.Error(), rpctypes.ErrRequestTooLarge.Error()) {
		// As kube-apiserver: an object over etcd's request limit is refused whole.
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	}
	if errors.Is(err, rpctypes.ErrNoSpace) || strings.Contains(err.Error(), rpctypes.ErrNoSpace.Error()) {
		// etcd's NOSPACE alarm (its disk guard or its quota): writes are
		// refused whole, reads go on. A 500, as kube-apiserver answers it,
		// with a message that says what to do.
		return apierrors.NewInternalError(fmt.Errorf("etcd is out of space (NOSPACE alarm): writes are refused until disk space is freed under its data directory (reads still work): %w", err))
	}
	return apierrors.NewInternalError(fmt.Errorf("storage: %w", err))
}
