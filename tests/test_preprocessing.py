"""The preprocessing stage: closed forms of each step, sources, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import assert_one_line_error, invoke

from vfl.core.errors import ConfigError
from vfl.core.preprocessing import (
    ColumnSpec,
    Encoder,
    RawTable,
    RowSteps,
    Scaler,
    Schema,
    clip_rows,
    normalize_rows,
)
from vfl.datasets.dataset import RawDataset
from vfl.datasets.loaders import load_raw
from vfl.datasets.schemas import ADULT_SCHEMA
from vfl.datasets.stage import check_spec, fit_stage


def _table(n=6):
    rng = np.random.default_rng(0)
    num = np.column_stack([rng.uniform(0, 10, n), rng.uniform(-5, 5, n)])
    cat = np.array([["a"], ["b"], ["a"], ["c"], ["b"], ["a"]][:n], dtype=object)
    return RawTable(names=("x", "city", "z"), kinds=("numeric", "categorical", "numeric"), numeric=num, categorical=cat)


def _raw(schema=None, defaults=None):
    t = _table()
    y = np.array([1.0, -1, 1, -1, 1, -1])
    return RawDataset(name="toy", train=t, y_train=y, test=t, y_test=y, schema=schema, defaults=defaults or {})


def test_onehot_in_place_with_other_bucket_and_fixed_width():
    t = _table()
    enc = Encoder(
        layout=t.names,
        kinds=dict(zip(t.names, t.kinds)),
        vocabularies={"city": ("a", "b")},
        encoding="onehot",
        other=True,
    )
    X = enc.transform(t)
    assert enc.feature_names == ["x", "city=a", "city=b", "city=<other>", "z"]
    assert X.shape == (6, 5)
    np.testing.assert_array_equal(X[:, 1:4], [[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(X[:, 0], t.numeric[:, 0])
    # without the bucket the unseen value is an all-zero block; the width never depends on data
    enc0 = Encoder(
        layout=t.names, kinds=dict(zip(t.names, t.kinds)), vocabularies={"city": ("a", "b")}, encoding="onehot"
    )
    assert enc0.transform(t).shape == (6, 4) and enc0.transform(t)[3, 1:3].sum() == 0
    ordinal = Encoder(
        layout=t.names, kinds=dict(zip(t.names, t.kinds)), vocabularies={"city": ("a", "b")}, encoding="ordinal"
    )
    np.testing.assert_array_equal(ordinal.transform(t)[:, 1], [0, 1, 0, 2, 1, 0])


def test_codes_read_each_value_as_its_text_without_trailing_nuls():
    """A value's code is its place in the vocabulary, looked up as numpy's ``astype(str)``
    reads it (the codes before the lookup was hashed): trailing NULs dropped, a stray
    non-str value by its text, anything else outside (the ordinal code len(values))."""
    values = np.array(["a", "b\x00", "b\x00c", 1, None, "", "a "], dtype=object)
    t = RawTable(names=("c",), kinds=("categorical",), numeric=np.zeros((7, 0)), categorical=values[:, None])
    enc = Encoder(layout=("c",), kinds={"c": "categorical"}, vocabularies={"c": ("a", "b", "1", "None")})
    expected = [0, 1, 4, 2, 3, 4, 4]
    np.testing.assert_array_equal(enc.codes(t, "c"), expected)
    distinct, inverse = np.unique(values.astype(str), return_inverse=True)  # the former reading
    lookup = {"a": 0, "b": 1, "1": 2, "None": 3}
    np.testing.assert_array_equal(np.array([lookup.get(u, 4) for u in distinct])[inverse], expected)


def test_minmax_clips_and_maps_to_range_closed_form():
    X = np.array([[-5.0, 2.0], [0.0, 4.0], [10.0, 100.0]])
    s = Scaler("minmax", np.array([0, 1]), lo=np.array([0.0, 2.0]), hi=np.array([5.0, 6.0]), lower=-1.0, upper=1.0)
    np.testing.assert_allclose(s.transform(X), [[-1, -1], [-1, 0], [1, 1]])
    c = Scaler("clip", np.array([0]), lo=np.array([-1.0]), hi=np.array([1.0]))
    np.testing.assert_array_equal(c.transform(X)[:, 0], [-1, 0, 1])
    st = Scaler("standard", np.array([1]), mean=np.array([2.0]), scale=np.array([2.0]))
    np.testing.assert_allclose(st.transform(X)[:, 1], [0, 1, 49])


def test_sparse_stays_sparse_when_zero_maps_to_zero():
    X = sp.csr_matrix(np.array([[0.0, 3.0], [2.0, 0.0]]))
    s = Scaler("minmax", np.array([0, 1]), lo=np.zeros(2), hi=np.array([4.0, 6.0]))
    out = s.transform(X)
    assert sp.issparse(out)
    np.testing.assert_allclose(out.toarray(), [[0, 0.5], [0.5, 0]])


@pytest.mark.parametrize("sparse", [False, True])
def test_row_steps(sparse):
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    Xs = sp.csr_matrix(X) if sparse else X
    dense = (lambda A: A.toarray()) if sparse else np.asarray
    clipped = dense(clip_rows(Xs, 1.0))
    assert np.linalg.norm(clipped[0]) <= 1.0 and np.allclose(clipped[0], [0.6, 0.8])
    np.testing.assert_array_equal(clipped[1:], X[1:])  # rows inside the ball untouched
    unit = dense(normalize_rows(Xs))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), [1, 1, 0])
    with_one = dense(RowSteps(intercept=True, normalize=True).apply(Xs))
    np.testing.assert_allclose(with_one[2], [0, 0, 1])
    assert RowSteps(row_clip=2.0).bound == 2.0 and RowSteps(normalize=True).bound == 1.0


def test_sources_schema_config_and_training_rows():
    schema = Schema(
        "toy",
        (
            ColumnSpec("x", "numeric", bounds=(0.0, 10.0)),
            ColumnSpec("city", "categorical", values=("a", "b", "c", "d")),
            ColumnSpec("z", "numeric"),
        ),
        citation="test",
    )
    raw = _raw(schema)
    stage = fit_stage(raw, {"scaling": "minmax", "bounds": {"z": [-5, 5]}}, private=True)
    steps = stage.describe("row")
    assert steps[0]["categorical"]["city"] == {"values": ["a", "b", "c", "d"], "source": "schema"}
    assert steps[1]["source"] == "config+schema" and steps[1]["bounds"] == [[0, 10], [-5, 5]]
    # non-private: what the schema does not give is fitted on the training rows, and says so
    loose = fit_stage(raw, {"scaling": "minmax"}, private=False)
    assert loose.describe("row")[1]["source"] == "schema+training_rows"


@pytest.mark.parametrize(
    "spec,key",
    [
        ({"scaling": "minmax"}, "preprocessing.bounds"),
        ({"scaling": "standard"}, "preprocessing.stats"),
        ({}, "preprocessing.categories.city"),
    ],
)
def test_private_run_refuses_parameters_from_training_rows(spec, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as err:
        fit_stage(_raw(), {**spec, "categories": {"city": ["a", "b", "c"]}} if spec else spec, private=True)
    assert "claims a guarantee" in str(err.value)


def test_loader_level_fitting_is_refused_in_a_private_run():
    raw = _raw()
    fitted = RawDataset(**{**raw.__dict__, "fitted": (("the width is read off the file", "data.n_features"),)})
    with pytest.raises(ConfigError, match="data.n_features"):
        fit_stage(fitted, {"categories": {"city": ["a", "b", "c"]}}, private=True)


@pytest.mark.parametrize(
    "table,message",
    [
        ({"bounds": [1, 1], "scaling": "minmax"}, "preprocessing.bounds: bounds need lower < upper"),
        ({"bounds": [2, 1], "scaling": "clip"}, "lower < upper"),
        ({"scaling": "standard", "stats": {"x": [0, 0]}}, "scale must be > 0"),
        ({"categories": {"city": ["a", "a"]}}, "value 'a' is listed twice"),
        ({"categories": {"city": []}}, "values is empty"),
        ({"range": [0, 1]}, "preprocessing.range applies to scaling = 'minmax'"),
        ({"scaling": "log"}, "preprocessing.scaling = 'log' is not one of"),
        ({"row_clip": -1}, "preprocessing.row_clip must be a finite number > 0"),
        ({"normalise_rows": True}, "unknown key 'preprocessing.normalise_rows'"),
    ],
)
def test_bad_specs_name_the_key(table, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_spec(table)


def test_schema_rejects_duplicates_and_zero_ranges():
    with pytest.raises(ValueError, match="declared twice"):
        Schema("s", (ColumnSpec("a", "numeric"), ColumnSpec("a", "numeric")), citation="")
    with pytest.raises(ValueError, match="lower < upper"):
        ColumnSpec("a", "numeric", bounds=(3.0, 3.0))
    with pytest.raises(ValueError, match="listed twice"):
        ColumnSpec("c", "categorical", values=("x", "x"))


def test_adult_schema_covers_adult_data(data_dir):
    """Every category of adult.data is a documented value: no record falls in 'other'."""

    raw = load_raw("adult", data_dir)
    for col in ADULT_SCHEMA.columns:
        values = set(raw.train.column(col.name).tolist()) | set(raw.test.column(col.name).tolist())
        if col.kind == "categorical":
            assert values <= set(col.values), col.name
        else:
            lo, hi = col.bounds
            assert min(values) >= lo and max(values) <= hi, col.name


OLD_KEYS = [
    (
        "[partition]\nnormalize_rows = true",
        "partition.normalize_rows moved to the [preprocessing] section: set preprocessing.normalize_rows",
    ),
    ("[partition]\nintercept = false", "set preprocessing.intercept"),
]


@pytest.mark.parametrize("extra,message", OLD_KEYS)
def test_moved_keys_point_to_preprocessing(tmp_path, extra, message):
    base = '[data]\ndataset = "synthetic"\noptions = { n_train = 50, n_test = 20, n_features = 4, seed = 1 }\n'
    cfg = tmp_path / "c.toml"
    cfg.write_text(base + extra.replace("[partition]", "[partition]\ncolumns = [2, 2]") + "\n")
    result = invoke("run", "--config", cfg, "--out", tmp_path / "o")
    assert_one_line_error(result, message)
    assert not (tmp_path / "o").exists()


def test_private_run_with_fitted_scaling_stops_before_writing(tmp_path):
    csv = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    rows = ["a,b,c,d,label"] + [",".join(f"{v:.3f}" for v in rng.normal(size=4)) + f",{i % 2}" for i in range(60)]
    csv.write_text("\n".join(rows) + "\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'[data]\ndataset = "csv"\npath = "{csv}"\nlabel = "label"\n'
        "labels = [0, 1]\ntest_fraction = 0.25\nstratify = false\n"
        '[preprocessing]\nscaling = "standard"\nnormalize_rows = true\n'
        '[partition]\ncolumns = [2, 2]\n[solver]\nname = "private_stacking"\n'
        "epochs = 1\n[privacy]\nepsilon = 1.0\ndelta = 1e-5\n"
    )
    out = tmp_path / "o"
    result = invoke("run", "--config", cfg, "--out", out)
    assert_one_line_error(result, "set preprocessing.stats")
    assert not out.exists()
