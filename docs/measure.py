"""Measure README's timings and write them into docs/measured.md and README.

    python docs/measure.py --list             # the keys and what each runs
    python docs/measure.py test-fast main-job # measure these, rewrite their rows and README
    python docs/measure.py scale              # the scale table (docs/figures/scale/scale.csv)
    python docs/measure.py dask [--from BENCH_JSON]  # the Dask table (docs/figures/dask/)
    python docs/measure.py audits [--jobs J]  # the audit table (docs/figures/audits/;
                                              # docs/measure_audits.py)
    python docs/measure.py ceiling            # the bounds beside it that no audit can refute
                                              # (docs/measure_bounds.py)

Every number README marks with ``<!-- measured: KEY -->`` comes from the row
KEY of docs/measured.md, and every row is written here: the command it ran,
what it printed that the number is read from, the load average before and
after (the machine may be shared), and the date. ``tests/test_readme.py``
fails when README and docs/measured.md disagree. Run from the repository
root, in the environment README installs (``pip install ".[test]"``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from time import perf_counter

import pandas as pd

sys.path.append(str(Path(__file__).resolve().parent))  # its siblings, also when loaded by path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `benchmarks`: a folder of the clone
from measure_audits import measure_audits  # noqa: E402
from measure_bounds import (  # noqa: E402
    AUDITS_PNG,
    CEILING_CSV,
    TV_CSV,
    measure_ceiling,
    measure_tv,
)

from benchmarks.report import targets  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MEASURED = REPO / "docs" / "measured.md"
README = REPO / "README.md"
#: where a number may be marked: README and the manual's pages
DOCUMENTS = (README, *sorted((REPO / "docs").glob("*.md")))
SCALE_CSV = REPO / "docs" / "figures" / "scale" / "scale.csv"
DASK_DIR = REPO / "docs" / "figures" / "dask"
SERVICES_DIR = REPO / "docs" / "figures" / "services"
BENCH_DIR = REPO / "docs" / "figures" / "bench"
#: the scale table's sizes: (rows, parties)
SCALE_POINTS = ((32561, 2), (325610, 2), (3256100, 2), (10_000_000, 2), (32561, 16), (3256100, 16))


@dataclass(frozen=True)
class Measurement:
    """One README number: the command, and how its printed output becomes the number."""

    command: str
    #: (stdout + stderr, wall seconds, the temporary directory it wrote into) -> (value, how)
    read: Callable[[str, float, Path], tuple[str, str]]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _pytest(output: str, unit: Callable[[float], str]) -> tuple[str, str]:
    found = re.search(r"(\d+) passed(?:, (\d+) skipped)?.* in ([\d.]+)s", output)
    if not found or re.search(r"\d+ (failed|error)", output):
        raise RuntimeError(f"pytest did not pass:\n{output[-2000:]}")
    passed, skipped, seconds = found.group(1), found.group(2) or "0", float(found.group(3))
    return unit(seconds), (f"{seconds:.1f} s as pytest reports it, {passed} passed, {skipped} skipped")


def _wall(unit: Callable[[float], str]):
    return lambda output, wall, tmp: (unit(wall), f"{wall:.1f} s of wall time")


def _bench_wall(output, wall, tmp):
    """``python -m benchmarks``: its wall time, and its targets and a9a variants as the CSVs
    README's tables are rendered from (BENCH_DIR)."""
    bench_tables(tmp / "bench" / "bench.json")
    return _minutes(wall), f"{wall:.1f} s of wall time"


def bench_tables(bench_json: Path) -> Path:
    """bench.json's targets (targets.csv) and a9a variants with sklearn's references
    (variants.csv, references.csv), written atomically into BENCH_DIR."""

    bench = json.loads(Path(bench_json).read_text())
    frames = {
        "targets.csv": pd.DataFrame(
            [
                {
                    "target": key,
                    "description": t["description"],
                    "measured": t["ratio"],
                    "threshold": t["threshold"],
                    "pass": bool(t["pass"]),
                    "why": t["why"],
                }
                for key, t in targets(bench).items()
            ]
        )
    }
    v = bench["variants_a9a"]
    frames["variants.csv"] = pd.DataFrame(
        [
            {
                "variant": r["label"],
                "diverged": bool(r["diverged"]),
                "epochs_run": r["epochs_run"],
                "final_suboptimality": r["final_suboptimality"],
                **{
                    f"{what}_to_{name}": r.get(f"{what}_to_{key}")
                    for name, key in (("1e-4", "0.0001"), ("1e-6", "1e-06"))
                    for what in ("epochs", "seconds")
                },
                "lbfgs_seconds_to_1e-4": v["a9a_fast"]["lbfgs_seconds_to_1e-4"],
            }
            for r in v["variants"]
        ]
    )
    frames["references.csv"] = pd.DataFrame(
        [
            {
                "reference": f"sklearn {name}",
                "tol": r["tol"],
                "iterations": r["n_iter"],
                "seconds": r["seconds"],
                "target": float(target),
            }
            for name, ref in v["sklearn"].items()
            for target, r in ref["targets"].items()
            if r is not None
        ]
    )
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        tmp = BENCH_DIR / f".{name}.partial"
        frame.to_csv(tmp, index=False, float_format="%.6g")
        os.replace(tmp, BENCH_DIR / name)
    return BENCH_DIR


