# the WEBGPU device: wgpu-native through ctypes (lavapipe in CI), WGSL type rules (no 64-bit types, packed small types), compile errors, copies
import ctypes, importlib.util
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes, Variable
from tinygrad.device import CompileError, DeviceUnavailable, is_dtype_supported
from tinygrad.engine.realize import get_program, CompiledRunner

try:
  from tinygrad.runtime import ops_webgpu
  from tinygrad.runtime.ops_webgpu import WEBGPUCompiler
  dev = Device["WEBGPU"]
except Exception as e: pytest.skip(f"WEBGPU is not available: {e}", allow_module_level=True)

def test_compile_error_shows_message_and_numbered_source():
  src = "@compute @workgroup_size(1)\nfn k() {\n  let x: f32 = undeclared_thing;\n}\n"
  with pytest.raises(CompileError) as e: WEBGPUCompiler(dev).compile(src)
  msg = str(e.value)
  assert "compiling WGSL failed" in msg and "undeclared_thing" in msg and "   3   let x: f32 = undeclared_thing;" in msg

def test_missing_library_says_what_to_install(monkeypatch):
  monkeypatch.delenv("WEBGPU_PATH", raising=False)
  monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
  with pytest.raises(DeviceUnavailable, match=r"libwgpu_native.*pip install --no-deps wgpu cffi pycparser.*apt-get install -y mesa-vulkan-drivers"):
    ops_webgpu.wgpu.__wrapped__()
  monkeypatch.setenv("WEBGPU_PATH", "/nonexistent/libwgpu_native.so")
  with pytest.raises(DeviceUnavailable, match=r"WEBGPU can't load .*nonexistent"): ops_webgpu.wgpu.__wrapped__()

@pytest.mark.parametrize("dt", [dtypes.float64])
def test_64bit_types_refused_with_clear_error(dt):
  assert not is_dtype_supported(dt, "WEBGPU")
  t = Tensor([1, 2, 3], dtype=dt, device="WEBGPU")   # holding the bytes is fine: only computing needs the type
  with pytest.raises(RuntimeError, match=rf"device WEBGPU can't compute {dt}; it supports .*dtypes.float"): (t * 2).realize()
  np.testing.assert_equal(t.to("CPU").numpy(), [1, 2, 3])

@pytest.mark.parametrize("dt", [dtypes.int64, dtypes.uint64])
def test_int64_emulated_with_two_words(dt):
  # values past 32 bits, negative ones, carries and borrows between the words
  ndt = np.int64 if dt == dtypes.int64 else np.uint64
  a = np.array([1, -3, 2**40 + 5, -(2**35), 7, 0, 2**62, -1, -100, 2**63 - 1, 0xffffffff, 2**32], dtype=np.int64).astype(ndt)
  b = np.array([5, 9, -(2**33), 2**31, -7, 3, 3, 1, 7, 12345678901, 1, -1], dtype=np.int64).astype(ndt)
  ta, tb = Tensor(a, device="WEBGPU"), Tensor(b, device="WEBGPU")
  with np.errstate(over="ignore"):
    for got, want in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta // tb, a // b), (ta % tb, a % b), (-ta, -a),
                      (ta < tb, a < b), (ta == tb, a == b), (ta != tb, a != b), (ta.maximum(tb), np.maximum(a, b)), (ta ^ tb, a ^ b),
                      (ta & tb, a & b), (ta | tb, a | b), ((ta < tb).where(ta, tb), np.where(a < b, a, b)), (ta << 3, a << 3), (ta >> 2, a >> 2),
                      (ta.sum(), a.sum()), (ta.cast(dtypes.int32), a.astype(np.int32)), (ta.cast(dtypes.float32), a.astype(np.float32)),
                      (ta.cast(dtypes.bool), a.astype(bool)), (ta.cast(dtypes.int8), a.astype(np.int8))]:
      np.testing.assert_equal(got.numpy(), want)
  for src in (np.array([-5, 3, -2**31, 2**31 - 1], np.int32), np.array([3.75, 2.0**40, 0.0, 1e18], np.float32), np.array([True, False])):
    np.testing.assert_equal(Tensor(src, device="WEBGPU").cast(dt).numpy(), src.astype(ndt))
  np.testing.assert_equal(Tensor.arange(2**33, 2**33 + 5, dtype=dt, device="WEBGPU").numpy(), np.arange(2**33, 2**33 + 5, dtype=ndt))

