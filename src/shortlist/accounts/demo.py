"""Demo accounts, made by the sample loader with the sample corpora: two organisations, a
recruiting team of two (who see each other's searches and marks) and an employer, each person
with a random password that is shown once, in the log of the start that made them.

Made only while no person has an account yet (the first start of an empty database) and
``SHORTLIST_DEMO_ACCOUNTS`` is on (``make serve``, the local demo; off otherwise); none of them
is a site admin, so the set-up link for the first owner is still printed
(shortlist.accounts.setup).
"""

from __future__ import annotations

from dataclasses import dataclass

from shortlist.accounts import store
from shortlist.accounts.passwords import hash_password
from shortlist.accounts.secrets import new_secret
from shortlist.auth import OrgKind, OrgRole
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn

QUERIES = load_queries("shortlist.accounts")


@dataclass(frozen=True)
class DemoAccount:
    email: str
    organisation: str
    kind: OrgKind
    role: OrgRole


# A one-label domain (the sign-in form's type=email accepts it, WHATWG): no real mailbox, and
# not shaped like an address to the log's redactor (shortlist.redact), so the sign-in shows.
DEMO_ACCOUNTS = (
    DemoAccount("rita@northwind-demo", "Northwind Talent", OrgKind.recruiting, OrgRole.owner),
    DemoAccount("bo@northwind-demo", "Northwind Talent", OrgKind.recruiting, OrgRole.recruiter),
    DemoAccount("erin@acme-demo", "Acme Robotics", OrgKind.employer, OrgRole.employer),
)


@dataclass(frozen=True)
class DemoSignIn:
    account: DemoAccount
    password: str


async def load_demo_accounts(conn: AsyncConn) -> list[DemoSignIn]:
    """The demo people, made in one transaction while nobody has an account; their sign-ins
    (empty: made before, or someone has an account)."""
    async with conn.transaction():
        cur = await conn.execute(QUERIES["anybody"])
        if await cur.fetchone() is not None:
            return []
        made: list[DemoSignIn] = []
        orgs: dict[str, int] = {}
        for account in DEMO_ACCOUNTS:
            if account.organisation not in orgs:
                org = await store.create_org(conn, account.organisation, account.kind)
                orgs[account.organisation] = org.id
            password = new_secret()[:24]
            user = await store.create_user(
                conn,
                account.email,
                name=account.email.partition("@")[0].title(),
                password_hash=await hash_password(password),
                verified=True,
            )
            await store.add_member(conn, user.id, orgs[account.organisation], account.role)
            made.append(DemoSignIn(account, password))
    return made
