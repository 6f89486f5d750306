#!/usr/bin/env bash
# Builds CoreDNS, the cluster DNS kubeadm installs, from its Go module
# (the Go module proxy serves it; no registry or image is needed) into
# bin/coredns/coredns, for `make bench-dns`'s side-by-side run. The build
# happens in a scratch module of its own under bin/ (git-ignored):
# nothing of it is committed but this script.
set -euo pipefail
version=${COREDNS_VERSION:-v1.14.7}
root=$(cd "$(dirname "$0")/../../.." && pwd)
dir=$root/bin/coredns
out=$dir/coredns
if [ -x "$out" ] && [ "$("$out" -version 2>/dev/null | head -1)" = "CoreDNS-${version#v}" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$dir"
cd "$dir"
cat > go.mod <<MOD
module corednsbuild

go 1.26
MOD
rm -f go.sum
GOFLAGS=-mod=mod go get "github.com/coredns/coredns@$version" >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o "$out" github.com/coredns/coredns >&2
echo "$out"
