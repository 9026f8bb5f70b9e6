"""Integration tests: real PostgreSQL (a database per test, from ``tests/conftest.py``), the
app in-process over ASGI, the simulator and fake providers on loopback."""

from tests.api_fixtures import (  # noqa: F401 (fixtures)
    app,
    client,
    embed_pending,
    embedder,
    make_token,
    services,
)
from tests.job_boards import boards  # noqa: F401 (fixture)
