#!/usr/bin/env bash
# A local MLflow tracking server on loopback, SQLite backend and a local artifact root.
#   infra/mlflow-local.sh [PORT] [DIR]      (defaults: 5000, ./mlflow-server)
# Runs in the foreground (exec): SIGTERM stops the server and its workers. Healthy when
# `curl -sf http://127.0.0.1:PORT/health` answers (about 15-20 s); then
#   export MLFLOW_TRACKING_URI=http://127.0.0.1:PORT
set -euo pipefail
PORT="${1:-5000}"
DIR="$(mkdir -p "${2:-mlflow-server}" && cd "${2:-mlflow-server}" && pwd)"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
MLFLOW="${MLFLOW:-$HERE/.venv/bin/mlflow}"
exec "$MLFLOW" server --host 127.0.0.1 --port "$PORT" \
  --backend-store-uri "sqlite:///$DIR/mlflow.db" --default-artifact-root "$DIR/artifacts" --workers 1
