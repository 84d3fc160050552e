#!/usr/bin/env bash
# The one test command, run the same way by developers and by CI: the web build, then lint and the
# vitest suite (unit, integration, crash and drift tests) with the type-check and the browser
# journeys beside them, after making sure Debian's Chromium is there (scripts/ensure-chromium.sh
# installs it when run as root, or names the command to run), and Debian's PostgreSQL 15 for the
# PostgreSQL suites (scripts/ensure-postgres.sh, alike). It ends with the seconds each phase
# took, "phase seconds: vitest N, build N, postgres N, journeys N" (vitest: lint and the vitest
# suite; build: the web build; postgres: the PostgreSQL suites, after the vitest suite; journeys:
# the Chromium check and the journeys, which overlap the vitest phases),
# then the plain closing line "N passed, N failed" that CI reads.
#
# Why beside: most of a vitest file's time and of a journey's is waiting (real servers, processes,
# sockets, a browser), and one after the other a fresh clone took 913 s on 2 cores (vitest 420,
# journeys 486). E2E_BESIDE=0 runs the journeys after the vitest suite, one phase at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
# The suites' scratch folders (SQLite files, data folders, PostgreSQL's test clusters) in memory
# where the machine has a large tmpfs: a fresh clone used 1.2 of 2 cores on average (user and
# system seconds over the wall) while its load stayed near 11, its processes waiting on the disk's
# flushes. SQLite still syncs every commit, and a SIGKILL keeps what was written either way, so the
# crash tests prove the same. Under 8 GiB free (a container's 64 MiB /dev/shm), the system's own.
# TMPDIR set by the caller wins.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')" -ge 8388608 ] 2>/dev/null; then
  export TMPDIR=/dev/shm
fi
mkdir -p test-results
# A count left by an earlier run is never read as this run's.
rm -f test-results/vitest.json test-results/vitest-pg.json test-results/e2e.json test-results/e2e.failed-steps test-results/e2e.seconds
failed_steps=()
phase_seconds=()
started=$SECONDS

step() {
  local name=$1; shift
  echo "== $name"
  "$@" && return 0
  failed_steps+=("$name")
  return 1
}

# The Chromium check and the journeys; their output goes to test-results/e2e.log (printed whole
# when they end, not mixed into the vitest suite's), a failed step's name to e2e.failed-steps and
# their seconds to e2e.seconds.
journeys() {
  local from=$SECONDS
  # Without the browser every journey would fail the same way: stop before them, as one failed step.
  if bash scripts/ensure-chromium.sh; then
    npx playwright test --reporter=list,json 2> test-results/e2e.stderr > test-results/e2e.out || echo e2e >> test-results/e2e.failed-steps
    cat test-results/e2e.out test-results/e2e.stderr
  else
    echo chromium >> test-results/e2e.failed-steps
  fi
  echo $((SECONDS - from)) > test-results/e2e.seconds
}

has_journeys=false
compgen -G "e2e/*.spec.ts" > /dev/null && has_journeys=true
build_seconds=0
journeys_pid=
if $has_journeys; then
  from=$SECONDS
  step build npx vite build --logLevel warn
  build_seconds=$((SECONDS - from))
  if [ "${E2E_BESIDE:-1}" != 0 ]; then
    journeys > test-results/e2e.log 2>&1 &
    journeys_pid=$!
  fi
fi

# The PostgreSQL suites start a cluster of their own from Debian's PostgreSQL 15: make sure it is
# there (scripts/ensure-postgres.sh installs it when run as root, or names the command to run).
# Without it the run fails under CI=true; otherwise it goes on and the suites are skipped, one line
# saying so for the whole run (vitest's global setup, test/support/postgres.ts).
if [ "${CI:-}" = true ]; then
  step postgres bash scripts/ensure-postgres.sh
else
  bash scripts/ensure-postgres.sh || true
fi

# The type-check runs beside the lint and the vitest suite (it reads files and writes nothing);
# its output is printed when it ends. The project's TypeScript 7, by path: after an in-place
# `npm install`, node_modules/.bin/tsc may be the TypeScript 5 that openapi-typescript needs.
from=$SECONDS
node node_modules/typescript/bin/tsc --noEmit -p . > test-results/typecheck.out 2>&1 &
typecheck_pid=$!
step lint npx biome check .
step vitest npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json
echo "== typecheck"
wait "$typecheck_pid" || failed_steps+=(typecheck)
cat test-results/typecheck.out
phase_seconds+=("vitest $((SECONDS - from))" "build $build_seconds")

# The PostgreSQL suites, after the rest: each starts a cluster and processes of its own, and
# started among the multi-server files they starved them into timeouts on 2 cores. Without
# PostgreSQL (and CI unset) they are skipped, one line saying so. They start the server the vitest
# phase compiled from the same files (INTERLOCK_SERVER_BUNDLE=reuse) rather than build it again.
from=$SECONDS
step pg-suites env INTERLOCK_PG_SUITES=1 INTERLOCK_SERVER_BUNDLE=reuse npx vitest run --project shared test/port/pg- test/db/pg- test/support-tests/postgres-cluster \
  --reporter=default --reporter=json --outputFile.json=test-results/vitest-pg.json
phase_seconds+=("postgres $((SECONDS - from))")

e2e_passed=0; e2e_failed=0
if $has_journeys; then
  if [ -n "$journeys_pid" ]; then
    echo "== e2e (ran beside the vitest suite)"
    wait "$journeys_pid"
  else
    echo "== e2e"
    journeys > test-results/e2e.log 2>&1
  fi
  cat test-results/e2e.log
  while read -r name; do failed_steps+=("$name"); done < <(cat test-results/e2e.failed-steps 2>/dev/null)
  if [ -f test-results/e2e.json ]; then
    read -r e2e_passed e2e_failed < <(node -e 'const r=require("./test-results/e2e.json");console.log(r.stats.expected, r.stats.unexpected + r.stats.flaky)')
  fi
  phase_seconds+=("journeys $(cat test-results/e2e.seconds 2>/dev/null || echo 0)")
else
  phase_seconds+=("journeys 0")
fi

# A suite's counts, or one failure when its report is missing (it never ran to the end).
counts() {
  node -e '
    try { const r = require(process.argv[1]); console.log(r.numPassedTests, r.numFailedTests + (r.numTotalTestSuites && !r.success && r.numFailedTests === 0 ? 1 : 0)); }
    catch { console.log(0, 1); }' "$1"
}
read -r v_passed v_failed < <(counts ./test-results/vitest.json)
read -r pg_passed pg_failed < <(counts ./test-results/vitest-pg.json)
passed=$((v_passed + pg_passed + e2e_passed))
failed=$((v_failed + pg_failed + e2e_failed))
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo "failed steps: ${failed_steps[*]}"
  [ "$failed" -eq 0 ] && failed=${#failed_steps[@]}
fi
summary=$(IFS=,; echo "${phase_seconds[*]}")
echo "phase seconds: ${summary//,/, } (wall $((SECONDS - started)))"
echo "$passed passed, $failed failed"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]
