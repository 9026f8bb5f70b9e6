"""Sign-in through OpenID Connect (OpenID Connect Core 1.0, the authorization code flow).

Any standard issuer (Google, Microsoft Entra ID, Okta, Keycloak) configured by
``SHORTLIST_OIDC_ISSUER``, ``SHORTLIST_OIDC_CLIENT_ID`` and ``SHORTLIST_OIDC_CLIENT_SECRET``:

* the issuer's metadata comes from discovery (OpenID Connect Discovery 1.0,
  ``ISSUER/.well-known/openid-configuration``), its ``issuer`` the one configured (§4.3);
  kept for the life of the process once fetched;
* the browser is sent to the authorization endpoint with ``state``, ``nonce`` and a PKCE S256
  challenge (RFC 7636) — authlib's OAuth 2.0 client parts build the request and the code's
  redemption (client authentication as the issuer supports), httpx sends them;
  what the callback needs (nonce, verifier, return-to page) waits server-side in
  ``oidc_logins`` (migration 0030), found by a hash of ``state``, bound to the browser by a hash
  of a short-lived cookie's value, taken once;
* the ID token's signature is checked with the issuer's keys (its JWKS, ``jwks_uri`` of the
  discovery document; kept, fetched again when a token names a key id not among them — a key
  rotation), by joserfc, only asymmetric algorithms the issuer announces; its claims by
  authlib's ``CodeIDToken`` rules (Core §3.1.3.7): ``iss`` the issuer, ``aud`` our client id,
  ``azp``, ``exp``/``iat``, ``nonce`` the one sent, ``at_hash``;
* the e-mail address and its ``email_verified`` come from the ID token, or from the userinfo
  endpoint when the issuer keeps them there (Core §5.3, its ``sub`` the ID token's, §5.3.2);
  whether an unverified address may sign in is shortlist.accounts.signin's rule.

Every failure is an :class:`OidcFailure` with its HTTP status and code; the issuer being
unreachable is :class:`IssuerUnavailable` (503), the only one that is not the caller's doing.
No call to the issuer is made while a database connection is held (the routes take one only
around the ``oidc_logins`` statements).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.errors import ShortlistError
from shortlist.public_address import tls_client_context

log = logging.getLogger(__name__)

_SQL = load_queries("shortlist.accounts", "oidc.sql")

SCOPE = "openid email profile"
LOGIN_TTL = 600
"""Seconds a sign-in may take at the issuer before its state is worthless (Core §3.1.2.1)."""
HTTP_TIMEOUT = 10.0
"""Seconds any one call to the issuer may take."""
LEEWAY = 60
"""Seconds of clock difference with the issuer accepted on ``exp`` and ``iat``."""
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""Signatures accepted on ID tokens: never ``none``, never an HMAC keyed by the client secret."""
CALLBACK_PATH = "/auth/oidc/callback"


# --- errors ----------------------------------------------------------------------------------


class OidcFailure(ShortlistError):
    """A sign-in that cannot go on; nothing was changed. ``status`` and ``code`` are the HTTP
    answer's."""

    status = 400
    code = "oidc_failed"


class SsoNotConfigured(OidcFailure):
    status = 404
    code = "sso_not_configured"


class IssuerUnavailable(OidcFailure):
    """The issuer did not answer, or answered what is not OpenID Connect (a paused SSO)."""

    status = 503
    code = "sso_unavailable"


class LoginStateInvalid(OidcFailure):
    code = "oidc_state_invalid"


class ProviderRefused(OidcFailure):
    """The issuer sent the browser back with an error (``access_denied``: the person said no)."""

    code = "oidc_provider_error"


class CodeRefused(OidcFailure):
    """The token endpoint refused the code (expired, used, another client's, PKCE)."""

    code = "oidc_code_refused"


class IdTokenInvalid(OidcFailure):
    code = "oidc_id_token_invalid"


class EmailMissing(OidcFailure):
    """The issuer shared no e-mail address (whether it is verified is the sign-in's to judge)."""

    status = 403
    code = "oidc_email_missing"


