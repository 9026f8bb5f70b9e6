"""The product's HTTP API (``create_app``) on uvicorn, for search-http, with the embedder chosen
by the benchmark: ``local`` (the product default, all-MiniLM-L6-v2 on the CPU) or ``lookup``
(query text ``"qv{i}x"`` → the i-th vector of a ``.npy`` file: the API and database without the
model). Everything else is what ``shortlist serve --no-workers`` builds::

    python -m bench.http_server --url URL --port P --embedder lookup --queries FILE.npy
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any


async def serve(url: str, port: int, embedder_name: str, queries: str | None) -> None:
    import numpy as np
    import uvicorn

    from shortlist.api.app import create_app
    from shortlist.bootstrap import open_services
    from shortlist.config import Settings

    settings = Settings(
        database_url=url,
        port=port,
        search_rate_limit=0,
        load_sample_data=False,
        talent_api_url="http://127.0.0.1:9",
        serp_api_url="http://127.0.0.1:9",
        log_level="WARNING",
    )
    embedder: Any
    if embedder_name == "lookup":
        from bench.bench_search import LookupEmbedder

        assert queries is not None
        embedder = LookupEmbedder(np.load(queries))
    else:
        from shortlist.embedding.local import LocalEmbedder

        embedder = LocalEmbedder()
        embedder.warm_up()
    async with open_services(settings, url, embedder=embedder) as services:
        app = create_app(services)
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            proxy_headers=False,
            access_log=False,
        )
        await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--embedder", choices=("local", "lookup"), default="local")
    parser.add_argument("--queries", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve(args.url, args.port, args.embedder, args.queries))


if __name__ == "__main__":
    main()
