"""Every raw record maps to a valid, bounded row in a private run (issue 33, item 1).

A run that claims a guarantee reads its files record by record
(``load_raw(..., strict=False)``, :mod:`vfl.datasets.record_parsers`): one record per
line, each parsed alone, a missing or malformed field replaced by a public
default. So replacing one record by *any* bytes (a missing field, a malformed
one, NaN, inf, a blank line, an unknown label, too few or too many fields, an
index outside the width, unsorted or repeated indices) must leave N and every
other row bit-identical, give a finite row within the enforced bounds, and
raise nothing. A run that claims no guarantee keeps its one-line refusals
(tests/test_datasets.py, tests/test_userfiles.py, tests/test_hostile_inputs.py).

The small files here pin the exact default of each kind; the ``data`` tests
(tests/test_raw_records_real.py) replace record 100 of the real files, through the stage of
the shipped private configs, for a9a, a LIBSVM file of the user's, Adult and a CSV.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from vfl.admm.consensus.data import enforce_row_bound
from vfl.core.errors import ConfigError, DataError
from vfl.core.preprocessing import clip_rows
from vfl.core.relations import Cleaning, stated_on
from vfl.datasets import record_parsers
from vfl.datasets.loaders import load_raw
from vfl.datasets.record_parsers import MISSING, record_lines
from vfl.datasets.schemas import FILE_RECORDS, FileRecords
from vfl.datasets.stage import fit_stage
from vfl.decentralized.problem import merge_domains


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)


# --------------------------------------------------------------------- record lines --


def test_one_record_per_line_and_a_final_newline_adds_none():
    assert record_lines(b"a\nb\n") == [b"a", b"b"]
    assert record_lines(b"a\nb") == [b"a", b"b"]
    assert record_lines(b"a\n\nb\n") == [b"a", b"", b"b"]  # a blank line is a record
    assert record_lines(b"h\na\n", header=1) == [b"a"]
    # a documented count: the lines after it must be empty (adult.data ends with one)
    assert record_lines(b"a\nb\n\n", count=2) == [b"a", b"b"]
    with pytest.raises(ValueError, match="1 lines after 0 header line"):
        record_lines(b"a\n", count=2)
    with pytest.raises(ValueError, match="3 lines after 0 header"):
        record_lines(b"a\nb\nc\n", count=2)


# ------------------------------------------------------------------ a user LIBSVM file --

SVM = b"+1 1:1 3:2\n-1 2:1\n+1 1:0.5 4:1\n-1 3:1\n+1 2:2\n"
SVM_TEST = b"-1 1:1\n+1 4:3\n"
SVM_OPTIONS = {"n_features": 4, "zero_based": False, "labels": [-1, 1]}

# hostile record 2 -> (dense row, label) it must become
LIBSVM_KINDS = {
    "missing value": (b"+1 1: 4:1", [0, 0, 0, 1], 1),
    "malformed value": (b"+1 1:abc 4:1", [0, 0, 0, 1], 1),
    "malformed token": (b"+1 oops 4:1", [0, 0, 0, 1], 1),
    "nan": (b"+1 1:nan 4:1", [0, 0, 0, 1], 1),
    "inf": (b"+1 1:-inf 4:1", [0, 0, 0, 1], 1),
    "overflow": (b"+1 1:1e400 2:1", [0, 1, 0, 0], 1),
    "blank line": (b"", [0, 0, 0, 0], -1),
    "comment line": (b"# a note", [0, 0, 0, 0], -1),
    "unknown label": (b"2 1:0.5 4:1", [0.5, 0, 0, 1], -1),
    "label 0": (b"0 1:0.5 4:1", [0.5, 0, 0, 1], -1),
    "nan label": (b"nan 1:0.5", [0.5, 0, 0, 0], -1),
    "no label": (b"1:0.5 4:1", [0, 0, 0, 1], -1),  # the first token is the label's
    "index 0": (b"+1 0:1 1:0.5", [0.5, 0, 0, 0], 1),
    "index beyond the width": (b"+1 1:0.5 5:1", [0.5, 0, 0, 0], 1),
    "negative index": (b"+1 -2:1 1:0.5", [0.5, 0, 0, 0], 1),
    "unsorted indices": (b"+1 4:1 1:0.5", [0.5, 0, 0, 1], 1),
    "duplicate index": (b"+1 1:0.5 1:3 4:1", [0.5, 0, 0, 1], 1),  # the first one stays
    "NUL byte": (b"+1 1:0.5\x00 4:1", [0, 0, 0, 1], 1),
    "not UTF-8": (b"+1 1:\xff\xfe 4:1", [0, 0, 0, 1], 1),
    "carriage return": (b"+1 1:0.5 4:1\r", [0.5, 0, 0, 1], 1),
}


def _libsvm(tmp_path, train: bytes, **options):
    (tmp_path / "train.svm").write_bytes(train)
    (tmp_path / "test.svm").write_bytes(SVM_TEST)
    opts = {"path": str(tmp_path / "train.svm"), "test_path": str(tmp_path / "test.svm"), **SVM_OPTIONS, **options}
    return load_raw("libsvm", options=opts, strict=False)


def _replace(content: bytes, index: int, record: bytes, header: int = 0) -> bytes:
    lines = content.split(b"\n")
    lines[header + index] = record
    return b"\n".join(lines)


@pytest.mark.parametrize("kind", LIBSVM_KINDS)
def test_libsvm_record_takes_its_public_default(tmp_path, kind):
    base = _libsvm(tmp_path, SVM)
    hostile, row, label = LIBSVM_KINDS[kind]
    raw = _libsvm(tmp_path, _replace(SVM, 2, hostile))
    X0, X1 = _dense(base.train.numeric), _dense(raw.train.numeric)
    assert X1.shape == X0.shape == (5, 4)
    np.testing.assert_array_equal(np.delete(X1, 2, axis=0), np.delete(X0, 2, axis=0))
    np.testing.assert_array_equal(np.delete(raw.y_train, 2), np.delete(base.y_train, 2))
    np.testing.assert_array_equal(X1[2], row)
    assert raw.y_train[2] == label
    # the strict reading (a run that claims no guarantee) still refuses what it refused
    if kind not in (
        "unknown label",
        "label 0",
        "carriage return",
        "blank line",
        "comment line",
        "no label",
        "nan label",
        "index 0",
        "malformed token",
    ):
        (tmp_path / "train.svm").write_bytes(_replace(SVM, 2, hostile))
        with pytest.raises(DataError):
            load_raw(
                "libsvm",
                options={"path": str(tmp_path / "train.svm"), "test_path": str(tmp_path / "test.svm"), **SVM_OPTIONS},
            )


def test_libsvm_fast_parse_is_the_per_record_function(tmp_path, monkeypatch):
    fast = _libsvm(tmp_path, SVM + b"-1 1:0 2:1\n")  # an explicit zero kept as written
    monkeypatch.setattr(record_parsers, "_fast_libsvm", lambda lines, rules: None)
    slow = _libsvm(tmp_path, SVM + b"-1 1:0 2:1\n")
    for a, b in ((fast.train.numeric, slow.train.numeric), (fast.test.numeric, slow.test.numeric)):
        assert (a != b).nnz == 0 and a.shape == b.shape
        np.testing.assert_array_equal(a.indptr, b.indptr)
        np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(fast.y_train, slow.y_train)
    # what was repaired is diagnostic
    assert fast.provenance["diagnostic"]["repairs"]["train"]["records_incomplete"] == 0
    hostile = _libsvm(tmp_path, _replace(SVM, 2, b"7 1:nan 9:1"))
    assert hostile.provenance["diagnostic"]["repairs"]["train"] == {
        "records_incomplete": 1,
        "labels_missing": 1,
        "fields_missing": {"entries": 2},
        "records_malformed": 0,
    }


def test_a_private_libsvm_run_declares_what_it_reads(tmp_path):
    path = str(tmp_path / "absent.svm")  # refused before any file is read
    base = {"path": path, "test_fraction": 0.2, "stratify": False}
    with pytest.raises(ConfigError, match="the width would be the largest feature index .*set data.n_features"):
        load_raw("libsvm", options={**base, "zero_based": False, "labels": [0, 1]}, strict=False)
    with pytest.raises(ConfigError, match="index base would be detected .*set data.zero_based"):
        load_raw("libsvm", options={**base, "n_features": 3, "labels": [0, 1]}, strict=False)
    with pytest.raises(ConfigError, match="set data.labels = \\[negative, positive\\]"):
        load_raw("libsvm", options={**base, "n_features": 3, "zero_based": False}, strict=False)
    with pytest.raises(ConfigError, match="set data.stratify = false"):
        load_raw(
            "libsvm",
            options={**base, "n_features": 3, "zero_based": False, "labels": [0, 1], "stratify": True},
            strict=False,
        )
    with pytest.raises(DataError, match="labels must be \\[negative, positive\\]"):
        load_raw("libsvm", options={**base, "n_features": 3, "zero_based": False, "labels": [1, 1]}, strict=False)


def test_a_test_fraction_split_depends_on_n_alone(tmp_path):
    (tmp_path / "t.svm").write_bytes(SVM * 4)
    opts = {"path": str(tmp_path / "t.svm"), "test_fraction": 0.25, "stratify": False, **SVM_OPTIONS}
    base = load_raw("libsvm", options=opts, strict=False)
    (tmp_path / "t.svm").write_bytes(_replace(SVM * 4, 7, b"junk junk"))
    raw = load_raw("libsvm", options=opts, strict=False)
    assert raw.train.n_rows == base.train.n_rows == 15 and raw.test.n_rows == 5
    changed = np.flatnonzero(
        np.any(_dense(raw.train.numeric) != _dense(base.train.numeric), axis=1) | (raw.y_train != base.y_train)
    )
    changed_t = np.flatnonzero(
        np.any(_dense(raw.test.numeric) != _dense(base.test.numeric), axis=1) | (raw.y_test != base.y_test)
    )
    assert changed.size + changed_t.size == 1


# --------------------------------------------------------------------------- a CSV --

CSV = b"a,b,city,label\n1.5,2,x,0\n2.5,3,y,1\n0.5,4,x,1\n3.5,1,y,0\n"
CSV_TEST = b"label,a,b,city\n1,1,1,x\n0,2,2,y\n"

# hostile record 1 -> (a, b, city, label) it must become
CSV_KINDS = {
    "empty cell": (b"2.5,,y,1", (2.5, 0.0, "y", 1)),
    "non-numeric": (b"2.5,abc,y,1", (2.5, 0.0, "y", 1)),
    "question mark": (b"2.5,?,y,1", (2.5, 0.0, "y", 1)),
    "nan": (b"2.5,nan,y,1", (2.5, 0.0, "y", 1)),
    "inf": (b"2.5,-inf,y,1", (2.5, 0.0, "y", 1)),
    "overflow": (b"2.5,1e400,y,1", (2.5, 0.0, "y", 1)),
    "underscore number": (b"2.5,1_000,y,1", (2.5, 0.0, "y", 1)),
    "empty category": (b"2.5,3,,1", (2.5, 3.0, MISSING, 1)),
    "unseen category": (b"2.5,3,Atlantis,1", (2.5, 3.0, "Atlantis", 1)),
    "third label": (b"2.5,3,y,2", (2.5, 3.0, "y", -1)),
    "missing label": (b"2.5,3,y,", (2.5, 3.0, "y", -1)),
    "text label": (b"2.5,3,y,yes", (2.5, 3.0, "y", -1)),
    "label 1.0": (b"2.5,3,y,1.0", (2.5, 3.0, "y", 1)),  # numbers compare as numbers
    "blank line": (b"", (0.0, 0.0, MISSING, -1)),
    "too few fields": (b"2.5,3,y", (0.0, 0.0, MISSING, -1)),
    "too many fields": (b"2.5,3,y,1,9", (0.0, 0.0, MISSING, -1)),
    "unbalanced quote": (b'2.5,"3,y,1', (0.0, 0.0, MISSING, -1)),
    "NUL byte": (b"2.5,3\x00,y,1", (2.5, 0.0, "y", 1)),
    "not UTF-8": (b"2.5,\xff,y,1", (2.5, 0.0, "y", 1)),
    "not UTF-8 category": (b"2.5,3,\xffy,1", (2.5, 3.0, MISSING, 1)),
    "embedded carriage return": (b"2.5,3\r,y,1", (0.0, 0.0, MISSING, -1)),
}


def _csv(tmp_path, train: bytes, **options):
    (tmp_path / "d.csv").write_bytes(train)
    (tmp_path / "t.csv").write_bytes(CSV_TEST)
    opts = {
        "path": str(tmp_path / "d.csv"),
        "test_path": str(tmp_path / "t.csv"),
        "label": "label",
        "labels": [0, 1],
        "categorical_columns": ["city"],
        **options,
    }
    return load_raw("csv", options=opts, strict=False)


@pytest.mark.parametrize("kind", CSV_KINDS)
def test_csv_record_takes_its_public_default(tmp_path, kind):
    base = _csv(tmp_path, CSV)
    hostile, (a, b, city, label) = CSV_KINDS[kind]
    raw = _csv(tmp_path, _replace(CSV, 1, hostile, header=1))
    assert raw.train.n_rows == base.train.n_rows == 4
    keep = [0, 2, 3]
    np.testing.assert_array_equal(raw.train.numeric[keep], base.train.numeric[keep])
    np.testing.assert_array_equal(raw.train.categorical[keep], base.train.categorical[keep])
    np.testing.assert_array_equal(raw.y_train[keep], base.y_train[keep])
    np.testing.assert_array_equal(raw.train.numeric[1], [a, b])
    assert raw.train.categorical[1, 0] == city and raw.y_train[1] == label
    # with the categories declared, the stage of a private run bounds the row
    stage = fit_stage(
        raw,
        {"categories": {"city": ["x", "y"]}, "scaling": "minmax", "bounds": [0.0, 5.0], "normalize_rows": True},
        private=True,
    )
    X = stage.rows.apply(stage.columns(raw.train))
    assert np.all(np.isfinite(X)) and np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)


def test_csv_fill_is_public_and_per_column(tmp_path):
    raw = _csv(tmp_path, _replace(CSV, 1, b",nan,y,1", header=1), fill={"b": 7.5})
    np.testing.assert_array_equal(raw.train.numeric[1], [0.0, 7.5])
    assert raw.provenance["parsing"]["fill"] == {"a": 0.0, "b": 7.5}
    assert raw.provenance["diagnostic"]["repairs"]["train"]["fields_missing"] == {"a": 1, "b": 1}
    with pytest.raises(DataError, match="fill.city: not a numeric feature column"):
        _csv(tmp_path, CSV, fill={"city": 1})
    with pytest.raises(DataError, match="fill.b must be a finite number"):
        _csv(tmp_path, CSV, fill={"b": float("nan")})
    # the test file's columns in another order are read by name
    raw = _csv(tmp_path, CSV)
    np.testing.assert_array_equal(raw.test.numeric, [[1, 1], [2, 2]])
    np.testing.assert_array_equal(raw.y_test, [1, -1])


def test_csv_strict_reading_is_unchanged_and_reads_declared_labels(tmp_path):
    opts = {
        "path": str(tmp_path / "d.csv"),
        "test_path": str(tmp_path / "t.csv"),
        "label": "label",
        "labels": [0, 1],
        "categorical_columns": ["city"],
    }
    _csv(tmp_path, CSV)
    strict = load_raw("csv", options=opts)
    lenient = load_raw("csv", options=opts, strict=False)
    np.testing.assert_array_equal(strict.train.numeric, lenient.train.numeric)
    np.testing.assert_array_equal(strict.train.categorical, lenient.train.categorical)
    np.testing.assert_array_equal(strict.y_train, lenient.y_train)
    assert strict.provenance["label_mapping"]["rule"] == "data.labels"
    (tmp_path / "d.csv").write_bytes(_replace(CSV, 1, b"2.5,3,y,2", header=1))
    with pytest.raises(DataError, match=r"d.csv: label\(s\) 2 are not among labels = \[0, 1\]"):
        load_raw("csv", options=opts)
    (tmp_path / "d.csv").write_bytes(_replace(CSV, 1, b"2.5,,y,1", header=1))
    with pytest.raises(DataError, match="d.csv line 3, column 'b': missing value"):
        load_raw("csv", options=opts)
    with pytest.raises(DataError, match="give labels or label_positive, not both"):
        load_raw("csv", options={**opts, "label_positive": 1})


# ------------------------------------------------------------------------- Adult --

ADULT = b"""\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K
38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, Black, Female, 0, 0, 40, Cuba, <=50K
53, Private, 234721, 11th, 7, Married-civ-spouse, Handlers-cleaners, Husband, Black, Male, 0, 0, 60, Cuba, >50K

