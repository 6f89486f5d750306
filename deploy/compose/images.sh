#!/usr/bin/env bash
# Builds the compose cluster's two images with no registry:
#   minik-control:dev  FROM scratch + bin/minik
#   minik-node:dev     FROM minik-node-base (the debootstrap rootfs of rootfs.sh,
#                      `docker import`ed once per rootfs) + bin/minik, the
#                      busybox image, node.sh
# Needs bin/minik (or $MINIK_BIN) and bin/images/busybox.tar (made here
# from it when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
compose=${COMPOSE:-docker-compose -f deploy/compose.yaml -p minik}
minik=${MINIK_BIN:-bin/minik}
bash deploy/compose/deps.sh
[[ -f bin/images/busybox.tar ]] || "$minik" image build busybox -o bin/images/busybox.tar
bash deploy/compose/rootfs.sh bin/compose/node-rootfs.tar
stamp=$(cat bin/compose/node-rootfs.tar.stamp)
have=$(docker image inspect -f '{{index .Config.Labels "minik.rootfs"}}' minik-node-base:latest 2>/dev/null || true)
if [[ $have != "$stamp" ]]; then
  echo "importing the node rootfs as minik-node-base:latest"
  docker import --change "LABEL minik.rootfs=$stamp" bin/compose/node-rootfs.tar minik-node-base:latest >/dev/null
fi
rm -rf bin/compose/control bin/compose/node
mkdir -p bin/compose/control bin/compose/node
cp "$minik" deploy/compose/Dockerfile.control bin/compose/control/
cp "$minik" bin/images/busybox.tar deploy/compose/Dockerfile.node deploy/compose/node.sh bin/compose/node/
$compose build
