#!/usr/bin/env bash
# Runs test tiers (test/unit, test/db, test/e2e, test/browser), each as one `bun test --parallel` over its
# folder, the slowest files first (test/timings.json); with no tier named, all four (e2e and browser side by
# side) with `tsc --noEmit` running beside them. Exits non-zero when the type check or any tier failed (every tier
# still runs). `--update-timings` rewrites test/timings.json from this run's durations.
#   bash scripts/test-tiers.sh                  # tsc + unit, db, e2e, browser (npm test, after the set-up)
#   bash scripts/test-tiers.sh unit             # one tier (npm run test:unit)
# Workers per tier: most tests wait on sockets, child processes and PostgreSQL, so more workers than cores
# pay; Chromium is heavy, so the browser tier has fewer. TEST_WORKERS overrides them all.
set -uo pipefail
cd "$(dirname "$0")/.."
BUN=${BUN:-node_modules/.bin/bun}

update=()
tiers=()
for a in "$@"; do
  case $a in
    --update-timings) update=(--update-timings) ;;
    unit | db | e2e | browser) tiers+=("$a") ;;
    *) echo "test-tiers: unknown tier or option: $a (unit, db, e2e, browser, --update-timings)" >&2; exit 2 ;;
  esac
done
typecheck=0
if ((${#tiers[@]} == 0)); then
  tiers=(unit db e2e browser)
  typecheck=1
fi

workers() {
  case $1 in
    unit) echo 2 ;;
    db) echo 4 ;;
    e2e) echo 4 ;;
    browser) echo 3 ;;
  esac
}

tsc_pid=
if ((typecheck)); then
  tsc_log=$(mktemp)
  node_modules/.bin/tsc --noEmit >"$tsc_log" 2>&1 &
  tsc_pid=$!
fi

run_tier() {
  local tier=$1 n=${TEST_WORKERS:-$(workers "$1")} start=$SECONDS code=0
  echo "== tier $tier ($n workers)"
  "$BUN" test --parallel="$n" --timeout 30000 --timings=test/timings.json "${update[@]}" "./test/$tier/" || code=1
  echo "== tier $tier: $((SECONDS - start)) s"
  return $code
}

status=0
if [[ ${tiers[*]} == "unit db e2e browser" && ${#update[@]} == 0 ]]; then
  # All of them: unit (busy on the CPU) and db first, then e2e and browser side by side, as both mostly wait
  # on sockets, servers and Chromium; the browser tier's output follows e2e's when both are done.
  run_tier unit || status=1
  run_tier db || status=1
  browser_log=$(mktemp)
  run_tier browser >"$browser_log" 2>&1 &
  browser_pid=$!
  run_tier e2e || status=1
  wait "$browser_pid" || status=1
  cat "$browser_log"
  rm -f "$browser_log"
else
  for tier in "${tiers[@]}"; do run_tier "$tier" || status=1; done
fi

if [[ -n $tsc_pid ]]; then
  if wait "$tsc_pid"; then
    echo "== tsc --noEmit: clean"
  else
    echo "== tsc --noEmit failed:"
    status=1
  fi
  cat "$tsc_log"
  rm -f "$tsc_log"
fi
exit "$status"
