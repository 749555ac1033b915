"""Credentials inside URIs (``scheme://user:password@host``): masked wherever text is shown, turned into an
``Authorization`` header where a URI is used. A leaf module: no project imports."""

from __future__ import annotations

import base64
import os
import re
from urllib.parse import unquote, urlsplit, urlunsplit

# scheme://userinfo@ ; userinfo runs to the last '@' before the host (a password may hold '@' unescaped)
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@")
MASK = "***"


def redact(text: str) -> str:
    """``text`` with the user and password of every URI in it replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", str(text))


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception as one redacted line for a message: ``Type: text``."""
    return f"{type(error).__name__}: {redact(' '.join(str(error).split()))[:limit]}"


def split_auth(uri: str) -> tuple[str, dict[str, str]]:
    """``uri`` without its userinfo, and the headers MLflow's client would send for it: HTTP basic auth from
    the userinfo (as ``requests`` does), else from ``MLFLOW_TRACKING_USERNAME``/``_PASSWORD``, else a bearer
    ``MLFLOW_TRACKING_TOKEN``."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    bare = urlunsplit(parts._replace(netloc=netloc))
    user, password = parts.username, parts.password
    if user is None and os.environ.get("MLFLOW_TRACKING_USERNAME"):
        user, password = os.environ["MLFLOW_TRACKING_USERNAME"], os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
    if user is not None:
        pair = f"{unquote(user)}:{unquote(password or '')}".encode()
        return bare, {"Authorization": "Basic " + base64.b64encode(pair).decode()}
    if token := os.environ.get("MLFLOW_TRACKING_TOKEN"):
        return bare, {"Authorization": f"Bearer {token}"}
    return bare, {}
