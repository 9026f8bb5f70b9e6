"""``/api/alerts``: saved job searches that e-mail new matching jobs (shortlist.alerts).

``POST`` saves one (202; a confirmation e-mail goes to the address, unless a signed-in user
saves to their own address, which needs none); ``GET /confirm?token=`` is the confirmation
link; ``/unsubscribe?token=`` is RFC 8058's one-click unsubscribe — ``POST`` unsubscribes (what
a mailbox provider sends for ``List-Unsubscribe-Post``), ``GET`` only shows a page with the
button (link scanners fetch URLs, and must not unsubscribe anyone). Signed in: ``GET`` lists
one's saved searches and ``DELETE /{id}`` ends one.
"""

from __future__ import annotations

import html
import logging
import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response, status
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field

from shortlist.accounts.mail import link, relay_of
from shortlist.alerts import mail, people, store
from shortlist.api.deps import (
    ClientIPDep,
    ConnDep,
    OptionalPrincipalDep,
    RecruiterDep,
    ServicesDep,
    UserDep,
)
from shortlist.api.errors import error_responses
from shortlist.auth import Principal, Role
from shortlist.bootstrap import Services
from shortlist.errors import BadInput, Forbidden, Unauthorized
from shortlist.talent import service as talent_service

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/alerts", tags=["alerts"])
people_router = APIRouter(prefix="/api/searches", tags=["alerts"])

WEBHOOK_ROLES = frozenset({Role.company, Role.recruiter, Role.admin})
"""Who may send a saved search to their organisation's webhooks: who manages them."""
TokenParam = Annotated[str, Query(min_length=1, max_length=200)]


async def rate_limit(request: Request, client_ip: ClientIPDep) -> None:
    # A save embeds its query, as a search does: the search's limit per client.
    request.app.state.search_limiter.check(client_ip)


class AlertIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=store.MAX_QUERY)
    location: str | None = Field(None, max_length=200)
    salary_min: int | None = Field(None, ge=0, le=100_000, description="thousands a year")
    currency: str | None = Field(
        None,
        max_length=3,
        description="ISO 4217: the currency salary_min is in, converted to each listing's as"
        " job search converts it (without one: the listing's own currency)",
    )
    work_mode: Literal["remote", "hybrid", "onsite"] | None = None
    remote_country: str | None = Field(
        None, max_length=2, description="ISO 3166 alpha-2: remote jobs open to a person there"
    )
    visa: Literal["offered"] | None = Field(None, description="jobs that sponsor a visa")
    email: str = Field(min_length=3, max_length=320)
    frequency: Literal["instant", "daily", "weekly"]
    timezone: str = Field(
        "UTC",
        max_length=64,
        description="IANA time zone: a daily or weekly digest goes at `hour` there",
    )
    hour: int = Field(store.DEFAULT_HOUR, ge=0, le=23)
    webhook: bool = Field(
        False,
        description="also send its new matches to the organisation's alert.matched webhooks"
        " (a member who manages webhooks, acting for their organisation)",
    )


class AlertSaved(BaseModel):
    id: str
    status: str
    """``pending`` until the e-mailed link is followed; ``active`` for a signed-in user's own
    address."""
    confirmationSent: bool = False
    """Whether the relay took the confirmation e-mail (none is sent for an active search, nor
    without ``SHORTLIST_SMTP_RELAY_URL``: a pending search then waits for its link in vain)."""


async def _embed(services: Services, text: str) -> dict[str, list[float]]:
    """The query's vector in each model space in use (the active one's, and during a model
    migration the new one's: the saved query is then matched whichever is active)."""
    spaces = services.spaces
    vectors: dict[str, list[float]] = {}
    for in_use in (spaces.active(), spaces.building()):
        if in_use is not None:
            vector = await spaces.query_cache.embed(in_use.space, in_use.embedder, text)
            vectors[in_use.space.vector_column] = [float(x) for x in vector]
    return vectors


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(rate_limit)],
    responses={
        429: {"description": "Too many requests from this client"},
        **error_responses(401, 403),
    },
)
async def save_alert(
    body: AlertIn, services: ServicesDep, principal: OptionalPrincipalDep, conn: ConnDep
) -> AlertSaved:
    webhook_org_id = _webhook_org(principal) if body.webhook else None
    user_email = None
    if principal is not None and principal.user_id is not None:
        user_email = await store.user_email(conn, principal.user_id)
    s = services.settings
    if body.currency and body.salary_min is not None:
        # A floor in a currency without a rate could hold no listing to it (job search's rule).
        code = body.currency.strip().upper()
        if code not in (await services.rates.get(services.reads.primary)).by_code:
            raise BadInput(f"no reference rate for {code}", field="currency")
    saved = await store.save(
        services.pool,
        store.NewSearch(
            body.query,
            body.email,
            body.frequency,
            body.location,
            body.salary_min,
            body.work_mode,
            body.timezone,
            body.hour,
            body.currency,
            body.remote_country,
            body.visa,
        ),
        lambda text: _embed(services, text),
        min_score=s.alert_min_score,
        privacy_key=s.privacy_key,
        user_id=principal.user_id if principal is not None else None,
        user_email=user_email,
        webhook_org_id=webhook_org_id,
    )
    relay = relay_of(s)
    sent = False
    if saved.confirm_token is not None and relay is None:
        # The operator's to pass on (no address in it): nothing else could confirm the search.
        log.warning(
            "alerts: no mail relay (SHORTLIST_SMTP_RELAY_URL), so no confirmation e-mail; the"
            " confirmation link of saved search %s: %s",
            saved.id,
            link(s, "/api/alerts/confirm", saved.confirm_token),
        )
    if saved.confirm_token is not None and relay is not None:
        msg = mail.confirmation_message(
            sender=f"shortlist alerts <alerts@{s.mail_domain}>",
            to=body.email.strip(),
            query=" ".join(body.query.split()),
            frequency=body.frequency,
            confirm_url=link(s, "/api/alerts/confirm", saved.confirm_token),
            valid_hours=s.alert_confirm_hours,
        )
        try:
            await mail.deliver(relay, msg, envelope_from=f"alerts@{s.mail_domain}", to=body.email)
            sent = True
        except Exception as exc:
            # The type only: a relay's text may quote the address.
            log.warning("alerts: no confirmation sent (%s)", type(exc).__name__)
    return AlertSaved(id=str(saved.id), status=saved.status, confirmationSent=sent)


