#!/usr/bin/env bash
# The prepared GPU check, for a machine with an NVIDIA GPU and its driver: installs the extras (NVRTC, ptxas), says which devices work,
# runs the op suite on CUDA (CUDA C through NVRTC) and on PTX (PTX through ptxas), then the benchmark table on both. Unattended; each stage
# has a time limit so the whole stays under 8 minutes on one GPU. Usage: bash extra/gpu_check.sh [pytest workers, default 8]
set -uo pipefail
cd "$(dirname "$0")/.."
WORKERS="${1:-8}"
OUT="${OUT:-/tmp}/gpu_check"
mkdir -p "$OUT"
stage() {  # stage NAME SECONDS CMD...: run with a time limit, keep its output, print its tail
  local name="$1" limit="$2"; shift 2
  echo "==== $name (limit ${limit}s)"
  local st=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "exit $? after $((SECONDS - st))s"
  tail -n 15 "$OUT/$name.log"
}
stage install 120 python3 -m pip install -q -e '.[testing,cuda]'
stage devices 60 python3 -m tinygrad.device
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || true
# the tests without the device fixture run on the default device (test_jit.py: TinyJit replays through CUDA graphs); the fixture's own
# devices (CPU, PYTHON, LLVM, GPU) are deselected
OPS="test/test_tensor_ops.py test/test_tensor_math.py test/test_tensor_reduce.py test/test_tensor_processing.py test/test_tensor_indexing.py
     test/test_tensor_creation.py test/test_tensor_dtypes.py test/test_tensor_cores.py test/test_cuda.py test/test_jit.py"
SEL="not CPU and not PYTHON and not LLVM and not GPU"
# shellcheck disable=SC2086
stage ops_cuda 150 env CUDA=1 python3 -m pytest -n "$WORKERS" -q -p no:cacheprovider $OPS -k "$SEL"
# shellcheck disable=SC2086
stage ops_ptx 150 env CUDA=1 PTX=1 python3 -m pytest -n "$WORKERS" -q -p no:cacheprovider $OPS -k "$SEL"
stage bench_cuda 60 env CUDA=1 python3 extra/bench/bench_core.py --quick
stage bench_ptx 60 env CUDA=1 PTX=1 python3 extra/bench/bench_core.py --quick
stage jit_cuda 30 env CUDA=1 python3 extra/bench/bench_jit.py --quick
echo "==== summary"
grep -hE "passed|failed|error" "$OUT"/ops_*.log | tail -n 4
