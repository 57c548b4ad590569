#!/usr/bin/env bash
# The GPU checks of issue 25, as one prepared script for a CUDA machine (run from the repository root,
# after `make setup corpus`): at most GPU_CHECK_SECONDS (default 540) on one H100/H200, sizes that fit 139 GiB.
#   1. `adopter verify --device cuda --dtype bf16` on the modeling files of the Adopter paper's nine
#      models (every fix `fix` writes there, built small, compared, timed on the GPU);
#   2. bench/wham_gpu_mechanisms.py (the GPU step model's batch-norm traffic against a timed copy) and
#      bench/wham_fidelity.py: the accelerator model's prediction against the measured GPU step;
#   3. bench/gains.py --device cuda --dtype bf16 --quick: whole training steps, original vs rewritten
#      model and script (SDPA, fused norms, fused AdamW; Liger kernels where liger_kernel is installed).
# Each part runs under its own timeout, cut to what is left of the whole run's budget (a part that would
# start with under 20 s left is recorded as skipped); an out-of-memory error or a failing model is reported
# in the JSON and the script goes on. Everything lands in one file: bench/out/gpu_check.json (or $1).
# Environment: PYTHON (default .venv/bin/python), ADOPTER_TF435 (default .cache/tf435), GPU_CHECK_SECONDS,
# GPU_CHECK_PARTS (space-separated part names, e.g. "verify-t5 wham-mechanisms": run only those; default all).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
OUT="${1:-bench/out/gpu_check.json}"
WORK="$(mktemp -d)"
mkdir -p "$(dirname "$OUT")"
TF="${ADOPTER_TF435:-.cache/tf435}"  # transformers 4.35 (bench/tf435.py reads the same variable)
export PYTHONPATH="$PWD/server:$PWD/$TF${PYTHONPATH:+:$PYTHONPATH}"
BUDGET="${GPU_CHECK_SECONDS:-540}"
T0=$(date +%s)
RESERVE=15  # seconds kept for writing the JSON

left() { echo $(( BUDGET - RESERVE - ($(date +%s) - T0) )); }

part() {  # part NAME SECONDS COMMAND...: run it, keep its exit status, stdout (JSON or text) and stderr tail
  local name="$1" limit="$2"; shift 2
  if [[ -n "${GPU_CHECK_PARTS:-}" && " $GPU_CHECK_PARTS " != *" $name "* ]]; then return; fi
  local remaining; remaining=$(left)
  if (( remaining < 20 )); then echo "$name skipped 0" >>"$WORK/status"; : >"$WORK/$name.out"; : >"$WORK/$name.err"; return; fi
  (( limit > remaining )) && limit=$remaining
  local start; start=$(date +%s)
  echo "[$(( start - T0 )) s] $name (limit $limit s)" >&2
  timeout --kill-after=5 "$limit" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  echo "$name $rc $(( $(date +%s) - start ))" >>"$WORK/status"
}

"$PY" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print(torch.cuda.get_device_name(0))' \
  >"$WORK/device.out" 2>"$WORK/device.err" || { echo "no CUDA device: $(tail -1 "$WORK/device.err")"; exit 2; }

for m in bert roberta gpt2 gpt_neo distilbert t5 albert groupvit resnet; do
  part "verify-$m" 45 "$PY" -m adopter verify "$TF/transformers/models/$m/modeling_$m.py" \
    --device cuda --dtype bf16 --target cuda --repeats 10 --timeout 40 --format json
done
part wham-mechanisms 60 "$PY" bench/wham_gpu_mechanisms.py --device cuda --out "$WORK/wham-mechanisms.json"
fid=$(left); (( fid > 150 )) && fid=150
part fidelity "$fid" "$PY" bench/wham_fidelity.py --time-limit-s $(( fid > 60 ? fid - 45 : 15 )) --out "$WORK/fidelity.json"
part gains 200 "$PY" bench/gains.py --device cuda --dtype bf16 --quick --no-memory --out "$WORK/gains.json"

"$PY" - "$WORK" "$OUT" "$BUDGET" <<'PYEOF'
import json, sys
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
result = {"device": (work / "device.out").read_text().strip(), "budget_s": int(sys.argv[3]), "parts": {}}
for line in (work / "status").read_text().splitlines():
    name, rc, seconds = line.split()
    if rc == "skipped":
        result["parts"][name] = {"skipped": "the run's time budget (GPU_CHECK_SECONDS) was spent"}
        continue
    entry = {"exit": int(rc), "seconds": int(seconds),
             "timed_out": rc in ("124", "137"),
             "stderr_tail": (work / f"{name}.err").read_text(errors="replace")[-2000:]}
    text = (work / f"{name}.out").read_text(errors="replace")
    for candidate in (work / f"{name}.json", None):
        try:
            entry["result"] = json.loads(candidate.read_text() if candidate else text)
            break
        except (OSError, ValueError, AttributeError):
            continue
    else:
        entry["stdout_tail"] = text[-4000:]
    entry["out_of_memory"] = "out of memory" in (entry["stderr_tail"] + text[-4000:]).lower()
    result["parts"][name] = entry
out.write_text(json.dumps(result, indent=1))
print(f"wrote {out}: " + ", ".join(f"{k} exit {v.get('exit', 'skipped')}" for k, v in result["parts"].items()))
PYEOF
