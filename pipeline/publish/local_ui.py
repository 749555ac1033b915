"""The MLflow UI of the local tracking store, served in this process: MLflow's own app
(``mlflow.server.fastapi_app``) under uvicorn with one worker, configured as ``mlflow server`` configures it.

Why not ``mlflow server``: it imports MLflow and opens the stores, then starts uvicorn in a new interpreter that
imports MLflow and opens them again (``pdors ui`` had imported MLflow a first time to read the tracking URI):
three imports of about 3.5 s of CPU each, 35 s to the first answer at load 14. Here MLflow is imported once and
the store opened once (an already-migrated SQLite store: 0.1 s of CPU) before the port is bound, so the first
answer the browser gets reads the store.
"""

from __future__ import annotations

import os
import warnings


def serve(uri: str, host: str, port: int) -> None:
    """Serve tracking store ``uri`` (local) on ``host``:``port`` until interrupted (Ctrl-C, SIGTERM)."""
    from mlflow.server import constants
    from mlflow.utils.server_cli_utils import resolve_default_artifact_root

    # `mlflow server`'s defaults: artifacts served through the server, the model registry in the same store
    os.environ.update(
        {
            constants.BACKEND_STORE_URI_ENV_VAR: uri,
            constants.REGISTRY_STORE_URI_ENV_VAR: uri,
            constants.ARTIFACT_ROOT_ENV_VAR: resolve_default_artifact_root(True, "", uri),
            constants.SERVE_ARTIFACTS_ENV_VAR: "true",
            constants.ARTIFACTS_DESTINATION_ENV_VAR: "./mlartifacts",
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",  # no job runner: one person's browser needs none
        }
    )
    import uvicorn
    from mlflow.server.handlers import initialize_backend_stores

    initialize_backend_stores(uri, uri, os.environ[constants.ARTIFACT_ROOT_ENV_VAR])
    with warnings.catch_warnings():  # Starlette's deprecation of an import of MLflow's: nothing a user can act on
        warnings.filterwarnings("ignore", "starlette.middleware.wsgi is deprecated")
        from mlflow.server.fastapi_app import app
    uvicorn.run(app, host=host, port=port, workers=1, access_log=False)
