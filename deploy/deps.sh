#!/usr/bin/env bash
# Installs the Debian packages a minik node needs (and chromium, for the
# live view's browser test), only those missing, so
# `make up` works on a fresh machine and costs nothing afterwards, and
# downloads (without installing) Debian's dynamically linked busybox, which
# the busybox image is built from (deploy/images/README.md).
#
# deploy/deps.sh --proto installs instead what regenerating proto/ needs
# (proto/README.md): Debian's protobuf-compiler, and protoc-gen-go and
# protoc-gen-go-grpc at the versions the committed code was made with.
set -euo pipefail

if [[ ${1:-} == --proto ]]; then
  if ! command -v protoc >/dev/null; then
    [[ $EUID -eq 0 ]] || { echo "regenerating proto/ needs protoc: sudo apt-get install -y protobuf-compiler" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
  fi
  go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
  go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
  exit 0
fi

busybox_deb=/var/cache/minik/busybox.deb

packages=(containerd runc containernetworking-plugins iproute2 iptables nftables conntrack kubectl chromium)

if ! command -v dpkg >/dev/null; then
  echo "not a Debian system: make sure these are installed: ${packages[*]}" >&2
  exit 0
fi
missing=()
for pkg in "${packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
((${#missing[@]} == 0)) && [[ -s $busybox_deb ]] && exit 0

if [[ $EUID -ne 0 ]]; then
  ((${#missing[@]} > 0)) && echo "minik needs these Debian packages: sudo apt-get install -y ${missing[*]}" >&2
  [[ -s $busybox_deb ]] || echo "the busybox image needs Debian's busybox package: sudo mkdir -p ${busybox_deb%/*} && (cd /tmp && apt-get download busybox && sudo mv busybox_*.deb $busybox_deb)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ((${#missing[@]} > 0)); then
  echo "minik needs these Debian packages: ${missing[*]}"
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [[ ! -s $busybox_deb ]]; then
  # busybox conflicts with busybox-static, which a host may have, so it is
  # only downloaded, never installed; the image builder reads bin/busybox
  # out of the .deb.
  echo "downloading Debian's busybox package to $busybox_deb"
  dir=$(mktemp -d)
  chmod 755 "$dir"
  (cd "$dir" && apt-get download -qq busybox 2>/dev/null)
  mkdir -p "${busybox_deb%/*}"
  mv "$dir"/busybox_*.deb "$busybox_deb"
  rm -rf "$dir"
fi
