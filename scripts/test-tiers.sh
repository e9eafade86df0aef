#!/usr/bin/env bash
# Runs test tiers (test/unit, test/db, test/e2e, test/browser), each as one `bun test --parallel` over its
# folder, the slowest files first (test/timings.json); with no tier named, all four in turn with
# `tsc --noEmit` running beside them. Exits non-zero when the type check or any tier failed (every tier
# still runs). `--update-timings` rewrites test/timings.json from this run's durations.
#   bash scripts/test-tiers.sh                  # tsc + unit, db, e2e, browser (npm test, after the set-up)
#   bash scripts/test-tiers.sh unit             # one tier (npm run test:unit)
# Workers per tier: most tests wait on sockets, child processes and PostgreSQL, so more workers than cores
# pay; Chromium is heavy, so the browser tier has fewer. TEST_WORKERS overrides them all.
# Every run preloads test/support/cheap-hash.ts (bunfig.toml): argon2id at a test-sized cost (the production one took most of
# the dashboard and sign-in tests' time).
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
    db) echo 6 ;;
    e2e) echo 6 ;;
    browser) echo 2 ;;
  esac
}

tsc_pid=
if ((typecheck)); then
  tsc_log=$(mktemp)
  node_modules/.bin/tsc --noEmit >"$tsc_log" 2>&1 &
  tsc_pid=$!
fi

status=0
for tier in "${tiers[@]}"; do
  n=${TEST_WORKERS:-$(workers "$tier")}
  echo "== tier $tier ($n workers)"
  start=$SECONDS
  "$BUN" test --parallel="$n" --timeout 30000 --timings=test/timings.json "${update[@]}" "./test/$tier/" || status=1
  echo "== tier $tier: $((SECONDS - start)) s"
done

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
