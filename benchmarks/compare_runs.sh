#!/usr/bin/env bash
# Same seed, same numbers: `vfl run` of a fixed set of configs, in-process and on Dask, written
# under OUT/<label>/<case>; with two labels, every CSV compared to the bit (timing columns aside).
#
#   benchmarks/compare_runs.sh VFL OUT LABEL      # run every case with the `vfl` executable VFL
#   benchmarks/compare_runs.sh --compare OUT A B  # compare OUT/A with OUT/B (PYTHON: one with pandas)
set -euo pipefail
if [[ "${1:-}" == "--compare" ]]; then
  "${PYTHON:-python3}" - "$2/$3" "$2/$4" <<'EOF'
import re
import sys
from pathlib import Path

import pandas as pd

a, b = Path(sys.argv[1]), Path(sys.argv[2])
if not any(a.rglob("*.csv")) or not b.is_dir():  # (a wrong path must not read "all identical")
    sys.exit(f"error: {a} holds no CSV, or {b} is not a directory")
bad = diagnostics = 0
for csv in sorted(a.rglob("*.csv")):
    other = b / csv.relative_to(a)
    if not other.exists():
        # a cache file named by a hash of its inputs (``KEY-0123456789ab.csv``): the inputs'
        # record may have grown a key, so the one file of the same KEY is its counterpart
        key = re.fullmatch(r"(.+)-[0-9a-f]{12}\.csv", csv.name)
        same_key = sorted(other.parent.glob(f"{key[1]}-????????????.csv")) if key else []
        if len(same_key) != 1:
            print(f"MISSING {other}")
            bad += 1
            continue
        other = same_key[0]
    # a figure's CSV starts with '#' lines saying what it holds: compared as text
    heads = [[line for line in f.read_text().splitlines() if line.startswith("#")] for f in (csv, other)]
    if heads[0] != heads[1]:
        bad += 1
        print(f"DIFFERENT {csv.relative_to(a)}: its '#' header lines")
        continue
    left, right = (pd.read_csv(f, skiprows=len(heads[0])) for f in (csv, other))
    timing = [c for c in left.columns if "time_s" in c or "seconds" in c]
    if timing:  # a timing table's ratios are ratios of times
        timing += [c for c in left.columns if c.endswith("ratio") and not c.startswith("paper")]
    left, right = left.drop(columns=timing), right.drop(columns=timing)
    try:
        pd.testing.assert_frame_equal(left, right, check_exact=True)
        print(f"same      {csv.relative_to(a)} ({len(left)} rows x {len(left.columns)} columns)")
        continue
    except AssertionError as exc:
        why = " ".join(str(exc).split())[:300]
    # communication.csv counts the diagnostics phase since issue 39: rows only B has
    if "phase" in left.columns and (right["phase"] == "diagnostics").any() and not (left["phase"] == "diagnostics").any():
        try:
            kept = right[right["phase"] != "diagnostics"].reset_index(drop=True)
            pd.testing.assert_frame_equal(left, kept, check_exact=True)
            diagnostics += 1
            print(f"same+diag {csv.relative_to(a)} (B adds {len(right) - len(kept)} diagnostics-phase rows)")
            continue
        except AssertionError:
            pass
    bad += 1
    print(f"DIFFERENT {csv.relative_to(a)}: {why}")
if diagnostics:
    print(f"{diagnostics} file(s) equal but for the diagnostics phase's rows that B counts")
print("all identical" if not bad else f"{bad} file(s) differ")
sys.exit(1 if bad else 0)
EOF
  exit $?
fi
VFL=$1 OUT=$2/$3
export VFL_DATA_DIR=${VFL_DATA_DIR:-/work/shared/data} MPLBACKEND=Agg
PAPERS=$(cd "$(dirname "$0")/.." && pwd)/papers
CONFIGS=$(cd "$(dirname "$0")/.." && pwd)/configs
run() {  # case config [--set ...]
  local name=$1 config=$2
  shift 2
  rm -rf "$OUT/$name"
  "$VFL" run --config "$config" --out "$OUT/$name" -q "$@" >/dev/null
}
STACK="$PAPERS/private_utility/configs/private-stacking-a9a.toml"
DP="$PAPERS/dp_admm/configs/dp-admm-l2.toml"
LDP="$PAPERS/ldp/configs/ldp-admm-n10.toml"
SGD="$PAPERS/hu/configs/fig1-a9a-sgd.toml"
# in-process
run a9a "$CONFIGS/a9a.toml"
run a9a-noisy "$CONFIGS/a9a.toml" --epochs 20 --set privacy.sigma=0.1 --set 'privacy.form="output"' \
  --set 'solver.order="gauss_seidel"'
run stacking "$STACK" --set privacy.replayable_noise=true
run dp-admm-l2 "$DP" --set solver.epochs=5 --set run.repeats=1
run ldp-admm-n10 "$LDP" --set run.repeats=2
run fdml "$SGD" --set solver.epochs=3 --set privacy.sigma=0.1
# on a local Dask cluster (one BLAS thread, as the workers)
D=(--set run.backend=dask)
run dask-a9a "$CONFIGS/a9a.toml" --epochs 10 --set solver.blas_threads=1 --set privacy.sigma=0.1 \
  --set 'privacy.form="output"' --set run.eval_every=1 "${D[@]}"
run dask-stacking "$STACK" --set privacy.replayable_noise=true "${D[@]}"
run dask-dp-admm-l2 "$DP" --set solver.epochs=5 --set run.repeats=1 "${D[@]}"
run dask-ldp-admm-n10 "$LDP" --set run.repeats=2 "${D[@]}"
run dask-fdml "$SGD" --set solver.epochs=2 --set privacy.sigma=0.1 "${D[@]}"
echo "done: $OUT"
