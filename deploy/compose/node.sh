#!/bin/sh
# One node of the compose cluster: the kubelet (which starts this node's
# own containerd and runc), the host-gw route agent and the node proxy. Identities: /pki/kubelet.kubeconfig is system:node:NAME,
# /pki/proxy.kubeconfig is system:kube-proxy.
#
#   node.sh NAME IP [kubelet flags...]
set -eu
name=$1 ip=$2
shift 2
# Docker mounts /proc/sys read-only; the bridge plugin turns on forwarding.
mount -o remount,rw /proc/sys 2>/dev/null || true
echo 1 >/proc/sys/net/ipv4/ip_forward
# Mount events of pod volumes must reach containerd's and runc's mounts.
mount --make-rshared / 2>/dev/null || true

pids=""
stop() {
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  wait
  exit 0
}
trap stop TERM INT

minik routes --kubeconfig /pki/proxy.kubeconfig --node-name "$name" &
pids="$pids $!"

# The node proxy: this node's nftables table (ip minik-proxy) for Services.
minik proxy --kubeconfig /pki/proxy.kubeconfig --node-name "$name" &
pids="$pids $!"

minik kubelet --node-name "$name" --node-ip "$ip" --kubeconfig /pki/kubelet.kubeconfig \
  --tls-cert-file /pki/kubelet.crt --tls-private-key-file /pki/kubelet.key --client-ca-file /pki/ca.crt \
  --preload-images /images/busybox.tar "$@" &
kubelet=$!
pids="$pids $kubelet"
# A component that dies takes the node down with it, so that Docker's
# restart policy (and the test) sees it.
while :; do
  for p in $pids; do
    if ! kill -0 "$p" 2>/dev/null; then
      echo "node.sh: process $p exited; stopping the node" >&2
      stop
    fi
  done
  sleep 2
done
