# The runtime interface: how a device declares itself (Compiled, Allocator, Program, renderer capabilities) and what the engine and
# codegen do with the declarations (launch limits, dtype support, device-to-device copies, the program cache key)
import ctypes, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, Context, dtypes
from tinygrad.helpers import PROGRAM_FLAGS, GlobalCounters, CPU_THREADS, CACHELEVEL, prod
from tinygrad.device import Compiled, CompileError, DeviceUnavailable, is_dtype_supported, load_library, _MallocAllocator
from tinygrad.uop import Ops
from tinygrad.uop.ops import ThreadKind, ThreadId
from tinygrad.engine import realize
from tinygrad.codegen import program as program_mod
from tinygrad.opt.kernel import Opt, OptOps
from tinygrad.runtime.ops_python import PythonRenderer, PythonAllocator, PythonCompiler, PythonProgram
from tinygrad.runtime.ops_cpu import CPUCompiler

@pytest.fixture
def builds(monkeypatch):
  """Every ProgramSpec the engine asks codegen for (a fresh build: the runner cache missed)."""
  got = []
  real = realize.get_program
  def counting(*args, **kwargs):
    got.append(ret := real(*args, **kwargs))
    return ret
  monkeypatch.setattr(realize, "get_program", counting)
  monkeypatch.setattr(CACHELEVEL, "value", 0)   # a build, not the program cache on disk (test_program_cache.py)
  # BEAM=1 in the flag sweep must rebuild, not search: the search is tested in test_search.py
  monkeypatch.setattr(program_mod, "beam_search", lambda k, rawbufs, amt, **kw: k)
  return got

def fake_device(monkeypatch, name:str, renderer) -> str:
  # a PYTHON device with another renderer, opened under its own name
  monkeypatch.setitem(Device._opened, name, Compiled(name, PythonAllocator(), renderer, PythonCompiler(), PythonProgram))
  return name

# ***** the program cache key *****

@pytest.mark.parametrize("i", range(len(PROGRAM_FLAGS)), ids=[f.key for f in PROGRAM_FLAGS])
def test_each_program_flag_rebuilds(builds, i):
  flag, c = PROGRAM_FLAGS[i], 100 + i   # a kernel of its own: no other test built this one
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  a = Tensor(x, device="CPU").realize()
  def run() -> np.ndarray: return (a * 3 + c).numpy()
  np.testing.assert_allclose(run(), x * 3 + c)
  n = len(builds)
  assert n >= 1
  run()
  assert len(builds) == n, "the same kernel under the same flags is built once"
  with Context(**{flag.key: flag.value + 1}):
    np.testing.assert_allclose(run(), x * 3 + c)
  assert len(builds) == n + 1, f"flipping {flag.key} must build the kernel again"
  run()
  assert len(builds) == n + 1, "back to the old flags, the old program is reused"

def test_cpu_threads_not_reused(builds):
  x = np.random.default_rng(0).standard_normal((16, 64)).astype(np.float32)
  a = Tensor(x, device="CPU").realize()
  with Context(THREAD_MIN_WORK=1, CPU_THREADS=1):
    np.testing.assert_allclose((a * 2 - 5).numpy(), x * 2 - 5, rtol=1e-6)
    single = builds[-1]
  with Context(THREAD_MIN_WORK=1, CPU_THREADS=2):
    np.testing.assert_allclose((a * 2 - 5).numpy(), x * 2 - 5, rtol=1e-6)
    threaded = builds[-1]
  assert single is not threaded
  assert not any(o.op is OptOps.THREAD for o in single.applied_opts) and single.global_size[0] == 1
  # an elementwise kernel is split in a few chunks a thread (handed out as threads come free)
  (split,) = [o.arg for o in threaded.applied_opts if o.op is OptOps.THREAD]
  assert split % 2 == 0 and threaded.global_size[0] == split
  assert CPU_THREADS.value == 0

def test_renderer_in_key(builds, monkeypatch):
  dev = fake_device(monkeypatch, "PYTHON:5", PythonRenderer())
  x = np.arange(7, dtype=np.float32)
  a = Tensor(x, device=dev).realize()
  np.testing.assert_allclose((a + 41).numpy(), x + 41)
  n = len(builds)
  Device[dev].renderer = PythonRenderer("CUDA")   # another renderer (other tensor cores and limits) is another program
  np.testing.assert_allclose((a + 41).numpy(), x + 41)
  assert len(builds) == n + 1

# ***** launch dimensions *****

