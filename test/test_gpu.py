# the GPU (OpenCL) device: libOpenCL through ctypes (PoCL in CI), build errors, binary cache, copies, dtype capabilities, locals and barriers
import ctypes
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes, helpers
from tinygrad.device import CompileError, is_dtype_supported
from tinygrad.engine.realize import get_program, method_cache, CompiledRunner

try:
  from tinygrad.runtime.ops_gpu import GPUCompiler, GPUProgram, _cl
  gpu = Device["GPU"]
except Exception as e: pytest.skip(f"GPU (OpenCL) is not available: {e}", allow_module_level=True)

SCALE = "__kernel void scale(__global float* out, __global const float* x, const int k) {\n  int i = get_global_id(0);\n  out[i] = x[i] * k;\n}\n"

def test_compile_and_run_kernel():
  prg = GPUProgram(gpu, "scale", GPUCompiler(gpu).compile(SCALE))
  x = np.arange(16, dtype=np.float32)
  bx, bout = gpu.allocator.alloc(64), gpu.allocator.alloc(64)
  gpu.allocator._copyin(bx, memoryview(x.tobytes()))
  tm = prg(bout, bx, global_size=(4, 1, 1), local_size=(4, 1, 1), vals=(3,), wait=True)
  assert isinstance(tm, float) and tm >= 0
  out = np.empty(16, np.float32)
  gpu.allocator._copyout(memoryview(out).cast("B"), bout)
  np.testing.assert_equal(out, x * 3)

def test_build_error_shows_log_and_numbered_source():
  with pytest.raises(CompileError) as e: GPUCompiler(gpu).compile(SCALE.replace("x[i] * k", "x[i] * undeclared_thing"))
  msg = str(e.value)
  assert "BUILD_PROGRAM_FAILURE" in msg and "undeclared_thing" in msg and "   3   out[i] = x[i] * undeclared_thing;" in msg

def test_missing_library_message(monkeypatch):
  def no_lib(*a, **k): raise OSError("not found")
  monkeypatch.setattr(ctypes, "CDLL", no_lib)
  with pytest.raises(RuntimeError, match=r"libOpenCL.*apt-get install -y pocl-opencl-icd ocl-icd-libopencl1"): _cl.__wrapped__()

def test_binary_cache_hit(monkeypatch, tmp_path):
  # a fresh compiler (as in a new process) finds the program binary on disk: the source isn't built again, and the binary runs
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  builds = []
  orig = GPUCompiler.compile
  monkeypatch.setattr(GPUCompiler, "compile", lambda self, src: builds.append(src) or orig(self, src))
  src = SCALE.replace("scale", "scale_cached")
  lib = GPUCompiler(gpu).compile_cached(src)
  assert GPUCompiler(gpu).compile_cached(src) == lib and len(builds) == 1
  c = GPUCompiler(gpu)
  assert c.compile_cached(src) == lib and c.compile_cached(src) == lib and len(builds) == 1
  GPUProgram(gpu, "scale_cached", lib)   # a cached binary loads with clCreateProgramWithBinary

def test_kernel_compiles_once(monkeypatch):
  builds = []
  orig = GPUCompiler.compile
  monkeypatch.setattr(GPUCompiler, "compile", lambda self, src: builds.append(src) or orig(self, src))
  x = Tensor(np.arange(6, dtype=np.float32), device="GPU")
  for _ in range(2):
    method_cache.clear()
    np.testing.assert_equal((x * 7.75 + 0.5).numpy(), np.arange(6) * 7.75 + 0.5)
  assert len(builds) <= 1

def test_workgroup_limits_from_the_device():
  # CL_DEVICE_MAX_WORK_ITEM_SIZES per dim, none over CL_DEVICE_MAX_WORK_GROUP_SIZE (the optimizer keeps a workgroup under the largest)
  assert len(gpu.renderer.local_max) == 3 and all(0 < m <= gpu.max_workgroup for m in gpu.renderer.local_max)

def test_copies_between_cpu_python_and_gpu():
  a = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
  g = Tensor(a, device="CPU").to("GPU")
  assert g.device == "GPU"
  np.testing.assert_equal(g.numpy(), a)
  back = (g * 2).to("CPU")
  assert back.device == "CPU"
  np.testing.assert_equal(back.numpy(), a * 2)
  np.testing.assert_equal((g + 1).to("PYTHON").numpy(), a + 1)
  np.testing.assert_equal(Tensor(a, device="PYTHON").to("GPU").numpy(), a)

def test_dtype_capabilities_follow_the_extensions():
  # float64 only with cl_khr_fp64; half is native with cl_khr_fp16, else stored as bits and computed in float (like bfloat16 always)
  assert is_dtype_supported(dtypes.float64, "GPU") == ("cl_khr_fp64" in gpu.extensions)
  assert is_dtype_supported(dtypes.float16, "GPU") and is_dtype_supported(dtypes.bfloat16, "GPU")
  t = Tensor([1.5, -2.25, 1000.0], dtype=dtypes.float16, device="GPU")
  p = get_program((t * 3).schedule()[-1].ast, gpu.renderer)
  if "cl_khr_fp16" in gpu.extensions: assert "cl_khr_fp16 : enable" in p.src
  else: assert "cl_khr_fp16" not in p.src and "unsigned short" in p.src
  assert (t * 3).tolist() == [4.5, -6.75, 3000.0]
  if "cl_khr_fp64" in gpu.extensions:
    d = Tensor([1/3, 2.0**60 + 1], dtype=dtypes.float64, device="GPU")
    assert "cl_khr_fp64 : enable" in get_program((d * 3).schedule()[-1].ast, gpu.renderer).src
    np.testing.assert_equal((d * 3).numpy(), np.array([1/3, 2.0**60 + 1]) * 3)

def test_group_reduce_uses_locals_and_barriers():
  from tinygrad.opt.kernel import Opt, OptOps
  a = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
  (si,) = Tensor(a, device="GPU").sum(1).schedule()
  p = get_program(si.ast, gpu.renderer, opts=[Opt(OptOps.GROUP, 0, 16)])
  assert "__local" in p.src and "barrier(CLK_LOCAL_MEM_FENCE)" in p.src and p.local_size is not None and 16 in p.local_size
  bufs = [b.ensure_allocated() for b in si.bufs]
  CompiledRunner(p)(bufs, {})
  np.testing.assert_allclose(bufs[0].numpy(), a.sum(1), rtol=1e-5)
