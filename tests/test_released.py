"""Released versus diagnostic: every value a private run writes is one or the other.

A released value must be recomputable from the releases alone: a run on the
same data with every protected value replaced, forced to release what the
first run released, gives it bit for bit. :func:`check_released` checks the
final metrics; :func:`test_every_shipped_private_config_by_replay` checks every
file, CSV column and JSON field of the run directory ``vfl run`` writes, for
every private config that ships.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, invoke
from shipped import ALL, private_overrides, write_breast_cancer

from vfl.core.column_kinds import DIAGNOSTIC, RELEASED, column_kinds
from vfl.core.solver import Solver
from vfl.datasets import REGISTRY
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.diagnostic import exact_data
from vfl.experiments.records import load_run
from vfl.experiments.registry import get_solver, solver_names
from vfl.experiments.released import (
    UNDECLARED,
    check_released,
    compare_runs,
    field_kind,
    file_kind,
    record_replay,
)
from vfl.plots import plot_runs

_SYN = {"dataset": "synthetic", "options": {"n_train": 600, "n_test": 120, "n_features": 8, "seed": 3}}
_STACKING_TOML = (
    'name = "s"\n[data]\ndataset = "synthetic"\n'
    "options = { n_train = 300, n_test = 60, n_features = 6, seed = 3 }\n"
    "[preprocessing]\nnormalize_rows = true\n[partition]\ncolumns = [3, 3]\n"
    '[objective]\nlam = 1.0\n[solver]\nname = "private_stacking"\nepochs = 1\n'
    "[privacy]\nepsilon = 1.0\ndelta = 1e-5\n"
)


def _write(path, text):
    path.write_text(text)
    return path


STACKING = {
    "name": "s",
    "data": _SYN,
    "preprocessing": {"normalize_rows": True},
    "partition": {"columns": [4, 4]},
    "objective": {"lam": 1.0},
    "solver": {"name": "private_stacking", "epochs": 1},
    "privacy": {"epsilon": 2.0, "delta": 1e-5},
}
_HORIZONTAL = {
    "data": _SYN,
    "preprocessing": {"normalize_rows": True},
    "partition": {"agents": 5, "samples_per_agent": 100, "public": 50, "held_out": "test_part"},
    "objective": {"lam": 0.1, "reduction": "unit_mean", "regularizer": "half_l2sq"},
}
DP_ADMM = {
    "name": "d",
    **_HORIZONTAL,
    "solver": {"name": "dp_admm", "epochs": 10},
    "privacy": {"epsilon": 1.0, "delta": 1e-3},
}
ALG2 = {
    "name": "a",
    **_HORIZONTAL,
    "solver": {"name": "consensus_admm_perturbed", "epochs": 5},
    "privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3},
}


@pytest.mark.parametrize("raw", [STACKING, DP_ADMM, ALG2], ids=["stacking", "dp_admm", "alg2"])
def test_released_columns_depend_on_the_releases_alone(raw):
    config = config_from_dict(raw)
    table = check_released(config)
    released = {c: v for c, v in table.items() if v[0] == RELEASED}
    assert {"test_logloss", "test_accuracy"} <= set(released)
    for col, (_, original, replaced) in released.items():
        assert original == replaced, col  # bit for bit
    # and the check has power: a diagnostic column sees the replaced data
    assert table["train_logloss"][0] == DIAGNOSTIC
    assert table["train_logloss"][1] != table["train_logloss"][2]


def test_every_registered_solver_declares_its_kinds():
    for name in solver_names():
        cls = get_solver(name)
        kinds = column_kinds(cls, ["epoch", "train_logloss", "test_logloss", *cls.columns], True)
        assert kinds["epoch"] == RELEASED and kinds["train_logloss"] == DIAGNOSTIC
        if kinds["test_logloss"] == DIAGNOSTIC and cls.privacy_params:
            # a private method whose test metrics are not released says why
            assert cls.diagnostic_note or not any(p.name == "delta" for p in cls.privacy_params), name
        assert all(v == RELEASED for v in column_kinds(cls, kinds, False).values())
        if any(p.name == "delta" for p in cls.privacy_params):  # it can claim a guarantee
            assert cls.protected_replaced.__func__ is not Solver.protected_replaced.__func__, name


def test_manifest_labels_and_release_only(tmp_path):
    cfg = tmp_path / "s.toml"
    lines = [
        'name = "s"',
        "[data]",
        'dataset = "synthetic"',
        "options = { n_train = 600, n_test = 120, n_features = 8, seed = 3 }",
        "[preprocessing]",
        "normalize_rows = true",
        "[partition]",
        "columns = [4, 4]",
        "[objective]",
        "lam = 1.0",
        "[solver]",
        'name = "private_stacking"',
        "epochs = 1",
        "[privacy]",
        "epsilon = 2.0",
        "delta = 1e-5",
    ]
    cfg.write_text("\n".join(lines) + "\n")
    full = invoke("run", "--config", cfg, "--out", tmp_path / "full")
    assert full.returncode == 0, full.stderr
    man = json.loads((tmp_path / "full" / "manifest.json").read_text())
    assert man["released"]["columns"]["train_logloss"] == DIAGNOSTIC
    assert man["released"]["columns"]["test_logloss"] == RELEASED
    assert man["released"]["files"]["baselines.json"] == DIAGNOSTIC
    assert "* diagnostic" in full.stdout and "0." in full.stdout
    only = invoke("run", "--config", cfg, "--out", tmp_path / "only", "--release-only")
    assert only.returncode == 0, only.stderr
    assert " s in" not in only.stdout and " s* in" not in only.stdout  # no time printed
    header = (tmp_path / "only" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "test_logloss" in header and "train_logloss" not in header
    assert "wall_time_s" not in header and "objective" not in header
    baselines = json.loads((tmp_path / "only" / "baselines.json").read_text())
    assert "central" not in baselines
    man = json.loads((tmp_path / "only" / "manifest.json").read_text())
    assert man["released"]["release_only"] and "solver_seconds" not in man["result"]
    assert "diagnostic" not in man  # no timestamp, no timing, no exact value


def test_manifest_structure_private_or_not(tmp_path):
    """One structure for every run: the exact, data-dependent values in the ``diagnostic``
    section (diagnostic in a private run, released in another), each file, column and field
    with a declared kind; the references of a private run say so in their labels."""
    for private in (True, False):
        text = _STACKING_TOML if private else _STACKING_TOML.split("[privacy]")[0]
        out = tmp_path / f"run-{private}"
        result = invoke("run", "--config", _write(tmp_path / f"s-{private}.toml", text), "--out", out, "-q")
        assert result.returncode == 0, result.stderr
        man = load_run(out).manifest
        exact = man.dump()["diagnostic"]
        assert {"started_at", "finished_at", "timing", "dataset", "solver"} <= set(exact)
        assert "started_at" not in man.dump() and "timing" not in man.dump()
        kind = DIAGNOSTIC if private else RELEASED
        assert field_kind(man, "manifest.json", ("diagnostic", "started_at")) == kind
        assert field_kind(man, "manifest.json", ("result", "solver_seconds")) == kind
        assert field_kind(man, "manifest.json", ("result", "bytes")) == RELEASED
        assert field_kind(man, "manifest.json", ("dataset", "n_train")) == RELEASED
        assert file_kind(man, "baselines.json") == kind
        for f in out.iterdir():
            assert file_kind(man, f.name) != UNDECLARED, f.name
        labels = [
            e["label"]
            for e in json.loads((out / "baselines.json").read_text()).values()
            if isinstance(e, dict) and "label" in e
        ]
        assert labels and all(lab.endswith("(diagnostic)") == private for lab in labels)


def test_private_file_hashes_are_diagnostic(tmp_path):
    """The sha256 and size of the user's training file depend on its records: diagnostic; a
    separate test file's are not (the relation does not protect it)."""

    class Raw:
        name, checksums = "csv", {"/d/train.csv": "aa", "/d/test.csv": "bb"}

    provenance = {
        "files": {
            "train": {"path": "/d/train.csv", "given": "train.csv", "size": 10, "sha256": "aa", "compression": "none"},
            "test": {"path": "/d/test.csv", "size": 5, "sha256": "bb"},
        },
        "diagnostic": {"rows_read": 7},
    }
    public, exact = exact_data(Raw, provenance)
    assert public == {"/d/test.csv": "bb"} and exact["sha256"] == {"/d/train.csv": "aa"}
    assert exact["files"] == {"train": {"sha256": "aa", "size": 10}}
    assert exact["provenance"] == {"rows_read": 7} and "diagnostic" not in provenance
    assert provenance["files"]["train"] == {"path": "/d/train.csv", "given": "train.csv", "compression": "none"}
    assert provenance["files"]["test"]["sha256"] == "bb"

    class Registry:  # verified against the registry: the published sha256, a constant
        name, checksums = "a9a", {"a9a": "cc", "a9a.t": "dd"}

    dropped = {"verified": True, "rows_dropped": {"train": 3, "test": 1}}
    public, exact = exact_data(Registry, dropped)
    assert public == {f.name: f.sha256 for f in REGISTRY["a9a"].files}
    assert exact["sha256"] == Registry.checksums  # as read: a changed file shows here only
    assert exact["provenance"]["rows_dropped"] == {"train": 3}
    assert dropped["rows_dropped"] == {"test": 1}
    public, exact = exact_data(Registry, {"verified": False})
    assert public == {} and exact["sha256"] == Registry.checksums


