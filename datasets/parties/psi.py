"""ECDH private set intersection on Curve25519 (X25519), the protocol of FATE and SecretFlow.

Each ID is hashed to a Curve25519 u-coordinate, ``H(id) = SHA-256(domain, type, id)``,
and each side blinds points with its own secret scalar by X25519 (RFC 7748, through
pyca/cryptography, which calls OpenSSL). X25519 scalar multiplication commutes, so
``X(a, X(b, H(x))) = X(b, X(a, H(x)))``, while one blinded value says nothing about the
ID behind it (decisional Diffie-Hellman). The client (the label holder) learns which of
its IDs the server (another party) holds; the server learns only how many IDs the
client sent; each learns the other's set size:

1. client -> server: ``U_i = X(a, H(c_i))`` for its IDs, in its order (32 bytes each);
2. server -> client: ``W_j = X(b, H(s_j))`` for its IDs, in a fresh random order (32 bytes
   each; computed while the client computes ``U``), and ``V_i = tag(X(b, U_i))`` in the
   order of ``U`` (the first ``t`` bytes of the doubly blinded point, ``t`` chosen from the
   set sizes so that a false match has probability below 2^-40);
3. the client computes ``tag(X(a, W_j))`` for every ``j``; ``c_i`` is in the intersection
   exactly when ``V_i`` is among them.

Every message is typed data: a 16-byte header (magic, kind, width, count) and ``count``
fixed-width values, parsed with checked sizes, never code or a pickle
(:func:`pack`, :func:`unpack`). Semi-honest security: a party that follows the protocol
learns nothing else; one that deviates (sends chosen points) can test IDs of its
choosing, as in every DH-PSI.

Why not ``openmined-psi`` (ECDH on P-256 with a compressed Golomb set, pip
``openmined.psi``)? It installs and works here, but one P-256 operation costs about
100 us against X25519's 35 us, so aligning 1M IDs per party takes minutes on 2 cores
(docs/performance.md); X25519 is the curve FATE and SecretFlow use for the same
protocol, and pyca/cryptography is already a dependency.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

__all__ = [
    "POINT",
    "DOMAIN",
    "PsiClient",
    "PsiServer",
    "hash_ids",
    "blind",
    "tag_width",
    "pack",
    "unpack",
    "protocol_bytes",
]

POINT = 32  # bytes of an X25519 u-coordinate
DOMAIN = b"vfl/psi/x25519/v1\x00"
_HEADER = struct.Struct("<4sBBxxQ")  # magic, kind, width, (pad), count
_MAGIC = b"VPSI"
KINDS = {
    "request": 1,
    "setup": 2,
    "response": 3,
    "intersection": 4,
    "key": 5,
    "step": 6,
    "widths": 7,
}  # (the last two: the alignment's frames between processes)
#: a false match (two different IDs with one tag) has probability below 2^-FALSE_MATCH_BITS
FALSE_MATCH_BITS = 40


def hash_ids(ids: Sequence[str], id_type: str) -> bytes:
    """``H(id)`` of every ID, concatenated (32 bytes each): SHA-256 of the domain, the IDs'
    type and the ID's UTF-8 text, read as a Curve25519 u-coordinate."""
    prefix = DOMAIN + id_type.encode() + b"\x00"
    sha = hashlib.sha256
    return b"".join(sha(prefix + i.encode("utf-8")).digest() for i in ids)


def _blind_chunk(key_bytes: bytes, points: bytes) -> bytes:
    key = X25519PrivateKey.from_private_bytes(key_bytes)
    exchange, public = key.exchange, X25519PublicKey.from_public_bytes
    out = bytearray(len(points))
    zero = bytes(POINT)
    for k in range(0, len(points), POINT):
        try:
            out[k : k + POINT] = exchange(public(points[k : k + POINT]))
        except ValueError:  # a low-order point (only a deviating peer sends one): no match
            out[k : k + POINT] = zero
    return bytes(out)


def blind(key_bytes: bytes, points: bytes, workers: int = 1) -> bytes:
    """``X(key, p)`` for every 32-byte point of ``points``; ``workers`` > 1 spreads the
    points over that many processes (one party's own cores)."""
    n = len(points) // POINT
    if workers <= 1 or n < 50_000:
        return _blind_chunk(key_bytes, points)

    edges = np.linspace(0, n, workers + 1).astype(int) * POINT
    with ProcessPoolExecutor(workers) as pool:
        parts = pool.map(_blind_chunk, [key_bytes] * workers, [points[a:b] for a, b in zip(edges[:-1], edges[1:])])
        return b"".join(parts)


