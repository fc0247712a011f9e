# fixtures every test file may use
import os, re
# every kernel a test compiles is checked for memory accesses that are neither gated nor provably in bounds (codegen raises)
os.environ.setdefault("IGNORE_OOB", "0")
import pytest
from tinygrad.device import Device, is_dtype_supported
from tinygrad.dtype import DType

# run a test on each device: it becomes Device.DEFAULT for the test. A device that can't open here (no library, no hardware) is skipped,
# and so is a test whose parameters name a dtype the device doesn't hold. REMOTE joins when REMOTE_HOST names a running server, the GPUs
# of machines that have one when TEST_DEVICES names them (e.g. TEST_DEVICES=AMD,METAL)
@pytest.fixture(params=["CPU", "PYTHON", "LLVM", "GPU", "WEBGPU"] + (["REMOTE"] if os.environ.get("REMOTE_HOST") else []) +
                [d for d in os.environ.get("TEST_DEVICES", "").upper().split(",") if d])
def device(request, monkeypatch):
  try: Device[request.param]
  except Exception as e: pytest.skip(f"device {request.param} is not available: {e}")
  params = getattr(request.node, "callspec", None)
  for dt in (v for v in (params.params.values() if params is not None else ()) if isinstance(v, DType)):
    if not is_dtype_supported(dt, request.param): pytest.skip(f"{request.param} does not support {dt}")
  monkeypatch.setitem(Device.__dict__, "DEFAULT", request.param)
  return request.param

# devices whose every kernel takes long to compile (PoCL builds each OpenCL program with clang and links its builtins: ~0.3 s; lavapipe
# turns each WGSL pipeline into LLVM IR and JITs it), and REMOTE, a transport to a CPU server whose kernels are the CPU run's, run a
# representative subset: of each test's parametrizations, those that bring a parameter value not seen yet, so every op, dtype and shape
# a test names still runs on them. FULL_DEVICE_TESTS=1 runs everything.
SUBSET_DEVICES = ("GPU", "WEBGPU", "REMOTE")

# a device refusing a dtype it doesn't compute (int64 and float64 on WEBGPU) raises this clear error when the kernel is made: a test that only
# fails so is reported as skipped on that device, with the error as the reason (test_webgpu.py checks the error itself)
UNSUPPORTED_DTYPE = re.compile(r"kernel \S+: device \S+ can't compute [^;]+")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
  report = (yield).get_result()
  if report.failed and call.excinfo is not None and call.excinfo.errisinstance(RuntimeError) and \
     (m := UNSUPPORTED_DTYPE.search(str(call.excinfo.value))) is not None and "device" in getattr(item, "fixturenames", ()):
    report.outcome, report.longrepr = "skipped", (str(item.path), item.location[1] or 0, f"Skipped: {m.group(0)}")

def pytest_collection_modifyitems(config, items):
  if os.environ.get("FULL_DEVICE_TESTS"): return
  seen: dict[tuple[str, str], set[tuple[str, str]]] = {}
  for item in items:
    params = getattr(item, "callspec", None)
    if params is None or (dev := params.params.get("device")) not in SUBSET_DEVICES: continue
    vals = {(k, repr(v)) for k, v in params.params.items() if k != "device"}
    got = seen.setdefault((dev, item.module.__name__ if item.module else "", item.originalname), set())
    if vals and vals <= got: item.add_marker(pytest.mark.skip(reason=f"representative subset on {dev} (FULL_DEVICE_TESTS=1 runs all)"))
    got |= vals

# the CPU and LLVM devices plan (register tiles, weight panels, packing, prefetch, threads) as the named machine model would, whatever the
# host is: for tests whose expected plans are one machine's. The kernels still compile for the host (its compiler splits wider vectors), and
# the schedule cache, whose plans follow the model, is off meanwhile
@pytest.fixture
def pose_cpu(monkeypatch):
  from tinygrad.runtime.support.cpu_model import PROFILES
  from tinygrad.helpers import SCHEDULE_CACHE
  def pose(profile:str):
    for dev in ("CPU", "LLVM"):
      try: ren = Device[dev].renderer
      except Exception: continue
      monkeypatch.setattr(ren, "machine", PROFILES[profile])
      monkeypatch.setattr(ren, "simd_bytes", PROFILES[profile].simd_bytes)
    monkeypatch.setattr(SCHEDULE_CACHE, "value", 0)
  return pose