def test_launch_dims_from_thread_ids(builds):
  x = np.arange(40, dtype=np.float32).reshape(8, 5)
  np.testing.assert_equal((Tensor(x, device="PYTHON").T + 1).numpy(), x.T + 1)   # a transpose: two axes that don't merge
  p = builds[-1]
  specials = [u for u in p.uops if u.op is Ops.SPECIAL]
  assert specials and all(isinstance(u.arg, ThreadId) and u.arg.kind in (ThreadKind.GLOBAL, ThreadKind.LOCAL) for u in specials)
  # the heuristic gives a device with workgroups a local size: workgroups x threads still cover the 40 outputs
  local_size = p.local_size or [1, 1, 1]
  assert sorted(g * l for g, l in zip(p.global_size, local_size)) == [1, 5, 8] and prod(local_size) > 1
  for u in specials: assert (p.global_size if u.arg.kind is ThreadKind.GLOBAL else local_size)[u.arg.dim] == u.arg.size

class SmallRenderer(PythonRenderer):
  global_max = (4, 4, 4)
  local_max = (2, 8, 8)

def test_global_max_cuts_big_axes(builds, monkeypatch):
  dev = fake_device(monkeypatch, "PYTHON:6", SmallRenderer())
  x = np.arange(3*10, dtype=np.float32).reshape(10, 3)
  with Context(NOOPT=1): np.testing.assert_allclose((Tensor(x, device=dev).T * 2).numpy(), x.T * 2)
  p = builds[-1]
  # the (3, 10) output: 10 is over dim 0's limit of 4, so it is cut into 5 chunks of 2 (exact: no guard); 5 chunks are over dim 1's limit
  # too, so they loop in each thread, and the 3 takes dim 1 (test_launch_limits.py cuts with guards)
  assert p.global_size == [2, 3, 1] and sum(u.op is Ops.RANGE for u in p.uops) == 1, p.global_size
  # with the heuristic's workgroup of 2 the (3, 5) workgroups are left: 5 is cut into 2 chunks of 3 (guarded) on dims 0 and 1
  np.testing.assert_allclose((Tensor(x, device=dev).T * 3).numpy(), x.T * 3)
  assert builds[-1].global_size == [3, 2, 3] and builds[-1].local_size == [2, 1, 1], (builds[-1].global_size, builds[-1].applied_opts)

def test_local_max_refused_with_clear_error():
  from tinygrad.codegen.program import get_program
  a = Tensor.empty(64, 8, device="PYTHON")
  ast = [si for si in (a + 1).schedule() if si.ast.op is Ops.SINK][-1].ast
  get_program(ast, PythonRenderer(), [Opt(OptOps.LOCAL, 0, 8)])   # fine where 8 threads fit
  with pytest.raises(RuntimeError, match=r"local size 8 in dim 0 is over the device's limit 2"):
    get_program(ast, SmallRenderer(), [Opt(OptOps.LOCAL, 0, 8)])

# ***** capabilities *****

def test_dtypes_declared_by_renderer(monkeypatch):
  class NarrowRenderer(PythonRenderer): dtypes_supported = frozenset({dtypes.float32, dtypes.int32, dtypes.bool})
  dev = fake_device(monkeypatch, "PYTHON:7", NarrowRenderer())
  assert is_dtype_supported(dtypes.float32, dev) and not is_dtype_supported(dtypes.float64, dev)
  assert not is_dtype_supported(dtypes.float64.vec(4), dev)
  assert is_dtype_supported(dtypes.float64, "PYTHON") and is_dtype_supported(dtypes.bfloat16, "CPU")
  # a kernel in a dtype the device doesn't compute is refused by name, before rendering
  x = np.arange(6, dtype=np.float32)
  np.testing.assert_equal((Tensor(x, device=dev) * 2).numpy(), x * 2)
  with pytest.raises(RuntimeError, match=r"device PYTHON can.t compute dtypes.double; it supports dtypes.bool, dtypes.float, dtypes.int"):
    (Tensor(x.astype(np.float64), device=dev) * 2).realize()

def test_storage_device_holds_every_dtype(tmp_path):
  dev = f"DISK:{tmp_path / 'f'}"
  assert all(is_dtype_supported(dt, dev) for dt in (dtypes.float64, dtypes.bfloat16, dtypes.fp8e4m3))

def test_disk_memory_is_not_device_memory(tmp_path):
  before = GlobalCounters.mem_used
  t = Tensor(np.arange(1000, dtype=np.float32), device="CPU").to(f"DISK:{tmp_path / 'f'}").realize()
  assert GlobalCounters.mem_used - before < 4000   # only transient CPU buffers, not the file
  np.testing.assert_equal(t.to("CPU").numpy(), np.arange(1000, dtype=np.float32))

