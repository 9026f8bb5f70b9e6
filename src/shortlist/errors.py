"""Domain errors. One place (``shortlist.api.errors``) maps them to HTTP status codes, and the
queue worker loop acts on the transient/permanent split."""

from __future__ import annotations


class ShortlistError(Exception):
    """Base of every error the product raises on purpose."""


class ConfigError(ShortlistError):
    """The configuration cannot work (a value out of range, two that contradict each other, a
    missing URL): the process says so in one line and exits non-zero."""


class StartupError(ShortlistError):
    """The process cannot start (a port taken, the database unreachable, a migration failing):
    it says so in one line, stops what it started and exits non-zero."""


# --- work errors: what a queue worker does next depends only on this split -----------------


class TransientError(ShortlistError):
    """Try again later: network/IO trouble, throttling, a provider outage. Work is rolled back."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(ShortlistError):
    """Retrying the same input will fail the same way: mark the item failed and move on."""


# --- request errors ------------------------------------------------------------------------


class BadInput(ShortlistError):
    """The caller sent something we cannot accept (HTTP 400/422)."""

    def __init__(
        self, message: str, *, field: str | None = None, extra: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.field = field
        self.extra = extra or {}
        """More members of the error's JSON body (e.g. ``rejected_as``)."""


class NotFound(ShortlistError):
    """No such thing, or not one the caller may see (HTTP 404)."""


class Unauthorized(ShortlistError):
    """No or unknown credentials (HTTP 401)."""


class Forbidden(ShortlistError):
    """Known caller, wrong role (HTTP 403)."""


class Conflict(ShortlistError):
    """The thing is not in a state that allows this (HTTP 409)."""


class RateLimited(ShortlistError):
    """Too many requests from this client (HTTP 429)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class QuotaExceeded(RateLimited):
    """A configured cap is reached (HTTP 429 naming it in ``limit``: the setting's name)."""

    def __init__(self, message: str, *, limit: str, retry_after: float) -> None:
        super().__init__(message, retry_after=retry_after)
        self.limit = limit