def test_supported_dtypes():
  for dt in (dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.float32):
    assert is_dtype_supported(dt, "WEBGPU")
  assert is_dtype_supported(dtypes.float16, "WEBGPU") == dev.renderer.f16

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16])
def test_small_ints_packed_and_wrapped(dt):
  # 13 elements: threads write neighbouring bytes of one word, and the last word is partly padding
  info = np.iinfo(np.dtype(dt.fmt))
  a = np.random.default_rng(0).integers(info.min, info.max, 13, endpoint=True).astype(dt.fmt)
  b = np.random.default_rng(1).integers(info.min, info.max, 13, endpoint=True).astype(dt.fmt)
  ta, tb = Tensor(a, device="WEBGPU"), Tensor(b, device="WEBGPU")
  src = get_program((ta + tb).schedule()[-1].ast, dev.renderer).src
  assert "atomic<u32>" in src and "atomicOr" in src
  with np.errstate(over="ignore"):
    np.testing.assert_equal((ta + tb).numpy(), a + b)
    np.testing.assert_equal((ta * tb).numpy(), a * b)
    np.testing.assert_equal(((ta + tb) < ta).numpy(), (a + b) < a)   # compared after wrapping, inside one kernel
  np.testing.assert_equal((ta.cast(dtypes.int32) * 3).numpy(), a.astype(np.int32) * 3)

def test_bool_buffers():
  a = np.array([True, False, True, True, False, False, True], dtype=bool)
  t = Tensor(a, device="WEBGPU")
  np.testing.assert_equal((t ^ Tensor(a[::-1].copy(), device="WEBGPU")).numpy(), a ^ a[::-1])
  np.testing.assert_equal(t.logical_not().numpy(), ~a)
  np.testing.assert_equal((Tensor(np.arange(7, dtype=np.float32), device="WEBGPU") > 3).numpy(), np.arange(7) > 3)

def test_int_division_by_zero_gives_zero():
  a, b = np.array([7, -7, 5, 0], dtype=np.int32), np.array([2, 2, 0, 0], dtype=np.int32)
  assert Tensor(a, device="WEBGPU").idiv(Tensor(b, device="WEBGPU")).tolist() == [3, -3, 0, 0]

def test_nan_inf():
  x = Tensor([1.0, float("inf"), float("-inf"), float("nan"), 0.0], device="WEBGPU")
  np.testing.assert_equal(x.isnan().numpy(), [False, False, False, True, False])
  np.testing.assert_equal(x.isinf().numpy(), [False, True, True, False, False])
  np.testing.assert_equal((x * 2).numpy(), np.array([2.0, np.inf, -np.inf, np.nan, 0.0], dtype=np.float32))
  np.testing.assert_equal((1 / Tensor([0.0, -0.0], device="WEBGPU")).numpy(), [np.inf, -np.inf])

def test_float_division_by_constant_zero():
  # WGSL leaves x / 0.0 indeterminate (lavapipe gave 0 or garbage): torch's inf, -inf and nan, and std over one element is nan
  x = np.array([1.0, -1.0, 0.0, np.nan], dtype=np.float32)
  for dt in (dtypes.float32, dtypes.float16):
    np.testing.assert_equal(Tensor(x, device="WEBGPU", dtype=dt).div(0).numpy(), np.array([np.inf, -np.inf, np.nan, np.nan], dtype=np.float32))
  np.testing.assert_equal((Tensor(x[:3], device="WEBGPU") / -0.0).numpy(), [-np.inf, np.inf, np.nan])
  np.testing.assert_equal(Tensor([[1.0], [2.0]], device="WEBGPU").std(1).numpy(), [np.nan, np.nan])

def test_float_mod_is_exact():
  # WGSL's % on floats is x - y * trunc(x / y) in f32 (1e10 % 7 gave 0): fmod is exact, signs, -0.0 and infinities as torch has them
  torch = pytest.importorskip("torch")
  v = [1e10, -1e10, 3e9, 10.5, -10.5, 0.0, -0.0, np.inf, np.nan, 1e-30, -7.0, 3.4e38]
  for d in (7.0, -7.0, 0.3, np.inf):
    np.testing.assert_equal(Tensor(v, device="WEBGPU").fmod(d).numpy(), torch.tensor(v).fmod(d).numpy())
    np.testing.assert_equal((Tensor(v, device="WEBGPU") % d).numpy(), (torch.tensor(v) % d).numpy())
  h = [100.5, -3.25, 60000.0]
  np.testing.assert_equal((Tensor(h, device="WEBGPU", dtype=dtypes.float16) % 7).numpy(), (torch.tensor(h, dtype=torch.float16) % 7).numpy())

