#!/usr/bin/env bash
# An MLflow tracking server on loopback (127.0.0.1 only; reach it from elsewhere through an SSH tunnel).
#   infra/mlflow-local.sh [PORT] [DIR]      (defaults: 5000, ./mlflow-server)
# Stores, by default under DIR: backend sqlite:///DIR/mlflow.db, artifacts in DIR/artifacts. Override with
#   MLFLOW_BACKEND_STORE_URI       e.g. postgresql://USER:PASSWORD@HOST:5432/mlflow   (needs psycopg[binary])
#   MLFLOW_BACKEND_STORE_URI_FILE  a file (mode 600) whose first line is that URI, to keep it out of the
#                                  environment of the calling shell
#   MLFLOW_ARTIFACTS_DESTINATION   e.g. s3://pdors-mlflow/artifacts (needs boto3; S3-compatible storage such as MinIO:
#                                  also MLFLOW_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
# The stores reach the server through its environment, never its command line (which `ps` shows to every
# user); messages show them with credentials masked.
# Artifacts are proxied by the server (clients need no storage credentials). Runs in the foreground (exec):
# SIGTERM stops the server and its workers. Healthy when `curl -sf http://127.0.0.1:PORT/health` answers
# (about 15-20 s); then   export MLFLOW_TRACKING_URI=http://127.0.0.1:PORT
set -euo pipefail
PORT="${1:-5000}"
DIR="$(mkdir -p "${2:-mlflow-server}" && cd "${2:-mlflow-server}" && pwd)"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=infra/tool.sh
. "$HERE/infra/tool.sh"
MLFLOW="$(tool MLFLOW mlflow)" || exit 2
MLFLOW_PY="$(dirname "$MLFLOW")/python"   # the interpreter of that mlflow's environment, for the checks below
[ -x "$MLFLOW_PY" ] || MLFLOW_PY="$(tool PYTHON python3)" || exit 2
while IFS='=' read -r key value; do   # the team settings (infra/mlflow-team.env), unless set already
  case "$key" in ''|\#*) continue ;; esac
  [ -n "${!key:-}" ] || export "$key=$value"
done < "$HERE/infra/mlflow-team.env"
if [ -n "${MLFLOW_BACKEND_STORE_URI_FILE:-}" ]; then
  [ -r "$MLFLOW_BACKEND_STORE_URI_FILE" ] ||
    { echo "$0: MLFLOW_BACKEND_STORE_URI_FILE: cannot read $MLFLOW_BACKEND_STORE_URI_FILE" >&2; exit 2; }
  IFS= read -r MLFLOW_BACKEND_STORE_URI < "$MLFLOW_BACKEND_STORE_URI_FILE" || true
fi
export MLFLOW_BACKEND_STORE_URI="${MLFLOW_BACKEND_STORE_URI:-sqlite:///$DIR/mlflow.db}"
export MLFLOW_ARTIFACTS_DESTINATION="${MLFLOW_ARTIFACTS_DESTINATION:-$DIR/artifacts}"
masked() { sed -E 's#(://)[^/@]*@#\1***@#' <<< "$1"; }
needs() {   # needs PREFIX MODULE URI PACKAGE: fail now, with the fix, instead of in a server worker later
  case "$3" in "$1"*)
    "$MLFLOW_PY" -c "import $2" 2>/dev/null ||
      { echo "$0: $(masked "$3") needs the Python package $4: $MLFLOW_PY -m pip install $4" >&2; exit 2; } ;;
  esac
}
needs postgresql psycopg "$MLFLOW_BACKEND_STORE_URI" "psycopg[binary]"
needs s3:// boto3 "$MLFLOW_ARTIFACTS_DESTINATION" boto3
exec "$MLFLOW" server --host 127.0.0.1 --port "$PORT" --serve-artifacts --workers "$MLFLOW_SERVER_WORKERS"
