# minik: the two commands every README starts with are `make up` and `make test`.
GO      ?= go
SHELL   := /bin/bash
DATA    ?= .minik
ARGS    ?=

IMAGES  ?= bin/images
TESTLOG ?= bin/test.log

## Every go command here builds as bin/minik is built, static and without
## the Go-plugin loader (see build), so that build, vet, the tests and the
## benchmarks share one compile of the dependencies: a cgo setting or
## build tag that differs compiles the whole graph again (in a cold CI
## run, `go vet` took 344 s instead of 117 s). The race run alone needs
## cgo, and builds an instrumented graph of its own anyway.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -tags=no_dynamic_plugins)

.PHONY: deps build images up test warm race fuzz unit conformance bench bench-quick bench-apiserver bench-kubelet bench-controller bench-scheduler bench-dns bench-services bench-hollow bench-density bench-footprint compose-images compose-up compose-down compose-kubeconfig compose-load clean

## build: bin/minik, static (no cgo). The no_dynamic_plugins tag keeps
## containerd's Go-plugin loader out of a cgo build (its import of package
## plugin exports every symbol dynamically); without cgo, package plugin is
## a stub and the tag changes nothing (86 MB either way, measured on 30
## November 2026), but every go command here passes it so that they all
## share one compile.
## internal/testcluster.BuildCommand builds it the same way.
build:
	CGO_ENABLED=0 $(GO) build -tags no_dynamic_plugins -o bin/minik ./cmd/minik

## deps: install the Debian packages a node needs (only the missing ones).
deps:
	bash deploy/deps.sh

## images: the busybox image, built locally from Debian's busybox package (deploy/images).
images: build
	bin/minik image build busybox -o $(IMAGES)/busybox.tar

## up: build and run a whole cluster in the foreground (Ctrl-C stops it; needs root for containerd).
up: deps build images
	bin/minik up --data-dir $(DATA) --preload-images $(IMAGES)/busybox.tar --ui-listen 127.0.0.1:8443 $(ARGS)

## test: every test, unit and integration (needs kubectl on PATH). The
## tests that run the real binary share the one just built (MINIK_BIN)
## instead of each package building its own. The race run (a build of
## its own, instrumented) goes alongside, niced: it takes the CPU the
## cluster tests leave while they wait on containers. The fuzz targets'
## seeds and kept crashers run with every `go test`; `make fuzz` explores
## further (another instrumented build: minutes, so not in every CI run).
## The slowest packages are named first: go test starts packages in the
## order given (two at a time on two cores), so the longest ones no longer
## start last, behind every short one.
SLOWPKGS := ./test/integration ./test/e2e ./test/compose ./apiserver ./kubelet/runtime/containerd ./kubelet

test: build
	$(GO) vet ./...
	nice -n 15 $(MAKE) --no-print-directory race > $(TESTLOG).race 2>&1 & side=$$!; \
	set -o pipefail; MINIK_BIN=$(CURDIR)/bin/minik $(GO) test -count=1 -timeout 30m $(SLOWPKGS) ./... 2>&1 | tee $(TESTLOG); main=$$?; \
	wait $$side; sidestatus=$$?; echo "=== make race (exit $$sidestatus):"; cat $(TESTLOG).race; \
	if [ $$main -ne 0 ]; then echo "=== why each test failed (from $(TESTLOG)):"; awk -f test/faildigest.awk $(TESTLOG); exit 1; fi; \
	exit $$sidestatus
	$(MAKE) bench-quick

## warm: compile what `make test` runs (bin/minik, vet's checks, every
## test binary) and run nothing; CI does it while apt installs packages.
warm: build
	-$(GO) vet ./... > /dev/null 2>&1
	-$(GO) test -count=1 -exec /bin/true ./... > /dev/null 2>&1

## race: the tests that start no cluster, container or kernel rule
## (test/racepkgs.sh lists them), again under the race detector.
race:
	CGO_ENABLED=1 $(GO) test -race -count=1 $$(bash test/racepkgs.sh)

## fuzz: each fuzz target (request decoding and admission, patches) for
## FUZZTIME; a crasher is kept under apiserver/testdata/fuzz and then runs
## with every `go test`. Not part of `make test` (see there).
FUZZTIME ?= 20s
fuzz:
	$(GO) test ./apiserver -run '^$$' -fuzz '^FuzzDecodeAndAdmit$$' -fuzztime $(FUZZTIME)
	$(GO) test ./apiserver -run '^$$' -fuzz '^FuzzPatch$$' -fuzztime $(FUZZTIME)

## unit: only the fast tests.
unit:
	$(GO) test -count=1 -short ./...

## conformance: the [Conformance] specs of upstream's e2e suite in the areas
## of conformance/scope.txt, against a fresh 2-node cluster per batch;
## writes conformance/REPORT.md and junit.xml (not part of `make test`;
## needs root, under an hour; BATCHES="sig-node" runs only those).
conformance:
	bash conformance/run.sh

## peer_bench NAME,PROGRAM runs test/bench/NAME on bin/minik; with PEER=1 it first builds
## upstream's PROGRAM (k8s.io/kubernetes/cmd/PROGRAM, by deploy/upstream-k8s.sh) and passes
## it as -peer. BENCH_ARGS passes more flags.
peer_bench = $(if $(filter 1,$(PEER)),bash deploy/upstream-k8s.sh build bin/$(2) k8s.io/kubernetes/cmd/$(2) && )$(GO) run ./test/bench/$(1) -bin bin/minik $(if $(filter 1,$(PEER)),-peer bin/$(2)) $(BENCH_ARGS)

