#!/usr/bin/env bash
# The one test command, run the same way by developers and by CI: lint and the vitest suite (unit,
# integration, crash and drift tests) with the type-check beside them, then the browser journeys, after making sure
# Debian's Chromium is there (scripts/ensure-chromium.sh installs it when run as root, or names the
# command to run). It ends with the seconds each phase took, "phase seconds: vitest N, build N,
# journeys N" (vitest: lint and the vitest suite with the type-check beside them; journeys: the
# Chromium check and the journeys), then the plain closing line "N passed, N failed" that CI reads.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-results
# A count left by an earlier run is never read as this run's.
rm -f test-results/vitest.json test-results/e2e.json
failed_steps=()
phase_seconds=()
phase_started=$SECONDS

# The seconds since the last phase ended, recorded under `name`.
phase_done() {
  phase_seconds+=("$1 $((SECONDS - phase_started))")
  phase_started=$SECONDS
}

step() {
  local name=$1; shift
  echo "== $name"
  "$@" && return 0
  failed_steps+=("$name")
  return 1
}

# The type-check runs beside the lint and the vitest suite (it reads files and writes nothing);
# its output is printed when it ends.
npx tsc --noEmit -p . > test-results/typecheck.out 2>&1 &
typecheck_pid=$!
step lint npx biome check .
step vitest npx vitest run --reporter=default --reporter=json --outputFile.json=test-results/vitest.json
echo "== typecheck"
wait "$typecheck_pid" || failed_steps+=(typecheck)
cat test-results/typecheck.out
phase_done vitest

e2e_passed=0; e2e_failed=0
if compgen -G "e2e/*.spec.ts" > /dev/null; then
  step build npx vite build --logLevel warn
  phase_done build
  # Without the browser every journey would fail the same way: stop before them, as one failed step.
  if step chromium bash scripts/ensure-chromium.sh; then
    step e2e npx playwright test --reporter=list,json 2> >(tee test-results/e2e.stderr >&2) > >(tee test-results/e2e.out)
    if [ -f test-results/e2e.json ]; then
      read -r e2e_passed e2e_failed < <(node -e 'const r=require("./test-results/e2e.json");console.log(r.stats.expected, r.stats.unexpected + r.stats.flaky)')
    fi
  fi
  phase_done journeys
fi

read -r v_passed v_failed < <(node -e '
  try { const r = require("./test-results/vitest.json"); console.log(r.numPassedTests, r.numFailedTests + (r.numTotalTestSuites && !r.success && r.numFailedTests === 0 ? 1 : 0)); }
  catch { console.log(0, 1); }')
passed=$((v_passed + e2e_passed))
failed=$((v_failed + e2e_failed))
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo "failed steps: ${failed_steps[*]}"
  [ "$failed" -eq 0 ] && failed=${#failed_steps[@]}
fi
summary=$(IFS=,; echo "${phase_seconds[*]}")
echo "phase seconds: ${summary//,/, }"
echo "$passed passed, $failed failed"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]
