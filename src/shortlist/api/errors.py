"""The one place that maps domain errors to HTTP responses.

Every error body has the same shape: ``{"error": {"code": ..., "message": ..., "field"?: ...}}``.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from shortlist.errors import (
    BadInput,
    Conflict,
    Forbidden,
    NotFound,
    QuotaExceeded,
    RateLimited,
    ShortlistError,
    TransientError,
    Unauthorized,
)
from shortlist.redact import redact_emails

log = logging.getLogger(__name__)

_STATUS: list[tuple[type[ShortlistError], int, str]] = [
    (BadInput, 400, "bad_input"),
    (Unauthorized, 401, "unauthorized"),
    (Forbidden, 403, "forbidden"),
    (NotFound, 404, "not_found"),
    (Conflict, 409, "conflict"),
    (RateLimited, 429, "rate_limited"),
    # A provider (the embedding API) is failing or throttling us: not the caller's fault, and
    # worth retrying — never a 500.
    (TransientError, 503, "unavailable"),
]

# Retry-After of a 503 when the cause names no better figure (seconds).
UNAVAILABLE_RETRY_AFTER = 5
MAX_MESSAGE = 2000
"""An error body's message is cut to this (a validation error may quote a whole input)."""


def error_body(code: str, message: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    # Every error body goes through the redactor: a message may quote input or a provider.
    err: dict[str, Any] = {"code": code, "message": redact_emails(message, MAX_MESSAGE)}
    if field:
        err["field"] = field
    err.update(extra)
    return {"error": err}


def _domain(request: Request, exc: Exception) -> JSONResponse:
    for cls, status, code in _STATUS:
        if isinstance(exc, cls):
            headers: dict[str, str] = {}
            if isinstance(exc, Unauthorized):
                headers["WWW-Authenticate"] = "Bearer"
            if isinstance(exc, RateLimited):
                headers["Retry-After"] = str(max(1, round(exc.retry_after)))
            if isinstance(exc, TransientError):
                log.warning("%s %s: unavailable: %s", request.method, request.url.path, exc)
                wait = exc.retry_after or UNAVAILABLE_RETRY_AFTER
                headers["Retry-After"] = str(max(1, round(wait)))
                message = "a service this request depends on is unavailable; try again shortly"
                return JSONResponse(error_body(code, message), status, headers=headers)
            field = exc.field if isinstance(exc, BadInput) else None
            if isinstance(exc, QuotaExceeded):
                body = error_body("quota_exceeded", str(exc), limit=exc.limit)
                return JSONResponse(body, status, headers=headers)
            extra = exc.extra if isinstance(exc, BadInput) else {}
            return JSONResponse(error_body(code, str(exc), field, **extra), status, headers=headers)
    log.error("unmapped domain error on %s", request.url.path, exc_info=exc)
    return JSONResponse(error_body("internal", "internal error"), 500)


def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    details = []
    for e in exc.errors():
        parts = list(e.get("loc", ()))
        # The first element says where the value came from; a field may itself be "query".
        if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
            parts = parts[1:]
        loc = ".".join(str(p) for p in parts)
        details.append({"field": loc, "message": str(e.get("msg", "invalid"))})
    first = details[0] if details else {"field": "", "message": "invalid request"}
    message = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
    body = error_body("invalid_request", message, first["field"] or None, details=details)
    return JSONResponse(body, 422)


def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        408: "request_timeout",
        413: "too_large",
        415: "unsupported_media_type",
        429: "rate_limited",
    }.get(exc.status_code, "http_error")
    return JSONResponse(
        error_body(code, str(exc.detail)), exc.status_code, headers=dict(exc.headers or {})
    )


def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The database is unreachable (restart, failover, network) or the pool had no connection
    for us in time: a 503 the client may retry, not a 500."""
    log.warning(
        "%s %s: database unavailable: %s", request.method, request.url.path, type(exc).__name__
    )
    return JSONResponse(
        error_body("unavailable", "the database is unavailable; try again shortly"),
        503,
        headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER)},
    )


def _database_refused(request: Request, exc: Exception) -> JSONResponse:
    """The database refused a value of this request (a NUL byte, an out-of-range number, a
    constraint): the transaction rolled back, nothing changed, and it is the input's fault.

    Validation should have caught it first — this is the last line of defence that keeps such
    input from being a 500. The database's message can quote the offending row (an e-mail
    address among it), so neither it nor the DETAIL is logged or returned: only the kind.
    """
    assert isinstance(exc, psycopg.Error)
    sqlstate = exc.sqlstate or ""
    log.warning(
        "%s %s: the database refused the request's data (%s %s)",
        request.method,
        request.url.path,
        type(exc).__name__,
        sqlstate,
    )
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return JSONResponse(error_body("conflict", "this already exists"), 409)
    return JSONResponse(
        error_body("bad_input", f"a value of this request cannot be stored ({type(exc).__name__})"),
        400,
    )


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse(error_body("internal", "internal error"), 500)


# --- the error contract in the OpenAPI schema ---------------------------------------------------

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "field": {"type": "string"},
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "field": {"type": "string"},
                            "message": {"type": "string"},
                        },
                    },
                },
            },
        }
    },
}
ERROR_DESCRIPTIONS = {
    400: "Bad input (the message says what and, where it can, which field)",
    401: "No token, a malformed Authorization header, or an unknown token",
    403: "A valid token of a role this endpoint is not for",
    404: "No such thing, or not one this caller may see",
    409: "Not in a state that allows this",
    413: "Request body too large",
    415: "Unsupported Content-Type",
    422: "Invalid parameters or body",
    429: "Rate limited; see Retry-After",
    503: "The database or a provider is unavailable; see Retry-After",
}
# Every /api operation may answer these (the mapping above is shared by all routes) ...
API_ERRORS = (400, 404, 409, 413, 415, 422, 429, 503)
# ... and, when it takes a token, these.
AUTH_ERRORS = (401, 403)


def _error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status in (429, 503):
        response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
    if status == 401:
        response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
    return response


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` of a route that answers ``codes`` beyond the shared ones (a sign-in that
    takes no token yet answers 401; a page of /auth/ its own)."""
    return {code: _error_response(code) for code in codes}


def document_errors(app: FastAPI) -> None:
    """Put the error contract into the OpenAPI schema: one ``Error`` body for every error, and on
    every API operation the statuses the shared mapping can answer (401/403 only where a token
    is taken, which the operation's ``security`` says). FastAPI's own 422 body
    (``HTTPValidationError``) is replaced: ``_validation`` answers with ``Error``."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas.pop("HTTPValidationError", None)
        schemas.pop("ValidationError", None)
        schemas["Error"] = ERROR_SCHEMA
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                codes: set[int] = set()
                if path.startswith("/api/"):
                    codes.update(API_ERRORS)
                    # The Bearer scheme of shortlist.api.deps marks every operation taking one.
                    if operation.get("security"):
                        codes.update(AUTH_ERRORS)
                if "422" in responses:
                    codes.add(422)
                for code in sorted(codes):
                    responses[str(code)] = _error_response(code)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def install_error_handlers(app: FastAPI) -> None:
    document_errors(app)
    app.add_exception_handler(ShortlistError, _domain)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    # OperationalError covers connection loss and psycopg_pool.PoolTimeout alike.
    app.add_exception_handler(psycopg.OperationalError, _database_unavailable)
    app.add_exception_handler(psycopg.DataError, _database_refused)
    app.add_exception_handler(psycopg.IntegrityError, _database_refused)
    app.add_exception_handler(Exception, _unexpected)
