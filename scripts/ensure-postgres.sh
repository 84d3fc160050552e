#!/usr/bin/env bash
# The PostgreSQL suites start a throwaway cluster of their own with Debian's PostgreSQL 15 binaries
# (test/support/postgres.ts runs initdb and pg_ctl from /usr/lib/postgresql/15/bin). This makes
# sure they are there before the tests start. When they are missing and we are root it installs
# Debian's postgresql, then stops the 15/main cluster Debian's post-install starts on port 5432
# (the tests never use it, and it should not sit on the machine); otherwise it prints the one
# command to run and fails. When they are there it says so and does nothing.
# scripts/test.sh (npm test) and .ci/run call it.
set -euo pipefail

bin=/usr/lib/postgresql/15/bin
if [ -x "$bin/initdb" ]; then
  echo "PostgreSQL 15 is installed ($bin/initdb)"
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "the PostgreSQL suites need Debian's PostgreSQL 15 at $bin, which is missing: run 'sudo apt-get update && sudo apt-get install -y postgresql', then run the tests again" >&2
  exit 1
fi

echo "Debian's PostgreSQL 15 is missing: installing postgresql with apt-get (about a minute)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
pg_ctlcluster 15 main stop || true
if [ ! -x "$bin/initdb" ]; then
  echo "apt-get installed postgresql but $bin/initdb is still missing" >&2
  exit 1
fi
