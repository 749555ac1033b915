#!/usr/bin/env bash
# Start one Ray node of a pdors cluster with the `ray` of the environment it runs in (PATH, else the repository's
# .venv, or $RAY): the same code and packages on every node.
#   infra/ray-node.sh head   [RAY START ARGS...]            head node, GCS on port $RAY_PORT (default 6379)
#   infra/ray-node.sh worker HEAD_HOST:PORT [RAY START ARGS...]
# Extra arguments go to `ray start` as they are (e.g. --block to stay in the foreground, --num-cpus=N).
# Environment:
#   RAY_NODE_IP        address this node advertises (default: Ray's choice; 127.0.0.1 for a one-machine cluster)
#   RAY_PORT           head's GCS port (default 6379)
#   RAY_TEMP_DIR       Ray's session dir (default /tmp/ray; keep it short: it holds unix sockets)
#   RAY_AUTH_MODE      token (default) or disabled; every node and client must agree
#   RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH   the cluster's shared token (default file ~/.ray/auth_token)
# Closed by default (docs/OPERATIONS.md lists every port): no dashboard (pass --include-dashboard=true to have it,
# on 127.0.0.1), no Prometheus export (RAY_enable_metrics_collection=0; the autoscaler's and dashboard's metrics
# servers, plain HTTP on 0.0.0.0 in Ray 2.60, are skipped by an out-of-range AUTOSCALER_METRIC_PORT and
# DASHBOARD_METRIC_PORT: Ray logs the failed bind and goes on); RAY_NODE_IP=127.0.0.1 keeps every socket on loopback.
# A cluster launcher config (infra/ray/*.yaml) and a person on a laptop use this same script.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=infra/tool.sh
. "$HERE/infra/tool.sh"
usage() { echo "usage: $0 head [ray start args...] | $0 worker HEAD_HOST:PORT [ray start args...]" >&2; exit 2; }

[ $# -ge 1 ] || usage
ROLE="$1"; shift
case "$ROLE" in head|worker) ;; *) usage ;; esac   # before the token check: a wrong role is a usage error
RAY="$(tool RAY ray)" || exit 2

export RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}"
export RAY_USAGE_STATS_ENABLED=0
export RAY_enable_metrics_collection="${RAY_enable_metrics_collection:-0}"
export AUTOSCALER_METRIC_PORT="${AUTOSCALER_METRIC_PORT:-65536}" DASHBOARD_METRIC_PORT="${DASHBOARD_METRIC_PORT:-65536}"
# A 127.0.0.1 head: Ray would turn the address into the outward interface's and bind wildcards unless this is 0.
# Only the head: a worker started with it refuses to join ("multi-node clusters are not supported"), and a worker
# joins a loopback head only where loopback is its only interface (a network namespace, as in tests/test_infra.py).
[ "$ROLE" = head ] && [ "${RAY_NODE_IP:-}" = 127.0.0.1 ] && export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
if [ "$RAY_AUTH_MODE" = token ] && [ -z "${RAY_AUTH_TOKEN:-}" ]; then
  TOKEN_FILE="${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}"
  if [ ! -s "$TOKEN_FILE" ]; then
    if [ "$ROLE" = head ] && [ -z "${RAY_AUTH_TOKEN_PATH:-}" ]; then   # a new cluster: make its token
      (umask 077 && "$RAY" get-auth-token --generate >/dev/null)
      chmod 600 "$TOKEN_FILE"   # a credential: readable by its owner only, whatever Ray's default mode
      echo "$0: generated the cluster token $TOKEN_FILE: give it to every worker and client" >&2
    else
      echo "$0: RAY_AUTH_MODE=token but no token: set RAY_AUTH_TOKEN or copy the head's $TOKEN_FILE here" >&2
      exit 2
    fi
  fi
  # a credential: readable by its owner only (Ray writes it 0644 in a 0755 ~/.ray); ours is repaired, another's refused
  if [ -n "$(find -L "$TOKEN_FILE" -maxdepth 0 -perm /077 2>/dev/null)" ]; then
    if [ -O "$TOKEN_FILE" ]; then
      chmod 600 "$TOKEN_FILE"
      echo "$0: $TOKEN_FILE was readable by other users: made it 0600" >&2
    else
      echo "$0: $TOKEN_FILE is readable by other users and not a file of yours to repair: make it 0600" >&2
      exit 2
    fi
  fi
  TOKEN_DIR="$(dirname "$TOKEN_FILE")"
  if [ "$TOKEN_DIR" = "$HOME/.ray" ] && [ -O "$TOKEN_DIR" ] && [ -n "$(find "$TOKEN_DIR" -maxdepth 0 -perm /077)" ]; then
    chmod 700 "$TOKEN_DIR"
  fi
fi

ARGS=(--disable-usage-stats)
[ -n "${RAY_NODE_IP:-}" ] && ARGS+=("--node-ip-address=$RAY_NODE_IP")
[ -n "${RAY_TEMP_DIR:-}" ] && ARGS+=("--temp-dir=$RAY_TEMP_DIR")
case "$ROLE" in
  head)
    # later arguments override these (--include-dashboard=true for the dashboard, on 127.0.0.1)
    exec "$RAY" start --head "--port=${RAY_PORT:-6379}" --include-dashboard=false --dashboard-host=127.0.0.1 \
      "${ARGS[@]}" "$@" ;;
  worker)
    [ $# -ge 1 ] || usage
    HEAD="$1"; shift
    exec "$RAY" start "--address=$HEAD" "${ARGS[@]}" "$@" ;;
  *) usage ;;
esac
