"""docs/measure.py: README's timings are written by a script, never by hand."""

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `benchmarks`: a plain folder at the repo root, not installed
from benchmarks.runner import CASES  # noqa: E402


@pytest.fixture
def measure(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("measure", REPO / "docs" / "measure.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "measure", module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    for name in ("MEASURED", "README"):
        copy = tmp_path / Path(getattr(module, name)).name
        shutil.copy(getattr(module, name), copy)
        monkeypatch.setattr(module, name, copy)
    pages = []
    for page in module.DOCUMENTS:
        if page.name not in ("README.md", "measured.md"):
            pages.append(tmp_path / "pages" / page.name)
            pages[-1].parent.mkdir(exist_ok=True)
            shutil.copy(page, pages[-1])
    monkeypatch.setattr(module, "DOCUMENTS", (module.README, *pages))
    return module


def test_a_measurement_rewrites_its_row_and_readmes_number(measure):
    before = measure.README.read_text()
    measure.record("test-fast", "59 s", '`pytest -q -m "not slow"`: 58.7 s as pytest reports it')
    row = next(line for line in measure.MEASURED.read_text().splitlines() if "`test-fast`" in line)
    assert row.startswith("| `test-fast` | 59 s | `pytest -q -m")
    after = measure.README.read_text()
    assert " 59 s<!-- measured: test-fast -->" in after
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(changed) == 1 and "test-fast" in changed[0][1]  # nothing else moved


def test_pytest_output_is_read_or_refused(measure):
    value, how = measure._pytest("1200 passed, 2 skipped in 58.70s (0:00:58)", lambda s: f"{s:.0f} s")
    assert (value, how) == ("59 s", "58.7 s as pytest reports it, 1200 passed, 2 skipped")
    with pytest.raises(RuntimeError, match="did not pass"):
        measure._pytest("3 failed, 1200 passed in 58.70s", str)


def test_the_keys_are_the_ones_readme_marks(measure, capsys):
    marked = {
        key for page in measure.DOCUMENTS for key in re.findall(r"<!-- measured: ([\w.-]+) -->", page.read_text())
    }
    assert marked <= set(measure.MEASUREMENTS), marked - set(measure.MEASUREMENTS)
    assert measure.main(["--list"]) == 0 and "test-suite" in capsys.readouterr().out
    assert measure.main(["nosuchkey"]) == 2


def test_the_benchmarks_tables_come_from_its_bench_json(measure, tmp_path, monkeypatch):
    """`python docs/measure.py benchmarks` keeps the run's targets and a9a variants as the CSVs
    README's bench tables are rendered from."""

    spec = importlib.util.spec_from_file_location("readme_tables", REPO / "docs" / "readme_tables.py")
    tables = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "readme_tables", tables)  # for its dataclasses
    spec.loader.exec_module(tables)
    row = {
        "label": "Boyd",
        "diverged": False,
        "epochs_run": 42,
        "final_suboptimality": 1e-7,
        "epochs_to_0.0001": 15,
        "seconds_to_0.0001": 0.05,
        "epochs_to_1e-06": 42,
        "seconds_to_1e-06": 0.1,
    }
    lbfgs = {
        "targets": {
            "0.0001": {"tol": 1e-5, "n_iter": 9, "seconds": 0.25},
            "1e-06": {"tol": 1e-7, "n_iter": 30, "seconds": 0.8},
        }
    }
    bench = {
        "variants_a9a": {
            "dataset": "a9a",
            "epoch_cap": 400,
            "variants": [row],
            "sklearn": {"lbfgs": lbfgs, "lbfgs, 1 BLAS thread": lbfgs},
            "a9a_fast": {
                "epochs_to_1e-4": 15,
                "seconds_to_1e-4": 0.05,
                "lbfgs_seconds_to_1e-4": 0.25,
                "lbfgs_setting": "lbfgs",
            },
        }
    }
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    monkeypatch.setattr(measure, "BENCH_DIR", tmp_path / "bench")
    out = measure.bench_tables(tmp_path / "bench.json")

    targets = pd.read_csv(out / "targets.csv")
    assert list(targets["target"]) == ["a9a_fast_epochs_to_1e-4", "a9a_fast_time_vs_lbfgs"]
    assert targets["measured"].tolist() == [15, 0.2] and targets["pass"].all()
    md = tables.bench_variants_markdown(pd.read_csv(out / "variants.csv"), pd.read_csv(out / "references.csv"))
    assert "| Boyd | 15 | 0.050 | 0.20 | 42 | 0.100 |" in md
    assert "sklearn lbfgs: 0.25 s / 0.80 s" in md


def test_the_benchmarks_measurement_runs_every_default_case_and_startup(measure):
    """README's targets table is rendered from one run: every case of ``python -m benchmarks``
    and the start-up case (issue 23's `vfl --help` and cached-load targets)."""

    command = measure.MEASUREMENTS["benchmarks"].command
    only = command.split("--only ")[1].split()[0].split(",")
    assert only == [*CASES, "startup"]
