import numpy as np
import pytest
import scipy.sparse as sp

from vfl.core.errors import ConfigError, PartitionError
from vfl.core.preprocessing import RawTable, RowSteps, add_intercept
from vfl.datasets.dataset import RawDataset
from vfl.experiments.config import config_from_dict
from vfl.experiments.config_sections import PartitionConfig
from vfl.experiments.distribution import fit_config_stage
from vfl.experiments.partition import _csr_range, make_partition
from vfl.experiments.registry import get_solver


def test_columns_split_a9a_style():
    p = make_partition(PartitionConfig(columns=[66, 57]), 123)
    assert [idx.tolist() for idx in p.parties] == [list(range(66)), list(range(66, 123))]
    desc = p.describe()
    assert desc[0] == {"party": 1, "n_columns": 66, "column_ranges": [[0, 66]], "intercept": True, "active": True}
    assert desc[1]["column_ranges"] == [[66, 123]] and not desc[1]["intercept"]


def test_ranges_and_indices_are_equivalent():
    a = make_partition(PartitionConfig(ranges=[[0, 3], [3, 5]]), 5)
    b = make_partition(PartitionConfig(indices=[[0, 1, 2], [3, 4]]), 5)
    assert all(np.array_equal(x, y) for x, y in zip(a.parties, b.parties))


def test_noncontiguous_indices_described_as_runs():
    p = make_partition(PartitionConfig(indices=[[0, 1, 5, 6, 7], [2, 3, 4]]), 8)
    assert p.describe()[0]["column_ranges"] == [[0, 2], [5, 8]]


@pytest.mark.parametrize("sparse", [False, True])
def test_split_blocks_and_intercept(sparse):
    X = np.arange(20.0).reshape(4, 5)
    Xs = sp.csr_matrix(X) if sparse else X
    p = make_partition(PartitionConfig(indices=[[4, 0], [1, 2, 3]]), 5, rows=RowSteps(intercept=True))
    blocks = p.split(Xs)
    dense = [b.toarray() if sparse else b for b in blocks]
    assert np.array_equal(dense[0], np.c_[X[:, [4, 0]], np.ones(4)])
    assert np.array_equal(dense[1], X[:, 1:4])
    assert sp.issparse(blocks[0]) == sparse
    joined = p.join(Xs)
    assert joined.shape == (4, 6)


def test_no_intercept():
    p = make_partition(PartitionConfig(columns=[2, 3]), 5, rows=RowSteps(intercept=False))
    assert p.split(np.ones((3, 5)))[0].shape == (3, 2)
    assert not p.intercept and not p.describe()[0]["intercept"]
    # the default rows keep the old convention: party 1 gets the intercept
    assert make_partition(PartitionConfig(columns=[2, 3]), 5).split(np.ones((3, 5)))[0].shape == (3, 3)


@pytest.mark.parametrize(
    "spec, n, message",
    [
        (PartitionConfig(columns=[66, 0]), 123, "party 2 has 0 columns"),
        (PartitionConfig(columns=[66, 60]), 123, "sum to 126 but the dataset has 123 features"),
        (PartitionConfig(columns=[60, 57]), 123, "columns 117, 118, 119, 120, 121, ... (6 in all) belong to no party"),
        (PartitionConfig(ranges=[[0, 70], [66, 123]]), 123, "party 2 overlaps party 1 at columns 66, 67, 68, 69"),
        (PartitionConfig(ranges=[[0, 66], [66, 130]]), 123, "party 2: range [66, 130) is outside [0, 123)"),
        (PartitionConfig(ranges=[[0, 66], [66, 66], [66, 123]]), 123, "party 2: range [66, 66) is empty"),
        (PartitionConfig(ranges=[[0, 66, 1], [66, 123]]), 123, "party 1: a range is [start, stop)"),
        (PartitionConfig(indices=[[0, 1], [2, 9]]), 5, "party 2: column indices 9 are outside [0, 5)"),
        (PartitionConfig(indices=[[0, 1, 1], [2, 3, 4]]), 5, "party 1: column indices 1 are listed twice"),
        (PartitionConfig(indices=[[0, 1], []]), 5, "party 2 has no columns"),
    ],
)
def test_impossible_partitions_name_the_party(spec, n, message):
    with pytest.raises(PartitionError) as exc:
        make_partition(spec, n)
    assert message in str(exc.value)


def test_allow_unused():
    p = make_partition(PartitionConfig(columns=[2, 2], allow_unused=True), 5)
    assert sum(idx.size for idx in p.parties) == 4