# --- values ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OidcConfig:
    """``SHORTLIST_OIDC_ISSUER``, ``SHORTLIST_OIDC_CLIENT_ID``, ``SHORTLIST_OIDC_CLIENT_SECRET``."""

    issuer: str
    client_id: str
    client_secret: str


@dataclass(frozen=True)
class Identity:
    """Who the issuer says signed in."""

    issuer: str
    subject: str
    email: str
    email_verified: bool
    name: str | None


@dataclass(frozen=True)
class PendingLogin:
    """A sign-in started: its secrets (``state``, ``nonce``, the PKCE verifier) and the value
    of the cookie that binds it to the browser."""

    state: str
    nonce: str
    code_verifier: str
    browser: str
    return_to: str
    redirect_uri: str

    @classmethod
    def new(cls, return_to: str, redirect_uri: str) -> PendingLogin:
        return cls(
            state=secrets.token_urlsafe(32),
            nonce=secrets.token_urlsafe(32),
            # RFC 7636 §4.1: 43-128 characters of [A-Za-z0-9-._~]; 64 random bytes → 86.
            code_verifier=secrets.token_urlsafe(64),
            browser=secrets.token_urlsafe(32),
            return_to=return_to,
            redirect_uri=redirect_uri,
        )


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


def safe_return_to(value: str | None) -> str:
    """A page of this site to go to after signing in: a local absolute path, else ``/``
    (never another origin: ``//host``, ``/\\host``, a scheme)."""
    if (
        not value
        or not value.startswith("/")
        or value.startswith(("//", "/\\"))
        or any(c in value for c in "\r\n\t\\")
        or len(value) > 2000
    ):
        return "/"
    return value


# --- the login state (oidc_logins) -----------------------------------------------------------


async def save_login(conn: AsyncConn, login: PendingLogin) -> None:
    await conn.execute(
        _SQL["save_login"],
        {
            "state_hash": _digest(login.state),
            "browser_hash": _digest(login.browser),
            "nonce": login.nonce,
            "code_verifier": login.code_verifier,
            "return_to": login.return_to,
            "redirect_uri": login.redirect_uri,
            "ttl": LOGIN_TTL,
        },
    )