"""
ADULT_TEST = b"""\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 30, Jamaica, <=50K.
44, Private, 160323, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 7688, 0, 70, United-States, >50K.

"""
_FIELDS = ADULT.split(b"\n")[1].split(b", ")
NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
DEFAULTS = (17.0, 0.0, 1.0, 0.0, 0.0, 1.0)  # the lower ends of the declared ranges
ORIGINAL = (50.0, 83311.0, 13.0, 0.0, 0.0, 13.0)


def _adult_line(**changes) -> bytes:
    names = (
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "native-country",
        "income",
    )
    fields = dict(zip(names, _FIELDS))
    fields.update({k.replace("_", "-"): v for k, v in changes.items()})
    return b", ".join(fields.values())


def _with(position: int, value: float) -> tuple:
    out = list(ORIGINAL)
    out[position] = value
    return tuple(out)


# hostile record 1 -> (numeric values, occupation, label) it must become
ADULT_KINDS = {
    "question mark": (_adult_line(occupation=b"?"), ORIGINAL, MISSING, 1),
    "empty field": (_adult_line(occupation=b""), ORIGINAL, MISSING, 1),
    "malformed number": (_adult_line(age=b"old"), _with(0, 17.0), "Exec-managerial", 1),
    "question mark number": (_adult_line(hours_per_week=b"?"), _with(5, 1.0), "Exec-managerial", 1),
    "nan": (_adult_line(capital_gain=b"nan"), ORIGINAL, "Exec-managerial", 1),
    "inf": (_adult_line(age=b"inf"), _with(0, 17.0), "Exec-managerial", 1),
    "unknown label": (_adult_line(income=b"maybe"), ORIGINAL, "Exec-managerial", -1),
    "missing label": (_adult_line(income=b"?"), ORIGINAL, "Exec-managerial", -1),
    "blank line": (b"", DEFAULTS, MISSING, -1),
    "13 fields": (b", ".join(_FIELDS[:13]), DEFAULTS, MISSING, -1),
    "16 fields": (b", ".join([*_FIELDS, b"extra"]), DEFAULTS, MISSING, -1),
    "NUL byte": (_adult_line(age=b"5\x000"), _with(0, 17.0), "Exec-managerial", 1),
    "not UTF-8": (_adult_line(occupation=b"\xff\xfe"), ORIGINAL, MISSING, 1),
}


@pytest.fixture
def small_adult(tmp_path, monkeypatch):
    """A four-record adult.data (and two-record adult.test), with those counts documented."""
    monkeypatch.setitem(FILE_RECORDS, "adult.data", FileRecords(0, 4))
    monkeypatch.setitem(FILE_RECORDS, "adult.test", FileRecords(1, 2))

    def write(data=ADULT):
        (tmp_path / "adult.data").write_bytes(data)
        (tmp_path / "adult.test").write_bytes(ADULT_TEST)
        return tmp_path

    return write


@pytest.mark.parametrize("kind", ADULT_KINDS)
def test_adult_record_takes_its_public_default(small_adult, kind):
    base = load_raw("adult", small_adult(), verify=False, strict=False)
    hostile, numeric, occupation, label = ADULT_KINDS[kind]
    raw = load_raw("adult", small_adult(_replace(ADULT, 1, hostile)), verify=False, strict=False)
    keep = [0, 2, 3]
    assert raw.train.n_rows == 4 and raw.test.n_rows == 2
    np.testing.assert_array_equal(raw.train.numeric[keep], base.train.numeric[keep])
    np.testing.assert_array_equal(raw.train.categorical[keep], base.train.categorical[keep])
    np.testing.assert_array_equal(raw.y_train[keep], base.y_train[keep])
    np.testing.assert_array_equal(raw.train.numeric[1], numeric)
    assert raw.train.column("occupation")[1] == occupation and raw.y_train[1] == label
    assert raw.cleaning is None and raw.provenance["missing"] == "default"
    # the stage of a private run (Adult's published schema) bounds the row
    stage = fit_stage(raw, {"normalize_rows": True}, private=True)
    X = stage.columns(raw.train)
    assert np.all(np.isfinite(X)) and X.min() >= 0.0 and X.max() <= 1.0
    X = stage.rows.apply(X)
    assert np.all(np.linalg.norm(X, axis=1) <= 1 + 1e-12)
    # the paper's cleaning drops the record (a public rule on that record alone)
    dropped = load_raw(
        "adult",
        small_adult(_replace(ADULT, 1, hostile)),
        verify=False,
        strict=False,
        options={"missing": "drop", "cleaned_by": "Huang et al."},
    )
    assert dropped.cleaning == Cleaning(by="Huang et al.")
    np.testing.assert_array_equal(dropped.train.numeric, base.train.numeric[keep])
    np.testing.assert_array_equal(dropped.y_train, base.y_train[keep])
    assert dropped.provenance["diagnostic"]["repairs"]["train"]["records_dropped"] == 1


def test_adult_fill_and_options(small_adult):
    raw = load_raw(
        "adult",
        small_adult(_replace(ADULT, 1, _adult_line(age=b"?"))),
        verify=False,
        strict=False,
        options={"fill": {"age": 38}},
    )
    assert raw.train.numeric[1, 0] == 38.0
    for options, message in (
        ({"missing": "impute"}, 'missing must be "drop"'),
        ({"cleaned_by": "Huang et al."}, "with missing = 'default'"),
        ({"fill": {"sex": 1}}, "fill.sex: not a numeric column"),
        ({"fill": {"age": "x"}}, "fill.age must be a finite number"),
    ):
        with pytest.raises(DataError, match=message):
            load_raw("adult", small_adult(), verify=False, strict=False, options=options)
    # a file that does not hold the documented records is refused (its line structure, not
    # what a record holds)
    with pytest.raises(DataError, match="adult.data: 3 lines after 0 header line"):
        load_raw("adult", small_adult(b"\n".join(ADULT.split(b"\n")[:3]) + b"\n"), verify=False, strict=False)


def test_adult_strict_reading_keeps_its_refusals(small_adult):
    directory = small_adult()
    raw = load_raw("adult", directory, verify=False)  # strict: '?' drops, as before
    assert raw.train.n_rows == 4 and raw.provenance["missing"] == "drop"
    for hostile, message in (
        (_adult_line(age=b"nan"), "column age is not numeric"),
        (_adult_line(age=b"inf"), "record 2: age is not a finite number"),
        (_adult_line(age=b"old"), "column age is not numeric"),
        (_adult_line(income=b"maybe"), "unexpected income label"),
    ):
        small_adult(_replace(ADULT, 1, hostile))
        with pytest.raises(DataError, match=message):
            load_raw("adult", directory, verify=False)
    # strict with public defaults: '?' becomes the default, the record stays
    small_adult(_replace(ADULT, 1, _adult_line(occupation=b"?", hours_per_week=b"?")))
    raw = load_raw("adult", directory, verify=False, options={"missing": "default"})
    assert raw.train.n_rows == 4 and raw.train.column("occupation")[1] == MISSING
    assert raw.train.column("hours-per-week")[1] == 1.0


# ------------------------------------------------------------------ registry files --


def test_gisette_is_refused_before_any_file_is_read(tmp_path):
    with pytest.raises(ConfigError, match="gisette: the loader's min/max scaling .* set data.dataset"):
        load_raw("gisette", tmp_path / "nowhere", strict=False)


def test_strict_a9a_and_gisette_refuse_nan(tmp_path):
    (tmp_path / "a9a").write_bytes(b"+1 3:nan\n")
    (tmp_path / "a9a.t").write_bytes(b"-1 4:1\n")
    with pytest.raises(DataError, match="a9a: malformed svmlight file .*not a finite number"):
        load_raw("a9a", tmp_path, verify=False)


# --------------------------------------------------------------- the bound checks --


def test_nan_passes_no_bound_check():
    A = np.array([[[0.6, 0.0], [np.nan, 0.0]]])
    for mode in ("check", "clip"):
        with pytest.raises(ValueError, match="not a finite number"):
            enforce_row_bound(A, mode)
    # numpy's max keeps the NaN of any group (the builtin dropped it when not first)
    parts = [
        {"labels01": True, "labels_pm": False, "zmin": 0.0, "zmax": 0.5, "rmax": 0.5, "samples": 1, "d": 2},
        {"labels01": True, "labels_pm": False, "zmin": np.nan, "zmax": np.nan, "rmax": np.nan, "samples": 1, "d": 2},
    ]
    merged = merge_domains(parts)
    assert np.isnan(merged["rmax"]) and np.isnan(merged["zmax"])
    # a NaN row is never taken for a row within the clip: it stays NaN, which every
    # enforced check then refuses
    X = clip_rows(np.array([[3.0, 4.0], [np.nan, 1.0]]), 1.0)
    assert np.isnan(X[1]).all() and np.linalg.norm(X[0]) <= 1.0


def test_the_relation_is_stated_on_the_cleaned_file():
    words = "one record replaced"
    assert stated_on(words, None) == words
    assert stated_on(words, Cleaning(by="Huang et al.")) == (
        "one record replaced; on the cleaned file (records with a missing or malformed field "
        "removed before the mechanism, as Huang et al. did)"
    )
