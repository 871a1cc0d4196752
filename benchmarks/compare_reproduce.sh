#!/usr/bin/env bash
# Same seed, same figures: `vfl reproduce` of every paper on shortened copies of its configs
# (epochs <= EPOCHS, repeats <= 2, one sweep seed, noise replayable from the seed; every other
# setting as shipped), written under OUT/<label>/figures; with two labels, every CSV compared
# to the bit (timing columns aside, by compare_runs.sh --compare). The full figures take hours of CPU; the shortened ones
# run every figure's code path, every solver and every table in minutes.
#
#   benchmarks/compare_reproduce.sh VFL CLONE OUT LABEL [EPOCHS]  # VFL: a `vfl` executable;
#                                                             # CLONE: its source tree (configs)
#   benchmarks/compare_reproduce.sh --compare OUT A B
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [[ "${1:-}" == "--compare" ]]; then
  exec "$HERE/compare_runs.sh" --compare "$2" "$3/figures" "$4/figures"
fi
VFL=$1 CLONE=$2 OUT=$3/$4 EPOCHS=${5:-4}
export VFL_DATA_DIR=${VFL_DATA_DIR:-/work/shared/data} MPLBACKEND=Agg
rm -rf "$OUT" && mkdir -p "$OUT/configs"
"${PYTHON:-python3}" - "$CLONE/papers" "$OUT/configs" "$EPOCHS" <<'EOF'
import re
import sys
from pathlib import Path

papers, out, epochs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])


def shorten(text: str) -> str:
    text = re.sub(r"(?m)^(epochs\s*=\s*)(\d+)", lambda m: f"{m[1]}{min(int(m[2]), epochs)}", text)
    text = re.sub(r"(?m)^(repeats\s*=\s*)(\d+)", lambda m: f"{m[1]}{min(int(m[2]), 2)}", text)
    text = re.sub(r"(?m)^(seeds\s*=\s*)\[([^,\]]+)[^\]]*\]", r"\1[\2]", text)
    # an accounted run's exact noise comes from OS entropy and is never replayed: the copy
    # draws it from the seed instead (the same mechanism, a simulation), so two versions compare
    if "replayable_noise" not in text:
        text = re.sub(r"(?m)^\[privacy\]\s*$", "[privacy]\nreplayable_noise = true", text)
    return text


for config in sorted(papers.glob("*/configs/*.toml")):
    target = out / config.parent.parent.name / config.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(shorten(config.read_text()))
EOF
for paper in "$OUT"/configs/*/; do
  name=$(basename "$paper")
  echo "== $name" >&2
  "$VFL" reproduce "${name//_/-}" --configs "$paper" --out "$OUT/figures" --jobs 2
done
