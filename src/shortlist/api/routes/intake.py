"""``/api/intake``: a company's secret e-mail address for job posts (company token)."""

from __future__ import annotations

from fastapi import APIRouter

from shortlist.api.deps import CompanyDep, ConnDep, ServicesDep
from shortlist.auth import Principal
from shortlist.errors import Forbidden
from shortlist.listings.mail import store

router = APIRouter(prefix="/api/intake", tags=["intake"])


def _company(principal: Principal) -> str:
    if principal.company is None:
        raise Forbidden("the intake address is a company's: use a company token")
    return principal.company


@router.get("")
async def intake_address(
    principal: CompanyDep, conn: ConnDep, services: ServicesDep
) -> dict[str, str]:
    """``{"address": "post-…@SHORTLIST_MAIL_DOMAIN"}``: mail to it becomes the company's
    listings (created on first use)."""
    intake = await store.intake_for(conn, _company(principal), principal.token_id)
    return {"address": intake.address(services.settings.mail_domain)}


@router.post("/rotate")
async def rotate_address(
    principal: CompanyDep, conn: ConnDep, services: ServicesDep
) -> dict[str, str]:
    """A new secret address; mail to the old one is refused from now on."""
    intake = await store.rotate_intake(conn, _company(principal), principal.token_id)
    return {"address": intake.address(services.settings.mail_domain)}
