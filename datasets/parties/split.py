"""From one table to party files: ``vfl datasets split``.

:func:`deal` decides which rows each party holds: a share ``overlap`` of the rows is
held by every party, every other row by one party drawn by the seed; every row gets a
synthetic ID (a random 10-digit integer, the same in every party's file) and every
party's file lists its rows in an order of its own. :func:`write_parties` writes the
files: LIBSVM party files (``ID [label] index:value ...``, the indices as in the source)
for sparse numeric columns named ``f<index>``, CSV party files otherwise; every value as
read (floats by ``repr``, so a file read back gives the same bits); and, when the source
has a published schema, each party's part of it as a Frictionless Table Schema.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable

__all__ = ["deal", "write_parties", "ID", "LABEL"]

ID, LABEL = "id", "label"
_F = re.compile(r"f(\d+)")


def deal(n: int, parties: int, overlap: float, rng: np.random.Generator):
    """(IDs of the ``n`` rows, each party's rows in its own order): ``round(overlap n)`` rows
    are every party's, each other row one party's."""
    if parties < 2:
        raise DataError(f"--parties must be at least 2, got {parties}")
    if not 0.0 < overlap <= 1.0:
        raise DataError(f"--overlap must be in (0, 1], got {overlap:g}")
    shared = np.zeros(n, dtype=bool)
    shared[rng.permutation(n)[: int(round(overlap * n))]] = True
    if not shared.any():
        raise DataError(f"--overlap {overlap:g} of {n} rows leaves no row for every party")
    owner = rng.integers(0, parties, size=n)
    ids = rng.choice(9 * 10**9, size=n, replace=False) + 10**9
    rows = [rng.permutation(np.flatnonzero(shared | (owner == m))) for m in range(parties)]
    return ids, rows


def _raw_labels(raw) -> tuple:
    """The two labels as the source wrote them (negative, positive): its label mapping's,
    else -1 and +1. A LIBSVM party file's labels are numbers."""
    mapping = raw.provenance.get("label_mapping") or {}
    values = [mapping.get("-1", -1), mapping.get("+1", 1)]
    out = []
    for v in values:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        out.append(v)
    return tuple(out)


def _libsvm_ok(table: RawTable, names) -> bool:
    return sp.issparse(table.numeric) and all(_F.fullmatch(n) for n in names)


def _write_libsvm(path: Path, ids, y, X: sp.csr_matrix, first: int) -> None:
    out = []
    for r in range(X.shape[0]):
        a, b = X.indptr[r], X.indptr[r + 1]
        entries = " ".join(f"{j + first}:{float(v)!r}" for j, v in zip(X.indices[a:b], X.data[a:b]))
        head = f"{ids[r]}" if y is None else f"{ids[r]} {y[r]}"
        out.append(f"{head} {entries}".rstrip())
    path.write_text("\n".join(out) + "\n")


def _columns(table: RawTable, names, rows) -> dict:
    cols = {}
    for name in names:
        col = table.column(name)[rows] if not sp.issparse(table.numeric) else None
        if col is None:
            j = table.numeric_names.index(name)
            col = np.asarray(table.numeric[rows][:, j].todense()).ravel()
        if table.kinds[table.names.index(name)] == "numeric":
            col = [repr(float(v)) for v in col]
        cols[name] = col
    return cols


def _write_csv(path: Path, ids, y, table: RawTable, names, rows) -> None:
    frame = {ID: ids}
    if y is not None:
        frame[LABEL] = y
    frame.update(_columns(table, names, rows))
    pd.DataFrame(frame).to_csv(path, index=False)


def _schema(raw, names, label: bool) -> dict:
    fields = [{"name": ID, "type": "integer"}]
    if label:
        fields.append({"name": LABEL, "type": "string"})
    for name in names:
        spec = raw.schema.column(name)
        kind = raw.train.kinds[raw.train.names.index(name)]
        field = {"name": name, "type": "number" if kind == "numeric" else "string"}
        if spec is not None and spec.bounds is not None:
            field["constraints"] = {"minimum": spec.bounds[0], "maximum": spec.bounds[1]}
        if spec is not None and spec.values is not None:
            field["constraints"] = {"enum": list(spec.values)}
        fields.append(field)
    return {"fields": fields, "primaryKey": ID}


def write_parties(
    raw, groups: list[list[str]], *, overlap: float, seed: int, out: Path, test: bool = True
) -> list[dict]:
    """Write each party's files into ``out``; returns the ``[[data.party]]`` tables.

    ``groups``: each party's raw columns, party 1 (the label holder) first. ``test``: the
    source's test part becomes every party's test file (all its rows, each party's in an
    order of its own); otherwise only the training part is dealt.
    """
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    parts = {"train": (raw.train, raw.y_train, overlap)}
    if test:
        parts["test"] = (raw.test, raw.y_test, 1.0)
    tables = [{"name": f"party{m + 1}"} for m in range(len(groups))]
    raw_labels = _raw_labels(raw)
    for part, (table, y, share) in parts.items():
        ids, rows = deal(table.n_rows, len(groups), share, rng)
        for m, names in enumerate(groups):
            r = rows[m]
            label = np.where(y[r] > 0, raw_labels[1], raw_labels[0]) if m == 0 else None
            stem = f"party{m + 1}" + ("" if part == "train" else "-test")
            key = "path" if part == "train" else "test_path"
            if _libsvm_ok(table, names):
                idx = [int(_F.fullmatch(n).group(1)) for n in names]
                if idx != list(range(idx[0], idx[0] + len(idx))):
                    raise DataError(f"party {m + 1}'s columns are not one index range")
                cols = [table.names.index(n) for n in names]
                path = out / f"{stem}.libsvm"
                _write_libsvm(path, ids[r], label, table.numeric[r][:, cols].tocsr(), idx[0])
                tables[m].update({key: str(path.resolve()), "indices": [idx[0], idx[-1]]})
            else:
                path = out / f"{stem}.csv"
                _write_csv(path, ids[r], label, table, names, r)
                tables[m].update({key: str(path.resolve()), "id": ID})
                cats = [n for n in names if table.kinds[table.names.index(n)] == "categorical"]
                if cats:
                    tables[m]["categorical_columns"] = cats
    for m, names in enumerate(groups):
        if m == 0:
            if "id" in tables[0]:
                tables[0]["label"] = LABEL
            tables[0]["labels"] = list(raw_labels)
        if raw.schema is not None:
            path = out / f"party{m + 1}.schema.json"
            path.write_text(json.dumps(_schema(raw, names, m == 0), indent=1) + "\n")
            tables[m]["schema"] = str(path.resolve())
    return tables
