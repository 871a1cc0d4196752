"""The parties agree on one intersection and one row order that reveals no ID value.

The label holder (party 1) runs one PSI (:mod:`.psi`) with every other party m and
learns ``I_m``, which of its IDs party m holds. The intersection is ``I = I_2 & ... &
I_M``. The label holder then draws a fresh joint key ``k`` (OS entropy; derived from
the run's seed in a replayable simulation) and sends every party ``k`` and the sorted
tags ``HMAC-SHA256(k, id)[:16]`` of ``I``; each party keeps the rows whose ID's tag is
listed, in the tags' order. That order is a fresh pseudo-random permutation: it follows
neither the IDs' values nor any party's file order.

Who learns what (semi-honest parties; docs/own-data.md):

- the label holder: for every party m, which of its own IDs party m holds (``I_m``),
  and the size of party m's file;
- every other party: how many IDs the label holder has, and which of its own IDs are in
  the final intersection (the rows it trains on), hence its size;
- nobody learns an ID the others hold outside the intersection.

Each call works on messages (bytes) only, so that the same steps run in each party's
own process once the parties are services.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass, field

import numpy as np

from vfl.core.errors import DataError

from .psi import _HEADER, POINT, PsiClient, PsiServer, pack, protocol_bytes, tag_width, unpack

__all__ = [
    "Alignment",
    "LocalPeer",
    "align",
    "align_with",
    "agreed_order",
    "check_types",
    "keep",
    "order_key",
    "TAG",
    "PROTOCOL",
]

#: bytes of an intersection tag (HMAC-SHA256 truncated): collisions have probability n^2 2^-128
TAG = 16
PROTOCOL = (
    "ECDH PSI on Curve25519 (X25519, RFC 7748, via pyca/cryptography), the label "
    "holder as client of every other party; the intersection agreed by HMAC-SHA256 "
    "tags under a fresh joint key"
)


@dataclass
class Alignment:
    """The agreed rows: ``rows[m]`` indexes party m+1's part, in the agreed order."""

    rows: list
    size: int
    #: per party (unit m = party m+1): messages and bytes sent and received
    sent_messages: np.ndarray
    sent_bytes: np.ndarray
    received_messages: np.ndarray
    received_bytes: np.ndarray
    record: dict = field(default_factory=dict)

    def traffic(self) -> dict:
        return {
            k: getattr(self, k).astype(int).tolist()
            for k in ("sent_messages", "sent_bytes", "received_messages", "received_bytes")
        }


def order_key(seed: int | None) -> bytes:
    """The joint key: 32 bytes of OS entropy, or (a replayable simulation) derived from
    ``seed``, so that the run replays bit for bit."""
    if seed is None:
        return os.urandom(32)
    return hashlib.sha256(b"vfl/alignment-key/" + str(int(seed)).encode()).digest()


def _tags(key: bytes, ids) -> list[bytes]:
    digest = hmac.digest
    return [digest(key, i.encode("utf-8"), "sha256")[:TAG] for i in ids]


def agreed_order(key: bytes, ids) -> np.ndarray:
    """The positions of ``ids`` in the agreed order (sorted by their tags under ``key``)."""
    tags = _tags(key, ids)
    return np.array(sorted(range(len(tags)), key=tags.__getitem__), dtype=np.int64)


def keep(who: str, key_message: bytes, tag_message: bytes, ids) -> np.ndarray:
    """A party's side of the agreement: its rows, in the order of the listed tags."""
    _, key = unpack(key_message, "key", 32)
    count, listed = unpack(tag_message, "intersection", TAG)
    at = {t: r for r, t in enumerate(_tags(key, ids))}
    rows = [at.get(listed[k : k + TAG], -1) for k in range(0, len(listed), TAG)]
    if -1 in rows:
        raise DataError(
            f"{who}: the label holder lists {rows.count(-1)} ID(s) this party does "
            "not hold: the alignment failed (were the files changed while it ran?)"
        )
    return np.asarray(rows, dtype=np.int64)


class LocalPeer:
    """Party m's side of the alignment in this process (:func:`align`); a backend's peer
    (a party service, a Dask actor) has the same three calls and carries the messages."""

    def __init__(self, who: str, ids, id_type: str, workers: int = 1):
        self.who, self.id_type, self.ids = who, id_type, ids
        self.server = PsiServer(ids, id_type, workers)

    def psi(self, request: bytes) -> tuple[bytes, bytes]:
        """(setup, response): the server's two messages for the client's request."""
        return self.server.setup(), self.server.respond(request)

    def keep(self, key_message: bytes, tag_message: bytes):
        """The party's rows in the agreed order (a remote peer keeps them where it is)."""
        return keep(self.who, key_message, tag_message, self.ids)


