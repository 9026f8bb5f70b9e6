"""Only public addresses: the check made before shortlist connects to a URL someone else chose
(a careers page to crawl, a webhook endpoint), and a connection pinned to the address checked.

* :func:`check_public` refuses anything but http(s), and any host one of whose addresses is not
  global: loopback, private, link-local (cloud metadata), multicast or reserved ranges, nor one
  of them written as IPv6 (mapped, IPv4-compatible ``::/96``, NAT64 ``64:ff9b::/96``, 6to4
  ``2002::/16``, Teredo). It returns the address it checked.
* :class:`PinnedBackend` connects each host to the address checked for it, never to a second
  answer of the name (DNS rebinding); TLS and ``Host`` still name the host.

The crawler (``shortlist.listings.sources.fetch``) and the webhook sender
(``shortlist.webhooks.sender``) use both; each has its own setting that allows private
addresses, off by default.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from shortlist.errors import PermanentError, TransientError

_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


class AddressRefused(PermanentError):
    """A URL shortlist will not connect to (its scheme, or an address that is not public)."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv4 address written as IPv6 reaches that IPv4 address: judged as it.
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and (
            any(ip in net for net in _NAT64) or ip.packed[:12] == bytes(12)  # ::/96
        ):
            embedded = ipaddress.IPv4Address(ip.packed[-4:])
        if embedded is not None:
            return is_public(str(embedded)) and not ip.is_multicast
    return ip.is_global and not ip.is_multicast


def default_port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


async def check_public(url: str, *, allow_private: bool, setting: str) -> str | None:
    """Raise :class:`AddressRefused` unless ``url`` is http(s) to public addresses only
    (``allow_private``: any address; ``setting`` names the variable that allows it);
    ``TransientError`` if its host cannot be resolved now. Returns the address checked, to
    connect to (None: any address is allowed, connect to the host by name)."""
    try:
        parts = urlsplit(url)  # "http://[" is no URL
        port = default_port(url)  # nor is "host:99999"
    except ValueError as exc:
        raise AddressRefused(f"not a valid URL: {url[:200]!r} ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused(f"only http(s) URLs are allowed, not {url[:200]!r}")
    if allow_private:
        return None
    host = parts.hostname
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TransientError(f"cannot resolve {host}: {exc}") from exc
    except ValueError as exc:  # a NUL in the name
        raise AddressRefused(f"not a valid host name: {host[:200]!r}") from exc
    for info in infos:
        address = str(info[4][0])
        # Looked up here, not bound at import: tests stand a loopback server in for a public one.
        if not is_public(address):
            raise AddressRefused(
                f"{host} resolves to {address}, not a public address (set {setting}=true to"
                " allow private networks)"
            )
    if not infos:
        raise TransientError(f"cannot resolve {host}: no address")
    return str(infos[0][4][0])


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend connecting each host to the address :func:`check_public`
    checked for it (``pins``), not to whatever the name resolves to at connect time; a host
    not pinned is not connected to at all. Only the TCP address changes: the TLS server name
    and the ``Host`` header are the URL's."""

    def __init__(self) -> None:
        self.pins: dict[tuple[str, int], str | None] = {}
        """(host, port) → the address to connect to; None: the host itself (allowed as it is)."""
        self._inner = httpcore.AnyIOBackend()

    def pin(self, url: str, address: str | None) -> None:
        """Connections to ``url``'s host and port go to ``address`` (None: to the host)."""
        parts = urlsplit(url)
        self.pins[((parts.hostname or "").lower(), default_port(url))] = address

    # httpcore's interface names the parameter ``timeout``.
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        key = (host.lower().strip("[]"), port)
        if key not in self.pins:
            raise httpcore.ConnectError(f"{host}:{port} was not checked before connecting")
        return await self._inner.connect_tcp(
            self.pins[key] or host,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("no Unix socket is connected to")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def tls_client_context() -> ssl.SSLContext:
    """The process's one TLS client context (httpx's default: the CA bundle, verification on),
    for clients made per call (each webhook delivery, crawl, OpenID Connect exchange): making
    one loads the bundle, ~30 ms of CPU, which such a client paid (a pinned one twice: its
    transport's context and its pool's)."""
    return httpx.create_ssl_context()


def pinned_client(backend: PinnedBackend, *, timeout: float, user_agent: str) -> httpx.AsyncClient:
    """An httpx client whose connections go through ``backend``, following no redirect. httpx's
    transport takes no network backend: its connection pool is replaced by httpcore's own,
    built as httpx builds it (``httpx/_transports/default.py``) plus the backend."""
    tls = tls_client_context()
    transport = httpx.AsyncHTTPTransport(verify=tls)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=tls,
        max_connections=10,
        max_keepalive_connections=10,
        keepalive_expiry=5.0,
        network_backend=backend,
    )
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        headers={"User-Agent": user_agent},
    )
