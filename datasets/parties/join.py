"""Party files -> one dataset of aligned rows: ``load_raw("parties", options)``.

Each party's file is read by :func:`~.table.load_party` (in-process here; each in its
own process once the parties are services), the rows are aligned (:func:`~.align.align`;
the test files too when the parties have them), and the aligned rows become one
:class:`~vfl.datasets.dataset.RawDataset` whose columns are party 1's, then party 2's, ...
(``RawDataset.parties`` names each party's columns, so the vertical setting gives each
party exactly its own block). The relation of a private run is stated on the aligned
rows: N is the intersection's size, which the alignment reveals to every party.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable, Schema
from vfl.core.relations import Cleaning
from vfl.datasets.dataset import RawDataset
from vfl.datasets.userfiles.holdout import _split

from .align import align
from .party_spec import check_parties
from .party_table import PartyTable, load_party
from .schema import merge_schemas

__all__ = ["load_parties", "assemble", "join_tables"]

_BYTES = ("sha256", "size", "content_sha256", "content_size")


def join_tables(tables: list[RawTable]) -> RawTable:
    """The parties' columns side by side (rows already in one order)."""
    names = tuple(n for t in tables for n in t.names)
    kinds = tuple(k for t in tables for k in t.kinds)
    nums = [t.numeric for t in tables]
    if any(sp.issparse(x) for x in nums):
        numeric = sp.hstack([sp.csr_matrix(x) for x in nums], format="csr")
    else:
        numeric = np.hstack([np.asarray(x, dtype=float) for x in nums])
    cats = [t.categorical for t in tables if t.categorical is not None]
    return RawTable(names=names, kinds=kinds, numeric=numeric, categorical=np.hstack(cats) if cats else None)


def _check_names(parties: list[PartyTable]) -> None:
    owner: dict[str, int] = {}
    for p in parties:
        for name in p.train.table.names:
            if name in owner:
                raise DataError(
                    f"{p.spec.who}: column {name!r} is party {owner[name]}'s too; "
                    "every column has one owner (rename one of them)"
                )
            owner[name] = p.spec.index


def _align_part(parties, part: str, spec, workers: int):
    got = [getattr(p, part) for p in parties]
    return align(
        [(p.spec.who, g.ids, p.id_type) for p, g in zip(parties, got)],
        min_rows=spec.min_rows if part == "train" else 1,
        seed=spec.seed,
        part="training" if part == "train" else "test",
        workers=workers,
    )


def _file(rec: dict, private: bool) -> tuple[dict, dict]:
    """(the record without the file's bytes, the bytes) of a private training file."""
    if not private:
        return rec, {}
    return {k: v for k, v in rec.items() if k not in _BYTES}, {k: rec[k] for k in _BYTES if k in rec}


def load_parties(options: Mapping[str, Any], *, strict: bool = True, workers: int = 1) -> RawDataset:
    """Read every party's file, align the rows by PSI, and join the parties' columns."""
    specs, spec = check_parties(options)
    parties = [load_party(s, strict=strict, id_type=spec.id_type) for s in specs]
    _check_names(parties)
    alignments = {"train": _align_part(parties, "train", spec, workers)}
    if parties[0].test is not None:
        alignments["test"] = _align_part(parties, "test", spec, workers)
    return assemble(
        parties, {part: a.rows for part, a in alignments.items()}, options, strict=strict, alignments=alignments
    )


def _placeholder(n: int) -> np.ndarray:
    return np.where(np.arange(n) % 2, 1.0, -1.0)


