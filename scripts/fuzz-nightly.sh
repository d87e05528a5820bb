#!/usr/bin/env bash
# Long fuzz rounds with random seeds, for a nightly job (make test runs one short round of each at a fixed seed).
#   scripts/fuzz-nightly.sh [ROUNDS] [RPC_REQUESTS] [HTTP_REQUESTS]   default 20 rounds, 100,000 and 50,000 requests
# Each round runs RPCFuzzTests (every RPC method) and HTTPFuzzTests (every HTTP route) at SEED=random against
# fresh markerd processes, built optimised as `make test` builds them (SKIP_BUILD=1 skips the build).
# A failing RPC round appends "SEED REQUESTS # date" to Tests/MarkerdServerTests/fuzz-regressions.txt, which
# RPCFuzzTests.savedFailingSeedsPass replays in every `make test`: commit it with the fix. A failing HTTP round
# prints its replay command: keep the failing request as a test in TileGatewayTests before fixing the cause.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
rpc_requests=${2:-100000}
http_requests=${3:-50000}
build=(-c release -Xswiftc -enable-testing --scratch-path .build/test)
if [ "${SKIP_BUILD:-0}" != 1 ]; then swift build "${build[@]}" --build-tests >/dev/null || exit 1; fi
failed=0
for round in $(seq 1 "$rounds"); do
  for kind in rpc http; do
    log=$(mktemp)
    if [ $kind = rpc ]; then
      SEED=random FUZZ_REQUESTS=$rpc_requests swift test "${build[@]}" --skip-build \
        --filter 'RPCFuzzTests/everyMethodAnswersEveryRequestWithADocumentedStatus' >"$log" 2>&1
    else
      SEED=random HTTP_FUZZ_REQUESTS=$http_requests swift test "${build[@]}" --skip-build \
        --filter 'HTTPFuzzTests' >"$log" 2>&1
    fi
    rc=$?
    seed=$(grep -oE 'SEED=[0-9]+' "$log" | head -1 | cut -d= -f2)
    if [ $rc -eq 0 ]; then
      echo "round $round/$rounds $kind: passed (SEED=$seed)"
      rm -f "$log"
      continue
    fi
    failed=$((failed + 1))
    echo "round $round/$rounds $kind: FAILED at SEED=$seed (log: $log)"
    if [ $kind = rpc ]; then
      echo "$seed $rpc_requests # found $(date -u +%F) by scripts/fuzz-nightly.sh" >> Tests/MarkerdServerTests/fuzz-regressions.txt
    else
      echo "  replay: SEED=$seed HTTP_FUZZ_REQUESTS=$http_requests swift test ${build[*]} --filter HTTPFuzzTests"
    fi
  done
done
echo "fuzz-nightly: $((2 * rounds - failed)) passed, $failed failed"
[ $failed -eq 0 ]