def test_private_figures_and_summary_mark_what_is_diagnostic(tmp_path):
    """loss.png of a private run (and `vfl plot` of it): every reference line says
    "(diagnostic)"; the summary stars the diagnostic numbers, timings included."""

    result = invoke("run", "--config", _write(tmp_path / "s.toml", _STACKING_TOML), "--out", tmp_path / "r")
    assert result.returncode == 0, result.stderr
    timing = next(line for line in result.stdout.splitlines() if "in the solver" in line)
    assert "s* in the solver" in timing and "s* in all" in timing
    assert "central optimum F* (diagnostic)" in result.stdout
    fig = plot_runs([load_run(tmp_path / "r")])
    for ax in fig.axes:
        refs = [line.get_label() for line in ax.get_lines()[1:]]  # after the run's own curve
        assert refs and all(label.endswith("(diagnostic)") for label in refs), refs


def test_release_only_needs_a_guarantee(tmp_path):
    cfg = tmp_path / "n.toml"
    cfg.write_text(
        '[data]\ndataset = "synthetic"\n'
        "options = { n_train = 60, n_test = 20, n_features = 4, seed = 1 }\n"
        "[partition]\ncolumns = [2, 2]\n"
    )
    result = invoke("run", "--config", cfg, "--out", tmp_path / "o", "--release-only")
    assert_one_line_error(result, "--release-only applies to a run that claims a privacy guarantee")
    assert not (tmp_path / "o").exists()


