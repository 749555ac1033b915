"""``pdors ui``: the MLflow UI over the local tracking store, on the loopback only, with this environment's
``mlflow`` (so it need not be on PATH); the sweeps' printed URLs name its port (``$PDORS_UI_PORT``, else 5000)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def cmd_ui(args: argparse.Namespace) -> int:
    from pipeline.publish import tracking

    uri = tracking.tracking_uri()
    if tracking.served(uri):
        print(f"pdors ui: MLFLOW_TRACKING_URI is a server ({tracking.shown_uri()}): open it there", file=sys.stderr)
        return 2
    port = args.port or tracking.ui_port()
    mlflow = Path(sys.executable).parent / "mlflow"
    print(f"MLflow UI of {tracking.shown_uri()}: http://127.0.0.1:{port}/#/experiments?{tracking.UI_MODE}", flush=True)
    command = [str(mlflow), "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(port)]
    # One worker, no job runner: MLflow's default of 4 workers (each importing MLflow) and a job-runner process
    # took 16-45 s to serve on 2 shared cores, and one person's browser needs neither.
    command += ["--workers", "1"]
    # (and the deprecation warning Starlette gives about an import of MLflow's, which a user cannot act on)
    env = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "PYTHONWARNINGS": "ignore:starlette.middleware.wsgi is deprecated",
        **os.environ,
    }
    os.execve(command[0], command, env)  # the server is this process: Ctrl-C stops it


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("ui", help="serve the local MLflow store (127.0.0.1) to open the sweeps' URLs")
    p.add_argument("--port", type=int, help="port (default: $PDORS_UI_PORT, else 5000: the port sweeps' URLs name)")
    p.set_defaults(func=cmd_ui)
