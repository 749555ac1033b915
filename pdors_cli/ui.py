"""``pdors ui``: the MLflow UI over the local tracking store, on the loopback only (``[::1]`` where the machine has
it: no Assistant panel, ``tracking.ui_host``), served in this process
(``pipeline.publish.local_ui``); the sweeps' printed URLs name its port (``$PDORS_UI_PORT``, else 5000)."""

from __future__ import annotations

import argparse
import sys


def cmd_ui(args: argparse.Namespace) -> int:
    from pipeline.publish import local_ui, tracking

    uri = tracking.tracking_uri()
    if tracking.served(uri):
        print(f"pdors ui: MLFLOW_TRACKING_URI is a server ({tracking.shown_uri()}): open it there", file=sys.stderr)
        return 2
    port = args.port or tracking.ui_port()
    print(f"MLflow UI of {tracking.shown_uri()}:")  # then the URL alone on its line, whole, as a sweep prints it
    print(f"{tracking.local_base(port)}/#/experiments?{tracking.UI_MODE}", flush=True)
    local_ui.serve(uri, tracking.ui_host(), port)  # until Ctrl-C
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("ui", help="serve the local MLflow store (loopback) to open the sweeps' URLs")
    p.add_argument("--port", type=int, help="port (default: $PDORS_UI_PORT, else 5000: the port sweeps' URLs name)")
    p.set_defaults(func=cmd_ui)