# ***** the allocator and copies *****

def test_transfer_between_host_devices(monkeypatch):
  calls = []
  real = _MallocAllocator._transfer
  def counting(self, dest, src, nbytes, src_dev, dest_dev):
    calls.append((nbytes, src_dev.device, dest_dev.device))
    return real(self, dest, src, nbytes, src_dev, dest_dev)
  monkeypatch.setattr(_MallocAllocator, "_transfer", counting)
  x = np.random.default_rng(1).standard_normal(100).astype(np.float32)
  out = Tensor(x, device="CPU").realize().to("CPU:1").realize()
  assert calls == [(400, "CPU", "CPU:1")]
  np.testing.assert_equal(out.numpy(), x)
  # PYTHON's allocator has no _transfer: through host memory, same bytes
  calls.clear()
  np.testing.assert_equal(Tensor(x, device="PYTHON").to("CPU").numpy(), x)
  assert calls == []

def test_program_protocol_wait_returns_time():
  lib = CPUCompiler().compile("void k(float* restrict a, int n) { for (int i = 0; i < n; i++) a[i] = a[i] * 2 + n; }")
  prg = Device["CPU"].program("k", lib)
  buf = (ctypes.c_float * 4)(1, 2, 3, 4)
  assert prg(buf, global_size=(1, 1, 1), local_size=None, vals=(4,)) is None
  tm = prg(buf, global_size=(1, 1, 1), local_size=None, vals=(4,), wait=True)
  assert isinstance(tm, float) and tm >= 0
  np.testing.assert_equal(list(buf), [(v * 2 + 4) * 2 + 4 for v in (1, 2, 3, 4)])

# ***** errors for people *****

def test_compile_error_shows_numbered_source():
  src = "void k(float* a) {\n  a[0] = 1.0f\n}\n"
  with pytest.raises(CompileError) as e: CPUCompiler().compile(src)
  msg = str(e.value)
  assert "error" in msg and "   2   a[0] = 1.0f" in msg and "   1 void k(float* a) {" in msg

def test_missing_library_says_what_to_install():
  with pytest.raises(DeviceUnavailable, match=r"GPU needs the tinygrad_no_such_lib library.*install it with: apt-get install x"):
    load_library("GPU", ["tinygrad_no_such_lib", "libtinygrad_no_such_lib.so.1"], "apt-get install x")
  assert load_library("CPU", ["c"], "libc6") is not None

# ***** NULL *****

def test_null_device_runs_nothing():
  GlobalCounters.reset()
  a = Tensor.ones(32, 32, device="NULL").contiguous()
  out = (a @ a).relu().sum().numpy()
  assert GlobalCounters.kernel_count >= 2 and out == 0   # the kernels were made and "launched"; nothing ran
  assert not Device["NULL"].computes

def test_device_listing():
  out = subprocess.run([sys.executable, "-m", "tinygrad.device"], capture_output=True, text=True, timeout=300, check=True).stdout
  lines = dict(line.split(None, 1) for line in out.splitlines())
  assert lines["CPU"] == "PASS" and lines["PYTHON"] == "PASS" and lines["NULL"] == "PASS" and lines["DISK"] == "PASS"
  assert set(lines) == set(Device._devices)
  assert all(v == "PASS" or v.startswith("FAIL ") for v in lines.values())

# ***** NPY *****

def test_npy_zero_copy_input():
  x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
  t = Tensor(x, device="NPY")
  mv = t.uop.base.realized.as_buffer(allow_zero_copy=True)
  assert np.shares_memory(x, np.frombuffer(mv, np.float32)), "NPY reads the array's own memory"
  before = GlobalCounters.mem_used
  np.testing.assert_equal((t.to("CPU") * 2).numpy(), x * 2)
  np.testing.assert_equal(t.to("PYTHON").sum(1).numpy(), x.sum(1))
  assert GlobalCounters.mem_used == before
  # what can't be used in place (a strided view, a dtype cast) is copied in
  np.testing.assert_equal(Tensor(x[:, ::2], device="NPY").to("CPU").numpy(), x[:, ::2])
  np.testing.assert_equal(Tensor(x, dtype=dtypes.float64, device="NPY").to("CPU").numpy(), x.astype(np.float64))
  assert Device["NPY"].renderer is None and is_dtype_supported(dtypes.float64, "NPY")
