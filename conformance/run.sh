#!/usr/bin/env bash
# make conformance: runs the [Conformance] specs of upstream's e2e suite in
# the areas of conformance/scope.txt against minik, and writes
# conformance/REPORT.md and conformance/junit.xml (conformance/README.md).
#
#   BATCHES="sig-node sig-apps" make conformance   # only those batches (default: all)
#   PROCS=4                                        # specs in parallel (ginkgo --procs)
#
# Each batch holds $MINIK_HEAVY_LOCK (default /tmp/minik-heavy.lock) while
# its cluster runs, so it never overlaps another cluster on this host.
set -euo pipefail
cd "$(dirname "$0")/.."

out=bin/conformance
lock=${MINIK_HEAVY_LOCK:-/tmp/minik-heavy.lock}
started=$(date +%s)

# The clients the agnhost image takes from this host (conformance/README.md).
for pkg in curl libc-bin bind9-dnsutils netcat-openbsd; do
  dpkg -s "$pkg" >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg"
done

# The upstream programs, from the shared scratch module at the version of
# k8s.io/api in go.mod: the suite, ginkgo to run it in parallel, the
# kubectl of the same version (the sig-cli specs run it), and agnhost.
make build
bash deploy/upstream-k8s.sh test "$out/e2e.test" k8s.io/kubernetes/test/e2e
bash deploy/upstream-k8s.sh build "$out/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
bash deploy/upstream-k8s.sh build "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
bash deploy/upstream-k8s.sh build "$out/agnhost" k8s.io/kubernetes/test/images/agnhost
kube_src=$(cd "$(bash deploy/upstream-k8s.sh dir)" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
kube_version=$(cd "$(bash deploy/upstream-k8s.sh dir)" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
go build -o "$out/driver" ./conformance
CGO_ENABLED=0 go build -o "$out/sh" ./conformance/sh

# The images the specs use, built here (no registry is reachable).
"$out/driver" images -o "$out/images.tar" --e2e "$out/e2e.test" --agnhost "$out/agnhost" --sh "$out/sh" --kube-src "$kube_src"

for batch in ${BATCHES:-$("$out/driver" batches)}; do
  echo "=== batch $batch"
  flock "$lock" "$out/driver" run --batch "$batch" --procs "${PROCS:-4}" ||
    echo "batch $batch did not run to the end: see $out/results/$batch"
done

"$out/driver" report --suite "k8s.io/kubernetes $kube_version" \
  --cluster "a 2-node \`minik up\` (real containerd and runc, $(nproc) cores)"
echo "conformance: $(( ($(date +%s) - started) / 60 )) minutes; conformance/REPORT.md, conformance/junit.xml"
