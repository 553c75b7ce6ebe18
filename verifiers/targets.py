"""What a user writes as the verifier target (one address, a list of replicas, any gRPC target) turned into the
gRPC target the client's channel dials and the number of replica addresses behind it (verifiers/client.py)."""

from __future__ import annotations

import ipaddress
import socket


class TargetError(ValueError):
    """A target string that names no usable address (bad syntax, unknown host, mixed address families)."""


def _split_hostport(entry: str) -> tuple[str, int]:
    host, sep, port = entry.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise TargetError(f"replica {entry!r} is not host:port (e.g. 10.0.0.5:50051 or [::1]:50051)")
    return host.strip("[]"), int(port)


def _addresses(host: str, port: int) -> list[str]:
    """IP literals for one host (itself when it is one; otherwise a DNS lookup)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise TargetError(f"replica host {host!r} does not resolve ({e}): check the name or give its IP") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve_target(target: str) -> tuple[str, int]:
    """(gRPC target, number of replica addresses) for what the user wrote.

    >>> resolve_target("127.0.0.1:5001, 127.0.0.1:5002")
    ('ipv4:127.0.0.1:5001,127.0.0.1:5002', 2)
    >>> resolve_target("[::1]:5001,[::1]:5002")
    ('ipv6:[::1]:5001,[::1]:5002', 2)

    A list of replicas becomes one ``ipv4:``/``ipv6:`` target (gRPC's own resolver for address lists;
    host names in a list are looked up once, here). A single target is passed through unchanged, and
    its address count is a best-effort DNS lookup (gRPC itself re-resolves a DNS name as replicas come
    and go).
    """
    if target.startswith(("ipv4:", "ipv6:", "dns:", "unix:", "unix-abstract:", "xds:")):
        return target, _count_addresses(target)
    entries = [e.strip() for e in target.split(",") if e.strip()]
    if not entries:
        raise TargetError("empty verifier target: give host:port, a comma-separated list, or dns:///name:port")
    if len(entries) == 1:
        return entries[0], _count_addresses(entries[0])
    v4, v6 = [], []
    for entry in entries:
        host, port = _split_hostport(entry)
        ips = _addresses(host, port)
        four = [ip for ip in ips if ":" not in ip]
        (v4 if four else v6).extend(f"{ip}:{port}" if four else f"[{ip}]:{port}" for ip in (four or ips))
    if v4 and v6:
        raise TargetError(
            f"replicas {target!r} mix IPv4 and IPv6 addresses: list one family, or put them all "
            "under one DNS name (dns:///name:port)"
        )
    addrs = list(dict.fromkeys(v4 or v6))
    return ("ipv4:" if v4 else "ipv6:") + ",".join(addrs), len(addrs)


def _count_addresses(target: str) -> int:
    if target.startswith(("ipv4:", "ipv6:")):
        return len(target.split(":", 1)[1].split(","))
    if target.startswith("unix"):
        return 1
    rest = target.split("///", 1)[1] if target.startswith("dns:") and "///" in target else target
    try:
        host, port = _split_hostport(rest)
        return max(1, len(_addresses(host, port)))
    except TargetError:
        return 1
