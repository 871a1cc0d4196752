"""One hostile record in a private run's file, end to end (issue 33, "Done when").

For every shipped private config, record 100 of its private training file is replaced by
each hostile kind -- a missing field, a malformed field, NaN, inf, a blank line, an unknown
label (:data:`hostile.NAMED`, in each format's words) -- and ``vfl run`` (in-process) runs
on the original file and on every hostile copy, the copies forced to release what the
original released (:func:`vfl.experiments.released.record_replay`). Every file, CSV column
and JSON field not marked diagnostic must then be bit-identical: the record became one
bounded row, and nothing the run writes unmarked depends on it (its values, N, the message
counts, the bytes). Only values marked diagnostic may move (the file's sha256 as read, the
loader's repair counts, timings).

A reproduction on a paper's cleaned file (Huang et al.'s DP-ADMM and Xiao et al.'s LDP
configs on Adult, ``missing = "drop"``) removes such a record by the paper's public rule
instead: the run completes, states its relation on the cleaned file, and only the
diagnostic count of dropped records says how many went.
"""

from __future__ import annotations

import bz2
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import invoke
from hostile import KINDS, NAMED
from shipped import ALL, private_overrides, write_breast_cancer

from vfl.core.column_kinds import DIAGNOSTIC
from vfl.experiments.config import load_config
from vfl.experiments.released import UNDECLARED, compare_runs, record_replay

REPLACED = 100  # the record (0-based, after a CSV's header) that is replaced
#: each dataset family's files: the private training file first, then its public test file
FILES = {
    "a9a": ("a9a", "a9a.t"),
    "adult": ("adult.data", "adult.test"),
    "csv": ("breast_cancer.csv", "breast_cancer_test.csv"),
}
CLEANED = "; on the cleaned file (records with a missing or malformed field removed before the mechanism, as"

PRIVATE = [(p, o) for p in ALL if (o := private_overrides(p)) is not None]


def _family(path: Path, overrides) -> str:
    return load_config(path, list(overrides)).data.dataset


def _cleaned(path: Path, overrides) -> bool:
    return load_config(path, list(overrides)).data.options.get("missing") == "drop"


def _param(path, overrides):
    """The own-data stacking config in the fast tier (no dataset to read, one round); the
    rest in the slow one."""
    own = path.parent.name == "own-data"
    marks = (
        () if own and path.stem == "stacking" else (pytest.mark.slow,) if own else (pytest.mark.slow, pytest.mark.data)
    )
    return pytest.param(path, overrides, id=f"{path.parent.name}-{path.stem}" if own else path.stem, marks=marks)


KEPT = [_param(p, o) for p, o in PRIVATE if not _cleaned(p, o)]
DROPPED = [_param(p, o) for p, o in PRIVATE if _cleaned(p, o)]


def test_every_shipped_private_config_is_here():
    assert len(KEPT) + len(DROPPED) == len(PRIVATE) >= 20
    assert {_family(p, o) for p, o in PRIVATE} == set(FILES)
    assert any(p.parent.name == "own-data" for p, _ in PRIVATE)


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    """The families' files, plain: the breast-cancer CSVs of README's example always; a9a
    and Adult from VFL_DATA_DIR on first use."""
    base = tmp_path_factory.mktemp("originals")
    write_breast_cancer(base)
    return base


def _original(originals: Path, family: str, request) -> Path:
    if family != "csv" and not (originals / FILES[family][0]).exists():
        data_dir = request.getfixturevalue("data_dir")
        for name in FILES[family]:
            (originals / name).write_bytes(bz2.open(data_dir / f"{name}.bz2").read())
    return originals


def _copy(originals: Path, family: str, target: Path, hostile: dict[int, bytes]) -> Path:
    """The family's files in ``target``, records ``hostile`` of the training file replaced."""
    target.mkdir(parents=True)
    train, test = FILES[family]
    shutil.copy(originals / test, target / test)
    lines = (originals / train).read_bytes().split(b"\n")
    header = 1 if family == "csv" else 0
    for k, record in hostile.items():
        lines[header + k] = record
    (target / train).write_bytes(b"\n".join(lines))
    return target


def _hostile(originals: Path, family: str, vertical: bool = False) -> dict[str, bytes]:
    """The six named kinds of record :data:`REPLACED`; in a vertical run the corrupted field
    is in the last party's block, which every vertical relation protects (private stacking's
    does not protect party 1's)."""
    lines = (originals / FILES[family][0]).read_bytes().split(b"\n")
    line = lines[(1 if family == "csv" else 0) + REPLACED]
    field = {}
    if vertical:  # a9a: its last entry (index > 66); Adult: native-country; CSV: column 20
        field = {"a9a": {"field": len(line.split()) - 2}, "adult": {"field": 13}, "csv": {"field": 20}}[family]
    kinds = KINDS[family](line, **field)
    return {kind: kinds[kind] for kind in NAMED[family]}


