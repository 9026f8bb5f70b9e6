"""The client's IP: the socket peer, unless the peer is a trusted proxy, in which case the
address the proxy put in the ONE configured header (``SHORTLIST_FORWARDED_HEADER``):
``X-Forwarded-For`` (its right-most untrusted address) or ``X-Real-IP``. A forwarded header
is believed only from a trusted proxy: anyone else could write any address into it; and only
the configured one, since a proxy that sets X-Real-IP passes a client's own X-Forwarded-For
through untouched."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from functools import lru_cache

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=32)
def parse_trusted(spec: str) -> tuple[Network, ...]:
    nets: list[Network] = []
    for part in spec.split(","):
        part = part.strip()
        if part:
            nets.append(ipaddress.ip_network(part, strict=False))
    return tuple(nets)


def parse_ip(value: str | None) -> IPAddress | None:
    if not value:
        return None
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def _trusted(ip: IPAddress, nets: Iterable[Network]) -> bool:
    return any(ip in net for net in nets)


def client_ip(
    peer: str | None,
    headers: Mapping[str, str],
    trusted_spec: str,
    forwarded_header: str = "x-forwarded-for",
) -> str:
    peer_ip = parse_ip(peer)
    nets = parse_trusted(trusted_spec)
    if peer_ip is None:
        return peer or "unknown"
    if not nets or not _trusted(peer_ip, nets):
        return str(peer_ip)
    if forwarded_header == "x-real-ip":
        real = parse_ip(headers.get("x-real-ip"))
        return str(real) if real is not None else str(peer_ip)
    forwarded = headers.get("x-forwarded-for")
    if forwarded:
        # Walk from the right: each hop appended the address it saw; stop at the first
        # address that is not one of our own proxies.
        hops = [parse_ip(h) for h in forwarded.split(",")]
        for hop in reversed(hops):
            if hop is None:
                break
            if not _trusted(hop, nets):
                return str(hop)
    return str(peer_ip)
