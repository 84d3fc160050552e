#!/usr/bin/env bash
# Copy the pictures of the README and docs/ from the browser journeys' last run (test-results/screenshots/, written
# by `npm test` or `npm run e2e`) into web/screenshots/, each from the journey that shows it.
# Usage: bash scripts/readme-screenshots.sh [run folder, default .]
set -euo pipefail
cd "$(dirname "$0")/.."
from="${1:-.}/test-results/screenshots"
# picture <- the journey's screenshot
pairs=(
  "inbox.png inbox-1280.png"
  "item.png item-refused-with-repair-1280.png"
  "item-decided-elsewhere.png item-decided-elsewhere-1280.png"
  "item-session-ending.png item-session-ending-1280.png"
  "compact-inbox.png compact-inbox-1280.png"
  "scoreboard.png scoreboard-1280.png"
  "reconciliation.png reconciliation-exceptions-1280x800.png"
  "scoreboard-money.png scoreboard-money-1280.png"
  "item-finance-read-only.png item-finance-read-only-1280.png"
  "ledger-rejected.png ledger-rejected-1280.png"
  "verify.png verify-valid-1280.png"
  "item-four-eyes-voided.png item-four-eyes-voided-1280.png"
  "item-self-approval.png item-self-approval-1280.png"
)
for pair in "${pairs[@]}"; do
  read -r to source <<< "$pair"
  if [ ! -f "$from/$source" ]; then echo "missing $from/$source: run the journeys first" >&2; exit 1; fi
  cp "$from/$source" "web/screenshots/$to"
done
echo "copied ${#pairs[@]} pictures from $from to web/screenshots/"