#: what must stay when a record's unprotected part changes (party 1's block, the labels: a
#: vertical relation protects the parties' features, not the labels; issue 35): the shape of
#: the run, its counts and bytes
_SHAPE = (
    "communication.csv",
    "dataset.",
    "result.messages",
    "result.bytes",
    "result.inference_",
    "released.",
    "privacy.spent.epochs",
)


def _quick(path: Path, overrides, *, epochs: bool = True) -> list[str]:
    """``--set`` arguments: the private overrides, at most 2 repeats and 2 iterations."""
    config = load_config(path, list(overrides))
    sets = [*overrides, f"run.repeats={min(2, config.run.repeats)}"]
    if epochs:
        sets.append(f"solver.epochs={min(2, config.solver.epochs)}")
    return [a for s in sets for a in ("--set", s)]


def _run(path, args, data: Path, out: Path, train: bytes | None = None, name: str = ""):
    """A run of ``path`` on the files in ``data``, its training file ``name`` first rewritten
    with ``train`` (every run reads the same paths: the manifest records them)."""

    def go():
        if train is not None:
            (data / name).write_bytes(train)
        result = invoke(
            "run",
            "--config",
            path,
            "--out",
            out,
            "-q",
            "--data-dir",
            data,
            "--no-figure",
            "--baselines",
            "none",
            *args,
            cwd=data,
        )
        assert result.returncode == 0, result.stderr

    return go


@pytest.mark.parametrize("path,overrides", KEPT)
def test_a_hostile_record_changes_nothing_released(path, overrides, originals, tmp_path, request):
    family = _family(path, overrides)
    vertical = load_config(path, list(overrides)).setting.value == "vertical"
    source = _original(originals, family, request)
    train = FILES[family][0]
    files = {"original": (source / train).read_bytes()}
    for kind, record in _hostile(source, family, vertical).items():
        files[kind] = (
            _copy(source, family, tmp_path / "hostile" / kind.replace(" ", "_"), {REPLACED: record}) / train
        ).read_bytes()
    data = _copy(source, family, tmp_path / "data", {})  # every run reads these paths

    def runs(args):
        return [_run(path, args, data, tmp_path / "runs" / kind, text, train) for kind, text in files.items()]

    try:
        record_replay(*runs(_quick(path, overrides)), other=None)
    except AssertionError as exc:  # a target epsilon that 2 iterations cannot spread
        if "iterations" not in str(exc):
            raise
        shutil.rmtree(tmp_path / "runs", ignore_errors=True)
        record_replay(*runs(_quick(path, overrides, epochs=False)), other=None)
    runs = tmp_path / "runs"
    for kind in list(files)[1:]:
        diffs, counts = compare_runs(runs / "original", runs / kind)
        assert UNDECLARED not in counts, (kind, [d for d in diffs if d.kind == UNDECLARED])
        leaked = [d for d in diffs if d.kind != DIAGNOSTIC]
        # a blank line or an unknown label changes party 1's block or the labels too, which
        # a vertical relation does not protect: what they feed may move, nothing else
        if vertical and kind in NAMED[family][-2:]:
            leaked = [d for d in leaked if d.file == "communication.csv" or d.where.startswith(_SHAPE)]
        assert not leaked, (kind, leaked)
        # the record was read, and only the diagnostic section says so
        assert any(d.where.startswith("diagnostic.dataset") for d in diffs), (kind, diffs)


@pytest.mark.parametrize("path,overrides", DROPPED)
def test_a_paper_s_cleaned_file_drops_the_record(path, overrides, originals, tmp_path, request):
    family = _family(path, overrides)
    source = _original(originals, family, request)
    hostile = {REPLACED + j: r for j, r in enumerate(_hostile(source, family).values())}
    dirs = {
        "original": _copy(source, family, tmp_path / "original", {}),
        "hostile": _copy(source, family, tmp_path / "hostile", hostile),
    }
    dropped = {}
    for name, data in dirs.items():
        try:
            _run(path, _quick(path, overrides), data, tmp_path / "runs" / name)()
        except AssertionError as exc:  # a target epsilon that 2 iterations cannot spread
            if "iterations" not in str(exc):
                raise
            _run(path, _quick(path, overrides, epochs=False), data, tmp_path / "runs" / name)()
        man = json.loads((tmp_path / "runs" / name / "manifest.json").read_text())
        assert CLEANED in man["privacy"]["neighbouring"], man["privacy"]["neighbouring"]
        repairs = man["diagnostic"]["dataset"]["provenance"]["repairs"]["train"]
        dropped[name] = repairs["records_dropped"]
    # the adult record replaced is complete, and each hostile kind is dropped by the public rule
    assert dropped["hostile"] == dropped["original"] + len(hostile)
