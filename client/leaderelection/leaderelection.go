// Package leaderelection lets one of several replicas of a component act,
// through a coordination.k8s.io Lease, as Kubernetes components do.
//
//	candidate ──every RetryPeriod──▶ GET lease
//	   ├─ missing, or holder silent for LeaseDuration ──▶ take it (update with our identity)
//	   └─ leader ──▶ lead(ctx) runs; renew every RetryPeriod
//	                 └─ no successful renew within RenewDeadline ──▶ ctx cancelled, Run returns
//
// Expiry is judged by when this candidate last saw the lease change, not by
// the timestamps in it, so clocks need not agree.
package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// Defaults: a crashed leader is replaced within LeaseDuration plus two
// retry periods (about 14s); a leader that stops cleanly releases at once.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultRenewDeadline = 7 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config configures an election.
type Config struct {
	Client *client.Client
	// Namespace and Name locate the Lease (e.g. kube-system/kube-scheduler).
	Namespace, Name string
	// Identity names this candidate; it must be unique among candidates.
	Identity string
	// LeaseDuration is how long a silent leader keeps the lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew.
	RenewDeadline time.Duration
	// RetryPeriod is the interval between attempts.
	RetryPeriod time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ErrLostLease is returned by Run when the leader could not renew.
var ErrLostLease = errors.New("leader election lost")

type elector struct {
	cfg    Config
	leases *client.Typed[coordinationv1.Lease]

	observed     *coordinationv1.Lease
	observedTime time.Time
}

// Run campaigns until it leads, calls lead with a context that is
// cancelled when leadership ends, and returns when ctx ends (releasing
// the lease) or leadership is lost.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Identity == "" || cfg.Name == "" || cfg.Namespace == "" {
		return fmt.Errorf("leaderelection: namespace, name and identity are required")
	}
	e := &elector{cfg: cfg, leases: cfg.Client.Leases()}

	// Campaign.
	for {
		ok, err := e.tryAcquireOrRenew(ctx)
		if err != nil && ctx.Err() == nil {
			slog.Debug("leader election attempt failed", "lease", cfg.Name, "err", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.RetryPeriod):
		}
	}
	slog.Info("became leader", "lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)

	leadCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); lead(leadCtx) }()
	defer func() { cancel(); <-done }()

	// Renew.
	lastRenew := cfg.Now()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			e.release()
			return nil
		case <-time.After(cfg.RetryPeriod):
		}
		ok, err := e.tryAcquireOrRenew(ctx)
		if ok {
			lastRenew = cfg.Now()
			continue
		}
		if cfg.Now().Sub(lastRenew) > cfg.RenewDeadline {
			slog.Error("lost leadership", "lease", cfg.Name, "err", err)
			return ErrLostLease
		}
	}
}

// tryAcquireOrRenew takes or renews the lease if it is free, ours, or
// expired. It reports whether we hold it afterwards.
func (e *elector) tryAcquireOrRenew(ctx context.Context) (bool, error) {
	now := e.cfg.Now()
	mnow := metav1.NewMicroTime(now)
	seconds := int32(e.cfg.LeaseDuration / time.Second)
	lease, err := e.leases.Get(ctx, e.cfg.Namespace, e.cfg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fresh := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name, Namespace: e.cfg.Namespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &e.cfg.Identity, LeaseDurationSeconds: &seconds,
				AcquireTime: &mnow, RenewTime: &mnow},
		}
		created, err := e.leases.Create(ctx, fresh, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		e.observe(created, now)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if e.observed == nil || e.observed.ResourceVersion != lease.ResourceVersion {
		e.observe(lease, now)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	ours := holder == e.cfg.Identity
	if !ours && holder != "" && now.Before(e.observedTime.Add(e.cfg.LeaseDuration)) {
		return false, nil // someone else holds a live lease
	}
	if !ours {
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions
		}
		transitions++
		lease.Spec.LeaseTransitions = &transitions
		lease.Spec.AcquireTime = &mnow
		lease.Spec.HolderIdentity = &e.cfg.Identity
	}
	lease.Spec.RenewTime = &mnow
	lease.Spec.LeaseDurationSeconds = &seconds
	updated, err := e.leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return false, err // a conflict means another candidate won the race
	}
	e.observe(updated, now)
	return true, nil
}

func (e *elector) observe(l *coordinationv1.Lease, at time.Time) {
	e.observed, e.observedTime = l, at
}

// release gives the lease up so a standby need not wait for it to expire.
func (e *elector) release() {
	if e.observed == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l := e.observed.DeepCopy()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != e.cfg.Identity {
		return
	}
	empty := ""
	one := int32(1)
	now := metav1.NewMicroTime(e.cfg.Now())
	l.Spec.HolderIdentity = &empty
	l.Spec.LeaseDurationSeconds = &one
	l.Spec.RenewTime = &now
	if _, err := e.leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		slog.Debug("releasing lease failed", "lease", e.cfg.Name, "err", err)
	}
}