def test_float_to_uint32_past_int32():
  # a float32 at or past 2**31 casts to uint32 as on the CPU (through i32 it saturated at 2147483520); -1.0 stays all ones
  v = np.array([3e9, 2147483648.0, 4294967040.0, 2147483520.0, -1.0, 0.5], dtype=np.float32)
  assert Tensor(v, device="WEBGPU").cast(dtypes.uint32).tolist() == Tensor(v, device="CPU").cast(dtypes.uint32).tolist() == \
    [3000000000, 2147483648, 4294967040, 2147483520, 4294967295, 0]

def test_not_equal_with_nan_is_true():
  # the shader compiler turns a != b into an ordered compare (false when a nan is in it): the renderer tests nan on the bits
  a = np.array([-4.0, 1.0, np.nan, 2.0, np.inf], dtype=np.float32)
  x = Tensor(a, device="WEBGPU")
  with np.errstate(invalid="ignore"):
    np.testing.assert_equal((x.sqrt() != 1.0).numpy(), np.sqrt(a) != 1.0)
    np.testing.assert_equal((x != x.sqrt()).numpy(), a != np.sqrt(a))
  assert not Device["WEBGPU"].renderer.nonfinite_exact and Device["CPU"].renderer.nonfinite_exact

def test_group_reduce_uses_workgroup_memory_and_barriers():
  from tinygrad.opt.kernel import Opt, OptOps
  a = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
  (si,) = Tensor(a, device="WEBGPU").sum(1).schedule()
  p = get_program(si.ast, dev.renderer, opts=[Opt(OptOps.GROUP, 0, 16)])
  assert "var<workgroup>" in p.src and "workgroupBarrier();" in p.src and "@workgroup_size(16, 1, 1)" in p.src
  bufs = [b.ensure_allocated() for b in si.bufs]
  CompiledRunner(p)(bufs, {})
  np.testing.assert_allclose(bufs[0].numpy(), a.sum(1), rtol=1e-5)

def test_symbolic_variable_passed_as_uniform():
  x = Tensor(np.arange(10, dtype=np.float32), device="WEBGPU").realize()
  for n in (3, 7):
    v = Variable("n", 1, 10).bind(n)
    sched, _ = (x.shrink(((0, v),)) * 2).sum().schedule_with_vars()
    assert "var<uniform> tg_vars" in get_program(sched[-1].ast, dev.renderer).src   # the loop runs to n
    assert (x.shrink(((0, v),)) * 2).sum().item() == 2 * sum(range(n))

def test_copies_cpu_python_webgpu():
  a = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
  w = Tensor(a, device="CPU").to("WEBGPU")
  assert w.device == "WEBGPU"
  np.testing.assert_equal(w.numpy(), a)
  np.testing.assert_equal((w * 2).to("CPU").numpy(), a * 2)
  np.testing.assert_equal((w + 1).to("PYTHON").numpy(), a + 1)
  np.testing.assert_equal(Tensor(a, device="PYTHON").to("WEBGPU").numpy(), a)

def test_copies_gpu_webgpu():
  try: Device["GPU"]
  except Exception as e: pytest.skip(f"GPU (OpenCL) is not available: {e}")
  a = np.arange(11, dtype=np.float32) - 5
  g = Tensor(a, device="WEBGPU").to("GPU")
  np.testing.assert_equal((g * 3).numpy(), a * 3)
  w = (g + 1).to("WEBGPU")
  assert w.device == "WEBGPU"
  np.testing.assert_equal((w * 2).numpy(), (a + 1) * 2)

def test_transfer_between_webgpu_buffers():
  alloc = dev.allocator
  src, dst = alloc.alloc(12), alloc.alloc(12)
  alloc._copyin(src, memoryview(b"webgpu bytes"))
  alloc._transfer(dst, src, 12, dev, dev)
  out = bytearray(12)
  alloc._copyout(memoryview(out), dst)
  assert bytes(out) == b"webgpu bytes"

