"""Hostile input, one table: every case is one `error:` line, exit 2, and nothing left behind.

Each row is (id, the command's arguments, a fragment of the one line). The
command runs in-process in an empty directory holding only the fixtures its
arguments name (:data:`FIXTURES`); afterwards that directory, the temporary
directory and the cache hold exactly what they held before. Every row fails
in validation, before any work. Add a row for every case found.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, invoke
from hostile_fixtures import A9A, CSV, FIXTURES, PRIVATE, REPO, SMALL
from hostile_rows_owners import OWNERS
from hostile_rows_run import RUN
from hostile_rows_tools import TOOLS

from vfl.cli.datasets_cmd import datasets
from vfl.cli.main import all_commands
from vfl.core.errors import ConfigError
from vfl.experiments.config import load_config
from vfl.experiments.run_data import load_config_dataset

CASES = [
    (
        "privacy-epsilon-tiny",
        ["privacy", "--epsilon", "1e-12", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon = 1e-12: must be >= 1e-06",
    ),
    (
        "privacy-epsilon-huge",
        ["privacy", "--epsilon", "1e6", "--epochs", "10", "--delta", "1e-5"],
        "--epsilon = 1e+06: must be <= 700",
    ),
    (
        "run-repeats-huge",
        ["run", "--config", A9A, "--set", "run.repeats=100000000", "--out", "o"],
        "run.repeats must be <= 10000",
    ),
    (
        "run-epsilon-tiny",
        ["run", "--config", PRIVATE, "--set", "privacy.epsilon=1e-9", "--out", "o"],
        "privacy.epsilon = 1e-09: must be >= 1e-06",
    ),
    ("run-resume-nothing-there", ["run", "--resume", "nothere"], "nothere: no such run directory"),
    (
        "run-resume-with-config",
        ["run", "--resume", "nothere", "--config", A9A],
        "--resume takes the config and options from the checkpoint: leave out --config",
    ),
    (
        "run-release-only-without-guarantee",
        ["run", "--config", A9A, "--release-only", "--out", "o"],
        "--release-only applies to a run that claims a privacy guarantee",
    ),
    (
        "run-moved-partition-key",
        ["run", "--config", A9A, "--set", "partition.normalize_rows=true", "--out", "o"],
        "set preprocessing.normalize_rows",
    ),
    (
        "run-moved-data-option",
        ["run", "--config", A9A, "--set", "data.options.normalize_rows=true", "--out", "o"],
        "moved to the [preprocessing] section",
    ),
    (
        "run-preprocessing-zero-range",
        [
            "run",
            "--config",
            A9A,
            "--set",
            "preprocessing.scaling=clip",
            "--set",
            "preprocessing.bounds=[1, 1]",
            "--out",
            "o",
        ],
        "preprocessing.bounds: bounds need lower < upper",
    ),
    (
        "audit-runs-in-config-too-few",
        ["audit", "--config", "priv.toml", "--set", "audit.runs=3", "--out", "o"],
        "audit.runs must be >= 10, got 3",
    ),
    (
        "run-private-fitted-scaling",
        ["run", "--config", "priv.toml", "--set", "preprocessing.scaling=standard", "--out", "o"],
        "set preprocessing.stats",
    ),
    (
        "audit-dask-backend",
        ["audit", "--config", "priv.toml", "--set", "run.backend=dask", "--out", "o"],
        "runs through `vfl run`",
    ),
    (
        "sweep-grid-key-twice",
        ["sweep", "--config", A9A, "--grid", "solver.rho=1,2", "--grid", "solver.rho=3", "--out", "o"],
        "--grid solver.rho is given twice",
    ),
    (
        "sweep-grid-value-twice",
        ["sweep", "--config", A9A, "--grid", "solver.rho=1,1", "--out", "o"],
        "--grid solver.rho lists 1 twice",
    ),
    (
        "fetch-mirror-not-a-url",
        ["datasets", "fetch", "a9a", "--mirror", "notaurl", "--data-dir", "dd", "--force"],
        "--mirror 'notaurl' is not a URL",
    ),
    (
        "fetch-mirror-unreachable",
        ["datasets", "fetch", "a9a", "--mirror", "http://127.0.0.1:9/", "--data-dir", "dd", "--force"],
        "point --data-dir or VFL_DATA_DIR at a directory",
    ),
    (
        "audit-noise-scale-zero",
        ["audit", "--config", PRIVATE, "--noise-scale", "0", "--out", "o"],
        "--noise-scale must be a finite number > 0, got 0.0",
    ),
    (
        "audit-noise-scale-nan",
        ["audit", "--config", PRIVATE, "--noise-scale", "nan", "--out", "o"],
        "--noise-scale must be a finite number > 0, got nan",
    ),
    ("audit-out-under-a-file", ["audit", "--config", PRIVATE, "--out", "afile/x"], "is a file, not a directory"),
    (
        "audit-out-exists",
        ["audit", "--config", PRIVATE, "--out", "full"],
        "already exists (use --overwrite to replace it)",
    ),
    ("audit-claims-nothing", ["audit", "--config", A9A, "--out", "o"], "claims no privacy guarantee"),
    (
        "audit-noise-scale-inf",
        ["audit", "--config", PRIVATE, "--noise-scale", "inf", "--out", "o"],
        "--noise-scale must be a finite number > 0, got inf",
    ),
    (
        "audit-incomplete-run-dir",
        ["audit", "full", "--out", "o"],
        "not a complete run directory: full lacks config.json",
    ),
    ("audits-none-below", ["audits", "full"], "no audit.json of an audited guarantee below it"),
    (
        "reproduce-missing-data",
        ["reproduce", "ldp", "fig2", "--out", "o", "--data-dir", "nowhere"],
        "files adult.data, adult.test not found",
    ),
]

CASES += RUN + TOOLS + OWNERS


def _tree(root: Path) -> list[str]:
    """Every file and directory below ``root`` (empty directories too)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("args,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input(args, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if args[0] == "reproduce":
        monkeypatch.setenv("VFL_DATA_DIR", str(tmp_path / "nowhere"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "afile").write_text("a file, not a directory\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("an earlier audit\n")
    for name, make in FIXTURES.items():
        if name in args[1:] or name.split("/")[0] in args[1:]:
            make(tmp_path / name)
    before = _tree(tmp_path)
    result = invoke(*args)
    assert_one_line_error(result, fragment)
    assert _tree(tmp_path) == before  # nothing left behind: no file, directory or temporary


def _options(command) -> set[str]:
    """The options of a command that take a value (flags are exercised in combinations)."""
    return {
        opt for p in command.params if not getattr(p, "is_flag", True) and p.opts[0] != "--help" for opt in p.opts[:1]
    }


def test_the_table_covers_every_command():
    assert {c[1][0] for c in CASES} == set(all_commands())
    commands = {name: cmd for name, cmd in all_commands().items() if name != "datasets"}
    commands |= {f"datasets {name}": cmd for name, cmd in datasets.commands.items()}
    for name, command in commands.items():
        rows = [c[1] for c in CASES if " ".join(c[1][: len(name.split())]) == name]
        assert rows, f"no row for vfl {name}"
        untried = _options(command) - {a for args in rows for a in args}
        assert not untried, f"vfl {name}: no row gives {', '.join(sorted(untried))}"


def test_a_config_with_a_byte_order_mark_reads_as_without_one(tmp_path):
    """Editors on Windows may start a UTF-8 file with a BOM; the TOML is the same."""

    text = (REPO / "configs" / "a9a.toml").read_text()
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    (tmp_path / "plain.toml").write_text(text)
    bom, plain = load_config(tmp_path / "bom.toml"), load_config(tmp_path / "plain.toml")
    assert bom.to_dict() | {"name": None} == plain.to_dict() | {"name": None}


def test_an_unreadable_config_is_one_line(tmp_path, monkeypatch):
    """As root no file is unreadable, so the OS's refusal is simulated."""

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    (tmp_path / "c.toml").write_text(SMALL)
    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ConfigError, match=r"c.toml: cannot read it \(Permission denied\)"):
        load_config(tmp_path / "c.toml")


def test_a_rewritten_user_file_is_read_again(tmp_path, monkeypatch):
    """The in-process dataset cache knows a user file by its path and stamp: the same
    relative path naming new content (another directory, or the file rewritten) is
    read again, never served from memory."""

    for i, rows in enumerate((20, 30)):
        work = tmp_path / str(i)
        work.mkdir()
        FIXTURES["own-good.toml"](work / "own-good.toml")
        extra = "".join(f"{j},1,2,{j % 2}\n" for j in range(rows - 20))
        (work / "own-good.csv").write_text(CSV + extra)
        monkeypatch.chdir(work)
        raw, _ = load_config_dataset(load_config(work / "own-good.toml"))
        assert raw.y_train.size + raw.y_test.size == rows
