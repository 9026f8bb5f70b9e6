"""People and organisations from the command line: ``org create``, ``user invite|list|disable``,
``intake disable|rotate`` (an operator's hand on a company's e-mail address)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from shortlist.accounts import store
from shortlist.accounts.mail import invitation_link, send_link
from shortlist.auth import OrgKind, OrgRole
from shortlist.cli.common import connect, load_settings
from shortlist.db.types import AsyncConn
from shortlist.errors import ShortlistError
from shortlist.listings.mail import store as intake_store
from shortlist.runtime import prepared_database

T = TypeVar("T")


def register(org_app: typer.Typer, user_app: typer.Typer, intake_app: typer.Typer) -> None:
    org_app.command("create")(org_create)
    org_app.command("domain")(org_domain)
    user_app.command("invite")(user_invite)
    user_app.command("list")(user_list)
    user_app.command("disable")(user_disable)
    user_app.command("sign-out")(user_sign_out)
    intake_app.command("disable")(intake_disable)
    intake_app.command("rotate")(intake_rotate)


def _run(work: Callable[[AsyncConn], Awaitable[T]]) -> T:
    """``work`` in one transaction on the configured database; a domain error is one line on
    stderr and exit status 1."""
    settings = load_settings()

    async def run(url: str) -> T:
        async with await connect(url) as conn:
            result = await work(conn)
            await conn.commit()
            return result

    with prepared_database(settings) as db:
        try:
            return asyncio.run(run(db.url))
        except ShortlistError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None


def org_create(
    name: Annotated[str, typer.Argument(help="The organisation's name")],
    kind: Annotated[
        OrgKind, typer.Option(help="employer (posts jobs) | recruiting (searches people) | both")
    ] = OrgKind.both,
) -> None:
    """Create an organisation; invite its first owner with ``shortlist user invite``."""
    org = _run(lambda conn: store.create_org(conn, name, kind))
    typer.echo(f"created organisation #{org.id} {org.name!r} ({org.kind.value})")


def org_domain(
    org: Annotated[str, typer.Argument(help="The organisation's name")],
    domain: Annotated[str, typer.Argument(help="An e-mail domain, e.g. example.com")],
    role: Annotated[OrgRole, typer.Option(help="The role its people join with")] = (
        OrgRole.reviewer
    ),
    remove: Annotated[bool, typer.Option("--remove", help="Stop admitting the domain")] = False,
) -> None:
    """People whose verified address is at DOMAIN join ORG on first single sign-on."""

    async def work(conn: AsyncConn) -> None:
        found = await store.org_by_name(conn, org)
        if remove:
            await store.remove_domain(conn, found.id, domain)
        else:
            await store.add_domain(conn, found.id, domain, role)

    _run(work)
    typer.echo(f"{domain} {'removed from' if remove else 'admitted to'} {org!r}")


def user_invite(
    email: Annotated[str, typer.Argument(help="The address invited (only it may accept)")],
    org: Annotated[str, typer.Option("--org", help="The organisation's name")],
    role: Annotated[OrgRole, typer.Option(help="owner | admin | recruiter | employer | reviewer")],
) -> None:
    """Invite EMAIL into ORG with ROLE. The link is sent through SHORTLIST_SMTP_RELAY_URL; with
    no relay it is printed alone on the last line. It works once, within 72 hours."""
    settings = load_settings()

    async def work(conn: AsyncConn) -> tuple[str, str]:
        found = await store.org_by_name(conn, org)
        invitation = await store.invite(
            conn, found.id, email, role, invited_by=None, hours=settings.invitation_hours
        )
        return found.name, invitation.token

    org_name, token = _run(work)
    url = invitation_link(settings, token)
    sent = asyncio.run(
        send_link(
            settings,
            to=email.strip(),
            subject=f"You are invited to {org_name} on shortlist",
            intro=f"You are invited to join {org_name} on shortlist as {role.value}.",
            url=url,
            valid_for=f"{settings.invitation_hours} hours",
        )
    )
    typer.echo(f"invited {email.strip()} to {org_name!r} as {role.value}")
    if sent:
        typer.echo("the invitation link was sent by e-mail")
    else:
        typer.echo(url)


def user_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list")] = False,
) -> None:
    """Every person and service account, with their organisations and roles."""
    users: list[dict[str, Any]] = _run(lambda conn: store.list_users(conn))
    if as_json:
        typer.echo(json.dumps(users, indent=2))
        return
    table = Table(title="Users")
    for column in ("id", "e-mail / name", "organisations", "state"):
        table.add_column(column, overflow="fold")
    for u in users:
        orgs = ", ".join(f"{o['name']} ({o['role']})" for o in u["organisations"])
        state = "disabled" if u["disabled"] else "service account" if u["service"] else "active"
        if u["siteAdmin"]:
            state += ", site admin"
        table.add_row(str(u["id"]), u["email"] or u["name"], orgs, state)
    Console().print(table)


def user_disable(email: Annotated[str, typer.Argument(help="The person's address")]) -> None:
    """Disable a person: their sessions and API keys stop at once, open event streams end
    within seconds, their intake addresses stop taking mail. Their work is kept."""
    if not _run(lambda conn: store.disable_user(conn, email)):
        typer.echo(f"no user with the address {email.strip()!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"disabled {email.strip()}")


def intake_disable(company: Annotated[str, typer.Argument(help="The company's name")]) -> None:
    """Stop a company's intake address: mail to it is refused at RCPT from now on."""

    async def work(conn: AsyncConn) -> bool:
        cur = await conn.execute(intake_store.SQL["disable_intake"], {"company": company})
        return await cur.fetchone() is not None

    if not _run(work):
        typer.echo(f"no intake address for {company!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"the intake address of {company!r} is disabled")


def intake_rotate(company: Annotated[str, typer.Argument(help="The company's name")]) -> None:
    """Give a company a new intake address (the old one is refused); prints it on the last line."""
    settings = load_settings()
    intake = _run(lambda conn: intake_store.rotate_intake(conn, company, None))
    typer.echo(intake.address(settings.mail_domain))


def user_sign_out(
    email: Annotated[str | None, typer.Argument(help="The person's address")] = None,
    everyone: Annotated[bool, typer.Option("--all", help="Every person's sessions")] = False,
) -> None:
    """End a person's browser sessions (or everyone's, with --all); their keys stay."""
    if (email is None) == (not everyone):
        typer.echo("error: name one address, or --all", err=True)
        raise typer.Exit(2)

    async def work(conn: AsyncConn) -> int:
        cur = await conn.execute(
            "UPDATE sessions AS s SET ended_at = now() FROM users AS u"
            " WHERE u.id = s.user_id AND s.ended_at IS NULL"
            " AND (%(email)s::text IS NULL OR u.email = %(email)s::citext) RETURNING s.id",
            {"email": None if everyone else (email or "").strip()},
        )
        return len(await cur.fetchall())

    ended = _run(work)
    typer.echo(f"ended {ended} session{'s' if ended != 1 else ''}")
