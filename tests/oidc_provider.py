"""A real OpenID Provider on loopback for the sign-in tests: ``tests/oidc/provider.mjs``, the
certified ``oidc-provider`` package (npm, pinned by ``tests/oidc/package-lock.json``, installed
by ``make install``) under Node.

The provider's socket is bound here, on port 0, before anything starts, so its issuer URL is
known before the shortlist server that trusts it is configured, and the Node process serves on
the inherited socket (no window between choosing a port and using it). A restart (a new
process, a new signing key) keeps the socket, hence the issuer.

The issuer is ``http://localhost:PORT`` while shortlist serves on ``127.0.0.1``: two sites, as
in production, so the browser treats the return from the provider as the cross-site navigation
it is (SameSite cookies).

Use the ``oidc_provider_factory`` fixture (``pytest_plugins`` or an import in a conftest):
``provider = oidc_provider_factory(accounts=[...])`` reserves the socket; ``provider.start(
redirect_uri)`` starts Node; both are stopped at teardown.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

PROVIDER_DIR = Path(__file__).parent / "oidc"
SCRIPT = PROVIDER_DIR / "provider.mjs"
PACKAGE = PROVIDER_DIR / "node_modules" / "oidc-provider" / "package.json"
START_TIMEOUT = 60.0
"""Node imports oidc-provider in ~1 s on an idle machine, several on a busy one."""


@dataclass(frozen=True)
class Account:
    """A person the provider can sign in (its ``findAccount``)."""

    sub: str
    email: str
    email_verified: bool = True
    name: str | None = None


ALICE = Account("alice", "alice@example.com", True, "Alice Example")
MALLORY = Account("mallory", "mallory@example.com", False, "Mallory Unverified")


def require_provider() -> str:
    """The path of ``node``; skips (outside CI) or fails (in CI) when it or the package is
    missing."""
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is not installed (apt-get install nodejs npm; then make install)"
    elif not PACKAGE.is_file():
        missing = "oidc-provider is not installed in tests/oidc (make install runs npm ci)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the OpenID Provider cannot run: {missing}")
        pytest.skip(f"the OpenID Provider cannot run: {missing}")
    assert node is not None
    return node


class OidcProvider:
    """``tests/oidc/provider.mjs`` as a subprocess on a socket of its own (module docstring)."""

    def __init__(
        self,
        accounts: Sequence[Account] = (ALICE, MALLORY),
        *,
        client_id: str = "shortlist-test",
        client_secret: str | None = None,
        code_ttl: int = 60,
        id_token_claims: bool = False,
        discovery_host: str | None = None,
        publish_other_key: bool = False,
        host: str = "localhost",
    ) -> None:
        self.node = require_provider()
        self.accounts = list(accounts)
        self.client_id = client_id
        self.client_secret = client_secret or secrets.token_urlsafe(24)
        self.options: dict[str, Any] = {
            "codeTtl": code_ttl,
            "idTokenClaims": id_token_claims,
            "publishOtherKey": publish_other_key,
        }
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port: int = self.sock.getsockname()[1]
        self.issuer = f"http://{host}:{self.port}"
        """What the tokens carry as ``iss``."""
        self.advertised_issuer = self.issuer
        """What discovery says the issuer is: another host with ``discovery_host`` (a provider
        whose tokens come from another issuer than the one it claims to be)."""
        if discovery_host is not None:
            self.advertised_issuer = f"http://{discovery_host}:{self.port}"
            self.options["discoveryIssuer"] = self.advertised_issuer
        self.redirect_uris: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    @property
    def discovery_url(self) -> str:
        return f"{self.advertised_issuer}/.well-known/openid-configuration"

    def settings(self) -> dict[str, str]:
        """shortlist's settings that trust this provider (SHORTLIST_OIDC_*)."""
        return {
            "oidc_issuer": self.advertised_issuer,
            "oidc_client_id": self.client_id,
            "oidc_client_secret": self.client_secret,
        }

    def start(self, redirect_uris: str | Sequence[str]) -> OidcProvider:
        """Start Node with ``redirect_uris`` registered for the client; wait for discovery."""
        if self.process is not None:
            raise RuntimeError("the provider is already running")
        if isinstance(redirect_uris, str):
            redirect_uris = [redirect_uris]
        self.redirect_uris = list(redirect_uris)
        config = {
            "issuer": self.issuer,
            # pass_fds keeps the descriptor's number in the child.
            "listenFd": self.sock.fileno(),
            "client": {
                "id": self.client_id,
                "secret": self.client_secret,
                "redirectUris": self.redirect_uris,
            },
            "accounts": [asdict(a) for a in self.accounts],
            **{k: v for k, v in self.options.items() if v is not None},
        }
        self.process = subprocess.Popen(
            [self.node, str(SCRIPT), json.dumps(config)],
            cwd=PROVIDER_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            pass_fds=(self.sock.fileno(),),
        )
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process, lines), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                raise RuntimeError(f"the OpenID Provider did not start: {self.output[-20:]}")
            if line.startswith("ready "):
                break
        # Served on the inherited socket: discovery answers as soon as Node listens.
        answer = httpx.get(f"http://127.0.0.1:{self.port}/.well-known/openid-configuration")
        answer.raise_for_status()
        return self

    def _pump(self, process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.output.append(line.rstrip("\n"))
            lines.put(line)
        lines.put(None)

    def stop(self) -> None:
        """Stop Node (the socket stays bound: :meth:`start` again serves the same issuer)."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def restart(self) -> OidcProvider:
        """A new process on the same socket: same issuer, a new signing key (a rotation)."""
        self.stop()
        return self.start(self.redirect_uris)

    def close(self) -> None:
        self.stop()
        self.sock.close()


@pytest.fixture
def oidc_provider_factory() -> Iterator[Callable[..., OidcProvider]]:
    """``make(**kwargs)`` → an :class:`OidcProvider` with its socket reserved (not started)."""
    made: list[OidcProvider] = []

    def make(**kwargs: Any) -> OidcProvider:
        provider = OidcProvider(**kwargs)
        made.append(provider)
        return provider

    yield make
    for provider in reversed(made):
        provider.close()