def assemble(
    parties: list[PartyTable],
    rows: dict,
    options: Mapping[str, Any],
    *,
    strict: bool = True,
    alignments: dict | None = None,
    n_parties: int | None = None,
) -> RawDataset:
    """The aligned rows of the ``parties`` this process holds (every party in-process; one
    party's own, in its own process) as one :class:`RawDataset`: ``rows[part][i]`` are
    ``parties[i]``'s rows of ``part`` ("train", "test") in the agreed order. Without the label
    holder among them (a party's own process) the labels are placeholders (alternating -1,
    +1, which the checks of a labelled dataset accept): that party never sees them. ``alignments``: the label holder's records of the PSI, for the manifest."""
    label = parties[0]
    train_rows = rows["train"]
    X = join_tables([p.train.table.take(r) for p, r in zip(parties, train_rows)])
    y = label.train.y[train_rows[0]] if label.train.y is not None else _placeholder(len(train_rows[0]))
    if label.test is not None:
        test_rows = rows["test"]
        X_t = join_tables([p.test.table.take(r) for p, r in zip(parties, test_rows)])
        y_t = label.test.y[test_rows[0]] if label.test.y is not None else _placeholder(len(test_rows[0]))
        split = {"test": "test_path", "n_train": int(y.size), "n_test": int(y_t.size)}
    else:
        fraction = float(options["test_fraction"])
        seed = int(options.get("split_seed", 0))
        tr, te = _split(
            label.train.file, y, fraction, seed, label.label_mapping, stratify=bool(options.get("stratify", False))
        )
        X, X_t, y, y_t = X.take(tr), X.take(te), y[tr], y[te]
        split = {
            "test": "held out from path",
            "test_fraction": fraction,
            "split_seed": seed,
            "stratified_by_label": bool(options.get("stratify", False)),
            "row_order": "the agreed order within each part",
            "n_train": int(y.size),
            "n_test": int(y_t.size),
        }
    private = not strict
    records, exact, checksums, repairs = [], {}, {}, {}
    for p in parties:
        rec, withheld = _file(p.train.file.record(), private)
        files = {"train": rec}
        if withheld:
            exact[f"party {p.spec.index}"] = withheld
        else:
            checksums[str(p.train.file.path)] = p.train.file.sha256
        if p.test is not None:
            files["test"] = p.test.file.record()
            checksums[str(p.test.file.path)] = p.test.file.sha256
        for part in ("train", "test"):
            got = getattr(p, part)
            if got is not None and got.repairs is not None:
                repairs[f"party {p.spec.index} {part}"] = got.repairs
        records.append(
            {
                "party": p.spec.index,
                "name": p.spec.name,
                "config": p.spec.to_dict(),
                "files": files,
                "columns": list(p.train.table.names),
                "id_type": p.id_type,
                "rows_in_file": {
                    part: getattr(p, part).n_rows for part in ("train", "test") if getattr(p, part) is not None
                },
            }
        )
    n = n_parties or len(parties)
    schema = merge_schemas([p.schema for p in parties])
    if schema is not None:  # every party's columns, in order, whether its schema lists them
        schema = Schema(
            name=schema.name,
            columns=schema.columns,
            citation=schema.citation,
            layouts={"onehot": list(X.names), "ordinal": list(X.names)},
        )
    diagnostic = {}
    if exact:
        diagnostic["files"] = exact
    if repairs:
        diagnostic["repairs"] = repairs
    return RawDataset(
        name="parties",
        train=X,
        y_train=y,
        test=X_t,
        y_test=y_t,
        description=f"{n} party files aligned by PSI ({len(train_rows[0])} rows in all {n})",
        checksums=checksums,
        schema=schema,
        cleaning=Cleaning(removed="the records whose ID is not in every party's file, by the PSI alignment,"),
        parties=tuple(p.train.table.names for p in parties),
        provenance={
            "source": "party files",
            "parties": records,
            **(
                {"alignment": {part: {**a.record, "traffic": a.traffic()} for part, a in alignments.items()}}
                if alignments
                else {}
            ),
            "split": split,
            "label_mapping": label.label_mapping,
            "parsed": "each party's own file, read by that party; rows aligned by PSI",
            "diagnostic": diagnostic,
        },
    )
