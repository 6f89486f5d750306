#!/usr/bin/env bash
# After `docker-compose up -d`: the host's kubeconfig, then the control-plane
# label on master (a kubelet may not set node-role labels on its own Node,
# as under Kubernetes' NodeRestriction; kubeadm labels it the same way),
# then three Ready nodes.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p deploy/.kube
cp deploy/.pki/admin/kubeconfig deploy/.kube/config
export KUBECONFIG=$PWD/deploy/.kube/config
deadline=$((SECONDS + ${WAIT_SECONDS:-120}))
until kubectl get node master >/dev/null 2>&1; do
  ((SECONDS < deadline)) || { echo "master did not register" >&2; exit 1; }
  sleep 1
done
kubectl label node master node-role.kubernetes.io/control-plane= --overwrite >/dev/null
until [[ $(kubectl get nodes --no-headers 2>/dev/null | awk '$2=="Ready"' | wc -l) -eq 3 ]]; do
  ((SECONDS < deadline)) || { kubectl get nodes >&2; echo "3 Ready nodes did not come" >&2; exit 1; }
  sleep 1
done
kubectl get nodes -o wide
echo "export KUBECONFIG=$KUBECONFIG"
