"""A request's transaction acting for its caller's organisation (row-level security, migration
0029; the mechanism is shortlist.db.tenant's)."""

from __future__ import annotations

from shortlist.auth import Principal
from shortlist.db.tenant import act_for_org
from shortlist.db.types import AsyncConn

__all__ = ["act_for", "act_for_org"]


async def act_for(conn: AsyncConn, principal: Principal) -> None:
    """This transaction acts for the principal's organisation (a site admin: for all)."""
    # Someone of no organisation acts for none (0: no row is any organisation's 0).
    await act_for_org(conn, None if principal.is_admin else principal.org_id or 0)
