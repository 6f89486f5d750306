#!/usr/bin/env bash
# Installs the Debian packages a minik node needs, only those missing, so
# `make up` works on a fresh machine and costs nothing afterwards.
set -euo pipefail

packages=(containerd runc busybox-static containernetworking-plugins iproute2 iptables kubectl)

if ! command -v dpkg >/dev/null; then
  echo "not a Debian system: make sure these are installed: ${packages[*]}" >&2
  exit 0
fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
((${#missing[@]} == 0)) && exit 0

echo "minik needs these Debian packages: ${missing[*]}"
if [[ $EUID -ne 0 ]]; then
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
