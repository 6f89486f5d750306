package framework

import (
	corev1 "k8s.io/api/core/v1"

	"minik/client"
	"minik/client/informer"
)

// PersistentVolumeClaimsResource names core/v1 persistentvolumeclaims for
// the controllers that make claims (StatefulSet).
var PersistentVolumeClaimsResource = client.Resource{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}

// AddClaimInformer makes the PersistentVolumeClaims informer. Call it
// before Start, and only when the apiserver serves claims (see
// ServedResources): an informer of an unserved resource never syncs.
func (inf *Informers) AddClaimInformer() {
	if inf.PersistentVolumeClaims != nil {
		return
	}
	inf.PersistentVolumeClaims = informer.New(client.For[corev1.PersistentVolumeClaim](inf.Client, PersistentVolumeClaimsResource), inf.cfg)
	addOwnerIndexes(inf.PersistentVolumeClaims)
}
