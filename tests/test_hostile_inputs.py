"""Hostile input, one table: every case is one `error:` line, exit 2, and nothing left behind.

Each row is (id, the command's arguments, a fragment of the one line). The
command runs in-process in an empty directory; afterwards that directory
holds exactly what the test put there. Add a row for every case found.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_helpers import assert_one_line_error, invoke
from shipped import shipped

REPO = Path(__file__).resolve().parents[1]
A9A = str(REPO / "configs" / "a9a.toml")
PRIVATE = str(shipped("private-stacking-a9a"))

CASES = [
    ("privacy-epsilon-tiny", ["privacy", "--epsilon", "1e-12", "--epochs", "10", "--delta", "1e-5"],
     "--epsilon = 1e-12: must be >= 1e-06"),
    ("privacy-epsilon-huge", ["privacy", "--epsilon", "1e6", "--epochs", "10", "--delta", "1e-5"],
     "--epsilon = 1e+06: must be <= 700"),
    ("run-repeats-huge", ["run", "--config", A9A, "--set", "run.repeats=100000000", "--out", "o"],
     "run.repeats must be <= 10000"),
    ("run-epsilon-tiny", ["run", "--config", PRIVATE, "--set", "privacy.epsilon=1e-9", "--out", "o"],
     "privacy.epsilon = 1e-09: must be >= 1e-06"),
    ("run-release-only-without-guarantee", ["run", "--config", A9A, "--release-only", "--out", "o"],
     "--release-only applies to a run that claims a privacy guarantee"),
    ("run-moved-partition-key", ["run", "--config", A9A, "--set", "partition.normalize_rows=true",
                                 "--out", "o"], "set preprocessing.normalize_rows"),
    ("run-moved-data-option", ["run", "--config", A9A, "--set", "data.options.normalize_rows=true",
                               "--out", "o"], "moved to the [preprocessing] section"),
    ("run-preprocessing-zero-range", ["run", "--config", A9A, "--set", "preprocessing.scaling=clip",
                                      "--set", "preprocessing.bounds=[1, 1]", "--out", "o"],
     "preprocessing.bounds: bounds need lower < upper"),
    ("run-private-fitted-scaling", ["run", "--config", PRIVATE, "--set",
                                    "preprocessing.scaling=standard", "--out", "o"],
     "set preprocessing.stats"),
    ("run-dask-in-process-solver", ["run", "--config", PRIVATE, "--set", "run.backend=dask",
                                    "--out", "o"],
     "private_stacking runs in-process only (the dask backend runs admm_sharing, dp_admm)"),
    ("sweep-grid-key-twice", ["sweep", "--config", A9A, "--grid", "solver.rho=1,2", "--grid",
                              "solver.rho=3", "--out", "o"], "--grid solver.rho is given twice"),
    ("sweep-grid-value-twice", ["sweep", "--config", A9A, "--grid", "solver.rho=1,1", "--out", "o"],
     "--grid solver.rho lists 1 twice"),
    ("fetch-mirror-not-a-url", ["datasets", "fetch", "a9a", "--mirror", "notaurl", "--data-dir", "dd",
                                "--force"], "--mirror 'notaurl' is not a URL"),
    ("fetch-mirror-unreachable", ["datasets", "fetch", "a9a", "--mirror", "http://127.0.0.1:9/",
                                  "--data-dir", "dd", "--force"],
     "point --data-dir or VFL_DATA_DIR at a directory"),
    ("audit-noise-scale-zero", ["audit", "--config", PRIVATE, "--noise-scale", "0", "--out", "o"],
     "--noise-scale must be a finite number > 0, got 0.0"),
    ("audit-noise-scale-nan", ["audit", "--config", PRIVATE, "--noise-scale", "nan", "--out", "o"],
     "--noise-scale must be a finite number > 0, got nan"),
    ("audit-out-under-a-file", ["audit", "--config", PRIVATE, "--out", "afile/x"],
     "is a file, not a directory"),
    ("audit-out-exists", ["audit", "--config", PRIVATE, "--out", "full"],
     "already exists (use --overwrite to replace it)"),
    ("audit-claims-nothing", ["audit", "--config", A9A, "--out", "o"],
     "claims no privacy guarantee"),
    ("audit-noise-scale-inf", ["audit", "--config", PRIVATE, "--noise-scale", "inf", "--out", "o"],
     "--noise-scale must be a finite number > 0, got inf"),
    ("audit-incomplete-run-dir", ["audit", "full", "--out", "o"],
     "not a complete run directory: full lacks config.json"),
    ("audits-none-below", ["audits", "full"], "no audit.json of an audited guarantee below it"),
    ("reproduce-missing-data", ["reproduce", "ldp", "fig2", "--out", "o", "--data-dir", "nowhere"],
     "files adult.data, adult.test not found"),
]


@pytest.mark.parametrize("args,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if args[0] == "reproduce":
        monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "nowhere"))
    (tmp_path / "afile").write_text("a file, not a directory\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("an earlier audit\n")
    before = sorted(os.listdir(tmp_path))
    result = invoke(*args)
    assert_one_line_error(result, fragment)
    assert sorted(os.listdir(tmp_path)) == before  # nothing left behind


def test_the_table_covers_every_command():
    from vfl.cli.main import cli

    covered = {c[1][0] for c in CASES}
    assert {"run", "privacy", "sweep", "datasets", "reproduce", "audit"} <= covered
    assert covered <= set(cli.commands)


def test_a_config_with_a_byte_order_mark_reads_as_without_one(tmp_path):
    """Editors on Windows may start a UTF-8 file with a BOM; the TOML is the same."""
    from vfl.experiments.config import load_config

    text = (REPO / "configs" / "a9a.toml").read_text()
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.toml").write_text(text)
    bom, plain = load_config(tmp_path / "bom.toml"), load_config(tmp_path / "plain.toml")
    assert bom.to_dict() | {"name": None} == plain.to_dict() | {"name": None}