def _sampler(which: str):
    """The sampler benchmark's per-vector time (exact, or numpy's) or its epoch ratio, from its
    bench.json."""

    def read(output, wall, tmp):
        found = json.loads((tmp / "bench" / "bench.json").read_text())["sampler"]
        if which == "numpy":
            return (
                f"{1e3 * found['numpy_seconds']:.1f} ms",
                f"median numpy `standard_normal` vector of {found['values']} values, the reference of `sampler-vector`",
            )
        if which == "vector":
            return (
                f"{1e3 * found['exact_seconds']:.1f} ms",
                f"median exact discrete Gaussian vector of {found['values']} values "
                f"(`ExactSampler.add`, ChaCha20 keystream), against "
                f"{1e3 * found['numpy_seconds']:.2f} ms for numpy "
                f"({found['exact_over_numpy']:.0f}x) and "
                f"{1e3 * found['cks2020_seconds']:.0f} ms for Canonne et al.'s Algorithms "
                f"1-3, the sampler it replaced",
            )
        if which in ("timing", "timing-previous"):
            name = "exact replay 3 sigma" if which == "timing" else "cks2020 natural"
            t = found["timing"][name]
            size = f"{t['per_class']} and {t['per_class']}" if "per_class" in t else f"{t['small']} and {t['large']}"
            cut = "3" if which == "timing" else "2"
            who = (
                "the exact sampler" if which == "timing" else "Canonne et al.'s Algorithms 1-3, the sampler it replaced"
            )
            return (
                f"{t['auc']:.2f}",
                f"AUC of a single draw's time as a classifier of a noise value beyond "
                f"{cut} sigma against one within 0.5 sigma, {who}, {size} timed draws: "
                f"KS p {t['ks_p']:.2g}, "
                f"medians {t['median_us_small']:.0f} and {t['median_us_large']:.0f} us",
            )
        per_epoch = found["admm_sharing_row_a9a_seconds_per_epoch"]
        return (
            f"{found['epoch_ratio']:.1f}x",
            "solver seconds per epoch of papers/hu/configs/privacy-a9a-row.toml, median of "
            "3 alternated runs: deployment (exact noise) "
            f"{1e3 * per_epoch['deployment (exact)']:.1f} ms over simulation (numpy) "
            f"{1e3 * per_epoch['simulation (numpy)']:.1f} ms; with each party's noise "
            f"pre-drawn (`ExactSampler(pool=True)`) {found['pool_epoch_ratio']:.1f}x",
        )

    return read


def _services_noop(output, wall, tmp):
    found = json.loads((tmp / "bench" / "bench.json").read_text())["party_services"]["cases"][0]
    return (
        f"{found['noop_round_trip_ms']:.2f} ms",
        "median of 200 no-op `Health` calls over the coordinator's open mutual-TLS gRPC "
        "channel to a party service on localhost",
    )


def _flower_noop(output, wall, tmp):
    found = json.loads(output.strip().splitlines()[-1])
    return (
        f"{found['median_s']:.1f} s",
        f"a no-op Message ServerApp -> local SuperLink -> SuperNode -> ClientApp and back, "
        f"flwr 1.20 (VFL_FLWR_PYTHON, a scratch venv), plaintext, median of {found['n']}: "
        f"{found['median_s']:.2f} s (min {found['min_s']:.2f} s)",
    )


