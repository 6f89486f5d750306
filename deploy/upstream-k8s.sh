#!/usr/bin/env bash
# Builds upstream Kubernetes programs (the e2e suite, kube-scheduler, agnhost…)
# from the k8s.io/kubernetes Go module, at the version matching k8s.io/api in
# minik's go.mod, in ONE scratch module outside the repository: minik itself
# must not import k8s.io/kubernetes (DESIGN.md), and every user of this
# script shares one download and build cache. Nothing of the scratch module
# is committed; this script creates and updates it.
#
#   deploy/upstream-k8s.sh build OUT PKG   # go build -o OUT PKG  (CGO_ENABLED=0: a static binary,
#                                          # stamped with its version as upstream's builds are)
#   deploy/upstream-k8s.sh test  OUT PKG   # go test -c -vet=off -o OUT PKG (a test binary, e.g. e2e.test)
#   deploy/upstream-k8s.sh dir             # prepare the module, print its directory
#
# PKG is a package of k8s.io/kubernetes (e.g. k8s.io/kubernetes/test/e2e), or
# of a module it requires, at the version it requires (e.g.
# github.com/onsi/ginkgo/v2/ginkgo, the CLI that runs e2e.test in parallel).
# The module lives in $UPSTREAM_K8S_DIR (default /work/upstream-k8s).
# k8s.io/kubernetes points its staging modules (k8s.io/api, client-go…) at
# ./staging/src, which a consumer does not have: the module replaces each
# with its published v0.X.Y, as every consumer of k8s.io/kubernetes must.
# Edits of go.mod/go.sum hold `flock /tmp/upstream-k8s.lock` exclusively,
# builds hold it shared, so two users never see a half-written go.mod.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${UPSTREAM_K8S_DIR:-/work/upstream-k8s}
lock=/tmp/upstream-k8s.lock

api=$(awk '$1 == "k8s.io/api" { print $2; exit }' "$repo/go.mod")
[[ $api == v0.* ]] || { echo "no k8s.io/api v0.X.Y in $repo/go.mod" >&2; exit 1; }
staging=$api            # v0.37.2
kube=v1.${api#v0.}      # v1.37.2

usage() {
  echo "usage: $0 build OUT PKG | test OUT PKG | dir" >&2
  exit 2
}

# version_of prints the version PKG is built at: $kube for k8s.io/kubernetes,
# else the one upstream's go.mod requires of the module holding PKG (a
# staging module: its published $staging).
version_of() {
  local pkg=$1 gomod=$2
  if [[ $pkg == k8s.io/kubernetes || $pkg == k8s.io/kubernetes/* ]]; then
    echo "$kube"
    return
  fi
  awk -v pkg="$pkg" -v staging="$staging" '
    $1 == "require" && $2 != "(" { $1 = ""; $0 = $0 }
    NF >= 2 && $2 ~ /^v[0-9]/ && (pkg == $1 || index(pkg, $1 "/") == 1) && length($1) > best { best = length($1); v = $2 }
    END { if (v == "") exit 1; print (v == "v0.0.0" ? staging : v) }' "$gomod" || { echo "k8s.io/kubernetes@$kube requires no module holding $pkg" >&2; exit 1; }
}

# prepare makes the module require k8s.io/kubernetes@$kube with the staging
# replacements, and records the sums PKG (and its tests, for `test`) needs.
prepare() {
  local pkg=${1:-} tests=${2:-}
  mkdir -p "$dir"
  (
    flock 9
    cd "$dir"
    if [[ ! -f go.mod ]]; then
      go mod init minik.local/upstream-k8s >/dev/null 2>&1
      cat >README.txt <<EOF
Scratch module for upstream Kubernetes binaries, made and updated by
minik's deploy/upstream-k8s.sh. Do not edit by hand; delete it to start over.
EOF
    fi
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$kube" | awk -F'"' '$2 == "GoMod" { print $4 }')
    if ! grep -q "^require k8s.io/kubernetes $kube\$\|^[[:space:]]k8s.io/kubernetes $kube\$" go.mod; then
      local args=(-require "k8s.io/kubernetes@$kube")
      # Each `k8s.io/X => ./staging/src/k8s.io/X` of upstream's go.mod.
      for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod"); do
        args+=(-replace "$m=$m@$staging")
      done
      go mod edit "${args[@]}"
    fi
    if [[ -n $pkg ]]; then
      go get $tests "$pkg@$(version_of "$pkg" "$gomod")"
    fi
  ) 9>"$lock"
}

# version_ldflags stamps a k8s.io/kubernetes program with its version, as
# upstream's hack/lib/version.sh does (unstamped, `kubectl version` says
# v0.0.0-master+$Format:%H$, which the e2e suite cannot parse).
version_ldflags() {
  local minor=${kube#v1.}
  minor=${minor%%.*}
  local flags=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$kube -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    flags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

case ${1:-} in
  dir)
    prepare
    echo "$dir"
    ;;
  build | test)
    [[ $# -eq 3 ]] || usage
    out=$(realpath -m "$2")
    pkg=$3
    mkdir -p "$(dirname "$out")"
    if [[ $1 == test ]]; then
      prepare "$pkg" -t
      (flock -s 9 && cd "$dir" && CGO_ENABLED=0 go test -c -vet=off -o "$out" "$pkg") 9>"$lock"
    else
      prepare "$pkg"
      ldflags=""
      [[ $pkg == k8s.io/kubernetes/* ]] && ldflags=$(version_ldflags)
      (flock -s 9 && cd "$dir" && CGO_ENABLED=0 go build -ldflags "$ldflags" -o "$out" "$pkg") 9>"$lock"
    fi
    ;;
  *) usage ;;
esac
