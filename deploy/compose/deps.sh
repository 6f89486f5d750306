#!/usr/bin/env bash
# What building and running the compose cluster needs besides Docker
# Engine: debootstrap (the node rootfs) and docker-compose, from Debian's
# packages, installed only when missing.
set -euo pipefail
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v docker-compose >/dev/null || missing+=(docker-compose)
((${#missing[@]} == 0)) && exit 0
if [[ $EUID -ne 0 ]]; then
  echo "the compose cluster needs: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