def test_admm_sharing_test_metrics_are_diagnostic():
    cls = get_solver("admm_sharing")
    assert column_kinds(cls, ["test_logloss"], True)["test_logloss"] == DIAGNOSTIC
    assert "exact x_m" in cls.diagnostic_note
    assert np.isscalar(cls.diagnostic_note)


@pytest.mark.slow
@pytest.mark.parametrize("bound", ["kl", "clopper-pearson", "truncated-kl"])
def test_audit_names_its_bound_and_calibrates_its_power(tmp_path, bound):
    """`vfl audit --bound B --noise-scale S`: the report names the bound, records S, and every
    pair carries its exercised / charged sensitivity."""
    cfg = tmp_path / "s.toml"
    cfg.write_text(
        'name = "s"\n[data]\ndataset = "synthetic"\n'
        "options = { n_train = 300, n_test = 60, n_features = 6, seed = 3 }\n"
        "[preprocessing]\nnormalize_rows = true\n[partition]\ncolumns = [3, 3]\n"
        '[objective]\nlam = 1.0\n[solver]\nname = "private_stacking"\nepochs = 1\n'
        "[privacy]\nepsilon = 1.0\ndelta = 1e-5\n"
    )
    # (20 runs: the fewest at which a hockey-stick bound, its confidence split over the
    # family of pairs and claims, can refute a third of the noise; 10 are refused)
    result = invoke(
        "audit", "--config", cfg, "--runs", 20, "--bound", bound, "--noise-scale", 0.33, "--out", tmp_path / "au"
    )
    assert result.returncode == 0, result.stderr
    name = {"kl": "Chernoff-KL", "clopper-pearson": "Clopper-Pearson", "truncated-kl": "truncated Chernoff-KL"}[bound]
    assert f"({name}" in result.stdout  # named on every claim's line
    assert "noise scaled by 0.33" in result.stdout and "exercised / charged" in result.stdout
    report = json.loads((tmp_path / "au" / "audit.json").read_text())
    assert report["bound"] == bound and report["noise_scale"] == 0.33
    # the guarantee and its profile are Gaussian (a profile to cap at); there is no other claim
    assert set(report["bounds"].values()) == {bound}
    clips = set(report["clips"].values())
    assert clips == {1.0} if bound != "truncated-kl" else all(0 < c <= 1 for c in clips)
    rows = (tmp_path / "au" / "audit.csv").read_text().splitlines()
    assert "exercised_over_charged" in rows[0]


