import numpy as np
import pytest
import scipy.sparse as sp

from vfl.experiments.config import PartitionConfig
from vfl.core.errors import PartitionError
from vfl.experiments.partition import make_partition


def test_columns_split_a9a_style():
    p = make_partition(PartitionConfig(columns=[66, 57]), 123)
    assert [idx.tolist() for idx in p.parties] == [list(range(66)), list(range(66, 123))]
    desc = p.describe()
    assert desc[0] == {"party": 1, "n_columns": 66, "column_ranges": [[0, 66]],
                       "intercept": True, "active": True}
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
    p = make_partition(PartitionConfig(indices=[[4, 0], [1, 2, 3]], intercept=True), 5)
    blocks = p.split(Xs)
    dense = [b.toarray() if sparse else b for b in blocks]
    assert np.array_equal(dense[0], np.c_[X[:, [4, 0]], np.ones(4)])
    assert np.array_equal(dense[1], X[:, 1:4])
    assert sp.issparse(blocks[0]) == sparse
    joined = p.join(Xs)
    assert joined.shape == (4, 6)


def test_no_intercept():
    p = make_partition(PartitionConfig(columns=[2, 3], intercept=False), 5)
    assert p.split(np.ones((3, 5)))[0].shape == (3, 2)


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
    p = make_partition(PartitionConfig(columns=[2, 2], intercept=True), 4)
    from dataclasses import replace

    blocks = replace(p, normalize_rows=True).split(sp.csr_matrix(X) if sparse else X)
    dense = [b.toarray() if sparse else b for b in blocks]
    np.testing.assert_allclose(dense[0], [[3 / np.sqrt(26), 4 / np.sqrt(26), 1 / np.sqrt(26)], [0, 0, 1]])
    np.testing.assert_allclose(dense[1], [[0, 1], [1, 0]])  # party 2's rows: (0, 2) and (1, 0)
    assert replace(p, normalize_rows=True).describe()[0]["rows_normalized"] is True


def test_normalize_rows_from_config():
    from vfl.experiments.config import config_from_dict
    from vfl.core.errors import ConfigError

    raw = {"data": {"dataset": "a9a"}, "partition": {"columns": [66, 57], "normalize_rows": True}}
    spec = config_from_dict(raw).partition
    assert make_partition(spec, 123).normalize_rows is True
    assert make_partition(config_from_dict({**raw, "partition": {"columns": [66, 57]}}).partition,
                          123).normalize_rows is False
    with pytest.raises(ConfigError, match="partition.normalize_rows must be true or false"):
        config_from_dict({**raw, "partition": {"columns": [66, 57], "normalize_rows": "yes"}})