def test_split_checks_width():
    p = make_partition(PartitionConfig(columns=[2, 3]), 5)
    with pytest.raises(PartitionError, match="data has 4 features"):
        p.split(np.ones((2, 4)))


@pytest.mark.parametrize("sparse", [False, True])
def test_normalized_rows_per_party(sparse):
    X = np.array([[3.0, 4.0, 0.0, 2.0], [0.0, 0.0, 1.0, 0.0]])
    p = make_partition(PartitionConfig(columns=[2, 2]), 4, rows=RowSteps(intercept=True, normalize=True))
    assert p.normalize_rows and p.intercept
    blocks = p.split(sp.csr_matrix(X) if sparse else X)
    dense = [b.toarray() if sparse else b for b in blocks]
    np.testing.assert_allclose(dense[0], [[3 / np.sqrt(26), 4 / np.sqrt(26), 1 / np.sqrt(26)], [0, 0, 1]])
    np.testing.assert_allclose(dense[1], [[0, 1], [1, 0]])  # party 2's rows: (0, 2) and (1, 0)
    assert p.describe()[0]["rows_normalized"] is True


@pytest.mark.parametrize("sparse", [False, True])
def test_clipped_rows_per_party(sparse):
    X = np.array([[3.0, 4.0, 0.0, 0.5], [0.3, 0.4, 6.0, 8.0]])
    p = make_partition(PartitionConfig(columns=[2, 2]), 4, rows=RowSteps(row_clip=1.0))
    dense = [b.toarray() if sparse else b for b in p.split(sp.csr_matrix(X) if sparse else X)]
    # each party's block of a row is clipped on its own: (3, 4) -> norm 1, (0.3, 0.4) kept
    np.testing.assert_allclose(dense[0], [[0.6, 0.8], [0.3, 0.4]])
    np.testing.assert_allclose(dense[1], [[0.0, 0.5], [0.6, 0.8]])
    assert all(np.linalg.norm(b, axis=1).max() <= 1.0 for b in dense)
    assert p.describe()[1]["row_clip"] == 1.0 and not p.intercept


def test_normalize_rows_from_config():
    t = RawTable.from_matrix(np.ones((2, 123)))
    tiny = RawDataset(name="tiny", train=t, y_train=np.array([1.0, -1.0]), test=t, y_test=np.array([1.0, -1.0]))

    def partition(raw):
        config = config_from_dict(raw)
        stage = fit_config_stage(config, tiny, get_solver(config.solver.name))
        return make_partition(config.partition, 123, rows=stage.rows)

    raw = {"data": {"dataset": "a9a"}, "partition": {"columns": [66, 57]}, "preprocessing": {"normalize_rows": True}}
    p = partition(raw)
    assert p.normalize_rows is True and p.intercept is True  # vertical default intercept
    assert partition({**raw, "preprocessing": {}}).normalize_rows is False
    assert partition({**raw, "preprocessing": {"intercept": False}}).intercept is False
    with pytest.raises(ConfigError, match="preprocessing.normalize_rows must be true or false"):
        config_from_dict({**raw, "preprocessing": {"normalize_rows": "yes"}})
    with pytest.raises(
        ConfigError,
        match=r"partition.normalize_rows moved to the \[preprocessing\] "
        "section: set preprocessing.normalize_rows",
    ):
        config_from_dict({**raw, "partition": {"columns": [66, 57], "normalize_rows": True}})


@pytest.mark.parametrize("chunk", [1, 7, 64, 10_000])
def test_a_block_cut_in_chunks_of_rows_is_scipys_slice_and_intercept(chunk):
    rng = np.random.default_rng(chunk)
    X = sp.random(301, 25, density=0.2, format="csr", random_state=chunk)
    X.data[::5] = 0.0  # explicit zeros stay
    X = X[rng.permutation(301)]
    for start, stop, ones in ((0, 10, True), (10, 25, False), (0, 25, True), (24, 25, False)):
        want = add_intercept(X[:, start:stop]) if ones else X[:, start:stop].tocsr()
        got = _csr_range(X, start, stop, ones=ones, chunk=chunk)
        assert got.shape == want.shape and got.indices.dtype == want.indices.dtype
        for part in ("data", "indices", "indptr"):
            assert np.array_equal(getattr(got, part), getattr(want, part))
        stacked = sp.hstack([X[:, start:stop], np.ones((301, 1))], format="csr") if ones else None
        if ones:  # add_intercept itself is the stack, to the bit
            assert np.array_equal(want.data, stacked.data)
            assert np.array_equal(want.indices, stacked.indices)
