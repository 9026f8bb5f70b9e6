"""The first owner on a fresh instance: ``shortlist serve`` prints a set-up link while no person
administers the instance (each start a new one; the previous stops working; the demo accounts
do not count); the page it opens (``/setup``) creates the first site admin, owning a new
organisation."""

from __future__ import annotations

from shortlist.accounts.mail import setup_link
from shortlist.accounts.secrets import digest, new_secret
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool

QUERIES = load_queries("shortlist.accounts")


async def setup_link_if_nobody(pool: AsyncPool, settings: Settings) -> str | None:
    """A set-up link while no person administers the instance; None otherwise."""
    token = new_secret()
    async with pool.connection() as conn:
        cur = await conn.execute(QUERIES["put_setup_link"], {"token_hash": digest(token)})
        made = await cur.fetchone()
        await conn.commit()
    return setup_link(settings, token) if made is not None else None
