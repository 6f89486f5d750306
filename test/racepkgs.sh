#!/bin/bash
# racepkgs.sh prints the packages `make race` runs under the race
# detector: those whose code shares memory between goroutines (it takes
# a lock, uses atomics or starts goroutines) and whose tests start no
# cluster, no container, no kernel rule and no browser. A package joins
# by itself when it meets both; the ones whose tests need the kernel are
# listed by hand below, and so is the apiserver's own package, whose
# tests (a whole apiserver over an in-memory store, about 40 s) take six
# minutes under the race detector on two cores.
set -euo pipefail
excluded='minik/deploy/images|minik/hostgw|minik/kubelet/runtime/containerd|minik/proxy|minik/reset|minik/apiserver'
go list -f '{{.ImportPath}} {{.Dir}} {{if or .TestGoFiles .XTestGoFiles}}T{{else}}-{{end}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk -v excluded="^(${excluded})\$" '
		$3 != "T" || $1 ~ /^minik\/test\// || $1 == "minik/cmd/minik" || $1 ~ excluded { next }
		{ for (i = 4; i <= NF; i++) if ($i ~ /testcluster|^minik\/test\/|go.etcd.io\/etcd\/server|chromedp/) next; print $1, $2 }' |
	while read -r pkg dir; do
		if ls "$dir"/*.go | grep -v '_test\.go$' | xargs grep -qE 'sync\.(Mutex|RWMutex|WaitGroup|Once|Map)|go func|go [a-z][A-Za-z.]*\(|atomic\.'; then
			echo "$pkg"
		fi
	done
