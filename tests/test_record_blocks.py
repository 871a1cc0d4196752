"""A LIBSVM file read block by block (scikit-learn's parse where a block allows it) is the
per-record function's reading of it, bit for bit, repairs included."""

from __future__ import annotations

import numpy as np
import pytest
from test_raw_records import LIBSVM_KINDS, SVM

from vfl.datasets import record_parsers
from vfl.datasets.record_parsers import BLOCK, LibsvmRules, parse_libsvm

RULES = LibsvmRules(n_features=4, one_based=True, labels={-1.0: -1.0, 1.0: 1.0})
LINES = SVM.split(b"\n")[:-1] * (3 * BLOCK // 5)  # three blocks, the last one short


def _per_record(lines, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(record_parsers, "_fast_libsvm", lambda lines, rules: None)
        return parse_libsvm(lines, RULES)


def _assert_same(a, b):
    (Xa, ya, ra), (Xb, yb, rb) = a, b
    assert Xa.shape == Xb.shape
    for part in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(Xa, part), getattr(Xb, part))
        assert getattr(Xa, part).dtype == getattr(Xb, part).dtype
    np.testing.assert_array_equal(ya, yb)
    assert ra.describe() == rb.describe()


@pytest.mark.parametrize("kind", [*LIBSVM_KINDS, "query id"])
def test_a_hostile_record_costs_its_block_and_changes_no_reading(kind, monkeypatch):
    hostile = b"+1 qid:3 4:1" if kind == "query id" else LIBSVM_KINDS[kind][0]
    lines = list(LINES)
    for at in (0, BLOCK - 1, BLOCK + 7, len(lines) - 1):  # a block's edges, the last one
        lines[at] = hostile
    fallbacks = []
    real = record_parsers._records

    def counted(block, *args):
        fallbacks.append(len(block))
        return real(block, *args)

    monkeypatch.setattr(record_parsers, "_records", counted)
    blocks = parse_libsvm(lines, RULES)
    # a trailing carriage return is whitespace to both readings: its blocks stay fast
    assert fallbacks == ([] if kind == "carriage return" else [BLOCK, BLOCK, len(lines) - 2 * BLOCK])
    assert blocks[0].shape == (len(lines), 4)
    _assert_same(blocks, _per_record(lines, monkeypatch))


def test_a_query_id_is_a_bad_entry_in_a_clean_file_too(monkeypatch):
    lines = [b"+1 qid:3 4:1", b"-1 2:1"]
    reading = parse_libsvm(lines, RULES)
    _assert_same(reading, _per_record(lines, monkeypatch))
    assert reading[2].describe()["fields_missing"] == {"entries": 1}


@pytest.mark.parametrize("lines", [[], [b""], LINES[:5]])
def test_small_files_read_as_the_per_record_function_reads_them(lines, monkeypatch):
    _assert_same(parse_libsvm(lines, RULES), _per_record(lines, monkeypatch))
