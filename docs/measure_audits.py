"""The audit table (``python docs/measure.py audits``): every shipped config that claims a
guarantee through ``vfl audit`` as run and at AUDIT_LOW_SCALE, then ``vfl audits`` into
AUDITS_PNG and the CSV beside it (``audits:NAME,...`` audits those entries again, merged)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

sys.path.append(str(Path(__file__).resolve().parent))  # its siblings, also when loaded by path
from measure_bounds import AUDIT_LOW_SCALE, AUDITS_PNG  # noqa: E402

from vfl.experiments.audit import audit_table  # noqa: E402
from vfl.experiments.records import write_csv_atomic  # noqa: E402
from vfl.plots import plot_audit_table, save_figure  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: every shipped config that claims a guarantee, audited as run and at AUDIT_LOW_SCALE with
#: the same K, its adversarial pairs (the worst candidate per unit: natural pairs exercise a
#: tenth to a half of what they do, and would only widen the family the confidence covers):
#: (config, extra --set, K). K: the runs per pair and direction the estimator needs (GDP:
#: its factor on the smallest realised mu; the DP-ADMM configs' own audit.runs, 400, where a
#: run is cheap), within the table's time budget where a run is not (the a9a ADMM sharing
#: runs, Algorithm 2's exact local solves)
AUDITED = (
    ("papers/dp_admm/configs/dp-admm-alg2.toml", (), 30),
    ("papers/dp_admm/configs/dp-admm-alg2.toml", ("name=dp-admm-alg2-corrected", "privacy.sensitivity=corrected"), 30),
    ("papers/dp_admm/configs/dp-admm-l1.toml", (), 400),
    ("papers/dp_admm/configs/dp-admm-l2.toml", (), 400),
    ("configs/own-data/admm-sharing.toml", (), 100),
    ("configs/own-data/dp-admm.toml", (), 400),
    ("configs/own-data/stacking.toml", (), 1000),
    ("papers/hu/configs/privacy-a9a.toml", (), 20),
    ("papers/hu/configs/privacy-a9a-column.toml", (), 10),
    ("papers/hu/configs/privacy-a9a-row.toml", (), 20),
    ("papers/private_utility/configs/private-stacking-a9a.toml", (), 200),
    ("papers/private_utility/configs/private-utility-admm-a9a.toml", (), 30),
    ("papers/private_utility/configs/private-utility-admm-adult.toml", (), 30),
    ("papers/private_utility/configs/private-utility-stacking-adult.toml", (), 200),
    # the label guarantee (one label flipped) of each vertical method; the attack configs
    # claim nothing as written, so their entries set the label budget
    ("configs/own-data/stacking.toml", ("name=own-data-stacking-labels", "privacy.label_epsilon=1.0"), 100),
    # (ADMM sharing's on the attack config: with own-data's feature noise too, the feature
    # pairs at a third of the noise were no longer refuted; the label pairs were)
    (
        "papers/attacks/configs/admm-a9a.toml",
        ("name=admm-a9a-labels", "solver.epochs=2", "privacy.label_epsilon=1.0", "privacy.label_clip=0.05"),
        30,
    ),
    (
        "papers/attacks/configs/fdml-a9a.toml",
        ("name=fdml-a9a-labels", "solver.epochs=1", "privacy.label_epsilon=1.0", "privacy.label_clip=0.5"),
        30,
    ),
)


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def measure_audits(jobs: int = 2, root: Path | None = None, only=None) -> Path:
    """Every AUDITED config with ``vfl audit``, as run and at AUDIT_LOW_SCALE (``jobs`` at a
    time, one BLAS thread each, longest first), into ROOT (default results/audits-table),
    then ``vfl audits ROOT`` into AUDITS_PNG and the CSV beside it. ``only``: the AUDITED
    names to audit again; their rows replace theirs in the committed CSV (the others
    kept), and the figure is drawn from the merged table."""
    root = REPO / "results" / "audits-table" if root is None else root
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    # the own-data configs read breast_cancer.csv and breast_cancer_test.csv from the working
    # directory, written as README's lines write them
    work = Path(tempfile.mkdtemp(prefix="vfl-audits-"))
    frame = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "label"})
    train, test = train_test_split(frame, test_size=0.25, random_state=0)
    train.to_csv(work / "breast_cancer.csv", index=False)
    test.to_csv(work / "breast_cancer_test.csv", index=False)
    runs = []
    for config, sets, K in AUDITED:
        name = next((s[5:] for s in sets if s.startswith("name=")), Path(config).stem)
        if only is not None and name not in only:
            continue
        for scale in (1.0, AUDIT_LOW_SCALE):
            out = root / (name if scale == 1.0 else f"{name}-{scale:g}")
            runs.append(
                [
                    "vfl",
                    "audit",
                    "--config",
                    str(REPO / config),
                    "--noise-scale",
                    f"{scale:g}",
                    "--kinds",
                    "adversarial",
                    "--runs",
                    str(K),
                    "--out",
                    str(out),
                    "--overwrite",
                ]
                + [a for s in sets for a in ("--set", s)]
            )
    # the slow ones first (measured: the a9a ADMM sharing audits, then Algorithm 2's)
    slow = ("privacy-a9a-column", "privacy-a9a-row", "privacy-a9a.toml", "dp-admm-alg2")
    runs.sort(key=lambda a: next((i for i, k in enumerate(slow) if k in " ".join(a)), len(slow)))

    def one(args):
        proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
        return proc.stdout

    before = load()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for args, _ in zip(runs, pool.map(one, runs)):
            print(f"{' '.join(args[3:])}: done", flush=True)
    shutil.rmtree(work)
    if only is not None:
        return _merge_audits(root, only)
    subprocess.run(["vfl", "audits", str(root), "--out", str(AUDITS_PNG)], cwd=REPO, check=True)
    print(f"load {before[0]} before, {load()[0]} after")
    return AUDITS_PNG.with_suffix(".csv")


def _merge_audits(root: Path, only) -> Path:
    """The committed audits.csv with the rows of ``only`` replaced by those under ``root``,
    and the figure drawn from it (what ``vfl audits`` writes for the whole table)."""
    csv = AUDITS_PNG.with_suffix(".csv")
    old = pd.read_csv(csv)
    new = audit_table(root).drop(columns="directory")
    table = pd.concat([old[~old["config"].isin(only)], new[new["config"].isin(only)]], ignore_index=True).sort_values(
        ["config", "noise_scale"], ascending=[True, False], kind="stable"
    )
    write_csv_atomic(table, csv)
    save_figure(plot_audit_table(table), AUDITS_PNG)
    return csv
