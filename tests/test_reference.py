"""CI regression of loss curves against results/reference/ (see vfl.experiments.reference)."""

from pathlib import Path

import pandas as pd
import pytest

from vfl.experiments.reference import CASES, RegressionError, check_case, compare, reference_path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "results" / "reference"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_curve_matches_reference(name, request):
    data_dir = request.getfixturevalue("data_dir") if CASES[name].needs_data else None
    check_case(name, REPO, ROOT, data_dir)


def test_every_case_has_a_committed_reference():
    for name in CASES:
        assert reference_path(ROOT, name).is_file(), name


def test_a_departure_names_run_column_and_epoch():
    expected = pd.read_csv(reference_path(ROOT, "gisette-shaped-admm"))
    actual = expected.copy()
    actual.loc[actual["epoch"] >= 7, "test_logloss"] *= 1 + 1e-6
    with pytest.raises(RegressionError) as exc:
        compare("gisette-shaped-admm", expected, actual)
    msg = str(exc.value)
    assert msg.startswith("gisette-shaped-admm: column test_logloss left its band")
    assert "first at epoch 7" in msg
    compare("gisette-shaped-admm", expected, expected.copy())  # identical passes
