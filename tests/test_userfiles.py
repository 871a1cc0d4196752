"""Tests of the user-file datasets: ``load_dataset("libsvm" | "csv", options=...)``.

Every file is written by the test into tmp_path (the working directory, so
relative paths are exercised too). The validation table, which pins each error's
exact one-line message, is in tests/test_userfiles_validation.py; the ``data``-marked
round trip needs the real a9a.
"""

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from userfiles_helpers import (
    CSV,
    SVM,
    _in_tmp,  # noqa: F401 (autouse: each test runs in tmp_path)
    write,
)

from vfl.core.errors import ConfigError, DataError
from vfl.datasets import inspect_file, load_dataset, suggest_partition
from vfl.datasets.loaders import load_raw
from vfl.datasets.stage import fit_stage

SVM_TEST = b"1 1:1\n0 2:2\n"


CSV_TEST = b"y,income,city,age\nyes,1,Paris,30\nno,2,Berlin,40\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ LIBSVM


def test_libsvm_with_test_file():
    write("tr.svm", SVM)
    write("te.svm", SVM_TEST)
    data = load_dataset("libsvm", options={"path": "tr.svm", "test_path": "te.svm"})
    assert data.name == "libsvm" and sp.isspmatrix_csr(data.X_train)
    assert data.X_train.dtype == np.float64 and data.X_train.shape == (6, 4)
    np.testing.assert_array_equal(data.X_train.toarray()[2], [1, 0, 0, 2])
    np.testing.assert_array_equal(data.y_train, [1, -1, 1, -1, 1, -1])
    np.testing.assert_array_equal(data.X_test.toarray(), [[1, 0, 0, 0], [0, 2, 0, 0]])  # padded
    prov = data.provenance
    assert prov["parsing"]["indices"] == "one-based"
    assert prov["label_mapping"] == {"-1": 0.0, "+1": 1.0, "rule": "larger label is +1"}
    assert prov["options"] == {"path": "tr.svm", "test_path": "te.svm"}
    json.dumps(prov)


def test_checksums_and_provenance_record_every_file(tmp_path):
    write("tr.svm.gz", SVM)
    write("te.svm", SVM_TEST)
    data = load_dataset("libsvm", options={"path": "tr.svm.gz", "test_path": str(tmp_path / "te.svm")})
    raw = Path("tr.svm.gz").read_bytes()
    train, test = tmp_path / "tr.svm.gz", tmp_path / "te.svm"
    assert data.checksums == {str(train): sha(raw), str(test): sha(SVM_TEST)}
    assert data.provenance["files"]["train"] == {
        "path": str(train),
        "given": "tr.svm.gz",
        "size": len(raw),
        "sha256": sha(raw),
        "compression": "gzip",
        "content_sha256": sha(SVM),
        "content_size": len(SVM),
    }
    assert data.provenance["files"]["test"]["compression"] == "none"
    # A changed file shows in the checksums (and so in the manifest and the baseline cache key).
    write("te.svm", SVM_TEST.replace(b"2:2", b"2:3"))
    again = load_dataset("libsvm", options={"path": "tr.svm.gz", "test_path": "te.svm"})
    assert again.checksums[str(train)] == data.checksums[str(train)]
    assert again.checksums[str(test)] != data.checksums[str(test)]


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_compressed_files_parse_like_plain(suffix):
    write("tr.svm", SVM)
    write("tr.svm" + suffix, SVM)
    plain = load_dataset("libsvm", options={"path": "tr.svm", "test_fraction": 0.5})
    packed = load_dataset("libsvm", options={"path": "tr.svm" + suffix, "test_fraction": 0.5})
    assert (plain.X_train != packed.X_train).nnz == 0
    np.testing.assert_array_equal(plain.y_test, packed.y_test)
    record = packed.provenance["files"]["train"]
    assert record["content_sha256"] == sha(SVM) and record["sha256"] != sha(SVM)