def tag_width(n_client: int, n_server: int) -> int:
    """Bytes of a tag: a false match among ``n_client x n_server`` pairs has probability
    below 2^-40."""
    bits = math.log2(max(n_client, 1)) + math.log2(max(n_server, 1)) + FALSE_MATCH_BITS
    return min(POINT, max(8, math.ceil(bits / 8)))


def protocol_bytes(n_client: int, n_server: int) -> int:
    """The protocol's own count: ``U`` and ``W`` at 32 bytes a point, ``V`` at the tag
    width (no headers)."""
    return POINT * (n_client + n_server) + tag_width(n_client, n_server) * n_client


def pack(kind: str, width: int, values: bytes) -> bytes:
    """One message: the header, then ``len(values) / width`` values of ``width`` bytes."""
    if width < 1 or len(values) % width:
        raise ValueError(f"{kind}: {len(values)} bytes are not values of {width} bytes")
    return _HEADER.pack(_MAGIC, KINDS[kind], width, len(values) // width) + values


def unpack(message: bytes, kind: str, width: int | None = None) -> tuple[int, bytes]:
    """(count, values) of a message of ``kind``; anything else is a ValueError."""
    if not isinstance(message, (bytes, bytearray)) or len(message) < _HEADER.size:
        raise ValueError(f"{kind}: not a message")
    magic, k, w, count = _HEADER.unpack_from(message)
    if magic != _MAGIC or k != KINDS[kind] or (width is not None and w != width):
        raise ValueError(f"{kind}: unexpected message (kind {k}, width {w})")
    if len(message) != _HEADER.size + count * w:
        raise ValueError(f"{kind}: {len(message)} bytes do not hold {count} values of {w}")
    return count, bytes(message[_HEADER.size :])


def _secret() -> bytes:
    return X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


class PsiClient:
    """The label holder's side of one PSI: it learns which of its IDs the server holds."""

    def __init__(self, ids: Sequence[str], id_type: str, workers: int = 1):
        self._key = _secret()  # fresh from OS entropy, never leaves this object
        self._points = hash_ids(ids, id_type)
        self.n = len(ids)
        self.workers = workers

    def request(self) -> bytes:
        return pack("request", POINT, blind(self._key, self._points, self.workers))

    def absorb(self, setup: bytes) -> None:
        """Blind the server's points (``X(a, W_j)``): the work a client does while the server
        answers its request."""
        n_server, W = unpack(setup, "setup", POINT)
        t = tag_width(self.n, n_server)
        mine = blind(self._key, W, self.workers)
        self._server = {mine[k : k + t] for k in range(0, len(mine), POINT)}
        self._server.discard(bytes(t))
        self._width = t

    def intersect(self, setup: bytes | None, response: bytes) -> np.ndarray:
        """Boolean mask over the client's IDs: held by the server too (``setup`` None: it was
        absorbed already)."""
        if setup is not None:
            self.absorb(setup)
        t = self._width
        count, V = unpack(response, "response", t)
        if count != self.n:
            raise ValueError(f"response: {count} tags for {self.n} requested IDs")
        server = self._server
        return np.fromiter((V[k : k + t] in server for k in range(0, len(V), t)), dtype=bool, count=self.n)


class PsiServer:
    """Another party's side of one PSI: it learns only how many IDs the client sent."""

    def __init__(self, ids: Sequence[str], id_type: str, workers: int = 1):
        self._key = _secret()
        order = np.random.default_rng(np.frombuffer(os.urandom(16), dtype=np.uint32)).permutation(
            len(ids)
        )  # W in a fresh order: no position tells a row apart
        self._points = hash_ids([ids[i] for i in order], id_type)
        self.n = len(ids)
        self.workers = workers

    def setup(self) -> bytes:
        return pack("setup", POINT, blind(self._key, self._points, self.workers))

    def respond(self, request: bytes) -> bytes:
        n_client, U = unpack(request, "request", POINT)
        t = tag_width(n_client, self.n)
        doubly = blind(self._key, U, self.workers)
        return pack("response", t, b"".join(doubly[k : k + t] for k in range(0, len(doubly), POINT)))