MEASUREMENTS = {
    "test-suite": Measurement("pytest -q", lambda out, wall, tmp: _pytest(out, _minutes)),
    "test-fast": Measurement('pytest -q -m "not slow"', lambda out, wall, tmp: _pytest(out, lambda s: f"{s:.0f} s")),
    "main-job": Measurement("vfl run --config configs/a9a.toml --out {tmp}/run", _wall(lambda s: f"{s:.0f} s")),
    "reproduce-hu": Measurement("vfl reproduce hu --out {tmp}/figures", _wall(_minutes)),
    "reproduce-dp-admm": Measurement("vfl reproduce dp-admm --out {tmp}/figures", _wall(_minutes)),
    "reproduce-ldp": Measurement("vfl reproduce ldp --out {tmp}/figures", _wall(lambda s: f"{s:.0f} s")),
    "reproduce-private-utility": Measurement("vfl reproduce private-utility --out {tmp}/figures", _wall(_minutes)),
    # every default case, and the start-up case (one of issue 23's targets, about 30 s)
    "benchmarks": Measurement(
        "python -m benchmarks --only epoch_vs_floor,prototype,"
        "time_to_suboptimality,variants_a9a,z_update,variants_gisette,"
        "under_noise,epsilon_to_target,scaling,startup --out {tmp}/bench",
        _bench_wall,
    ),
    "sampler-vector": Measurement("python -m benchmarks --only sampler --out {tmp}/bench", _sampler("vector")),
    "sampler-numpy": Measurement("python -m benchmarks --only sampler --out {tmp}/bench", _sampler("numpy")),
    "sampler-epoch": Measurement("python -m benchmarks --only sampler --out {tmp}/bench", _sampler("epoch")),
    "sampler-timing": Measurement("python -m benchmarks --only sampler --out {tmp}/bench", _sampler("timing")),
    "sampler-timing-previous": Measurement(
        "python -m benchmarks --only sampler --out {tmp}/bench", _sampler("timing-previous")
    ),
    "services-noop": Measurement("python -m benchmarks --only party_services --out {tmp}/bench", _services_noop),
    "flower-noop": Measurement("python -m benchmarks.flower_noop", _flower_noop),
}


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def measure(key: str) -> tuple[str, str]:
    """Run KEY's command from the repository root in a fresh temporary directory."""
    m = MEASUREMENTS[key]
    with tempfile.TemporaryDirectory() as tmp:
        command = m.command.format(tmp=tmp)
        before = load()
        t0 = perf_counter()
        proc = subprocess.run(command, shell=True, cwd=REPO, capture_output=True, text=True)
        wall = perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{command} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        value, how = m.read(proc.stdout + proc.stderr, wall, Path(tmp))
    shown = command.replace(tmp, "TMP")
    return value, f"`{shown}`: {how}; load {before[0]} before, {load()[0]} after"


def _row(key: str, value: str, how: str) -> str:
    return f"| `{key}` | {value} | {how} | {date.today().isoformat()} |"


def record(key: str, value: str, how: str) -> None:
    """Rewrite KEY's row of docs/measured.md (or add it) and every document's marked number."""
    text = MEASURED.read_text()
    row = re.compile(rf"^\| `{re.escape(key)}` \|.*$", re.M)
    text = (
        row.sub(_row(key, value, how), text)
        if row.search(text)
        else text.rstrip("\n") + "\n" + _row(key, value, how) + "\n"
    )
    _write(MEASURED, text)
    # "about 66 s<!-- measured: test-fast -->": the value is the words before the mark
    mark = re.compile(rf"[\w.,]+(\s(?:s|ms|min|x))?<!-- measured: {re.escape(key)} -->")
    for path in DOCUMENTS:
        text = path.read_text()
        if mark.search(text):
            _write(path, mark.sub(f"{value}<!-- measured: {key} -->", text))


def measure_scale(points=SCALE_POINTS) -> Path:
    """Each scale point in its own process (peak RSS is per process), into SCALE_CSV; points
    not measured now keep their rows."""

    rows = []
    for n, parties in points:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks", "scale", "--rows", str(n), "--parties", str(parties), "--json"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"scale {n} x {parties} failed:\n{proc.stderr[-2000:]}")
        found = json.loads(proc.stdout.strip().splitlines()[-1])
        found.pop("lbfgs", None)
        rows.append({**found, "load_after": load()[0]})
    SCALE_CSV.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    if SCALE_CSV.is_file() and points != SCALE_POINTS:
        kept = pd.read_csv(SCALE_CSV)
        now = set(zip(frame["rows"], frame["parties"]))
        kept = kept[[(r, m) not in now for r, m in zip(kept["rows"], kept["parties"])]]
        frame = pd.concat([kept, frame]).sort_values(["parties", "rows"], kind="stable")
    tmp = SCALE_CSV.with_name(f".{SCALE_CSV.name}.partial")
    frame.to_csv(tmp, index=False, float_format="%.6g")
    os.replace(tmp, SCALE_CSV)
    return SCALE_CSV


