"""Tests of vfl.datasets: paths, checksums and the registry loaders (a9a, adult).

Everything except the ``data``-marked tests runs on small files written to
tmp_path; those need the real files (``data_dir`` fixture). Gisette and the synthetic
data are in tests/test_datasets_synthetic.py.
"""

import bz2
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from vfl.core.errors import ConfigError, DataError
from vfl.datasets import (
    REGISTRY,
    Dataset,
    FileSpec,
    a9a,
    dataset_status,
    file_sha256,
    find_file,
    get_spec,
    load_dataset,
    resolve_data_dir,
    user_cache_dir,
    verify_dataset,
)
from vfl.datasets.schemas import ADULT_SCHEMA

# -------------------------------------------------------------------- helpers


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


A9A_TRAIN = b"+1 3:1 11:1 123:1 \n-1 1:1 5:1 \n-1 2:1 \n"


A9A_TEST = b"-1 4:1 122:1 \n+1 7:1 \n"


def write_a9a(directory, train=A9A_TRAIN, test=A9A_TEST):
    (directory / "a9a").write_bytes(train)
    (directory / "a9a.t").write_bytes(test)


ADULT_DATA = b"""\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K
38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, Black, Female, 0, 0, 40, ?, <=50K
53, Private, 234721, 11th, 7, Married-civ-spouse, Handlers-cleaners, Husband, Black, Male, 0, 0, 60, Cuba, >50K

"""


ADULT_TEST = b"""\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 30, Jamaica, <=50K.
44, Private, 160323, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 7688, 0, 70, United-States, >50K.
18, ?, 103497, Some-college, 10, Never-married, ?, Own-child, White, Female, 0, 0, 30, United-States, <=50K.

"""


def write_adult(directory, data=ADULT_DATA, test=ADULT_TEST):
    (directory / "adult.data").write_bytes(data)
    (directory / "adult.test").write_bytes(test)


# ---------------------------------------------------------------------- paths


def test_resolve_data_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("VFL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VFL_DATA_DIR", raising=False)
    assert resolve_data_dir() == tmp_path / "cache" / "data"

    monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_dir(str(tmp_path / "arg")) == tmp_path / "arg"


def test_resolve_data_dir_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir("rel") == tmp_path / "rel"


def test_user_cache_dir_env_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("VFL_CACHE_DIR", str(tmp_path))
    assert user_cache_dir() == tmp_path
    monkeypatch.delenv("VFL_CACHE_DIR")
    assert user_cache_dir().name.lower() == "vfl"


def test_find_file_prefers_plain_then_bz2(tmp_path):
    spec = FileSpec("toy.txt", "http://127.0.0.1/toy.txt", sha(b"x"))
    assert find_file(spec, tmp_path) is None
    (tmp_path / "toy.txt.bz2").write_bytes(bz2.compress(b"x"))
    assert find_file(spec, tmp_path) == tmp_path / "toy.txt.bz2"
    (tmp_path / "toy.txt").write_bytes(b"x")
    assert find_file(spec, tmp_path) == tmp_path / "toy.txt"
    assert find_file(spec, tmp_path / "nowhere") is None


def test_file_sha256_of_bz2_is_of_decompressed_content(tmp_path):
    content = b"hello\n" * 100_000  # several chunks
    (tmp_path / "f").write_bytes(content)
    (tmp_path / "f.bz2").write_bytes(bz2.compress(content))
    assert file_sha256(tmp_path / "f") == sha(content)
    assert file_sha256(tmp_path / "f.bz2") == sha(content)


def test_file_sha256_corrupt_bz2(tmp_path):
    (tmp_path / "f.bz2").write_bytes(b"this is not bzip2")
    with pytest.raises(DataError, match="not a valid bzip2"):
        file_sha256(tmp_path / "f.bz2")
    (tmp_path / "g.bz2").write_bytes(bz2.compress(b"abc" * 1000)[:-10])  # truncated
    with pytest.raises(DataError, match="g.bz2"):
        file_sha256(tmp_path / "g.bz2")


def test_get_spec_unknown_lists_names():
    assert get_spec("a9a").n_features == 123
    with pytest.raises(DataError, match="a9a, adult, gisette"):
        get_spec("mnist")
    with pytest.raises(DataError, match="generated"):
        get_spec("synthetic")


def test_registry_is_consistent():
    for name, spec in REGISTRY.items():
        assert spec.name == name
        for fs in spec.files:
            assert len(fs.sha256) == 64 and int(fs.sha256, 16) >= 0
            assert fs.url.startswith("https://") and fs.url.endswith("/" + fs.name)