# --------------------------------------------------- every shipped private config --
#: every shipped config that runs as a private method, with the overrides that make it one
PRIVATE = [(p, o) for p in ALL if (o := private_overrides(p)) is not None]
#: the user's own data (the fast tier); the rest read a9a or adult (the slow tier)
OWN_DATA = {p for p in ALL if p.parent.name == "own-data"}


def _params(release_only: bool):
    """Every private config (release-only: one per solver, the user's data first, and one on
    a9a, whose parse is cached otherwise); the fast tier runs the user's data (release-only:
    its stacking config), the slow one the rest."""
    chosen, seen = [], set()
    for p, o in sorted(PRIVATE, key=lambda po: po[0] not in OWN_DATA):
        config = load_config(p, list(o))
        keys = {config.solver.name} | ({"a9a"} if config.data.dataset == "a9a" else set())
        if not release_only or not keys <= seen:
            chosen.append((p, o))
            seen |= keys
    fast = {p for p in OWN_DATA if not release_only or p.stem == "stacking"}
    return [
        pytest.param(
            p,
            o,
            release_only,
            id=p.stem,
            marks=() if p in fast else (pytest.mark.slow, *(() if p in OWN_DATA else (pytest.mark.data,))),
        )
        for p, o in chosen
    ]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The working directory of the runs: the own-data configs' CSV (README's example)."""
    work = tmp_path_factory.mktemp("released")
    write_breast_cancer(work)  # the training file and the test file of README's example
    return work


def _paths(obj, path=()):
    """Every key path of a JSON object."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*path, k)
            yield from _paths(v, (*path, k))


def _cut(path, overrides) -> list[str]:
    """``--set`` arguments: the private overrides, 2 iterations (or the config's, when its
    target cannot be spread over fewer) and at most 2 repeats."""
    config = load_config(path, list(overrides))
    sets = [*overrides, f"run.repeats={min(2, config.run.repeats)}"]
    args = [a for s in sets for a in ("--set", s)]
    return args + ["--set", f"solver.epochs={min(2, config.solver.epochs)}"]


def _replayed(path, overrides, work, out, *extra) -> tuple[list, dict]:
    """``vfl run`` of ``path`` recording every release, and again with every protected value
    replaced, forced to release the recorded values; their differences and counts."""
    args = _cut(path, overrides)

    def run(name):
        def go():
            result = invoke("run", "--config", path, "--out", out / name, "-q", *args, *extra, cwd=work)
            assert result.returncode == 0, result.stderr

        return go

    try:
        record_replay(run("original"), run("replaced"))
    except AssertionError as exc:  # DP-ADMM's target over 2 iterations: the config's own
        if "iterations" not in str(exc):
            raise
        args = args[:-2]
        for name in ("original", "replaced"):
            assert not (out / name).exists()
        record_replay(run("original"), run("replaced"))
    return compare_runs(out / "original", out / "replaced")


