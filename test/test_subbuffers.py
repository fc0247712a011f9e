"""Sub-buffers (the allocator's _offset) on GPU (OpenCL sub-buffers) and WEBGPU (bindings at an offset): views of a buffer share its memory
for copies and kernels without copying; a view at an offset the device can't bind still copies, and a kernel given it says why it can't."""
import gc
import numpy as np
import pytest
from tinygrad import Tensor, Device, TinyJit, dtypes
from tinygrad.device import Buffer
from tinygrad.engine.realize import CompiledRunner, get_program
from tinygrad.uop import Ops

@pytest.fixture(params=["GPU", "WEBGPU"])
def dev(request):
  try: Device[request.param]
  except Exception as e: pytest.skip(f"{request.param} is not available: {e}")
  return request.param

def _align(dev:str) -> int: return Device[dev].base_align if dev == "GPU" else Device[dev].limits.minStorageBufferOffsetAlignment

def _base(dev:str, n:int=1024) -> tuple[Buffer, np.ndarray]:
  a = np.arange(n, dtype=np.float32)
  return Buffer(dev, n, dtypes.float32).allocate().copyin(memoryview(a)), a

def _add_one(dev:str, n:int) -> CompiledRunner:
  (ast,) = [si.ast for si in (Tensor.empty(n, device=dev) + 1).schedule() if si.ast.op is Ops.SINK]
  return CompiledRunner(get_program(ast, Device[dev].renderer))

def test_view_copies_share_memory(dev):
  base, a = _base(dev)
  v = base.view(64, dtypes.float32, 512).allocate()
  np.testing.assert_equal(v.numpy(), a[128:192])
  v.copyin(memoryview(np.full(64, -1, np.float32)))
  a[128:192] = -1
  np.testing.assert_equal(base.numpy(), a)

def test_unaligned_view_copies_bytes(dev):
  # a view of 6 uint8s at byte offset 3: its copies touch exactly those bytes, whatever the device's word size
  a = np.arange(32, dtype=np.uint8)
  base = Buffer(dev, 32, dtypes.uint8).allocate().copyin(memoryview(a))
  v = base.view(6, dtypes.uint8, 3).allocate()
  np.testing.assert_equal(v.numpy(), a[3:9])
  v.copyin(memoryview(np.full(6, 200, np.uint8)))
  a[3:9] = 200
  np.testing.assert_equal(base.numpy(), a)

def test_kernel_on_aligned_views(dev):
  # one kernel reads one view and writes another view of the same buffer: only the written range changes
  base, a = _base(dev, 2048)
  al = max(_align(dev), 4)
  n = al // 4 * 2
  src, dst = base.view(n, dtypes.float32, 0).allocate(), base.view(n, dtypes.float32, 2 * al * 2).allocate()
  _add_one(dev, n)([dst, src], {}, wait=True)
  a[al:al+n] = a[:n] + 1
  np.testing.assert_equal(base.numpy(), a)

def test_kernel_refuses_unaligned_view(dev):
  base, a = _base(dev)
  v = base.view(16, dtypes.float32, 4 * 3).allocate()   # 12 bytes in: no device aligns that little
  with pytest.raises(RuntimeError, match=r"view at byte offset 12.*multiples of \d+ bytes"): _add_one(dev, 16)([v, v], {}, wait=True)
  np.testing.assert_equal(base.numpy(), a)

def test_memory_planner_shares_slots(dev):
  # intermediates of different dtypes and sizes share planned slots as views (the planner uses them where the allocator has _offset)
  rng = np.random.default_rng(0)
  wn = rng.standard_normal((16, 16)).astype(np.float32)
  w = Tensor(wn, device=dev).realize()
  @TinyJit
  def f(x:Tensor) -> Tensor:
    h1 = (x @ w).relu().contiguous()
    h2 = (h1.cast(dtypes.float16) * 2).contiguous()
    h3 = (h2.cast(dtypes.float32) @ w).contiguous()
    h4 = (h3 - h3.max(1, keepdim=True)).contiguous()
    return (h4 @ w).sum(1)
  for _ in range(3):
    xn = rng.standard_normal((8, 16)).astype(np.float32)
    h1 = np.maximum(xn @ wn, 0)
    h3 = (h1.astype(np.float16) * 2).astype(np.float32) @ wn
    np.testing.assert_allclose(f(Tensor(xn, device=dev)).numpy(), ((h3 - h3.max(1, keepdims=True)) @ wn).sum(1), rtol=2e-3, atol=2e-2)
  before, after = f.planned_bytes
  assert after < before, f.planned_bytes
  del f
  gc.collect()
