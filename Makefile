# minik: the two commands every README starts with are `make up` and `make test`.
GO      ?= go
DATA    ?= .minik
ARGS    ?=

.PHONY: build up test unit bench-apiserver clean

build:
	$(GO) build -o bin/minik ./cmd/minik

## up: build and run a whole cluster in the foreground (Ctrl-C stops it).
up: build
	bin/minik up --data-dir $(DATA) $(ARGS)

## test: every test, unit and integration (needs kubectl on PATH).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

## unit: only the fast tests.
unit:
	$(GO) test -count=1 -short ./...

## bench-apiserver: create throughput/latency and watch fan-out, one JSON line each.
bench-apiserver: build
	$(GO) run ./test/bench/apiserver

clean:
	rm -rf bin $(DATA)
