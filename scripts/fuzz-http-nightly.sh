#!/usr/bin/env bash
# Nightly run of the HTTP gateway fuzz test (Tests/MarkerdServerTests/HTTPFuzzTests.swift) with
# random seeds and more requests than `make test`'s fixed-seed run.
#
#   scripts/fuzz-http-nightly.sh [ROUNDS] [REQUESTS]   # default 10 rounds of 50,000 requests
#
# Each round picks a random seed (or uses SEED= for every round, to replay one) and runs the
# test against a real markerd. Builds the tests optimised the way `make test` does (its own build
# directory; TEST_BUILD= overrides the build flags as in the Makefile, TEST_BUILD="" for debug),
# unless SKIP_BUILD=1. On a failure it prints the seed and the replay command and
# exits 1; save the failing request as a reproducer test (see the tests named in HTTPFuzzTests'
# commit history) before fixing the cause.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${1:-10}
REQUESTS=${2:-50000}
read -r -a BUILD <<< "${TEST_BUILD--c release -Xswiftc -enable-testing --scratch-path .build/test}"

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    swift build ${BUILD[@]+"${BUILD[@]}"} --build-tests
fi

for round in $(seq 1 "$ROUNDS"); do
    seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
    echo "fuzz-http-nightly: round $round/$ROUNDS, SEED=$seed, $REQUESTS requests"
    if ! SEED=$seed HTTP_FUZZ_REQUESTS=$REQUESTS swift test ${BUILD[@]+"${BUILD[@]}"} --skip-build --filter HTTPFuzzTests; then
        echo "fuzz-http-nightly: FAILED with SEED=$seed; replay:" >&2
        echo "  SEED=$seed HTTP_FUZZ_REQUESTS=$REQUESTS swift test ${BUILD[*]-} --filter HTTPFuzzTests" >&2
        exit 1
    fi
done
echo "fuzz-http-nightly: $ROUNDS rounds passed"
