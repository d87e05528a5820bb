# markerd - see README.md. Every target installs what is missing first (scripts/install-deps.sh).
SWIFT ?= swift
DATA_DIR ?= ./data
ARGS ?=
## glibc malloc tunables for markerd and marker-bench (read by glibc at startup only; deploy/markerd.service sets the same):
## transparent huge pages for the heap where the kernel's THP mode is madvise. GLIBC_TUNABLES= runs on 4 KiB pages.
GLIBC_TUNABLES ?= glibc.malloc.hugetlb=1

.PHONY: run test test-debug build release deps test-deps bench-deps basemap protos check-protos bench clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

bench-deps:
	@scripts/install-deps.sh --bench

## The viewer's basemap (Natural Earth countries as GeoJSON) in .build/basemap.
basemap:
	@scripts/install-deps.sh --basemap

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Build in release mode and run markerd on tcp://127.0.0.1:7450 (HTTP gateway and viewer on 127.0.0.1:8080,
## over the basemap in .build/basemap), data in ./data.
run: release basemap
	GLIBC_TUNABLES=$(GLIBC_TUNABLES) .build/release/markerd --data-dir $(DATA_DIR) --http 127.0.0.1:8080 --basemap-dir .build/basemap $(ARGS)

## The whole test suite: Swift unit + integration tests, the Python reference client and the Python package
## (clients/python, in a virtual environment) against a real markerd, then the viewer in headless Chromium against
## a real markerd (screenshots in .build/viewer-test), then deploy/: the Kubernetes manifests (strict schema
## validation), the Containerfile's runtime libraries against markerd's ldd, and deploy/cluster/cluster.sh
## (three clustered nats-server and three markerd replicas on loopback, started, checked and stopped).
## Built optimised (-O, with -enable-testing for @testable imports) in a build directory of its own, so it neither
## rebuilds nor is rebuilt by `make run` / `make bench`: the brute-force renderers the tile tests compare against
## take about 6x longer unoptimised (the suite took 1411 s in debug and 224 s optimised on one 2-vCPU host).
## Preconditions and overflow checks stay on under -O. `make test-debug` runs the same suite unoptimised.
TEST_BUILD ?= -c release -Xswiftc -enable-testing --scratch-path .build/test
TEST_MARKERD ?= .build/test/release/markerd
## The Python package is tested in a fresh virtual environment: its wheel is built by the system Python (which has
## grpcio-tools from test-deps: no build-isolation downloads), then installed with its dependencies from PyPI
## (pip's cache in .build/pip-cache).
PY_VENV := .build/python-venv
test: test-deps
	$(SWIFT) build $(TEST_BUILD) --build-tests
	$(SWIFT) test $(TEST_BUILD) --skip-build
	python3 clients/python/test_reference_client.py --markerd $(TEST_MARKERD)
	rm -rf $(PY_VENV) .build/python-dist && python3 -m venv $(PY_VENV)
	python3 -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w .build/python-dist ./clients/python
	PIP_CACHE_DIR=.build/pip-cache $(PY_VENV)/bin/pip install -q --disable-pip-version-check .build/python-dist/*.whl
	$(PY_VENV)/bin/python clients/python/tests/test_client.py --markerd $(TEST_MARKERD)
	python3 scripts/viewer-test.py --markerd $(TEST_MARKERD)
	python3 Benchmarks/test_plot_report.py
	python3 deploy/k8s/test_k8s.py
	python3 deploy/test_containerfile.py --markerd $(TEST_MARKERD)
	python3 deploy/cluster/test_cluster.py --markerd $(TEST_MARKERD)

## The same suite in a debug build (slower; for lldb and for checks that only debug builds make).
test-debug:
	$(MAKE) test TEST_BUILD= TEST_MARKERD=.build/debug/markerd

protos:
	scripts/gen-protos.sh

bench: release bench-deps
	GLIBC_TUNABLES=$(GLIBC_TUNABLES) .build/release/marker-bench $(ARGS)

clean:
	rm -rf .build