def test_struct_layouts_match_the_header():
  # the ctypes structs against the header wgpu-native ships, as the wgpu package's cffi parsed it
  try: from wgpu.backends.wgpu_native._ffi import ffi
  except Exception as e: pytest.skip(f"the wgpu package's cffi bindings don't load: {e}")
  for ours, theirs in [(ops_webgpu.Limits, "WGPULimits"), (ops_webgpu.DeviceDescriptor, "WGPUDeviceDescriptor"),
                       (ops_webgpu.BufferDescriptor, "WGPUBufferDescriptor"), (ops_webgpu.BindGroupEntry, "WGPUBindGroupEntry"),
                       (ops_webgpu.BindGroupDescriptor, "WGPUBindGroupDescriptor"), (ops_webgpu.ShaderSourceWGSL, "WGPUShaderSourceWGSL"),
                       (ops_webgpu.ComputePipelineDescriptor, "WGPUComputePipelineDescriptor"),
                       (ops_webgpu.RequestAdapterOptions, "WGPURequestAdapterOptions"), (ops_webgpu.MapCBInfo, "WGPUBufferMapCallbackInfo")]:
    assert ctypes.sizeof(ours) == ffi.sizeof(theirs), theirs
  for name in ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize", "maxComputeWorkgroupsPerDimension"):
    assert getattr(ops_webgpu.Limits, name).offset == ffi.offsetof("WGPULimits", name)
  assert ops_webgpu.DeviceDescriptor.uncapturedErrorCallbackInfo.offset == ffi.offsetof("WGPUDeviceDescriptor", "uncapturedErrorCallbackInfo")

def test_lavapipe_stops_loops_at_the_declared_limit():
  # why WGSLRenderer.loop_max exists: lavapipe counts every loop iteration of an invocation, over all its loops, and silently leaves the
  # loops after 65535. Two loops of 40000 in a row: the second is cut short. (If this fails, lavapipe lifted the limit: drop loop_max.)
  from tinygrad.device import Buffer
  src = """@group(0) @binding(0) var<storage, read_write> out: array<i32>;
@compute @workgroup_size(1, 1, 1)
fn k(@builtin(workgroup_id) gid: vec3<u32>) {
  var c: i32 = 0; for (var i: i32 = 0; i < 40000; i++) { c = c + 1; } out[0] = c;
  c = 0; for (var i: i32 = 0; i < 40000; i++) { c = c + 1; } out[1] = c;
}
"""
  buf = Buffer("WEBGPU", 2, dtypes.int32).allocate()
  dev.runtime("k", dev.compiler.compile(src))(buf._buf, global_size=(1, 1, 1), local_size=(1, 1, 1), wait=True)
  out = np.empty(2, np.int32)
  buf.copyout(memoryview(out))
  assert out[0] == 40000 and out[1] < 40000 and dev.renderer.loop_max == 65535

def test_loop_nest_over_lavapipe_limit_is_shared_by_a_workgroup():
  # 300 + 300*299 iterations in one thread would be cut short by lavapipe: the lowerer spreads the reduce over a workgroup
  from tinygrad.helpers import Context
  from tinygrad.codegen import loop_iterations
  x = np.ones((300, 300), dtype=np.float32)
  with Context(NOOPT=1, SPLIT_REDUCEOPS=0):
    p = get_program(Tensor(x, device="WEBGPU")[:, :299].sum().schedule()[-1].ast, dev.renderer)
    assert p.local_size is not None and loop_iterations(p.uops) <= 65535
    np.testing.assert_equal(Tensor(x, device="WEBGPU")[:, :299].sum().item(), 300*299)

def test_workgroup_limits_from_the_adapter():
  # per dim, and no dim over the invocations a whole workgroup may have: the optimizer keeps a workgroup's total under the largest dim's
  lim = dev.limits
  assert dev.renderer.global_max == (lim.maxComputeWorkgroupsPerDimension,) * 3
  assert all(m <= lim.maxComputeInvocationsPerWorkgroup for m in dev.renderer.local_max)
  assert dev.renderer.local_max[2] <= lim.maxComputeWorkgroupSizeZ

def test_int64_division_in_a_long_loop():
  # the emulated int64 division is unrolled: as a loop, its 64 steps per element counted against lavapipe's loop limit and a reduce of a
  # few thousand quotients was silently cut short
  from tinygrad.helpers import Context
  a = np.arange(3000, dtype=np.int64) * 1000003
  with Context(NOOPT=1, SPLIT_REDUCEOPS=0): assert (Tensor(a, device="WEBGPU") // 7).sum().item() == (a // 7).sum()
