"""Trust, second pass (issue 36), against the real database and the HTTP API."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from tests.backfill_support import MakeToken, auth


async def sql(services: Services, query: str, *params: Any) -> list[dict[str, Any]]:
    async with services.pool.connection() as conn:
        cur = await conn.execute(query, params)
        rows = await cur.fetchall() if cur.description else []
        await conn.commit()
        return rows


# --- point 15: /status ----------------------------------------------------------------------


@pytest.mark.usefixtures("cli_env")
async def test_status_shows_source_specs_without_credentials(
    client: httpx.AsyncClient, services: Services, make_token: MakeToken
) -> None:
    admin = await make_token("ops", Role.admin)
    await sql(
        services,
        "INSERT INTO job_sources (spec, kind) VALUES (%s, 'careers')",
        "https://crawluser7:s3cret@careers.example/jobs?token=t0k",
    )
    for headers in ({}, auth(admin)):
        page = (await client.get("/status", headers=headers)).text
        assert "careers.example/jobs" in page
        assert "s3cret" not in page and "t0k" not in page and "crawluser7" not in page
