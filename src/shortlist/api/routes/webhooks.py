"""``/api/webhooks``: the caller's organisation's webhook endpoints (shortlist.webhooks).

``POST {"url", "events"}`` adds one and answers ``{"id", "secret"}`` (201; the ``whsec_``
secret is shown this once); ``GET`` lists them with their state and deliveries, never a
secret; ``DELETE /{id}`` removes one (its deliveries with it); ``POST /{id}/rotate`` answers a
new secret, and the old one keeps signing beside it for 24 hours; ``POST /{id}/enable`` takes a
disabled endpoint back (its failure window starts afresh). Any member who may post jobs
or search people acts for their organisation (a site admin sees every organisation's); every
statement runs under the organisation's row-level security."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Response, status
from pydantic import BaseModel, ConfigDict, Field

from shortlist.accounts.scope import act_for
from shortlist.api.deps import ServicesDep, require_role
from shortlist.auth import Principal, Role
from shortlist.errors import BadInput, Conflict, NotFound, TransientError
from shortlist.public_address import AddressRefused, check_public
from shortlist.webhooks import store
from shortlist.webhooks.sender import ALLOW_PRIVATE_SETTING

router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])

MemberDep = Annotated[Principal, Depends(require_role(Role.company, Role.recruiter))]
EndpointId = Annotated[int, Path(ge=1, le=2**62)]
EventType = Annotated[str, Field(pattern=r"^(job\.published|alert\.matched)$")]


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=8,
        max_length=2000,
        pattern=r"^https?://",
        description="where events are POSTed: http(s), to a public address",
    )
    events: list[EventType] = Field(
        min_length=1, max_length=len(store.EVENT_TYPES), description="job.published, alert.matched"
    )


class WebhookSecret(BaseModel):
    id: int
    secret: str = Field(description="whsec_…: verify signatures with it (shown once)")


def _org_of(principal: Principal) -> int:
    if principal.org_id is None:
        raise BadInput("this caller belongs to no organisation")
    return principal.org_id


@router.post("", status_code=status.HTTP_201_CREATED)
async def add_webhook(
    body: WebhookIn, principal: MemberDep, services: ServicesDep, response: Response
) -> WebhookSecret:
    org = _org_of(principal)
    try:
        await check_public(
            body.url,
            allow_private=services.settings.webhook_allow_private,
            setting=ALLOW_PRIVATE_SETTING,
        )
    except AddressRefused as exc:
        raise BadInput(str(exc), field="url") from exc
    except TransientError:
        pass  # not resolvable now: checked again before every attempt
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        made = await store.create_endpoint(
            conn,
            org,
            principal.user_id,
            body.url,
            body.events,
            secret_keys=services.settings.webhook_secret_keys,
        )
    if made is None:
        raise Conflict(f"an organisation has at most {store.MAX_ENDPOINTS} webhook endpoints")
    response.headers["Location"] = f"/api/webhooks/{made.id}"
    return WebhookSecret(id=made.id, secret=made.secret)


@router.get("")
async def list_webhooks(principal: MemberDep, services: ServicesDep) -> dict[str, Any]:
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        return {"webhooks": await store.list_endpoints(conn)}


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT)
async def remove_webhook(
    webhook_id: EndpointId, principal: MemberDep, services: ServicesDep
) -> None:
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        if not await store.delete_endpoint(conn, webhook_id):
            raise NotFound("no such webhook endpoint")


@router.post("/{webhook_id}/rotate")
async def rotate_webhook_secret(
    webhook_id: EndpointId, principal: MemberDep, services: ServicesDep
) -> WebhookSecret:
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        rotated = await store.rotate_secret(
            conn, webhook_id, secret_keys=services.settings.webhook_secret_keys
        )
    if rotated is None:
        raise NotFound("no such webhook endpoint")
    return WebhookSecret(id=rotated.id, secret=rotated.secret)


@router.post("/{webhook_id}/enable")
async def enable_webhook(
    webhook_id: EndpointId, principal: MemberDep, services: ServicesDep
) -> dict[str, Any]:
    """Enable a disabled endpoint (a 410, or 5 days of failures, disabled it), or forgive an
    enabled one's failures: either way its failure window starts afresh. What the disable
    cancelled stays cancelled; new events are delivered from now on."""
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        enabled = await store.enable_endpoint(conn, webhook_id)
    if enabled is None:
        raise NotFound("no such webhook endpoint")
    return enabled