def test_status_and_verify_without_hashing_missing(tmp_path):
    write_a9a(tmp_path)
    status = dataset_status("a9a", tmp_path)
    assert [s["present"] for s in status] == [True, True]
    assert dataset_status("adult", tmp_path)[0] == {"name": "adult.data", "present": False, "path": None}
    rows = verify_dataset("a9a", tmp_path)
    assert [r["ok"] for r in rows] == [False, False]  # made-up content
    assert rows[0]["actual"] == sha(A9A_TRAIN)
    assert rows[0]["expected"] == REGISTRY["a9a"].files[0].sha256
    assert verify_dataset("adult", tmp_path)[1]["path"] is None


# ------------------------------------------------------------------------ a9a


def test_a9a_missing_file_message(tmp_path):
    (tmp_path / "a9a").write_bytes(A9A_TRAIN)
    with pytest.raises(DataError) as err:
        load_dataset("a9a", tmp_path)
    msg = str(err.value)
    assert "a9a.t" in msg and str(tmp_path) in msg
    assert "vfl datasets fetch a9a" in msg and "--data-dir" in msg and "VFL_DATA_DIR" in msg
    assert "\n" not in msg
    # Every missing file is named at once, and a missing directory is pointed out.
    with pytest.raises(DataError, match="files a9a, a9a.t not found .*does not exist"):
        load_dataset("a9a", tmp_path / "nowhere")


def test_a9a_checksum_mismatch_names_both_digests(tmp_path):
    write_a9a(tmp_path)
    with pytest.raises(DataError) as err:
        load_dataset("a9a", tmp_path)
    msg = str(err.value)
    assert msg.startswith("a9a: sha256 mismatch in ")
    assert REGISTRY["a9a"].files[0].sha256 in msg and sha(A9A_TRAIN) in msg


def test_a9a_unverified_small_file_loads_sparse(tmp_path):
    write_a9a(tmp_path)
    data = load_dataset("a9a", tmp_path, verify=False)
    assert isinstance(data, Dataset)
    assert sp.isspmatrix_csr(data.X_train) and sp.isspmatrix_csr(data.X_test)
    assert data.X_train.dtype == np.float64
    assert data.X_train.shape == (3, 123) and data.X_test.shape == (2, 123)
    assert data.X_train[0, 122] == 1.0 and data.X_train[0, 2] == 1.0  # 1-based indices
    np.testing.assert_array_equal(data.y_train, [1.0, -1.0, -1.0])
    assert data.checksums == {"a9a": sha(A9A_TRAIN), "a9a.t": sha(A9A_TEST)}
    assert data.provenance["verified"] is False
    json.dumps(data.provenance)


def test_a9a_reads_bz2_copies(tmp_path):
    (tmp_path / "a9a.bz2").write_bytes(bz2.compress(A9A_TRAIN))
    (tmp_path / "a9a.t.bz2").write_bytes(bz2.compress(A9A_TEST))
    data = load_dataset("a9a", tmp_path, verify=False)
    assert data.X_train.nnz == 6
    assert data.provenance["files"]["a9a"].endswith("a9a.bz2")


@pytest.mark.parametrize(
    "train, reason",
    [
        (b"+1 3:1\nthis is not svmlight\n", "a9a: malformed svmlight file"),
        (b"+1 0:1 3:1\n", "a9a: malformed svmlight file"),  # LIBSVM is 1-based
        (b"+1 124:1\n", "a9a: malformed svmlight file"),  # wider than 123
        (b"+2 3:1\n-1 4:1\n", "labels must be -1 or \\+1"),
    ],
)
def test_a9a_malformed(tmp_path, train, reason):
    write_a9a(tmp_path, train=train)
    with pytest.raises(DataError, match=reason) as err:
        load_dataset("a9a", tmp_path, verify=False)
    assert "\n" not in str(err.value)


