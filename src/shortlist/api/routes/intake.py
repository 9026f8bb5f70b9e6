"""``/api/intake``: a company's secret e-mail address for job posts (company token)."""

from __future__ import annotations

from fastapi import APIRouter

from shortlist.api.deps import CompanyDep, ConnDep, ServicesDep
from shortlist.auth import Principal
from shortlist.errors import Forbidden
from shortlist.listings.mail import store
from shortlist.listings.service import owner_of

router = APIRouter(prefix="/api/intake", tags=["intake"])


def _company(principal: Principal) -> str:
    if principal.company is None:
        raise Forbidden("the intake address is an employer's: use a company key or sign in")
    return principal.company


@router.get("")
async def intake_address(
    principal: CompanyDep, conn: ConnDep, services: ServicesDep
) -> dict[str, str]:
    """``{"address": "post-…@SHORTLIST_MAIL_DOMAIN"}``: mail to it becomes the company's
    listings (created on first use)."""
    intake = await store.intake_for(
        conn, _company(principal), principal.token_id, owner_of(principal)
    )
    return {"address": intake.address(services.settings.mail_domain)}


@router.post("/rotate")
async def rotate_address(
    principal: CompanyDep, conn: ConnDep, services: ServicesDep
) -> dict[str, str]:
    """A new secret address; mail to the old one is refused from now on."""
    intake = await store.rotate_intake(
        conn, _company(principal), principal.token_id, owner_of(principal)
    )
    return {"address": intake.address(services.settings.mail_domain)}
