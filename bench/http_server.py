"""The product's HTTP API (``create_app``) on uvicorn, for search-http, with the embedder chosen
by the benchmark: ``local`` (the product default, all-MiniLM-L6-v2 on the CPU), ``lookup``
(query text ``"qv{i}x"`` → the i-th vector of a ``.npy`` file) or ``precomputed`` (a query's
text → its vector, computed beforehand by the model, from a ``.npz`` of ``texts`` and
``vectors``): the API and database without the model. Everything else is what
``shortlist serve --no-workers`` builds::

    python -m bench.http_server --url URL --port P --embedder lookup --queries FILE.npy

``--profile FILE`` samples the whole process with pyinstrument until it stops (SIGTERM) and
writes the text report there: where a search's time goes in the API process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any


def text_key(text: str) -> str:
    """How the benchmark and the precomputed embedder name a query's text: the text the search
    embeds (``normalise_query``), white space collapsed and case folded (the local model is
    uncased), so that the lookup finds it whatever the cache did to it."""
    return " ".join(text.split()).lower()


class PrecomputedEmbedder:
    """An ``Embedder`` that knows its texts' vectors already."""

    name = "precomputed"
    dim = 384

    def __init__(self, data: Any) -> None:
        self.vectors = {
            str(t): v for t, v in zip(data["texts"], data["vectors"].tolist(), strict=True)
        }

    async def embed(self, texts: Any) -> list[list[float]]:
        return [self.vectors[text_key(t)] for t in texts]

    def warm_up(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


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
    if embedder_name == "precomputed":
        assert queries is not None
        embedder = PrecomputedEmbedder(np.load(queries))
    elif embedder_name == "lookup":
        from bench.bench_search import LookupEmbedder

        assert queries is not None
        embedder = LookupEmbedder(np.load(queries))
    else:
        from shortlist.embedding.local import LocalEmbedder

        embedder = LocalEmbedder(int8_queries=settings.query_int8)
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
    from shortlist.heap import cap_malloc_arenas, fix_mmap_threshold

    # As the shortlist command does (shortlist.cli.main).
    cap_malloc_arenas()
    fix_mmap_threshold()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--embedder", choices=("local", "lookup", "precomputed"), default="local")
    parser.add_argument("--queries", default=None)
    parser.add_argument(
        "--profile",
        default=None,
        help="sample the server with pyinstrument until it stops; write the text report here",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.profile is None:
        asyncio.run(serve(args.url, args.port, args.embedder, args.queries))
        return
    from pyinstrument import Profiler

    # uvicorn raises the SIGTERM it caught again once it has shut down; the default action
    # would end the process before the report is written.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    profiler = Profiler(interval=0.001, async_mode="disabled")
    with profiler, contextlib.suppress(SystemExit):
        asyncio.run(serve(args.url, args.port, args.embedder, args.queries))
    with open(args.profile, "w") as out:
        out.write(profiler.output_text(unicode=True, show_all=False))


if __name__ == "__main__":
    main()
