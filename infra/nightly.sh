#!/usr/bin/env bash
# The nightly competitive-ratio check as every scheduler runs it (cron, systemd timer, Kubernetes CronJob, CI):
#   infra/nightly.sh [pdors nightly args...]        e.g. --out /var/lib/pdors/nightly
# Runs `pdors nightly` from the repository root and exits with its status (0 pass, 1 a check failed, 2 bad
# input, 3 passed but MLflow logging failed), so the scheduler records a failure too. On a non-zero status it
# also posts the result table (the offending instances and how to replay them) to PDORS_ALERT_WEBHOOK if set:
# JSON {"text": ...}, which Slack, Mattermost and Rocket.Chat incoming webhooks accept.
set -uo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
cd "$HERE" || exit 2
# shellcheck source=infra/tool.sh
. "$HERE/infra/tool.sh"
PDORS="$(tool PDORS pdors)" || exit 2
PYTHON="$(tool PYTHON python3)" || exit 2
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
"$PDORS" nightly "$@" 2>&1 | tee "$LOG"
STATUS=${PIPESTATUS[0]}
if [ "$STATUS" -ne 0 ] && [ -n "${PDORS_ALERT_WEBHOOK:-}" ]; then
  # keep the table and verdict, drop progress-bar lines; Slack-style webhooks cap a message near 40 kB
  "$PYTHON" - "$LOG" "$STATUS" "$(hostname)" <<'PY' |
import json, sys
log, status, host = open(sys.argv[1], errors="replace").read(), sys.argv[2], sys.argv[3]
lines = [ln for ln in log.splitlines() if "\r" not in ln and "it/s]" not in ln and "s/instance]" not in ln]
print(json.dumps({"text": f"pdors nightly FAILED (exit {status}) on {host}\n" + "\n".join(lines)[-35000:]}))
PY
  curl -sS --max-time 30 --retry 2 -H 'Content-Type: application/json' --data-binary @- \
    "$PDORS_ALERT_WEBHOOK" >/dev/null || echo "$0: could not post the alert to PDORS_ALERT_WEBHOOK" >&2
fi
exit "$STATUS"
