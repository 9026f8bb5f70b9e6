"""End-to-end tests: live servers, real ``shortlist`` processes, a browser, the reliability
scenarios and the benchmarks' smoke runs."""

from tests.api_fixtures import (  # noqa: F401 (fixtures)
    app,
    client,
    embed_pending,
    embedder,
    make_token,
    services,
)
from tests.job_boards import boards  # noqa: F401 (fixture)
from tests.live_server import live_server, live_server_factory  # noqa: F401 (fixtures)
from tests.oidc_provider import oidc_provider_factory  # noqa: F401 (fixtures)
