package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/quota"
)

// admitResourceQuota is the ResourceQuota plugin for a create, or with
// old for an update: the quotas of the object's namespace that it counts
// against must have room for it (internal/quota.Admit decides). The
// usage it charges is written into those quotas' status.used in the
// write's own etcd transaction, guarded by each quota's revision: of two
// writes racing for the last slot, one commits and the other is admitted
// again on fresh reads, and a write that fails charges nothing.
func (s *Server) admitResourceQuota(ctx context.Context, h *resourceHandler, obj, old runtime.Object, reads *admissionReads) error {
	if !h.res.Namespaced || h.res.Virtual {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	quotas, err := reads.resourceQuotas(ctx, m.GetNamespace())
	if err != nil || len(quotas) == 0 {
		return err
	}
	charged, err := quota.Admit(h.res.Resource, h.res.Group, obj, old, quotas, time.Now())
	if err != nil {
		return apierrors.NewForbidden(h.res.GroupResource(), m.GetName(), err)
	}
	for _, q := range charged {
		g, err := s.policy.quotas.PutGuard(q)
		if err != nil {
			return err
		}
		reads.guards = append(reads.guards, g)
	}
	return nil
}
