#!/usr/bin/env bash
# Run every chatrecall benchmark and write JSON + markdown into benchmarks/results/.
#
# Data is read from ../shared/data beside the checkout (override: DATA=/path/to/data);
# it is never copied into the repository. Each run prints its tables and takes
# well under 15 minutes on a 2-core CPU (first runs embed the data sets once; the
# document vectors are then cached in ~/.cache/chatrecall-bench, CHATRECALL_BENCH_CACHE=off
# disables that cache).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
DATA="${DATA:-$ROOT/../shared/data}"
OUT="${OUT:-$HERE/results}"
PY="${PYTHON:-python}"
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False
cd "$ROOT"

run() { echo; echo "== chatrecall bench $*"; "$PY" -m chatrecall bench "$@"; }

run locomo "$DATA/locomo/locomo_dev.json" --out "$OUT/locomo.json"
run longmemeval "$DATA/longmemeval/longmemeval_s_dev60.json.gz" --out "$OUT/longmemeval.json"
run replay "$DATA/locomo/locomo_dev.json" --out "$OUT/replay_locomo.json"
run replay "$DATA/longmemeval/longmemeval_s_dev60.json.gz" --out "$OUT/replay_longmemeval.json"
run gating "$DATA/gating/cast_needs_history_labels.jsonl" --text-field raw_utterance \
    --label-field needs_history --out "$OUT/gating_cast.json"
run gating "$DATA/gating/ikat2023_memory_labels.jsonl" --text-field utterance \
    --label-field needs_ptkb_memory --out "$OUT/gating_ikat_ptkb.json"
run speed --out "$OUT/speed.json" --sizes 1000,10000,100000 --queries 50
echo; echo "results in $OUT"
