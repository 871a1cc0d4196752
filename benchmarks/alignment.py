"""``python -m benchmarks.alignment [--ids N ...] [--csv PATH]``: aligning party files, measured.

Two parties, each in its own process (as in a deployment: two machines' worth of
cores, here the machine's two), hold ``N`` IDs each, ``--overlap`` of them common (the
label holder's IDs ``0 .. N-1``, the other party's shifted). Each runs its side of the
alignment (:mod:`vfl.datasets.parties.psi`, :mod:`vfl.datasets.parties.align`): hashing,
its X25519 blindings, the PSI messages through a pipe, then the agreement on the
intersection's tags. Measured in the same run, so every target is a ratio or a size:

- ``seconds``: the wall from the start to both parties holding their aligned rows;
- ``op_us``: one X25519 blinding in this process (the protocol's unit of work);
- ``floor_seconds``: the protocol's own work per party, ``2 N`` blindings, at that cost
  (both parties run at once): ``over_floor`` = seconds / floor_seconds;
- ``bytes``: what the parties sent (messages with their 16-byte headers);
  ``protocol_bytes``: the protocol's own count (32 bytes a point for U and W, the tag
  width for V; 32 for the key and 16 per common ID for the agreement): ``bytes_ratio``.

Targets: 1M IDs per party in at most 60 s on 2 cores; bytes within 1.5x of
the protocol's count; 10M reported.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from vfl.datasets.parties.align import TAG, _tags, agreed_order, order_key
from vfl.datasets.parties.align import keep as _keep
from vfl.datasets.parties.psi import PsiClient, PsiServer, _blind_chunk, _secret, hash_ids, pack, protocol_bytes

TARGET_SECONDS = {1_000_000: 60.0}
TARGET_BYTES_RATIO = 1.5
COLUMNS = [
    "ids_per_party",
    "overlap",
    "intersection",
    "seconds",
    "op_us",
    "floor_seconds",
    "over_floor",
    "bytes",
    "protocol_bytes",
    "bytes_ratio",
    "bytes_per_id",
    "cores",
]


def _label_holder(conn, n: int, seed: int, out):

    ids = [str(i) for i in range(n)]
    client = PsiClient(ids, "integer")
    conn.send_bytes(client.request())
    setup = conn.recv_bytes()
    client.absorb(setup)  # while the other party answers the request
    response = conn.recv_bytes()
    held = client.intersect(None, response)
    key = order_key(seed)
    mine = [ids[i] for i in held.nonzero()[0]]
    order = agreed_order(key, mine)
    conn.send_bytes(pack("key", 32, key))
    conn.send_bytes(pack("intersection", TAG, b"".join(_tags(key, [mine[k] for k in order]))))
    out.put(("holder", len(mine), len(setup) + len(response)))


def _party(conn, n: int, shift: int, out):

    ids = [str(i + shift) for i in range(n)]
    server = PsiServer(ids, "integer")
    setup = server.setup()  # while the label holder blinds its own IDs
    request = conn.recv_bytes()  # first: a pipe's send waits for its reader
    conn.send_bytes(setup)
    response = server.respond(request)
    conn.send_bytes(response)
    key, tags = conn.recv_bytes(), conn.recv_bytes()
    rows = _keep("party 2", key, tags, ids)
    out.put(("party", len(rows), len(request) + len(key) + len(tags)))


def op_microseconds(count: int = 20000) -> float:
    """One X25519 blinding in this process, in microseconds (median of three)."""

    points, key = hash_ids([str(i) for i in range(count)], "integer"), _secret()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        _blind_chunk(key, points)
        times.append(time.perf_counter() - t0)
    return sorted(times)[1] / count * 1e6


def measure(n: int, overlap: float = 0.8, seed: int = 0) -> dict:
    """Align ``n`` IDs per party, the two parties in two processes."""

    op = op_microseconds()
    shift = int(round((1 - overlap) * n))
    ctx = mp.get_context("fork")
    a, b = ctx.Pipe()
    out = ctx.Queue()
    t0 = time.perf_counter()
    procs = [
        ctx.Process(target=_label_holder, args=(a, n, seed, out)),
        ctx.Process(target=_party, args=(b, n, shift, out)),
    ]
    for p in procs:
        p.start()
    got = dict((who, (rows, sent)) for who, rows, sent in (out.get() for _ in procs))
    seconds = time.perf_counter() - t0
    for p in procs:
        p.join()
        if p.exitcode:
            raise RuntimeError(f"a party's process failed (exit {p.exitcode})")
    common = got["holder"][0]
    if got["party"][0] != common or common != n - shift:
        raise RuntimeError(f"aligned {got['party'][0]} / {common} rows, expected {n - shift}")
    sent = got["holder"][1] + got["party"][1]
    own = protocol_bytes(n, n) + 32 + TAG * common
    floor = 2 * n * op / 1e6
    return {
        "ids_per_party": n,
        "overlap": overlap,
        "intersection": common,
        "seconds": round(seconds, 2),
        "op_us": round(op, 2),
        "floor_seconds": round(floor, 2),
        "over_floor": round(seconds / floor, 3),
        "bytes": sent,
        "protocol_bytes": own,
        "bytes_ratio": round(sent / own, 6),
        "bytes_per_id": round(sent / n, 2),
        "cores": os.cpu_count(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.alignment")
    parser.add_argument("--ids", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--overlap", type=float, default=0.8)
    parser.add_argument(
        "--csv", type=Path, default=None, help="append the rows to this CSV (docs/figures/alignment/alignment.csv)"
    )
    args = parser.parse_args(argv)
    rows = []
    for n in args.ids:
        row = measure(n, args.overlap)
        rows.append(row)
        target = TARGET_SECONDS.get(n)
        verdict = (
            "" if target is None else (f"  target <= {target:g} s: {'met' if row['seconds'] <= target else 'NOT met'}")
        )
        print(
            f"{n:>10,} IDs per party: {row['seconds']:.1f} s ({row['over_floor']:.2f}x the "
            f"protocol's {row['floor_seconds']:.1f} s at {row['op_us']:.1f} us an X25519), "
            f"{row['bytes_per_id']:.1f} bytes per ID ({row['bytes_ratio']:.4f}x the "
            f"protocol's count){verdict}",
            flush=True,
        )
    if args.csv is not None:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        old = []
        if args.csv.exists():
            with open(args.csv) as fh:
                old = [
                    r
                    for r in csv.DictReader(fh)
                    if int(r["ids_per_party"]) not in {row["ids_per_party"] for row in rows}
                ]
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, COLUMNS)
            w.writeheader()
            for r in sorted(old + rows, key=lambda r: int(r["ids_per_party"])):
                w.writerow({k: r[k] for k in COLUMNS})
    return 0 if all(r["bytes_ratio"] <= TARGET_BYTES_RATIO for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
