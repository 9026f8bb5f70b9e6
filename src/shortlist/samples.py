"""The bundled sample corpora, loaded on the first start of an empty database."""

from __future__ import annotations

import logging

from shortlist.services import Services

log = logging.getLogger(__name__)


async def load_samples_if_empty(services: Services) -> None:
    from shortlist.listings.sample import load_sample_listings
    from shortlist.talent.sample import load_sample_candidates

    async with services.pool.connection() as conn:
        n = await load_sample_listings(conn)
        if n:
            log.info("loaded %d sample job listings", n)
        m = await load_sample_candidates(conn)
        if m:
            log.info("loaded %d sample candidates", m)
