"""Schemathesis over the app's own OpenAPI schema, in-process over ASGI.

The app under test is exactly ``create_app(services)`` on a real (per-test) PostgreSQL, with the
``FakeEmbedder``. Schemathesis drives ASGI apps from one event loop of its own, so the services
(pool, listener) are opened by the app's lifespan on that loop: :class:`LifespanApp`.

Every operation is fuzzed with positive and negative data, each without a token, with a token
of the role the endpoint is for, and with that token plus path parameters naming real objects
of its owner (so the fuzzer gets past the 404 of a random id into the real code paths). Every
response must pass: no 5xx, status code documented, content type documented, body matching the
documented schema, headers documented, and negative (schema-violating) input rejected with a
4xx. Failures are collected (not raised on the first) so one run reports all of them.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import FailedHealthCheck, Unsatisfiable
from psycopg.rows import dict_row
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi import checks as oas
from starlette.types import Receive, Scope, Send

from shortlist.api.app import create_app
from shortlist.api.routes.events import HEARTBEAT_SECONDS
from shortlist.auth import Role, create_token
from shortlist.bootstrap import open_services
from shortlist.config import Settings
from tests.fakes import FakeEmbedder

# The e-mail endpoint takes the raw message (``message/rfc822``, documented as binary).
schemathesis.serializer.alias("message/rfc822", "application/octet-stream")


class LifespanApp:
    """``create_app(services)`` whose services are opened on the serving loop at start-up."""

    def __init__(self, settings: Settings, db_url: str) -> None:
        self.settings = settings
        self.db_url = db_url
        self._app: Any = None
        self._stack = contextlib.AsyncExitStack()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    services = await self._stack.enter_async_context(
                        open_services(self.settings, self.db_url, embedder=FakeEmbedder())
                    )
                    self._app = create_app(services)
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self._stack.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        assert self._app is not None, "lifespan not started"
        await self._app(scope, receive, send)


STREAM_EVENTS = 2
"""Events of a search's stream schemathesis reads before it cuts the stream: a stream sends
what its first read found at once — the seeded search's one attempt, then its ``status`` — and
then nothing until a change or its heartbeat; nothing changes while the fuzzer reads one (it
starts no workers: a search whose stub it queued again never finishes). So the stream is cut on
its status event, not after a wait (2 s of waiting per such stream were a third of the reduced
run's wall time); the checks read the status code, content type and headers, all sent before
the first event."""
STREAM_READ_TIMEOUT = 2.0
"""Seconds a stream that sends fewer events is read before schemathesis cuts it, keeping the
events sent by then (its default: 10 s)."""
assert STREAM_READ_TIMEOUT < HEARTBEAT_SECONDS


def _is_event_stream(operation: Any) -> bool:
    responses = operation.definition.raw.get("responses", {})
    return any("text/event-stream" in (r.get("content") or {}) for r in responses.values())


CHECKS = [
    schemathesis.checks.not_a_server_error,
    oas.status_code_conformance,
    oas.content_type_conformance,
    oas.response_headers_conformance,
    oas.response_schema_conformance,
    oas.negative_data_rejection,
]


@dataclass
class FuzzReport:
    cases: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    by_auth: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    accepted_by_design: int = 0
    """Negative cases whose only "violation" is ``salary_min=`` (empty = no filter)."""

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    def figures(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "operations": len(self.by_operation),
            "by_auth": dict(self.by_auth),
            "statuses": dict(sorted(self.statuses.items())),
            "server_errors": self.server_errors,
            "violations": len(self.failures),
            "blank_salary_min_accepted": self.accepted_by_design,
        }


def _blank_salary_filter(case: Any) -> bool:
    return (
        case.operation.path == "/api/jobs/search"
        and isinstance(case.query, dict)
        and case.query.get("salary_min") == ""
    )


def _role_for(path: str) -> Role:
    if path.startswith("/api/jobs"):
        return Role.company
    if path.startswith(("/api/searches", "/api/results")):
        return Role.recruiter
    return Role.admin


def _seed(db_url: str) -> tuple[dict[Role, str], dict[str, str]]:
    """Tokens per role, and real objects owned by them (a listing, a search, a failed stub)."""
    tokens: dict[Role, str] = {}
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        principals = {}
        for role in Role:
            principals[role], tokens[role] = create_token(conn, f"fuzz-{role.value}", role)
        listing = conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug, owner_token_id) VALUES ('Fuzz Co', 'Fuzz Engineer', 'Porto',"
            " 'Breaks things on purpose.', 'fuzz-co-fuzz-engineer-porto', %s) RETURNING id",
            (principals[Role.company].token_id,),
        ).fetchone()
        search = conn.execute(
            "INSERT INTO searches (owner_token_id, query, query_embedding, target_count, status,"
            " finished_at) VALUES (%s, 'fuzzing', array_fill(0.05, ARRAY[384])::vector, 15,"
            " 'complete', now()) RETURNING id",
            (principals[Role.recruiter].token_id,),
        ).fetchone()
        assert listing is not None and search is not None
        stub = conn.execute(
            "INSERT INTO search_candidates (search_id, external_id, tier, status, last_error)"
            " VALUES (%s, 'talent:fuzz.person', 'serp', 'failed_transient', 'fuzz')"
            " RETURNING id",
            (search["id"],),
        ).fetchone()
        assert stub is not None
        conn.commit()
    ids = {
        "id_or_slug": str(listing["id"]),
        "search_id": str(search["id"]),
        "candidate_id": str(stub["id"]),
    }
    return tokens, ids


def run_fuzz(
    db_url: str, *, max_examples: int, seed: int = 0, give_up_early: bool = False
) -> FuzzReport:
    """Fuzz every operation; ``max_examples`` per (operation, data mode, auth mode).

    ``give_up_early`` (the reduced run): a mode in which 50 generated inputs are rejected before
    ``max_examples`` are made is given up then (Hypothesis's ``filter_too_much`` health check),
    not after ~460 (its ``Unsatisfiable``). Negative data for an operation whose only inputs
    are the given token and unconstrained path strings cannot be made at all; those modes were
    two thirds of the reduced run's CPU time."""
    app_settings = Settings(
        database_url=db_url,
        load_sample_data=False,
        search_rate_limit=0,
        trusted_proxies="",
        backfill_min_results=1,  # searches the fuzzer starts need no backfill workers
    )
    tokens, ids = _seed(db_url)
    app = LifespanApp(app_settings, db_url)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.max_stream_events = STREAM_EVENTS
    report = FuzzReport()
    try:
        for result in schema.get_all_operations():
            operation = result.ok()
            label = f"{operation.method.upper()} {operation.path}"
            role = _role_for(operation.path)
            params = {p: ids[p] for p in ids if "{" + p + "}" in operation.path}
            modes: list[tuple[str, dict[str, str], dict[str, str] | None]] = [
                ("anonymous", {}, None),
                (role.value, {"Authorization": f"Bearer {tokens[role]}"}, None),
            ]
            if params:
                modes.append(
                    (f"{role.value}+real-ids", {"Authorization": f"Bearer {tokens[role]}"}, params)
                )
            read_timeout = STREAM_READ_TIMEOUT if _is_event_stream(operation) else None
            for auth_name, headers, path_parameters in modes:
                for mode in (
                    schemathesis.GenerationMode.POSITIVE,
                    schemathesis.GenerationMode.NEGATIVE,
                ):
                    # The token is given, not generated: negative data never "violates" it.
                    strategy = operation.as_strategy(
                        generation_mode=mode,
                        path_parameters=path_parameters,
                        headers=headers or None,
                    )
                    _run_strategy(
                        strategy,
                        headers,
                        max_examples,
                        seed,
                        report,
                        label,
                        auth_name,
                        give_up_early=give_up_early,
                        read_timeout=read_timeout,
                    )
    finally:
        schemathesis.python.asgi.shutdown_lifespans()
    return report


def _run_strategy(
    strategy: st.SearchStrategy[Any],
    headers: dict[str, str],
    max_examples: int,
    seed: int,
    report: FuzzReport,
    label: str,
    auth_name: str,
    *,
    give_up_early: bool,
    read_timeout: float | None,
) -> None:
    checked = {HealthCheck.filter_too_much} if give_up_early else set()

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: failures are collected
        suppress_health_check=[h for h in HealthCheck if h not in checked],
    )
    @given(case=strategy)
    def fuzz(case: Any) -> None:
        # Anonymous means anonymous: a generated Authorization header is dropped.
        if case.headers and not headers:
            case.headers.pop("Authorization", None)
        timeout = {} if read_timeout is None else {"timeout": read_timeout}
        response = case.call(headers=headers, **timeout)
        report.cases += 1
        report.by_operation[label] += 1
        report.by_auth[auth_name] += 1
        report.statuses[response.status_code] += 1
        checks = CHECKS
        if _blank_salary_filter(case):
            # By design (an HTML form's untouched field), reported as a documentation gap:
            # the schema says integer | null. Every other check still applies.
            checks = [c for c in CHECKS if c is not oas.negative_data_rejection]
            report.accepted_by_design += 1
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except (AssertionError, FailureGroup) as exc:
            report.failures.append(f"{label} [{auth_name}] {response.status_code}: {exc}")

    # Unsatisfiable: negative data for an operation without parameters or body;
    # FailedHealthCheck (give_up_early, the only check left on): one that filters too much.
    with contextlib.suppress(Unsatisfiable, FailedHealthCheck):
        fuzz()