async def take_login(conn: AsyncConn, state: str, browser: str) -> PendingLogin | None:
    """The sign-in ``state`` names, started by this browser, not expired — taken: a second
    callback with the same ``state`` finds nothing."""
    cur = await conn.execute(
        _SQL["take_login"], {"state_hash": _digest(state), "browser_hash": _digest(browser)}
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return PendingLogin(
        state=state,
        nonce=row["nonce"],
        code_verifier=row["code_verifier"],
        browser=browser,
        return_to=row["return_to"],
        redirect_uri=row["redirect_uri"],
    )


# --- the client ------------------------------------------------------------------------------


class OidcClient:
    """One issuer, one client registration; the issuer's metadata and keys kept per process."""

    def __init__(self, config: OidcConfig, *, timeout: float = HTTP_TIMEOUT) -> None:
        self.config = config
        self.timeout = timeout
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._lock = asyncio.Lock()
        self._warm_up: asyncio.Task[None] | None = None

    @property
    def discovery_url(self) -> str:
        return self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=self.timeout, follow_redirects=False, verify=tls_client_context()
        )

    async def _get_json(self, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        try:
            async with self._http() as http:
                answer = await http.get(url, **kwargs)
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(
                f"the OpenID issuer {self.config.issuer} did not answer ({what}:"
                f" {type(exc).__name__})"
            ) from None
        try:
            answer.raise_for_status()
            body = answer.json()
        except (httpx.HTTPStatusError, ValueError):
            raise IssuerUnavailable(
                f"the OpenID issuer {self.config.issuer} answered {what} with HTTP"
                f" {answer.status_code}, not JSON"
            ) from None
        if not isinstance(body, dict):
            raise IssuerUnavailable(f"the OpenID issuer's {what} is not a JSON object")
        return body

    async def metadata(self) -> dict[str, Any]:
        """The discovery document (fetched once; a failure is not kept, the next call tries
        again)."""
        if self._metadata is not None:
            return self._metadata
        async with self._lock:
            if self._metadata is None:
                doc = await self._get_json(self.discovery_url, "discovery")
                issuer = doc.get("issuer")
                if not isinstance(issuer, str) or issuer.rstrip("/") != self.config.issuer.rstrip(
                    "/"
                ):
                    raise IssuerUnavailable(
                        f"the discovery document of {self.config.issuer} names another issuer"
                        f" ({issuer!r}): check SHORTLIST_OIDC_ISSUER"
                    )
                for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                    if not isinstance(doc.get(field), str):
                        raise IssuerUnavailable(
                            f"the discovery document of {self.config.issuer} has no {field}"
                        )
                self._metadata = doc
        return self._metadata

    def start_warm_up(self) -> None:
        """Fetch the discovery document in the background on the running loop, so a wrong or
        unreachable issuer is said at start-up, in one line; start-up never waits for it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._warm_up = loop.create_task(self.warm_up())

    async def warm_up(self) -> None:
        try:
            await self.metadata()
        except OidcFailure as exc:
            log.warning("single sign-on paused until the issuer answers: %s", exc)
        else:
            log.info("single sign-on through %s", self.config.issuer)

    async def authorization_url(self, login: PendingLogin) -> str:
        """Where to send the browser to sign in (Core §3.1.2.1, RFC 7636 S256)."""
        meta = await self.metadata()
        url: str = prepare_grant_uri(
            meta["authorization_endpoint"],
            client_id=self.config.client_id,
            response_type="code",
            redirect_uri=login.redirect_uri,
            scope=SCOPE,
            state=login.state,
            nonce=login.nonce,
            code_challenge=create_s256_code_challenge(login.code_verifier),
            code_challenge_method="S256",
        )
        return url

    def _auth_method(self, meta: dict[str, Any]) -> str:
        """client_secret_basic unless the issuer announces only client_secret_post (Core §9;
        basic is the default when it says nothing)."""
        methods = meta.get("token_endpoint_auth_methods_supported")
        if (
            isinstance(methods, list)
            and "client_secret_basic" not in methods
            and "client_secret_post" in methods
        ):
            return "client_secret_post"
        return "client_secret_basic"

    async def redeem(self, login: PendingLogin, code: str, iss: str | None) -> Identity:
        """The identity behind an authorization ``code`` the issuer sent back for ``login``."""
        meta = await self.metadata()
        if iss is not None and iss != meta["issuer"]:
            # RFC 9207 §2.4: the response came from another issuer (a mix-up).
            raise ProviderRefused("the sign-in answer came from another issuer")
        token = await self._token(meta, login, code)
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise IdTokenInvalid("the identity provider sent no ID token")
        access_token = token.get("access_token")
        claims = await self.verify_id_token(id_token, nonce=login.nonce, access_token=access_token)
        if "email" not in claims and isinstance(access_token, str):
            claims = {**claims, **await self._userinfo(access_token, claims["sub"])}
        return _identity(meta["issuer"], claims)

    async def _token(self, meta: dict[str, Any], login: PendingLogin, code: str) -> dict[str, Any]:
        """The token endpoint's answer to the code (RFC 6749 §4.1.3, the PKCE verifier, the
        client authenticated as the issuer supports)."""
        body = prepare_token_request(
            "authorization_code",
            redirect_uri=login.redirect_uri,
            code=code,
            code_verifier=login.code_verifier,
        )
        auth = ClientAuth(self.config.client_id, self.config.client_secret, self._auth_method(meta))
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded;charset=UTF-8",
        }
        url, headers, body = auth.prepare("POST", meta["token_endpoint"], headers, body)
        try:
            async with self._http() as http:
                answer = await http.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise IssuerUnavailable(
                f"the OpenID issuer {self.config.issuer} did not answer (token:"
                f" {type(exc).__name__})"
            ) from None
        try:
            token = answer.json()
        except ValueError:
            token = None
        if not isinstance(token, dict) or answer.status_code >= 500:
            raise IssuerUnavailable(
                f"the OpenID issuer {self.config.issuer} answered the token request with HTTP"
                f" {answer.status_code}"
            )
        if "error" in token or answer.status_code != 200:
            # RFC 6749 §5.2: invalid_grant for a code expired, used, or not issued for this
            # redirect URI and verifier.
            refused = error_code_text(token.get("error"))
            raise CodeRefused(
                f"the identity provider refused the sign-in code ({refused}): start again"
            )
        return token

    async def verify_id_token(
        self, id_token: str, *, nonce: str, access_token: Any = None, now: int | None = None
    ) -> dict[str, Any]:
        """The ID token's claims, after its signature and claims are checked (module doc)."""
        meta = await self.metadata()
        announced = meta.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = [a for a in announced if a in ASYMMETRIC_ALGORITHMS]
        try:
            try:
                decoded = jwt.decode(id_token, await self._key_set(), algorithms=algorithms)
            except InvalidKeyIdError:
                decoded = jwt.decode(
                    id_token, await self._key_set(refresh=True), algorithms=algorithms
                )
            params: dict[str, Any] = {"nonce": nonce, "client_id": self.config.client_id}
            if isinstance(access_token, str):
                params["access_token"] = access_token
            checked = CodeIDToken(
                decoded.claims,
                decoded.header,
                {
                    "iss": {"essential": True, "value": meta["issuer"]},
                    "aud": {"essential": True, "value": self.config.client_id},
                    "sub": {"essential": True},
                    "nonce": {"essential": True},
                },
                params,
            )
            checked.validate(now=now, leeway=LEEWAY)
        except JoseError as exc:
            raise IdTokenInvalid(f"the ID token is not valid: {_jose_reason(exc)}") from None
        except (ValueError, TypeError, KeyError):
            raise IdTokenInvalid("the ID token is not valid: malformed") from None
        return dict(checked)

    async def _key_set(self, *, refresh: bool = False) -> KeySet:
        """The issuer's signing keys; fetched again on ``refresh``: a token named a key id we do
        not have (the issuer rotated its keys). Not throttled: ID tokens come only from the
        token endpoint, never from the browser, so nobody else can make us fetch."""
        if self._keys is not None and not refresh:
            return self._keys
        meta = await self.metadata()
        jwks = await self._get_json(meta["jwks_uri"], "JWKS")
        try:
            keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise IssuerUnavailable("the OpenID issuer's JWKS cannot be read") from None
        self._keys = keys
        return keys

    async def _userinfo(self, access_token: str, subject: str) -> dict[str, Any]:
        meta = await self.metadata()
        endpoint = meta.get("userinfo_endpoint")
        if not isinstance(endpoint, str):
            return {}
        info = await self._get_json(
            endpoint, "userinfo", headers={"Authorization": f"Bearer {access_token}"}
        )
        if info.get("sub") != subject:
            # Core §5.3.2: the userinfo of another person must not be used.
            raise IdTokenInvalid("the userinfo answer is about another subject")
        return {k: info[k] for k in ("email", "email_verified", "name") if k in info}


def _identity(issuer: str, claims: dict[str, Any]) -> Identity:
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise EmailMissing(
            "the identity provider shared no e-mail address (the 'email' scope is needed)"
        )
    verified = claims.get("email_verified")
    name = claims.get("name")
    return Identity(
        issuer=issuer,
        subject=str(claims["sub"]),
        email=email.strip(),
        # Some issuers send the boolean as a string (Amazon Cognito, older Okta).
        email_verified=verified is True or verified == "true",
        name=name.strip()[:200] or None if isinstance(name, str) else None,
    )


def error_code_text(value: object) -> str:
    """An error code the issuer sent, safe to echo: letters, digits and ``_`` only, short."""
    text = "".join(c for c in str(value) if c.isalnum() or c == "_")[:64]
    return text or "error"


def _jose_reason(exc: JoseError) -> str:
    claim = getattr(exc, "claim", None)
    if claim:
        return f"{exc.error} ({error_code_text(claim)})"
    return str(exc.error)