def test_the_other_dataset_is_a_parameter(tmp_path):
    """The replay against another file (as a follow-up with one hostile record will use it):
    record 100's passive-party columns taken from another record, the file rewritten in
    place. The released values stay bit for bit; the file's sha256 and size (diagnostic) do
    not."""
    path = next(p for p in OWN_DATA if p.stem == "stacking")
    write_breast_cancer(tmp_path)
    csv = tmp_path / "breast_cancer.csv"  # the training file
    original = csv.read_text()
    lines = original.splitlines()
    mine, other = lines[1 + 100].split(","), lines[1 + 101].split(",")
    lines[1 + 100] = ",".join(mine[:15] + other[15:30] + mine[30:])  # party 2's 15 columns

    def run(name, text):
        def go():
            csv.write_text(text)
            result = invoke("run", "--config", path, "--out", tmp_path / name, "-q", cwd=tmp_path)
            assert result.returncode == 0, result.stderr

        return go

    assert record_replay(run("a", original), run("b", "\n".join(lines) + "\n"), other=None) == 3
    diffs, counts = compare_runs(tmp_path / "a", tmp_path / "b")
    assert UNDECLARED not in counts and not [d for d in diffs if d.kind != DIAGNOSTIC], diffs
    assert {"diagnostic.dataset.files.train.sha256", "diagnostic.dataset.files.train.size"} <= {d.where for d in diffs}


@pytest.mark.parametrize("path,overrides,release_only", _params(False))
def test_every_shipped_private_config_by_replay(path, overrides, release_only, workdir, tmp_path, request):
    """Everything not marked diagnostic is bit-identical when every protected value is
    replaced and the releases are the same; and the check has power."""
    if path not in OWN_DATA:
        request.getfixturevalue("data_dir")
    diffs, counts = _replayed(path, overrides, workdir, tmp_path, "--no-figure")
    assert UNDECLARED not in counts, [d for d in diffs if d.kind == UNDECLARED]
    assert counts[RELEASED] > 100
    leaked = [d for d in diffs if d.kind != DIAGNOSTIC]
    assert not leaked, leaked
    # power: a value computed from the private data (not a time) sees the replacement
    exact = [d for d in diffs if d.file.endswith(".csv") and not d.where.endswith("time_s")]
    assert exact, diffs
    man = json.loads((tmp_path / "original" / "manifest.json").read_text())
    assert {"started_at", "finished_at", "timing"} <= set(man["diagnostic"])


@pytest.mark.parametrize("path,overrides,release_only", _params(True))
def test_every_shipped_private_config_release_only(
    path, overrides, release_only, workdir, tmp_path, request, monkeypatch
):
    """``--release-only``: every file is released and bit-identical under the replay; no
    diagnostic section, timestamp or timing; nothing left in the user cache."""
    if path not in OWN_DATA:
        request.getfixturevalue("data_dir")
    cache = tmp_path / "cache"
    monkeypatch.setenv("VFL_CACHE_DIR", str(cache))
    diffs, counts = _replayed(path, overrides, workdir, tmp_path, "--release-only")
    assert set(counts) == {RELEASED} and not diffs, diffs
    assert not cache.exists() or not any(cache.rglob("*")), sorted(cache.rglob("*"))
    man = json.loads((tmp_path / "original" / "manifest.json").read_text())
    assert "diagnostic" not in man and "solver_seconds" not in man["result"]
    keys = {k for path in _paths(man) if path[0] != "released" for k in path}
    assert not {k for k in keys if "seconds" in str(k) or k in ("started_at", "timing")}, keys
    header = (tmp_path / "original" / "metrics.csv").read_text().splitlines()[0]
    assert "time_s" not in header
