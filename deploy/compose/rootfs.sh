#!/usr/bin/env bash
# Builds the node image's root filesystem from Debian packages with
# debootstrap (no container registry, no base image), once: the tarball is
# cached at $1 (default bin/compose/node-rootfs.tar) and reused while this
# script and its package list are unchanged.
#
#   debootstrap --variant=minbase --include=PACKAGES SUITE DIR MIRROR
#   (the mirror and suite are the host's own apt source)
#   ─▶ tar of DIR ─▶ `docker import` in the Makefile ─▶ minik-node-base
set -euo pipefail
out=${1:-bin/compose/node-rootfs.tar}
packages=containerd,runc,containernetworking-plugins,iproute2,iptables,nftables,busybox-static,ca-certificates,procps
stamp="$(sha256sum "$0" | cut -c1-16)"
if [[ -f $out && -f $out.stamp && $(cat "$out.stamp") == "$stamp" ]]; then
  echo "node rootfs: cached $out"
  exit 0
fi
command -v debootstrap >/dev/null || {
  echo "debootstrap is needed (Debian: apt-get install debootstrap)" >&2
  exit 1
}
# The host's Debian source: the same registry apt uses here.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[[ -n $mirror ]] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
[[ -n $mirror && -n $suite ]] || { echo "no Debian apt source found on this host" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
dir=$(mktemp -d "$(dirname "$out")/rootfs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "node rootfs: debootstrap $suite with $packages (a few minutes, once)"
start=$(date +%s)
debootstrap --variant=minbase --include="$packages" "$suite" "$dir" "$mirror" >"$dir.log" 2>&1 || {
  tail -30 "$dir.log" >&2
  exit 1
}
# What a container root does not need: apt lists, docs, caches.
rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
tar -C "$dir" --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "$stamp" >"$out.stamp"
rm -f "$dir.log"
echo "node rootfs: $out ($(du -h "$out" | cut -f1), $(($(date +%s) - start))s)"
