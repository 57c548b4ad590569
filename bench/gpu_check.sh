#!/usr/bin/env bash
# The GPU checks of issue 25, as one prepared script for a CUDA machine (run from the repository root,
# after `make setup corpus`): about 10 minutes on one H100/H200, sizes that fit 139 GiB.
#   1. `adopter verify --device cuda --dtype bf16` on the modeling files of the Adopter paper's nine
#      models (every fix `fix` writes there, built small, compared, timed on the GPU);
#   2. bench/gains.py --device cuda --dtype bf16 --quick: whole training steps, original vs rewritten
#      model and script (SDPA, fused norms, fused AdamW; Liger kernels where liger_kernel is installed);
#   3. bench/wham_fidelity.py: the accelerator model's prediction against the measured GPU step.
# Each part runs under its own timeout; an out-of-memory error or a failing model is reported in the
# JSON and the script goes on. Everything lands in one file: bench/out/gpu_check.json (or $1).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
OUT="${1:-bench/out/gpu_check.json}"
WORK="$(mktemp -d)"
mkdir -p "$(dirname "$OUT")"
export PYTHONPATH="$PWD/server:$PWD/.cache/tf435${PYTHONPATH:+:$PYTHONPATH}"

part() {  # part NAME SECONDS COMMAND...: run it, keep its exit status, stdout (JSON or text) and stderr tail
  local name="$1" limit="$2"; shift 2
  local start; start=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  echo "$name $rc $(( $(date +%s) - start ))" >>"$WORK/status"
}

"$PY" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print(torch.cuda.get_device_name(0))' \
  >"$WORK/device.out" 2>"$WORK/device.err" || { echo "no CUDA device: $(tail -1 "$WORK/device.err")"; exit 2; }

for m in bert roberta gpt2 gpt_neo distilbert t5 albert groupvit resnet; do
  part "verify-$m" 60 "$PY" -m adopter verify ".cache/tf435/transformers/models/$m/modeling_$m.py" \
    --device cuda --dtype bf16 --target cuda --repeats 10 --timeout 50 --format json
done
part gains 240 "$PY" bench/gains.py --device cuda --dtype bf16 --quick --out "$WORK/gains.json"
part fidelity 200 "$PY" bench/wham_fidelity.py --out "$WORK/fidelity.json"

"$PY" - "$WORK" "$OUT" <<'PYEOF'
import json, sys
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
result = {"device": (work / "device.out").read_text().strip(), "parts": {}}
for line in (work / "status").read_text().splitlines():
    name, rc, seconds = line.split()
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
print(f"wrote {out}: " + ", ".join(f"{k} exit {v['exit']}" for k, v in result["parts"].items()))
PYEOF