def test_libsvm_zero_based_and_n_features():
    write("z.svm", b"1 0:1 2:1\n0 1:1\n1 0:2\n0 2:2\n")
    auto = load_dataset("libsvm", options={"path": "z.svm", "test_fraction": 0.5})
    assert auto.n_features == 3 and auto.provenance["parsing"]["indices"] == "zero-based"
    wide = load_dataset("libsvm", options={"path": "z.svm", "test_fraction": 0.5, "zero_based": True, "n_features": 10})
    assert wide.n_features == 10
    # "auto" is decided on both files together, as load_svmlight_files does.
    write("one.svm", SVM)
    write("zero.svm", b"1 0:1\n0 4:1\n")
    data = load_dataset("libsvm", options={"path": "one.svm", "test_path": "zero.svm"})
    assert data.provenance["parsing"]["indices"] == "zero-based" and data.n_features == 5
    np.testing.assert_array_equal(data.X_test.toarray()[0], [1, 0, 0, 0, 0])


def test_test_fraction_split_is_seeded_stratified_and_ordered():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(30), np.zeros(70)]
    lines = [f"{int(v)} 1:{i} 2:{rng.normal():.6f}\n" for i, v in enumerate(y, start=1)]
    write("s.svm", "".join(lines).encode())
    opts = {"path": "s.svm", "test_fraction": 0.2, "split_seed": 5}
    a = load_dataset("libsvm", options=opts)
    b = load_dataset("libsvm", options=opts)
    c = load_dataset("libsvm", options={**opts, "split_seed": 6})
    ids_train, ids_test = a.X_train[:, 0].toarray().ravel(), a.X_test[:, 0].toarray().ravel()
    assert a.n_test == 20 and a.n_train == 80
    assert np.sum(a.y_test == 1) == 6 and np.sum(a.y_train == 1) == 24  # stratified
    assert np.all(np.diff(ids_train) > 0) and np.all(np.diff(ids_test) > 0)  # file order
    assert sorted(np.r_[ids_train, ids_test]) == list(range(1, 101))
    np.testing.assert_array_equal(b.X_test.toarray(), a.X_test.toarray())
    assert not np.array_equal(c.X_test[:, 0].toarray(), a.X_test[:, 0].toarray())
    assert a.provenance["split"] == {
        "test": "held out from path",
        "test_fraction": 0.2,
        "split_seed": 5,
        "stratified_by_label": True,
        "row_order": "file order within each part",
        "n_train": 80,
        "n_test": 20,
    }


def test_unstratified_split_depends_only_on_positions():
    y = np.r_[np.ones(30), np.zeros(70)]
    lines = [f"{int(v)} 1:{i} 2:0.5\n" for i, v in enumerate(y, start=1)]
    write("s.svm", "".join(lines).encode())
    lines[3] = "0 1:4 2:0.5\n"  # one record's label replaced
    write("t.svm", "".join(lines).encode())
    opts = {"test_fraction": 0.2, "split_seed": 5, "n_features": 2, "zero_based": False}
    a = load_dataset("libsvm", options={"path": "s.svm", **opts, "stratify": False})
    b = load_dataset("libsvm", options={"path": "t.svm", **opts, "stratify": False})
    assert a.n_test == 20 and a.n_train == 80
    assert a.provenance["split"]["stratified_by_label"] is False
    # every record lands in the same part whatever the other records' labels
    np.testing.assert_array_equal(a.X_test.toarray(), b.X_test.toarray())
    np.testing.assert_array_equal(a.X_train.toarray(), b.X_train.toarray())
    # a run that claims a guarantee refuses the stratified split and names the key
    raw = load_raw("libsvm", options={"path": "s.svm", **opts})
    with pytest.raises(ConfigError, match="stratified test split .* set data.stratify = false"):
        fit_stage(raw, {}, private=True)
    fit_stage(load_raw("libsvm", options={"path": "s.svm", **opts, "stratify": False}), {}, private=True)


