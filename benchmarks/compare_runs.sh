#!/usr/bin/env bash
# Same seed, same numbers: `vfl run` of a fixed set of configs, in-process and on Dask, written
# under OUT/<label>/<case>; with two labels, every CSV compared to the bit (timing columns aside).
#
#   benchmarks/compare_runs.sh VFL OUT LABEL      # run every case with the `vfl` executable VFL
#   benchmarks/compare_runs.sh --compare OUT A B  # compare OUT/A with OUT/B (PYTHON: one with pandas)
set -euo pipefail
if [[ "${1:-}" == "--compare" ]]; then
  "${PYTHON:-python3}" - "$2/$3" "$2/$4" <<'EOF'
import sys
from pathlib import Path

import pandas as pd

a, b = Path(sys.argv[1]), Path(sys.argv[2])
bad = 0
for csv in sorted(a.rglob("*.csv")):
    other = b / csv.relative_to(a)
    left = pd.read_csv(csv)
    if not other.exists():
        print(f"MISSING {other}")
        bad += 1
        continue
    right = pd.read_csv(other)
    timing = [c for c in left.columns if "time_s" in c or c.endswith("_seconds")]
    try:
        pd.testing.assert_frame_equal(left.drop(columns=timing), right.drop(columns=timing),
                                      check_exact=True)
        print(f"same      {csv.relative_to(a)} ({len(left)} rows x {len(left.columns)} columns)")
    except AssertionError as exc:
        bad += 1
        print(f"DIFFERENT {csv.relative_to(a)}: {' '.join(str(exc).split())[:300]}")
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
