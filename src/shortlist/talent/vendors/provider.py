"""What every external-provider call goes through: a per-provider gate, the retry wrapper and
the mapping from HTTP outcomes to the error types of :mod:`shortlist.talent.vendors.base`.

    ProviderClient.get_json(operation, url, params, time_limit, parse)
        → retry wrapper (tenacity: one retry after ``retry_delay``, only on timeout / 5xx)
            → Provider.slot()   (fail fast while paused; at most ``max_concurrency`` in flight)
                → one HTTP GET with a hard deadline → parse(JSON), or a typed ProviderError

The retry rules: one retry, 5 s later, only on a timeout or a 5xx (the talent API's discovery
hangs on ~41% of first attempts and answers on the second) — but a call the vendor may have
billed without our seeing its answer is not re-sent after a timeout (``resend_after_timeout``:
PDL's Person Search); never on a 429 — the provider is
paused for its ``Retry-After`` instead — and never on another 4xx or a malformed answer.

While a provider is paused, calls fail at once with ``ProviderPaused`` (no request is sent)
rather than queueing behind the pause: the caller — a candidate worker holding a lease — records
the candidate as ``failed_transient`` / gives it back and moves on, and nothing sits on a
lease for an unbounded ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, BeforeValidator, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_fixed,
)

from shortlist import metrics
from shortlist.config import Settings
from shortlist.embedding.openai import parse_retry_after
from shortlist.public_address import tls_client_context
from shortlist.talent.vendors import ledger
from shortlist.talent.vendors.base import (
    CallRecord,
    ProviderError,
    ProviderNotFound,
    ProviderPaused,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from shortlist.talent.vendors.limits import BALANCE_TRUST_SECONDS, RateGate

log = logging.getLogger(__name__)

E = TypeVar("E", bound=ProviderError)
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_MAX_DETAIL = 200
# Connection set-up is never what a provider is slow at; a dead host should fail fast even when
# the call itself may take a minute.
_CONNECT_TIMEOUT = 10.0
# Transport-level outcomes of one attempt, as the ``outcome`` label of EXTERNAL_CALLS.
_OUTCOMES: dict[type[ProviderError], str] = {
    ProviderTimeout: "timeout",
    ProviderUnavailable: "unavailable",
    ProviderRateLimited: "rate_limited",
    ProviderPaused: "paused",
    ProviderNotFound: "not_found",
    ProviderRejected: "rejected",
    ProviderQuotaExhausted: "quota_exhausted",
}


@dataclass(frozen=True)
class _Request:
    method: str
    url: str
    params: Mapping[str, str | int] | None
    json: Any
    headers: Mapping[str, str] | None


def provider_error(cls: type[E], provider: str, message: str, **kwargs: Any) -> E:
    """A ``ProviderError`` subclass naming the provider it came from."""
    exc = cls(f"{provider}: {message}", **kwargs)
    exc.provider = provider
    return exc


def path_segment(value: str) -> str:
    """``value`` quoted to be exactly one URL path segment (a username may hold ``/``)."""
    return quote(value, safe="")


class Provider:
    """The gate in front of one external provider, shared by every call to it in a process.

    Bounds the calls in flight (``max_concurrency``), and after a 429 refuses calls until the
    provider's ``Retry-After`` has passed. ``clock`` is monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        name: str,
        max_concurrency: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self.name = name
        self.max_concurrency = max_concurrency
        self._clock = clock
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._paused_until = 0.0
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Calls holding a slot right now."""
        return self._in_flight

    def paused_for(self) -> float:
        """Seconds until the provider may be called again (0.0: not paused)."""
        return max(0.0, self._paused_until - self._clock())

    def pause(self, seconds: float) -> None:
        """Refuse calls for ``seconds``. A shorter pause never cuts a longer one short."""
        self._paused_until = max(self._paused_until, self._clock() + max(0.0, seconds))

    def check_open(self) -> None:
        """Raise ``ProviderPaused`` (with the remaining pause as ``retry_after``) if paused."""
        remaining = self.paused_for()
        if remaining > 0:
            raise provider_error(
                ProviderPaused,
                self.name,
                f"paused after a 429 for another {remaining:.2f}s",
                retry_after=remaining,
            )

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``max_concurrency`` slots for one call; fail fast while paused."""
        self.check_open()
        async with self._semaphore:
            # A 429 may have paused the provider while this call waited for its slot.
            self.check_open()
            self._in_flight += 1
            try:
                yield
            finally:
                self._in_flight -= 1


