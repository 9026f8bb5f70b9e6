"""The ID token checks of shortlist.accounts.oidc on tokens made here (joserfc): what a real
provider will not sign — expired, for another audience, unsigned or HMAC-signed, without a
nonce. The provider-made cases are in tests/e2e/test_oidc*.py."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OctKey

from shortlist.accounts.oidc import IdTokenInvalid, OidcClient, OidcConfig

ISSUER = "https://issuer.example"
CLIENT = "shortlist"
NONCE = "n-0123456789"
KEY = ECKey.generate_key("P-256", parameters={"kid": "k1", "alg": "ES256"})


def client() -> OidcClient:
    c = OidcClient(OidcConfig(ISSUER, CLIENT, "secret"))
    # What discovery and the JWKS endpoint would have given (fetched once per process).
    c._metadata = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token",
        "jwks_uri": f"{ISSUER}/jwks",
        "id_token_signing_alg_values_supported": ["ES256", "HS256", "none"],
    }
    c._keys = KeySet([ECKey.import_key(KEY.as_dict(private=False))])
    return c


def token(**changes: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": "alice", "aud": CLIENT, "iat": now, "exp": now + 300}
    claims["nonce"] = NONCE
    claims.update(changes)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode({"alg": "ES256", "kid": "k1"}, claims, KEY)


async def test_a_good_token_passes() -> None:
    claims = await client().verify_id_token(token(), nonce=NONCE)
    assert claims["sub"] == "alice"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"exp": int(time.time()) - 120}, "expired"),
        ({"aud": "another-client"}, "aud"),
        ({"aud": ["another-client"]}, "aud"),
        ({"iss": "https://other.example"}, "iss"),
        ({"nonce": "another"}, "nonce"),
        ({"nonce": None}, "nonce"),
        ({"sub": None}, "sub"),
        ({"exp": None}, "exp"),
    ],
)
async def test_claims_are_checked(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(IdTokenInvalid, match=reason):
        await client().verify_id_token(token(**changes), nonce=NONCE)


async def test_clock_leeway_of_a_minute() -> None:
    assert await client().verify_id_token(token(exp=int(time.time()) - 30), nonce=NONCE)


async def test_hmac_and_unsigned_tokens_are_refused() -> None:
    secret = OctKey.import_key("secret" * 8)
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": "a", "aud": CLIENT, "iat": now, "exp": now + 60}
    hmac = jwt.encode({"alg": "HS256"}, {**claims, "nonce": NONCE}, secret)
    with pytest.raises(IdTokenInvalid):
        await client().verify_id_token(hmac, nonce=NONCE)
    _header, payload, _signature = token().split(".")
    none_header = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    with pytest.raises(IdTokenInvalid):
        await client().verify_id_token(f"{none_header}.{payload}.", nonce=NONCE)
    with pytest.raises(IdTokenInvalid):
        await client().verify_id_token("not a token", nonce=NONCE)