@pytest.mark.parametrize(
    "labels, positive, expected, rule",
    [
        ((0, 1), None, [-1, 1], "larger label is +1"),
        ((-1, 1), None, [-1, 1], "larger label is +1"),
        ((2, 4), 2, [1, -1], "label_positive = 2"),
        ((2, 4), "4", [-1, 1], "label_positive = '4'"),
    ],
)
def test_label_mapping(labels, positive, expected, rule):
    lo, hi = labels
    write("l.svm", f"{lo} 1:1\n{hi} 2:1\n{lo} 1:2\n{hi} 2:2\n".encode())
    opts = {"path": "l.svm", "test_path": "l.svm"}
    if positive is not None:
        opts["label_positive"] = positive
    data = load_dataset("libsvm", options=opts)
    np.testing.assert_array_equal(data.y_train, expected * 2)
    mapping = data.provenance["label_mapping"]
    assert mapping["rule"] == rule
    assert {mapping["-1"], mapping["+1"]} == {float(lo), float(hi)}


def test_normalize_rows_applies_to_user_files():
    write("tr.svm", SVM)
    opts = {"path": "tr.svm", "test_fraction": 0.5}
    with pytest.raises(
        DataError,
        match=r"libsvm: option normalize_rows moved to the "
        r"\[preprocessing\] section: set preprocessing.normalize_rows",
    ):
        load_dataset("libsvm", options={**opts, "normalize_rows": True})
    data = load_dataset("libsvm", options=opts, preprocessing={"normalize_rows": True})
    plain = load_dataset("libsvm", options=opts)
    assert sp.isspmatrix_csr(data.X_train) and data.n_features == plain.n_features == 4
    np.testing.assert_allclose(sp.linalg.norm(data.X_train, axis=1), 1.0)
    np.testing.assert_allclose(sp.linalg.norm(data.X_test, axis=1), 1.0)
    # each row is the file's row divided by its own norm
    norms = sp.linalg.norm(plain.X_train, axis=1)
    np.testing.assert_allclose(data.X_train.toarray(), plain.X_train.toarray() / norms[:, None])


# --------------------------------------------------------------------- CSV


def test_csv_categorical_onehot_with_test_file():
    write("a.csv", CSV)
    write("b.csv", CSV_TEST)
    # README: two labels other than {0, 1} / {-1, +1} need label_positive (issue 39)
    with pytest.raises(
        DataError,
        match=r"a.csv: labels 'no' and 'yes' are neither \{0, 1\} "
        r"nor \{-1, \+1\}: say which is \+1 with "
        r"label_positive = 'yes' \(or labels = \[negative, "
        r"positive\]\)$",
    ):
        load_dataset("csv", options={"path": "a.csv", "label": "y", "test_path": "b.csv"})
    data = load_dataset("csv", options={"path": "a.csv", "label": "y", "test_path": "b.csv", "label_positive": "yes"})
    assert isinstance(data.X_train, np.ndarray) and data.X_train.dtype == np.float64
    assert data.provenance["feature_names"] == ["age", "city=Oslo", "city=Paris", "city=Rome", "income"]
    np.testing.assert_array_equal(data.X_train[:2], [[30, 0, 1, 0, 1.5], [40, 0, 0, 1, 2]])
    # Test columns in another order; Berlin never seen: all-zero block.
    np.testing.assert_array_equal(data.X_test, [[30, 0, 1, 0, 1], [40, 0, 0, 0, 2]])
    np.testing.assert_array_equal(data.y_train, [1, -1, -1, 1, 1, -1])  # 'yes' > 'no'
    assert data.provenance["label_mapping"] == {"-1": "no", "+1": "yes", "rule": "label_positive = 'yes'"}
    assert data.provenance["parsing"]["categorical_columns"] == {"city": "detected"}
    # the vocabulary was read off the training rows (allowed outside a private run), and
    # the record says so
    encode = data.provenance["preprocessing"][0]
    assert encode["categorical"] == {"city": {"values": ["Oslo", "Paris", "Rome"], "source": "training_rows"}}
    json.dumps(data.provenance)
    # with the declared "other" bucket, Berlin gets the city=<other> column
    other = load_dataset(
        "csv",
        options={"path": "a.csv", "label": "y", "test_path": "b.csv", "label_positive": "yes"},
        preprocessing={"other": True},
    )
    assert other.provenance["feature_names"] == [
        "age",
        "city=Oslo",
        "city=Paris",
        "city=Rome",
        "city=<other>",
        "income",
    ]
    np.testing.assert_array_equal(other.X_test, [[30, 0, 1, 0, 0, 1], [40, 0, 0, 0, 1, 2]])