def align(
    parties, *, min_rows: int = 1, seed: int | None = None, part: str = "training", workers: int = 1
) -> Alignment:
    """Align ``parties``: a list of (who, ids, id_type), party 1 (the label holder) first.

    Raises one :class:`DataError` naming the party for IDs of different types, an empty
    intersection with the label holder, or fewer than ``min_rows`` aligned rows.
    """
    who1, ids1, type1 = parties[0]
    peers = [LocalPeer(who, ids, kind, workers) for who, ids, kind in parties[1:]]
    return align_with(parties[0], peers, min_rows=min_rows, seed=seed, part=part, workers=workers)


def check_types(label_who: str, label_type: str, peers, part: str = "training") -> None:
    """IDs of one type in every party, or one line naming the first party that differs."""
    for peer in peers:
        if peer.id_type != label_type:
            raise DataError(
                f"{peer.who}: its {part} IDs are {peer.id_type}s but party 1's are "
                f"{label_type}s: give every party IDs of one type "
                "(data.alignment.id_type)"
            )


def align_with(
    label, peers, *, min_rows: int = 1, seed: int | None = None, part: str = "training", workers: int = 1, own=None
) -> Alignment:
    """The label holder's side: ``label`` = (who, ids, id_type) of party 1, ``peers`` every
    other party's side (:class:`LocalPeer`, or a backend's, which carries the messages to
    the party's own process). ``own``: party 1's own remote side (a party service of the
    label holder's organisation), told the agreed order too, outside the PSI's count.
    The messages and bytes counted are the protocol's, wherever the peers run."""
    who1, ids1, type1 = label
    m = len(peers) + 1
    check_types(who1, type1, peers, part)
    sent_m, sent_b = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    recv_m, recv_b = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)

    def send(src: int, dst: int, message: bytes) -> bytes:
        sent_m[src] += 1
        sent_b[src] += len(message)
        recv_m[dst] += 1
        recv_b[dst] += len(message)
        return message

    inside = np.ones(len(ids1), dtype=bool)
    pairs, own_bytes = [], 0
    for k, peer in enumerate(peers, start=1):
        client = PsiClient(ids1, type1, workers)
        request = send(0, k, client.request())
        setup, response = peer.psi(request)
        send(k, 0, setup)
        send(k, 0, response)
        held = client.intersect(setup, response)
        n_server = unpack(setup, "setup", POINT)[0]
        found = int(held.sum())
        own_bytes += protocol_bytes(len(ids1), n_server)
        if found == 0:
            raise DataError(
                f"{peer.who}: its {part} file shares no ID with party 1 ({who1}, the label holder): nothing to align"
            )
        pairs.append(
            {
                "party": k + 1,
                "client_ids": len(ids1),
                "server_ids": n_server,
                "held_by_both": found,
                "tag_bytes": tag_width(len(ids1), n_server),
            }
        )
        inside &= held
    size = int(inside.sum())
    if size < min_rows:
        smallest = min(pairs, key=lambda p: p["held_by_both"])
        who = peers[smallest["party"] - 2].who
        raise DataError(
            f"{who}: the {part} files of the {m} parties share {size} ID(s), "
            f"below data.alignment.min_rows = {min_rows} ({who} shares "
            f"{smallest['held_by_both']} with the label holder)"
        )
    key = order_key(seed)
    mine = np.flatnonzero(inside)
    order = agreed_order(key, [ids1[i] for i in mine])
    tags = _tags(key, [ids1[i] for i in mine[order]])
    rows = [mine[order]]
    key_message = pack("key", 32, key)
    tag_message = pack("intersection", TAG, b"".join(tags))
    if own is not None:
        own.keep(key_message, tag_message)
    for k, peer in enumerate(peers, start=1):
        rows.append(peer.keep(send(0, k, key_message), send(0, k, tag_message)))
    record = {
        "part": part,
        "protocol": PROTOCOL,
        "point_bytes": POINT,
        "tag_bytes": TAG,
        "intersection": size,
        "pairs": pairs,
        "order": "sorted by HMAC-SHA256 tags under the joint key, "
        + ("derived from the run's seed (a replayable simulation)" if seed is not None else "drawn from OS entropy"),
        "messages": int(sent_m.sum()),
        "bytes": int(sent_b.sum()),
        "psi_protocol_bytes": own_bytes,
        "agreement_bytes": int(sent_b.sum()) - sum(int(x) for x in _psi_bytes(sent_b, pairs)),
    }
    return Alignment(
        rows=rows,
        size=size,
        sent_messages=sent_m,
        sent_bytes=sent_b,
        received_messages=recv_m,
        received_bytes=recv_b,
        record=record,
    )


def _psi_bytes(sent_b, pairs):
    """The PSI messages' bytes (headers included), pair by pair: what is not the agreement."""
    for p in pairs:
        yield (POINT * (p["client_ids"] + p["server_ids"]) + p["tag_bytes"] * p["client_ids"] + 3 * _HEADER.size)
