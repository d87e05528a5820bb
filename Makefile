# markerd - see README.md. Every target installs what is missing first (scripts/install-deps.sh).
SWIFT ?= swift
DATA_DIR ?= ./data
ARGS ?=

.PHONY: run test build release deps test-deps bench-deps protos check-protos bench clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

bench-deps:
	@scripts/install-deps.sh --bench

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Build in release mode and run markerd on tcp://127.0.0.1:7450 (HTTP gateway 127.0.0.1:8080), data in ./data.
run: release
	.build/release/markerd --data-dir $(DATA_DIR) --http 127.0.0.1:8080 $(ARGS)

## The whole test suite: Swift unit + integration tests, then the Python reference client against a real markerd.
test: test-deps
	$(SWIFT) build
	$(SWIFT) test
	python3 clients/python/test_reference_client.py --markerd .build/debug/markerd

protos:
	scripts/gen-protos.sh

bench: release bench-deps
	.build/release/marker-bench $(ARGS)

clean:
	rm -rf .build