def test_unknown_option_lists_valid_ones(tmp_path):
    with pytest.raises(DataError, match=r"unknown option\(s\) scale; valid options: tile"):
        load_dataset("a9a", tmp_path, options={"scale": True})
    with pytest.raises(
        DataError,
        match=r"unknown option\(s\) bogus; valid options: missing, "
        r"cleaned_by, fill$",
    ):
        load_dataset("adult", tmp_path, options={"bogus": 1})
    with pytest.raises(DataError, match=r"unknown option\(s\) bogus; valid options: \(none\)"):
        load_dataset("gisette", tmp_path, options={"bogus": 1})
    # options that moved to the [preprocessing] section name their new key
    for option, key in (
        ("normalize_rows", "preprocessing.normalize_rows"),
        ("encoding", "preprocessing.encoding"),
        ("scaling", "preprocessing.scaling"),
        ("row_norm", "preprocessing.normalize_rows or preprocessing.row_clip"),
        ("fit", "preprocessing.bounds"),
    ):
        with pytest.raises(
            DataError,
            match=rf"adult: option {option} moved to the "
            rf"\[preprocessing\] section: set {key}",
        ):
            load_dataset("adult", tmp_path, options={option: "x"})
    write_a9a(tmp_path)
    with pytest.raises(ConfigError, match="preprocessing.normalize_rows must be true or false"):
        load_dataset("a9a", tmp_path, verify=False, preprocessing={"normalize_rows": "yes"})