## bench-apiserver: create throughput/latency, watch fan-out and LISTs of 41,000 pods, one JSON line each.
## PEER=1 measures the LISTs on the upstream kube-apiserver too (built from k8s.io/kubernetes at
## k8s.io/api's version by deploy/upstream-k8s.sh, outside this module), same pods and client.
bench-apiserver: build
	$(call peer_bench,apiserver,kube-apiserver)

## bench-kubelet: pod startup latency (50 pods, 1 and 10 at a time) and idle kubelet RSS; needs root.
bench-kubelet: build
	$(GO) run ./test/bench/kubelet

## bench-controller: scale a Deployment 0→3000 on 100 nodes with the scheduler and 100 hollow kubelets; one JSON line.
bench-controller: build
	$(GO) run ./test/bench/controller

## bench-scheduler: scheduler_perf-style workloads (Basic, NodeAffinity, PodAntiAffinity, Preemption), one JSON line each.
## PEER=1 races the upstream kube-scheduler instead (built from k8s.io/kubernetes at k8s.io/api's
## version by deploy/upstream-k8s.sh, outside this module): placements of edge cases compared, then
## each workload under each scheduler as its own process, pods/s and CPU per pod with the ratios.
## BENCH_ARGS passes more flags (-scale 0.2, -workloads Basic, -rounds 3).
bench-scheduler: build
	$(call peer_bench,scheduler,kube-scheduler)

## bench: every benchmark, one after the other (about 30 minutes; root),
## each figure a JSON line on stdout; bench/REPORT.md gets the table of
## figures, targets, anchors and same-run baselines, and the plots.
## BENCH_QUICK=1 runs small sizes in a few minutes (the harness, not the numbers).
## ONLY=kubelet,footprint runs only those; the others' figures come from their
## last run, kept in bench/runs/NAME.json.
bench: build
	$(GO) run ./test/bench/report -bin bin/minik -out bench $(if $(ONLY),-only $(ONLY))

## bench-quick: every benchmark at small sizes, into bin/bench-quick;
## fails if a figure of the report is missing (never on the numbers).
## `make test` runs it, so that the harness keeps working.
bench-quick: build
	BENCH_QUICK=1 $(GO) run ./test/bench/report -bin bin/minik -out bin/bench-quick -check

## bench-hollow: 5,000 hollow nodes in one process held Ready by a control plane: their RSS and idle CPU, the apiserver's; one JSON line.
bench-hollow: build
	$(GO) run ./test/bench/hollow -bin bin/minik

## bench-density: 1,000 hollow nodes, 30 pods each through Deployments, then latency pods: pod startup and API call latency SLIs, peak RSS per component, etcd size.
bench-density: build
	$(GO) run ./test/bench/density -bin bin/minik

## bench-footprint: minik up from exec to a Ready node with a Running pod, its idle RSS/PSS with 10 pods (containerd apart), the binary's size; needs root.
bench-footprint: build
	$(GO) run ./test/bench/footprint -bin bin/minik

## bench-dns: the cluster DNS holding 5,000 Services: store updates, QPS and p99 from UDP clients on loopback, RSS; then
## `minik dns` and CoreDNS (built from its Go module by test/bench/dns/coredns.sh) side by side, each fed by one real apiserver; one JSON line each.
bench-dns: build
	$(GO) run ./test/bench/dns -minik bin/minik -coredns $$(bash test/bench/dns/coredns.sh)

## bench-services: the node proxy's network programming latency (p50, p99) with 1,000 Services × 10 endpoints and 5,000 × 2, CPU per endpoint change, RSS; one JSON line each; needs root (runs in a network namespace it makes).
bench-services:
	$(GO) run ./test/bench/services

## compose-*: a cluster in containers (deploy/compose.yaml): 3 etcd members,
## an apiserver on 127.0.0.1:6443, 2 schedulers, a controller, nodes master,
## node01, node02. Images are built locally (deploy/compose/images.sh).
COMPOSE ?= docker-compose -f deploy/compose.yaml -p minik
compose-images: build images
	COMPOSE="$(COMPOSE)" bash deploy/compose/images.sh

compose-up: compose-images
	$(COMPOSE) up -d
	bash deploy/compose/wait.sh

compose-down:
	$(COMPOSE) down -v --remove-orphans
	rm -rf deploy/.pki deploy/.kube

compose-kubeconfig:
	@echo $(CURDIR)/deploy/.kube/config

## compose-load IMAGE=FILE.tar: import an image archive into every node's containerd.
compose-load:
	@test -n "$(IMAGE)" || { echo "usage: make compose-load IMAGE=FILE.tar" >&2; exit 1; }
	for n in master node01 node02; do \
	  docker cp "$(IMAGE)" minik_$${n}_1:/tmp/image.tar && \
	  docker exec minik_$${n}_1 minik image load /tmp/image.tar --node $$n \
	    --containerd-address /var/lib/minik/kubelet/$$n/containerd/containerd.sock || exit 1; \
	done

clean:
	rm -rf bin $(DATA)