def test_csv_ordinal_features_declared_categorical_and_delimiter():
    content = CSV.replace(b",", b";")
    write("a.csv", content)
    write("b.csv", CSV_TEST.replace(b",", b";"))
    options = {
        "path": "a.csv",
        "label": "y",
        "test_path": "b.csv",
        "delimiter": ";",
        "features": ["income", "city", "age"],
        "categorical_columns": ["age"],
        "label_positive": "no",
    }
    with pytest.raises(
        DataError,
        match=r"csv: option categorical moved to the \[preprocessing\] "
        r"section: set preprocessing.encoding",
    ):
        load_dataset("csv", options={**options, "categorical": "ordinal"})
    data = load_dataset("csv", options=options, preprocessing={"encoding": "ordinal"})
    # ages 20..70 as categories '20' < '30' < ...; Berlin unseen -> 3 (one past Rome=2)
    np.testing.assert_array_equal(data.X_train[:2], [[1.5, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(data.X_test, [[1, 1, 1], [2, 3, 2]])
    np.testing.assert_array_equal(data.y_train, [-1, 1, 1, -1, -1, 1])
    assert data.provenance["parsing"]["categorical_columns"] == {"city": "detected", "age": "declared"}


def test_csv_categories_do_not_depend_on_split_seed():
    rows = "".join(f"{i % 2},{'rare' if i == 7 else 'c' + str(i % 3)}\n" for i in range(40))
    write("r.csv", ("y,kind\n" + rows).encode())

    def load(seed, **pre):
        return load_dataset(
            "csv", options={"path": "r.csv", "label": "y", "test_fraction": 0.25, "split_seed": seed}, preprocessing=pre
        )

    # a declared vocabulary fixes the width whatever rows the split puts in training
    declared = {"categories": {"kind": ["c0", "c1", "c2", "rare"]}}
    assert {load(s, **declared).n_features for s in range(6)} == {4}
    assert load(0, **declared).provenance["preprocessing"][0]["categorical"]["kind"]["source"] == "config"
    # without one (a run that claims no guarantee), the vocabulary is read off the whole
    # training file, held-out rows included, so the width does not depend on the split
    # either; the record says it came from the training rows
    fitted = {s: load(s) for s in range(6)}
    assert {d.n_features for d in fitted.values()} == {4}
    assert {d.provenance["preprocessing"][0]["categorical"]["kind"]["source"] for d in fitted.values()} == {
        "training_rows"
    }


def test_csv_booleans_tsv_and_numeric_labels():
    write("t.tsv", b"flag\tx\ty\nTrue\t1.5\t-1\nFalse\t2\t1\nTrue\t3\t-1\nFalse\t4\t1\n")
    data = load_dataset("csv", options={"path": "t.tsv", "label": "y", "delimiter": "\t", "test_path": "t.tsv"})
    np.testing.assert_array_equal(data.X_train[:, 0], [1, 0, 1, 0])
    np.testing.assert_array_equal(data.y_train, [-1, 1, -1, 1])


# ------------------------------------------------------------------ inspect


def test_inspect_libsvm_and_csv():
    write("tr.svm.bz2", SVM)
    info = inspect_file("tr.svm.bz2")
    assert info["format"] == "libsvm" and info["indices"] == "one-based"
    assert (info["n_rows"], info["n_features"], info["nnz"]) == (6, 4, 8)
    assert info["labels"] == [{"raw": 0.0, "value": -1, "count": 3}, {"raw": 1.0, "value": 1, "count": 3}]
    # the width and the index base are written out: a private run needs them given
    assert info["options"] == {"path": str(Path.cwd() / "tr.svm.bz2"), "n_features": 4, "zero_based": False}
    assert (info["min"], info["max"], info["binary_columns"]) == (0.0, 3.0, 1)
    assert info["file"]["compression"] == "bzip2"

    write("a.csv.gz", CSV)
    info = inspect_file("a.csv.gz", label="y")
    assert info["format"] == "csv" and info["n_features"] == 5
    assert [c["width"] for c in info["columns"]] == [1, 3, 1]
    assert info["categorical"] == {"city": 3}
    json.dumps(info)


def test_suggest_partition_respects_blocks():
    assert suggest_partition([1] * 123, 2) == [62, 61]
    assert suggest_partition([1] * 7, 3) == [2, 3, 2]
    assert suggest_partition([1, 3, 1], 2) == [4, 1]  # never cuts the 3-wide one-hot block
    assert suggest_partition([5, 1, 1, 1], 4) == [5, 1, 1, 1]
    with pytest.raises(DataError, match="cannot split 2 column"):
        suggest_partition([1, 1], 3)


# ------------------------------------------------------- round trip on a9a


@pytest.mark.data
def test_a9a_round_trip_as_csv_and_libsvm(data_dir, tmp_path):
    """a9a written by the test as CSV and as LIBSVM reads back identical."""

    reg = load_dataset("a9a", data_dir)
    names = [f"f{j + 1}" for j in range(reg.n_features)]
    for part, X, y in (("train", reg.X_train, reg.y_train), ("test", reg.X_test, reg.y_test)):
        frame = pd.DataFrame(X.toarray().astype(np.int8), columns=names)
        frame.insert(3, "y", y.astype(int))  # the label need not be first or last
        suffix = ".csv" if part == "train" else ".csv.gz"
        write(f"a9a-{part}{suffix}", frame.to_csv(index=False).encode())
        buffer = io.BytesIO()
        dump_svmlight_file(X, y, buffer, zero_based=False)
        write(f"a9a-{part}.svm" + (".xz" if part == "train" else ".gz"), buffer.getvalue())

    csv = load_dataset("csv", options={"path": "a9a-train.csv", "label": "y", "test_path": "a9a-test.csv.gz"})
    svm = load_dataset(
        "libsvm", options={"path": "a9a-train.svm.xz", "n_features": 123, "test_path": "a9a-test.svm.gz"}
    )
    for data in (csv, svm):
        dense = data.X_train.toarray() if sp.issparse(data.X_train) else data.X_train
        np.testing.assert_array_equal(dense, reg.X_train.toarray())
        dense = data.X_test.toarray() if sp.issparse(data.X_test) else data.X_test
        np.testing.assert_array_equal(dense, reg.X_test.toarray())
        np.testing.assert_array_equal(data.y_train, reg.y_train)
        np.testing.assert_array_equal(data.y_test, reg.y_test)
    assert sp.isspmatrix_csr(svm.X_train) and (svm.X_train != reg.X_train).nnz == 0
    assert csv.provenance["feature_names"] == names
    assert svm.provenance["files"]["train"]["compression"] == "xz"


def test_inspect_counts_the_missing_values_and_names_string_labels_to_set():
    """Issue 39: inspect reports how many rows miss a value (not only the first), and two
    labels other than {0, 1} / {-1, +1} are shown with the option that declares them."""
    write("m.csv", b"a,y\n1,three\n,eight\n2,three\n,eight\n")
    with pytest.raises(
        DataError,
        match=r"line 3, column 'a': missing value .*; 2 rows have a "
        r"missing value \(lines 3, 5\)$",
    ):
        inspect_file("m.csv", label="y")
    write("s.csv", b"a,y\n1,three\n0,eight\n2,three\n")
    info = inspect_file("s.csv", label="y")
    assert info["label_rule"] == ("not read as such: set label_positive = 'three' or labels = [negative, positive]")
    with pytest.raises(DataError, match="labels 'eight' and 'three' are neither"):
        load_dataset("csv", options={"path": "s.csv", "label": "y", "test_fraction": 0.3})
