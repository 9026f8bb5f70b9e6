"""shortlist's OpenID Connect client (shortlist.accounts.oidc) against a real OpenID Provider
(oidc-provider under Node, tests/oidc_provider.py), without a shortlist server: the
authorization request, the code's redemption, the ID token's checks, the userinfo fallback and
a key rotation."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

import httpx
import pytest

from shortlist.accounts.oidc import (
    Identity,
    IdTokenInvalid,
    IssuerUnavailable,
    OidcClient,
    OidcConfig,
    PendingLogin,
)
from tests.oidc_provider import ALICE, MALLORY, OidcProvider

pytestmark = pytest.mark.slow

REDIRECT_URI = "http://127.0.0.1:9/auth/oidc/callback"
"""Registered at the provider; nothing listens there: the tests read the redirect itself."""


def started(make: Callable[..., OidcProvider], **options: object) -> OidcProvider:
    return make(**options).start(REDIRECT_URI)


def client_of(provider: OidcProvider) -> OidcClient:
    return OidcClient(
        OidcConfig(provider.advertised_issuer, provider.client_id, provider.client_secret)
    )


async def authorize(url: str, account: str) -> dict[str, str]:
    """A user agent at the provider: signs in as ``account`` → the callback's parameters."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as agent:
        answer = await agent.get(url)
        while answer.status_code in (302, 303):
            url = urllib.parse.urljoin(url, answer.headers["location"])
            answer = await agent.get(url)
        answer = await agent.post(url, data={"login": account})
        while not answer.headers["location"].startswith(REDIRECT_URI):
            url = urllib.parse.urljoin(url, answer.headers["location"])
            answer = await agent.get(url)
    location = urllib.parse.urlsplit(answer.headers["location"])
    return dict(urllib.parse.parse_qsl(location.query))


async def sign_in(client: OidcClient, account: str = ALICE.sub) -> Identity:
    login = PendingLogin.new("/", REDIRECT_URI)
    params = await authorize(await client.authorization_url(login), account)
    assert params["state"] == login.state
    return await client.redeem(login, params["code"], params.get("iss"))


@pytest.mark.parametrize("id_token_claims", [False, True], ids=["userinfo", "id_token"])
async def test_identity_from_the_id_token_or_userinfo(
    oidc_provider_factory: Callable[..., OidcProvider], id_token_claims: bool
) -> None:
    """oidc-provider keeps e-mail and name at userinfo when an access token is issued (its
    default, conformIdTokenClaims; Okta's too), or in the ID token (Google, Keycloak)."""
    provider = started(oidc_provider_factory, id_token_claims=id_token_claims)
    identity = await sign_in(client_of(provider))
    assert identity == Identity(provider.issuer, ALICE.sub, ALICE.email, True, ALICE.name)
    unverified = await sign_in(client_of(provider), MALLORY.sub)
    assert unverified == Identity(provider.issuer, MALLORY.sub, MALLORY.email, False, MALLORY.name)


async def test_a_rotated_key_is_fetched_once_a_token_names_it(
    oidc_provider_factory: Callable[..., OidcProvider],
) -> None:
    provider = started(oidc_provider_factory)
    client = client_of(provider)
    await sign_in(client)
    first = client._keys
    assert first is not None
    provider.restart()  # a new process, a new signing key under a new kid
    await sign_in(client)
    assert client._keys is not first


async def test_token_signed_by_another_key_is_refused(
    oidc_provider_factory: Callable[..., OidcProvider],
) -> None:
    provider = started(oidc_provider_factory, publish_other_key=True)
    with pytest.raises(IdTokenInvalid, match="signature"):
        await sign_in(client_of(provider))


async def test_discovery_naming_another_issuer_is_refused(
    oidc_provider_factory: Callable[..., OidcProvider],
) -> None:
    provider = started(oidc_provider_factory)
    wrong = OidcClient(
        OidcConfig(provider.issuer + "/tenant", provider.client_id, provider.client_secret)
    )
    with pytest.raises(IssuerUnavailable):
        await wrong.metadata()
    # Discovery at ISSUER/.well-known answers 404 there: not a traceback, a paused SSO.
    await wrong.warm_up()