def _webhook_org(principal: Principal | None) -> int:
    """The organisation whose webhooks a saved search may go to: the caller's, when they may
    manage its webhooks (as ``/api/webhooks`` admits them)."""
    if principal is None:
        raise Unauthorized("a search sent to webhooks is an organisation's: sign in first")
    if not principal.roles & WEBHOOK_ROLES:
        raise Forbidden("only a member who manages webhooks may send a search to them")
    if principal.org_id is None:
        raise BadInput("this caller belongs to no organisation", field="webhook")
    return principal.org_id


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · shortlist</title>"
        '<link rel=stylesheet href="/static/app.css"></head>'
        f"<body><main class=page><h1>{html.escape(title)}</h1>{body}"
        '<p><a href="/">Search jobs</a></p></main></body></html>'
    )


@router.get("/confirm", response_class=HTMLResponse)
async def confirm_alert(token: TokenParam, services: ServicesDep) -> HTMLResponse:
    """The double opt-in link: the saved search starts (its consent time recorded)."""
    s = services.settings
    await store.confirm(
        services.pool, token, valid_for=s.alert_confirm_hours * 3600.0, privacy_key=s.privacy_key
    )
    return HTMLResponse(
        _page(
            "Your job alert is on",
            "<p>You will get new jobs matching your search by e-mail. Every e-mail has a link"
            " to stop them.</p>",
        )
    )


@router.get("/unsubscribe", response_class=HTMLResponse)
async def unsubscribe_page(token: TokenParam, services: ServicesDep) -> HTMLResponse:
    """A page with the unsubscribe button; changes nothing (a link scanner's GET must not)."""
    row = await store.describe(services.pool, token, privacy_key=services.settings.privacy_key)
    if row["status"] in ("unsubscribed", "disabled"):
        return HTMLResponse(_page("You are unsubscribed", "<p>No more e-mails for it.</p>"))
    action = html.escape(f"/api/alerts/unsubscribe?token={token}", quote=True)
    return HTMLResponse(
        _page(
            "Stop this job alert?",
            f"<p>Your alert for “{html.escape(row['query'])}”.</p>"
            f'<form method=post action="{action}">'
            '<input type=hidden name="List-Unsubscribe" value="One-Click">'
            "<button type=submit>Unsubscribe</button></form>",
        )
    )


@router.post("/unsubscribe")
async def unsubscribe(token: TokenParam, services: ServicesDep) -> Response:
    """RFC 8058 one-click unsubscribe (the body, ``List-Unsubscribe=One-Click``, is not needed):
    the search ends and what it had queued is cancelled. A second POST succeeds too."""
    await store.unsubscribe(services.pool, token, privacy_key=services.settings.privacy_key)
    return HTMLResponse(_page("You are unsubscribed", "<p>No more e-mails for this search.</p>"))


@router.get("")
async def list_alerts(principal: UserDep, conn: ConnDep) -> dict[str, Any]:
    """The signed-in user's saved searches (saved signed in, or to their address)."""
    assert principal.user_id is not None
    return {"alerts": await store.list_for_user(conn, principal.user_id)}


@router.delete("/{alert_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_alert(
    alert_id: Annotated[uuid.UUID, Path()], principal: UserDep, conn: ConnDep
) -> None:
    assert principal.user_id is not None
    await store.delete_for_user(conn, principal.user_id, alert_id)


@people_router.post(
    "/{search_id}/alert",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"description": "It existed: the same alert, active again"}},
)
async def alert_on_people_search(
    search_id: Annotated[str, Path()], principal: RecruiterDep, conn: ConnDep, response: Response
) -> dict[str, Any]:
    """Save a people search as an alert: people who enter the organisation's corpus after now
    and fit its brief (the search's own judge and floor) are e-mailed to the recruiter and sent
    to the organisation's ``alert.matched`` webhooks. No vendor is called. 201 when made, 200
    when it existed."""
    async with conn.transaction():
        record = await talent_service.visible_search(
            conn, principal, talent_service.parse_search_id(search_id)
        )
        saved = await people.save(conn, record.id, record.org_id, principal.user_id)
    response.status_code = status.HTTP_201_CREATED if saved.pop("created") else status.HTTP_200_OK
    return saved


@people_router.get("/{search_id}/alert")
async def people_search_alert(
    search_id: Annotated[str, Path()], principal: RecruiterDep, conn: ConnDep
) -> dict[str, Any]:
    """The search's alert and the people it reported since, newest first (at most 200; who
    they are and where, no contact details): ``{"alert": null, "matches": []}`` when the search
    has none. The recruiter console shows it beside the search's results."""
    async with conn.transaction():
        record = await talent_service.visible_search(
            conn, principal, talent_service.parse_search_id(search_id)
        )
        return await people.describe(conn, record.id)
