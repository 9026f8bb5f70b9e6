"""A transaction acting for one organisation: PostgreSQL's row-level security (migration 0029)
then shows and lets it change only that organisation's rows, whatever a statement's own filter
says (or forgets).

``act_for_org`` sets ``shortlist.org_id`` for the current transaction (``set_config(…, true)``:
gone at commit or rollback, so a pooled connection carries nothing to its next borrower) and,
when the connected role bypasses row security (a superuser: the embedded default), takes the
role ``shortlist_tenant``, which does not, for the rest of the transaction.

Paths that act for every organisation say so: workers claim queue items across organisations
and act for each item's organisation while they write for it; a site admin acts for all.
Requests act for their caller's (shortlist.accounts.scope).
"""

from __future__ import annotations

from shortlist.db.types import AsyncConn

_ACT_FOR = """
SELECT set_config('shortlist.org_id', %(org)s, true),
       (SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles AS r WHERE r.rolname = current_user)
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shortlist_tenant') AS switch
"""


async def act_for_org(conn: AsyncConn, org_id: int | None) -> None:
    """This transaction acts for ``org_id`` (None: for every organisation). Call inside a
    transaction."""
    cur = await conn.execute(_ACT_FOR, {"org": "all" if org_id is None else str(org_id)})
    row = await cur.fetchone()
    if org_id is not None and row is not None and row["switch"]:
        await conn.execute("SET LOCAL ROLE shortlist_tenant")