class ProviderClient:
    """HTTP plumbing shared by the adapters: the gates, one ``httpx.AsyncClient``, the retry
    wrapper and the status mapping.

    A vendor limits each endpoint on its own (PDL "Usage Limits": "Rate limits for all of our
    API endpoints are separate"), so ``gates`` maps an operation ("search", "enrich") to the
    :class:`Provider` gate of its endpoint; an operation not in it goes through ``provider``.
    ``vendor`` names the vendor in the credit ledger and the metrics (default: the gate's name).

    Pass ``client`` to share a connection pool (it is then not closed by :meth:`aclose`), and
    ``limiter`` to share the endpoints' rate limits, 429 pauses and the vendor's balance with
    other processes. ``default_pause`` is how long a 429 without a usable ``Retry-After``
    pauses the endpoint.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        retry_delay: float,
        default_pause: float,
        client: httpx.AsyncClient | None = None,
        limiter: RateGate | None = None,
        vendor: str | None = None,
        gates: Mapping[str, Provider] | None = None,
    ) -> None:
        self.provider = provider
        self.vendor = vendor or provider.name
        self.gates = dict(gates or {})
        self.retry_delay = retry_delay
        self.default_pause = default_pause
        self.limiter = limiter
        self._balances: dict[str, tuple[int, float]] = {}
        """credit type → (remaining, when it was reported, monotonic seconds)."""
        self._owns_client = client is None
        # As many connections as slots: a call that got a slot never waits on the pool, so the
        # pool's wait is never mistaken for the provider being slow.
        slots = sum(g.max_concurrency for g in {provider, *self.gates.values()})
        self._client = client or httpx.AsyncClient(
            limits=httpx.Limits(max_connections=slots, max_keepalive_connections=slots),
            headers={"Accept": "application/json"},
            verify=tls_client_context(),
        )

    def gate_for(self, operation: str) -> Provider:
        """The gate of the endpoint ``operation`` calls."""
        return self.gates.get(operation, self.provider)

    # --- the vendor's balance (last reported; shared through the limiter when there is one) ---

    async def known_balance(self, credit_type: str) -> int | None:
        """The credits of ``credit_type`` the vendor last said were left (None: never said)."""
        if self.limiter is not None:
            return await self.limiter.balance(self.vendor, credit_type)
        known = self._balances.get(credit_type)
        if known is None or time.monotonic() - known[1] > BALANCE_TRUST_SECONDS:
            return None
        return known[0]

    async def note_balance(self, credit_type: str, remaining: int) -> None:
        self._balances[credit_type] = (remaining, time.monotonic())
        if self.limiter is not None:
            await self.limiter.record_balance(self.vendor, credit_type, remaining)

    async def note_spent(self, credit_type: str, credits: int) -> None:
        """``credits`` billed where the vendor reports no balance: the known one goes down."""
        if credit_type in self._balances:
            remaining, _ = self._balances[credit_type]
            self._balances[credit_type] = (max(remaining - credits, 0), time.monotonic())
        if self.limiter is not None:
            await self.limiter.spend_balance(self.vendor, credit_type, credits)

    @classmethod
    def for_settings(
        cls,
        vendor: str,
        settings: Settings,
        *,
        client: httpx.AsyncClient | None = None,
        gates: Mapping[str, Provider] | None = None,
        limiter: RateGate | None = None,
    ) -> Self:
        """The client of ``vendor``: its endpoints' ``gates`` (default one gate named after the
        vendor, bounded by ``provider_concurrency``) and the retry delay of ``settings``; a 429
        without a usable pause pauses for as long as a retry would wait."""
        gates = dict(gates or {})
        default = next(iter(gates.values()), None) or Provider(
            vendor, settings.provider_concurrency
        )
        return cls(
            default,
            retry_delay=settings.retry_delay,
            default_pause=settings.retry_delay,
            client=client,
            limiter=limiter,
            vendor=vendor,
            gates=gates,
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def get_json(
        self,
        operation: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        time_limit: float,
        parse: Callable[[Any], T],
    ) -> T:
        """GET ``url`` and return ``parse`` of its JSON body (see :meth:`request_json`)."""
        return await self.request_json(
            operation, "GET", url, params=params, time_limit=time_limit, parse=parse
        )

    async def request_json(
        self,
        operation: str,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        time_limit: float,
        parse: Callable[[Any], T],
        resend_after_timeout: bool = True,
    ) -> T:
        """Send one request and return ``parse`` of its JSON body, retried once on a timeout
        or a 5xx.

        ``resend_after_timeout=False`` for a call the vendor may have billed although we never
        saw its answer (a timed-out search billed per record): it is retried after a 5xx (an
        error answer, which the vendor says it does not bill) or a connection never made, but
        never re-sent once it may have reached the vendor unanswered (``sent_unanswered``: a
        read timeout, a connection lost mid-answer); the caller decides, visibly, whether to
        pay again.

        ``parse`` raises ``ProviderRejected`` for a body of the wrong shape (never retried, and
        counted as ``rejected``). Raises the ``ProviderError`` of the last attempt.
        """
        request = _Request(method, url, params, json, headers)

        def resend(exc: BaseException) -> bool:
            if not isinstance(exc, ProviderTimeout | ProviderUnavailable):
                return False
            return resend_after_timeout or not exc.sent_unanswered

        retrying = AsyncRetrying(
            stop=stop_after_attempt(2),
            wait=wait_fixed(self.retry_delay),
            retry=retry_if_exception(resend),
            before_sleep=self._log_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._attempt(operation, request, time_limit, parse)
        raise AssertionError("unreachable: tenacity returns or re-raises")  # pragma: no cover

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "%s call failed (%s); retrying in %.2fs",
            self.vendor,
            exc,
            self.retry_delay,
        )

    async def _attempt(
        self,
        operation: str,
        request: _Request,
        time_limit: float,
        parse: Callable[[Any], T],
    ) -> T:
        gate = self.gate_for(operation)
        name = self.vendor
        outcome = "error"  # anything but a ProviderError escaping is a bug
        response: httpx.Response | None = None
        try:
            async with gate.slot():
                if self.limiter is not None:
                    # The vendor's limit is per key and endpoint, not per process: every process
                    # asks the endpoint's shared gate (PostgreSQL) for a place in its window.
                    await self.limiter.acquire(gate.name)
                started = time.perf_counter()
                try:
                    response = await self._send(request, time_limit, gate)
                finally:
                    metrics.EXTERNAL_LATENCY.labels(provider=name, operation=operation).observe(
                        time.perf_counter() - started
                    )
            await self._observe(response, operation, gate)
            await self._raise_for_status(response, gate)
            result = parse(self._decode(response, gate))
        except ProviderError as exc:
            outcome = _OUTCOMES.get(type(exc), "error")
            if isinstance(exc, ProviderRateLimited) and self.limiter is not None:
                await self.limiter.pause(gate.name, exc.retry_after or self.default_pause)
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"  # the caller gave up (shutdown, the search went away)
            raise
        else:
            outcome = "ok"
            return result
        finally:
            metrics.EXTERNAL_CALLS.labels(provider=name, operation=operation, outcome=outcome).inc()
            if response is not None:
                ledger.record(
                    CallRecord(
                        provider=name,
                        kind=operation,
                        credits=self.credits_of(response, operation),
                        outcome=outcome,
                    )
                )

    async def _send(self, request: _Request, time_limit: float, gate: Provider) -> httpx.Response:
        name = gate.name
        try:
            # httpx's timeouts are per phase (connect, each read...); the outer deadline also
            # bounds a server that trickles its answer.
            async with asyncio.timeout(time_limit):
                return await self._client.request(
                    request.method,
                    request.url,
                    params=request.params,
                    json=request.json,
                    headers=request.headers,
                    timeout=httpx.Timeout(time_limit, connect=min(time_limit, _CONNECT_TIMEOUT)),
                )
        except (httpx.TimeoutException, TimeoutError) as exc:
            error = provider_error(
                ProviderTimeout, name, f"no answer within {time_limit}s ({type(exc).__name__})"
            )
            # Only a connection never made is sure not to have reached the provider.
            error.sent_unanswered = not isinstance(exc, httpx.ConnectTimeout)
            raise error from exc
        except httpx.RequestError as exc:
            # Connection refused/reset, a broken response: the provider is not there right now.
            failed = provider_error(
                ProviderUnavailable, name, f"request failed: {type(exc).__name__}: {exc}"
            )
            failed.sent_unanswered = not isinstance(exc, httpx.ConnectError)
            raise failed from exc

    # --- what adapters refine for their vendor ------------------------------------------------

    def credits_of(self, response: httpx.Response, operation: str) -> int:
        """Credits the vendor billed for this call (default: none)."""
        return 0

    async def vendor_error(self, response: httpx.Response, gate: Provider) -> ProviderError | None:
        """A vendor-specific reading of a non-2xx answer, before the generic mapping."""
        return None

    def pause_after_429(self, response: httpx.Response) -> float | None:
        """How long a 429 pauses the provider (default: its ``Retry-After``)."""
        return parse_retry_after(response.headers.get("retry-after"))

    async def _observe(self, response: httpx.Response, operation: str, gate: Provider) -> None:
        """Read the vendor's rate and balance headers (tightens the endpoint's shared limit,
        when there is one)."""
        per_window = self.rate_limit_of(response)
        if per_window is not None and self.limiter is not None:
            await self.limiter.tighten(gate.name, per_window)

    def rate_limit_of(self, response: httpx.Response) -> int | None:
        """The vendor's own limit per window, if its headers say it (default: unknown)."""
        return None

    async def _raise_for_status(self, response: httpx.Response, gate: Provider) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        name = gate.name
        detail = f"HTTP {status} from {response.request.url.path}: {response.text[:_MAX_DETAIL]}"
        special = await self.vendor_error(response, gate)
        if special is not None:
            special.provider = special.provider or name
            if isinstance(special, ProviderRateLimited) and special.retry_after:
                gate.pause(special.retry_after)
            raise special
        if status == 429:
            pause = self.pause_after_429(response)
            if pause is None:
                pause = self.default_pause
            gate.pause(pause)
            log.warning("%s rate-limited us; pausing it for %.2fs", name, pause)
            raise provider_error(ProviderRateLimited, name, detail, retry_after=pause)
        if status >= 500:
            raise provider_error(ProviderUnavailable, name, detail)
        if status == 404:
            raise provider_error(ProviderNotFound, name, detail)
        # Other 4xx, and 1xx/3xx we never asked for: the same request will fail the same way.
        raise provider_error(ProviderRejected, name, detail)

    def _decode(self, response: httpx.Response, gate: Provider) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise provider_error(
                ProviderRejected,
                gate.name,
                f"invalid JSON from {response.request.url.path}: {response.text[:_MAX_DETAIL]!r}",
            ) from exc


def parse_model(model: type[M], provider: str, what: str) -> Callable[[Any], M]:
    """A ``parse`` for :meth:`ProviderClient.get_json`: validate the body as ``model``, and
    turn a body of the wrong shape into ``ProviderRejected`` (the same call returns the same)."""

    def parse(body: Any) -> M:
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            errors = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(body)'}: {e['msg']}"
                for e in exc.errors()[:3]
            )
            raise provider_error(
                ProviderRejected, provider, f"malformed {what} response: {errors}"
            ) from exc

    return parse


def _none_as_empty(value: Any) -> Any:
    return "" if value is None else value


Text = Annotated[str, BeforeValidator(_none_as_empty)]
"""A descriptive text field: ``null`` or missing is the empty string, anything but text is
malformed."""
