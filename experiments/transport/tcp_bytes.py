"""What TCP carried on this process's connections to given ports, from the kernel's own count.

gRPC keeps its sockets in its C core, out of Python's reach, so the counters are asked of
the kernel: one ``SOCK_DIAG_BY_FAMILY`` dump over netlink (what ``ss -ti`` reads) of the
established TCP sockets whose remote port is one of ours, with their ``tcp_info``; a
socket counts if this process holds it (its inode among ``/proc/self/fd``). Per socket,
``tcpi_bytes_acked + tcpi_bytes_received`` (the bytes sent and acknowledged, and the bytes
received): TLS records, HTTP/2 frames and gRPC's own headers included. Linux only; elsewhere
:func:`available` is False and nothing is counted.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterable

__all__ = ["available", "carried"]

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_INET_DIAG_INFO = 2
_ESTABLISHED = 1
#: offset of ``tcpi_bytes_acked`` (then ``tcpi_bytes_received``) in ``struct tcp_info``
_TCP_INFO_BYTES = 120
_MSG = struct.Struct("=BBBB" + "HH16s16sI8s" + "IIIII")  # inet_diag_msg


def available() -> bool:
    return hasattr(socket, "AF_NETLINK") and os.path.isdir("/proc/self/fd")


def _inodes() -> set[int]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(int(link[8:-1]))
    return out


def _dump(family: int) -> list[tuple[int, int, int]]:
    """``(remote port, inode, bytes)`` of every established TCP socket of ``family``."""
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 1 << (_INET_DIAG_INFO - 1), 0, 1 << _ESTABLISHED) + bytes(
        48
    )
    msg = struct.pack("=IHHII", 16 + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0) + req
    out: list[tuple[int, int, int]] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as s:
        s.sendto(msg, (0, 0))
        while True:
            data = s.recv(1 << 16)
            at = 0
            while at + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, at)
                if kind == _NLMSG_DONE or kind == _NLMSG_ERROR:
                    return out
                body = at + 16
                fields = _MSG.unpack_from(data, body)
                dport, inode = socket.ntohs(fields[5]), fields[14]
                a = body + _MSG.size
                while a + 4 <= at + length:
                    alen, atype = struct.unpack_from("=HH", data, a)
                    if alen < 4:
                        break
                    if atype == _INET_DIAG_INFO and alen - 4 >= _TCP_INFO_BYTES + 16:
                        acked, received = struct.unpack_from("=QQ", data, a + 4 + _TCP_INFO_BYTES)
                        out.append((dport, inode, acked + received))
                    a += (alen + 3) & ~3
                at += (length + 3) & ~3
            if not data:
                return out


def carried(ports: Iterable[int]) -> dict[int, int]:
    """Per socket of this process connected to one of ``ports``: its bytes so far."""
    if not available():
        return {}
    wanted, mine = set(ports), _inodes()
    out: dict[int, int] = {}
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            for dport, inode, count in _dump(family):
                if dport in wanted and inode in mine:
                    out[inode] = count
        except OSError:
            continue
    return out