def measure_dask(bench_json: Path | None = None) -> Path:
    """``python -m benchmarks --only dask_parties`` (or a bench.json it wrote), into
    DASK_DIR/dask.csv (a row per case) and dask-nanny.csv, with the load around it."""

    with tempfile.TemporaryDirectory() as tmp:
        if bench_json is None:
            subprocess.run(
                [sys.executable, "-m", "benchmarks", "--only", "dask_parties", "--out", f"{tmp}/bench"],
                cwd=REPO,
                check=True,
                capture_output=True,
            )
            bench_json = Path(tmp) / "bench" / "bench.json"
        bench = json.loads(Path(bench_json).read_text())
    found, machine = bench["dask_parties"], bench["machine"]
    if found.get("errors"):
        raise RuntimeError(f"the Dask benchmark failed: {found['errors']}")
    load = {"load_before": machine["load_before"][0], "load_after": machine["load_after"][0]}
    DASK_DIR.mkdir(parents=True, exist_ok=True)
    for name, rows in (("dask.csv", found["cases"]), ("dask-nanny.csv", [found["nanny_trim"]])):
        tmp = DASK_DIR / f".{name}.partial"
        # byte counts keep every digit (%.6g would round 1,044,068 to 1.04407e+06)
        pd.DataFrame([{**row, **load} for row in rows]).to_csv(tmp, index=False, float_format="%.12g")
        os.replace(tmp, DASK_DIR / name)
    return DASK_DIR / "dask.csv"


def measure_services() -> Path:
    """``python -m benchmarks --only party_services`` into SERVICES_DIR/services.csv (one row:
    in-process, the party services, simulation and deployment epochs), with the load."""

    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "benchmarks", "--only", "party_services", "--out", f"{tmp}/bench"],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        bench = json.loads((Path(tmp) / "bench" / "bench.json").read_text())
    found, machine = bench["party_services"], bench["machine"]
    if found.get("error") or not found.get("cases"):
        raise RuntimeError(f"the party services benchmark failed: {found}")
    load = {"load_before": machine["load_before"][0], "load_after": machine["load_after"][0]}
    SERVICES_DIR.mkdir(parents=True, exist_ok=True)
    tmp = SERVICES_DIR / ".services.csv.partial"
    pd.DataFrame([{**row, **load} for row in found["cases"]]).to_csv(tmp, index=False, float_format="%.12g")
    os.replace(tmp, SERVICES_DIR / "services.csv")
    return SERVICES_DIR / "services.csv"


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if not argv or "--list" in argv:
        for key, m in MEASUREMENTS.items():
            print(f"{key:28} {m.command}")
        print(f"{'scale':28} python -m benchmarks scale at {SCALE_POINTS} -> {SCALE_CSV}")
        print(f"{'dask':28} python -m benchmarks --only dask_parties -> {DASK_DIR}")
        print(f"{'services':28} python -m benchmarks --only party_services -> {SERVICES_DIR}")
        print(f"{'audits':28} vfl audit of every config that claims a guarantee -> {AUDITS_PNG}")
        print(
            f"{'ceiling':28} what any pair can exercise on privacy-a9a, and dp-admm-alg2's "
            f"total variation -> {CEILING_CSV}, {TV_CSV} (after audits)"
        )
        return 0
    if argv[0] == "ceiling":
        print(f"wrote {measure_ceiling()} and {measure_tv()}; then: python docs/readme_tables.py")
        return 0
    if argv[0] == "audits" or argv[0].startswith("audits:"):
        jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 2
        # audits:NAME,NAME audits those AUDITED entries again, into the committed table
        only = argv[0][7:].split(",") if argv[0].startswith("audits:") else None
        print(f"wrote {measure_audits(jobs, only=only)}; then: python docs/readme_tables.py")
        return 0
    if argv[0] == "services":
        print(f"wrote {measure_services()}; then: python docs/readme_tables.py")
        return 0
    if argv[0] == "dask":
        source = Path(argv[argv.index("--from") + 1]) if "--from" in argv else None
        print(f"wrote {measure_dask(source)}; then: python docs/readme_tables.py")
        return 0
    unknown = sorted(k for k in set(argv) - set(MEASUREMENTS) - {"scale"} if not k.startswith("scale:"))
    if unknown:
        print(f"unknown key(s) {', '.join(unknown)}; --list shows them", file=sys.stderr)
        return 2
    for key in argv:
        if key == "scale":
            print(f"wrote {measure_scale()}; then: python docs/readme_tables.py")
            continue
        if key.startswith("scale:"):  # scale:32561x2,32561x16 remeasures those points only
            points = tuple(tuple(int(v) for v in p.split("x")) for p in key[6:].split(","))
            print(f"wrote {measure_scale(points)}; then: python docs/readme_tables.py")
            continue
        value, how = measure(key)
        record(key, value, how)
        print(f"{key}: {value} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
