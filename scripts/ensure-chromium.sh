#!/usr/bin/env bash
# The browser journeys run in Debian's Chromium: playwright.config.ts launches $CHROMIUM_PATH, else
# /usr/bin/chromium. This makes sure it is there before they start. When it is missing and we are
# root it installs Debian's chromium and fonts-liberation (the fonts the screenshots are drawn
# with); otherwise it prints the one command to run and fails. When it is there it does nothing.
# scripts/test.sh (npm test) and .ci/run call it.
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  [ -x "$CHROMIUM_PATH" ] && exit 0
  echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file: point it at a Chromium, or unset it to use Debian's /usr/bin/chromium" >&2
  exit 1
fi
[ -x /usr/bin/chromium ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "the browser journeys need Debian's Chromium at /usr/bin/chromium, which is missing: run 'sudo apt-get update && sudo apt-get install -y chromium fonts-liberation' (or set CHROMIUM_PATH to a Chromium executable), then run the tests again" >&2
  exit 1
fi

echo "Debian's Chromium is missing: installing chromium and fonts-liberation with apt-get (about a minute)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium fonts-liberation >/dev/null
if [ ! -x /usr/bin/chromium ]; then
  echo "apt-get installed chromium but /usr/bin/chromium is still missing" >&2
  exit 1
fi
