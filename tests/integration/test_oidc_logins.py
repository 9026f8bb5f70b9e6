"""The sign-ins under way (oidc_logins, migration 0030): taken once, only by the browser that
started them, only before they expire."""

from __future__ import annotations

from shortlist.accounts.oidc import PendingLogin, save_login, take_login
from shortlist.db.types import AsyncPool


async def test_a_sign_in_is_taken_once_by_its_browser(pool: AsyncPool) -> None:
    login = PendingLogin.new("/recruit", "http://127.0.0.1:8000/auth/oidc/callback")
    other = PendingLogin.new("/", "http://127.0.0.1:8000/auth/oidc/callback")
    async with pool.connection() as conn:
        await save_login(conn, login)
        await save_login(conn, other)
        assert await take_login(conn, login.state, other.browser) is None
        assert await take_login(conn, "forged", login.browser) is None
        taken = await take_login(conn, login.state, login.browser)
        assert taken == login
        assert await take_login(conn, login.state, login.browser) is None
        cur = await conn.execute("SELECT count(*) AS n FROM oidc_logins")
        assert (await cur.fetchone()) == {"n": 1}


async def test_an_expired_sign_in_is_worthless_and_cleared(pool: AsyncPool) -> None:
    old = PendingLogin.new("/", "http://127.0.0.1:8000/auth/oidc/callback")
    async with pool.connection() as conn:
        await save_login(conn, old)
        await conn.execute("UPDATE oidc_logins SET expires_at = now() - interval '1 second'")
        assert await take_login(conn, old.state, old.browser) is None
        await save_login(conn, PendingLogin.new("/", "http://127.0.0.1:8000/cb"))
        cur = await conn.execute("SELECT count(*) AS n FROM oidc_logins")
        assert (await cur.fetchone()) == {"n": 1}
