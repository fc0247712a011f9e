#!/usr/bin/env bash
# The AMD and METAL checks for a machine that has the hardware (unattended): which devices open, the op suite on AMD through HIP C++
# (hiprtc) and through LLVM IR (AMD_LLVM=1), or on METAL on a Mac, then the device benchmark table. Usage: bash extra/gpu_check_amd.sh
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[testing]' || exit 1
python3 -m tinygrad.device
OPS="test/test_tensor_ops.py test/test_tensor_math.py test/test_tensor_reduce.py test/test_tensor_processing.py test/test_tensor_indexing.py
     test/test_tensor_creation.py test/test_tensor_dtypes.py test/test_tensor_cores.py"
run() { echo "== $*"; timeout 900 env "$@" python3 -m pytest -q -x $OPS -k "AMD or METAL or not (CPU or PYTHON or LLVM or GPU)" | tail -3; }
if [ "$(uname)" = "Darwin" ]; then
  run TEST_DEVICES=METAL METAL=1
else
  run TEST_DEVICES=AMD AMD=1
  run TEST_DEVICES=AMD AMD=1 AMD_LLVM=1
fi
[ -f extra/bench/bench_devices.py ] && timeout 600 python3 extra/bench/bench_devices.py