def test_normalize_rows_sparse(tmp_path):
    write_a9a(tmp_path)
    with pytest.raises(DataError, match="option normalize_rows moved to the"):
        load_dataset("a9a", tmp_path, verify=False, options={"normalize_rows": True})
    data = load_dataset("a9a", tmp_path, verify=False, preprocessing={"normalize_rows": True})
    assert data.n_features == 123  # no intercept outside the vertical setting
    norms = np.sqrt(np.asarray(data.X_train.multiply(data.X_train).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0)
    assert sp.isspmatrix_csr(data.X_train)
    steps = [s["step"] for s in data.provenance["preprocessing"]]
    assert steps == ["encode", "scale", "normalize_rows"]
    assert data.provenance["preprocessing"][-1]["source"] == "per_record"


# ---------------------------------------------------------------------- adult


def test_adult_small_file_preprocessing(tmp_path):
    write_adult(tmp_path)
    data = load_dataset("adult", tmp_path, verify=False)
    # One train and one test row have '?'.
    assert data.X_train.shape[0] == 3 and data.X_test.shape[0] == 2
    np.testing.assert_array_equal(data.y_train, [-1.0, 1.0, 1.0])
    np.testing.assert_array_equal(data.y_test, [-1.0, 1.0])
    names = data.provenance["feature_names"]
    assert "fnlwgt" not in names and names[:5] == [
        "age",
        "education-num",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
    ]
    # the width comes from the published schema, not from the three records
    assert data.n_features == len(names) == 104
    # min/max to [0, 1] within the declared ranges (age 17..90), not the training min/max
    age = data.X_train[:, 0]
    np.testing.assert_allclose(age, (np.array([39.0, 50.0, 53.0]) - 17) / (90 - 17))
    np.testing.assert_allclose(data.X_test[:, 0], (np.array([25.0, 44.0]) - 17) / (90 - 17))
    np.testing.assert_allclose(data.X_test[1, 2], 7688 / 99_999)  # capital-gain
    # Jamaica is a documented value: it has its own column although training never saw it
    country = [j for j, n in enumerate(names) if n.startswith("native-country=")]
    assert len(country) == 41
    assert data.X_test[0, names.index("native-country=Jamaica")] == 1.0
    assert data.X_test[0, country].sum() == 1 and data.X_test[1, country].sum() == 1
    # how many records were dropped depends on the records: diagnostic only
    repairs = data.provenance["diagnostic"]["repairs"]
    assert (repairs["train"]["records_dropped"], repairs["test"]["records_dropped"]) == (1, 1)
    assert "rows_dropped" not in data.provenance and data.provenance["missing"] == "drop"
    encode, scale = data.provenance["preprocessing"]
    assert {c["source"] for c in encode["categorical"].values()} == {"schema"}
    assert scale["source"] == "schema" and scale["bounds"][0] == [17.0, 90.0]

    # a value outside the schema -> all-zero block (never a new column); an age above the
    # declared range is clipped to it
    write_adult(tmp_path, test=ADULT_TEST.replace(b"Jamaica", b"Atlantis").replace(b"44, Private", b"120, Private"))
    odd = load_dataset("adult", tmp_path, verify=False)
    assert odd.n_features == 104
    assert odd.X_test[0, country].sum() == 0 and odd.X_test[1, 0] == 1.0
    np.testing.assert_array_equal(odd.X_train, data.X_train)
    # with the declared "other" bucket, the unseen value gets that column instead
    other = load_dataset("adult", tmp_path, verify=False, preprocessing={"other": True})
    onames = other.provenance["feature_names"]
    assert other.n_features == 104 + 8
    assert other.X_test[0, onames.index("native-country=<other>")] == 1.0


def test_adult_ordinal_and_normalized(tmp_path):
    write_adult(tmp_path)
    spec = {"encoding": "ordinal", "scaling": "minmax", "range": [-1, 1]}
    plain = load_dataset("adult", tmp_path, verify=False, preprocessing=spec)
    assert plain.n_features == 14 and plain.provenance["feature_names"][2] == "fnlwgt"
    assert plain.X_train.min() >= -1.0 and plain.X_train.max() <= 1.0
    # workclass 'State-gov' is code 6 of the 8 documented (sorted) values: 6/7 of the way
    workclass = sorted(ADULT_SCHEMA.column("workclass").values)
    assert workclass.index("State-gov") == 6 and len(workclass) == 8
    np.testing.assert_allclose(plain.X_train[0, 1], -1 + 2 * 6 / 7)
    np.testing.assert_allclose(plain.X_train[:, 0], -1 + 2 * (np.array([39, 50, 53]) - 17) / 73)

    data = load_dataset("adult", tmp_path, verify=False, preprocessing={**spec, "normalize_rows": True})
    assert data.n_features == 14
    np.testing.assert_allclose(np.linalg.norm(data.X_train, axis=1), 1.0)
    # each row is the scaled row divided by its own norm
    np.testing.assert_allclose(data.X_train, plain.X_train / np.linalg.norm(plain.X_train, axis=1, keepdims=True))
    assert data.provenance["options"] == {}
    assert data.provenance["preprocessing"][-1] == {
        "step": "normalize_rows",
        "norm": 1.0,
        "unit": "row",
        "source": "per_record",
    }
    with pytest.raises(ConfigError, match="preprocessing.encoding = 'binary' is not one of"):
        load_dataset("adult", tmp_path, verify=False, preprocessing={"encoding": "binary"})
    with pytest.raises(DataError, match="option encoding moved to the"):
        load_dataset("adult", tmp_path, verify=False, options={"encoding": "ordinal"})


def test_adult_malformed(tmp_path):
    write_adult(tmp_path, data=ADULT_DATA.replace(b"39, State-gov", b"old, State-gov"))
    with pytest.raises(DataError, match="adult.data: malformed"):
        load_dataset("adult", tmp_path, verify=False)
    write_adult(tmp_path, data=ADULT_DATA.replace(b", <=50K\n", b", maybe\n", 1))
    with pytest.raises(DataError, match="unexpected income"):
        load_dataset("adult", tmp_path, verify=False)
    write_adult(tmp_path, data=b"39, State-gov, 77516, Bachelors\n")
    with pytest.raises(DataError, match="adult.data: record 1 has fewer than 15 fields"):
        load_dataset("adult", tmp_path, verify=False)
    write_adult(tmp_path, test=ADULT_TEST.replace(b"Jamaica", b""))
    with pytest.raises(DataError, match="adult.test: record 1 has an empty native-country"):
        load_dataset("adult", tmp_path, verify=False)


# ------------------------------------------------------------------ real data


@pytest.mark.data
def test_real_a9a(data_dir):
    data = load_dataset("a9a", data_dir)
    assert sp.isspmatrix_csr(data.X_train) and data.X_train.dtype == np.float64
    assert data.X_train.shape == (32561, 123) and data.X_test.shape == (16281, 123)
    assert data.X_train.nnz == 451_592 and data.X_test.nnz == 225_731
    assert (np.sum(data.y_train == -1), np.sum(data.y_train == 1)) == (24_720, 7_841)
    assert (np.sum(data.y_test == -1), np.sum(data.y_test == 1)) == (12_435, 3_846)
    assert data.checksums == {f.name: f.sha256 for f in REGISTRY["a9a"].files}
    assert data.X_train[:, 122].sum() == 1 and data.X_test[:, 122].sum() == 0
    assert data.provenance["verified"] is True
    json.dumps(data.provenance)


def _independent_adult(path, skiprows):
    columns = [
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
    ]
    with bz2.open(path) if str(path).endswith(".bz2") else open(path, "rb") as fh:
        frame = pd.read_csv(fh, header=None, names=columns, skipinitialspace=True, skiprows=skiprows)
    return frame, frame.replace("?", np.nan).notna().all(axis=1).to_numpy()


@pytest.mark.data
def test_real_adult_matches_independent_pandas(data_dir):
    data = load_dataset("adult", data_dir)
    train, keep_train = _independent_adult(find_file(REGISTRY["adult"].files[0], data_dir), 0)
    test, keep_test = _independent_adult(find_file(REGISTRY["adult"].files[1], data_dir), 1)
    train, test = train[keep_train], test[keep_test]
    assert data.X_train.shape[0] == len(train) == 30_162
    assert data.X_test.shape[0] == len(test) == 15_060
    assert np.sum(data.y_train == 1) == np.sum(train["income"] == ">50K")
    assert np.sum(data.y_test == 1) == np.sum(test["income"] == ">50K.")
    categorical = [
        "workclass",
        "education",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "native-country",
    ]
    # the width is the published schema's: every documented value, seen in training or not
    documented = {c: set(ADULT_SCHEMA.column(c).values) for c in categorical}
    assert data.n_features == 5 + sum(len(v) for v in documented.values()) == 104
    assert 5 + sum(train[c].nunique() for c in categorical) == 103
    for c in categorical:  # every value in the complete records is documented
        assert set(train[c]) <= documented[c] and set(test[c]) <= documented[c]
    # the one documented value no complete training record has: an all-zero column
    names = data.provenance["feature_names"]
    unseen = [names[j] for j in np.flatnonzero(data.X_train.sum(axis=0) == 0)]
    assert unseen == ["workclass=Never-worked"]
    assert data.X_train.min() == 0.0 and data.X_train.max() == 1.0
    np.testing.assert_allclose(data.X_train[:, 5:].sum(axis=1), 8.0)  # one hot per category
    np.testing.assert_allclose(data.X_test[:, 5:].sum(axis=1), 8.0)
    hours = train["hours-per-week"].to_numpy(float)
    np.testing.assert_allclose(data.X_train[:, 4], (hours - 1) / (99 - 1))  # declared range
    age = test["age"].to_numpy(float)
    np.testing.assert_allclose(data.X_test[:, 0], (np.clip(age, 17, 90) - 17) / (90 - 17))
    assert data.checksums == {f.name: f.sha256 for f in REGISTRY["adult"].files}


@pytest.mark.data
def test_real_a9a_and_adult_labels_agree(data_dir):
    # a9a row i is adult.data row i: the labels of complete rows must agree.
    a9a = load_dataset("a9a", data_dir)
    adult = load_dataset("adult", data_dir)
    _, keep = _independent_adult(find_file(REGISTRY["adult"].files[0], data_dir), 0)
    np.testing.assert_array_equal(a9a.y_train[keep], adult.y_train)


@pytest.mark.data
def test_real_status_and_verify(data_dir):
    for name in ("a9a", "adult"):
        assert all(s["present"] for s in dataset_status(name, data_dir))
        assert all(r["ok"] for r in verify_dataset(name, data_dir))


def test_parsed_arrays_are_cached_by_the_stored_file_and_still_verified(tmp_path, monkeypatch):
    """The second load reads the cached arrays (bit-identical, no parse), a changed file is
    parsed afresh, a damaged entry is replaced, and verification still applies to a hit."""

    monkeypatch.setenv("VFL_CACHE_DIR", str(tmp_path / "cache"))
    write_a9a(tmp_path)
    first = load_dataset("a9a", tmp_path, verify=False)
    entries = sorted((tmp_path / "cache" / "parsed").glob("*.npz"))
    assert len(entries) == 2  # a9a and a9a.t

    def no_parse(*args):
        raise AssertionError("parsed again instead of read from the cache")

    monkeypatch.setattr(a9a, "_parse_svmlight", no_parse)
    again = load_dataset("a9a", tmp_path, verify=False)
    assert (again.X_train != first.X_train).nnz == 0 and again.X_train.shape == (3, 123)
    np.testing.assert_array_equal(again.y_test, first.y_test)
    assert again.checksums == first.checksums
    # a hit is verified like a read: the content digest recorded at parse time is compared
    with pytest.raises(DataError, match="a9a: sha256 mismatch in "):
        load_dataset("a9a", tmp_path)
    monkeypatch.undo()
    monkeypatch.setenv("VFL_CACHE_DIR", str(tmp_path / "cache"))
    entries[0].write_bytes(b"not an npz")  # damaged: parsed again and replaced
    write_a9a(tmp_path, train=A9A_TRAIN + b"-1 5:1\n")  # changed: a new key
    changed = load_dataset("a9a", tmp_path, verify=False)
    assert changed.X_train.shape == (4, 123)
    assert load_dataset("a9a", tmp_path, verify=False).X_train.shape == (4, 123)
