#!/usr/bin/env bash
# Long fuzz rounds with random seeds, for a nightly job (make test runs one short round at a fixed seed).
#   scripts/fuzz-nightly.sh [ROUNDS] [REQUESTS]     default 20 rounds of 100,000 requests
# Each round runs RPCFuzzTests at SEED=random against a fresh markerd. A failing round prints its
# seed and appends "SEED REQUESTS # date" to Tests/MarkerdServerTests/fuzz-regressions.txt, which
# RPCFuzzTests.savedFailingSeedsPass replays in every `make test`: commit it with the fix.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
requests=${2:-100000}
build=(-c release -Xswiftc -enable-testing --scratch-path .build/test)
swift build "${build[@]}" --build-tests >/dev/null || exit 1
failed=0
for round in $(seq 1 "$rounds"); do
  log=$(mktemp)
  SEED=random FUZZ_REQUESTS=$requests swift test "${build[@]}" --skip-build \
    --filter 'RPCFuzzTests/everyMethodAnswersEveryRequestWithADocumentedStatus' >"$log" 2>&1
  rc=$?
  seed=$(grep -oE 'SEED=[0-9]+' "$log" | head -1 | cut -d= -f2)
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    echo "round $round/$rounds: FAILED at SEED=$seed (log: $log)"
    echo "$seed $requests # found $(date -u +%F) by scripts/fuzz-nightly.sh" >> Tests/MarkerdServerTests/fuzz-regressions.txt
  else
    echo "round $round/$rounds: passed (SEED=$seed, $requests requests)"
    rm -f "$log"
  fi
done
echo "fuzz-nightly: $((rounds - failed)) passed, $failed failed"
[ $failed -eq 0 ]
