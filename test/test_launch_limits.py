"""Launch limits (issue 10): a global axis over the device's global_max for its launch dim is cut into chunks that fit (ceil division, the index
guarded by index < size on every load and store), and a reduce longer than the device's per-thread loop limit (Renderer.loop_max: lavapipe
silently stops a thread after 65535 loop iterations) is shared by a workgroup. Prime sizes can't be split evenly, so they take the guarded
path; NOOPT=1 kernels too. Anything still over a limit is refused with a clear error."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.codegen import loop_iterations
from tinygrad.codegen.lowerer import loop_cost
from tinygrad.engine import realize
from tinygrad.engine.realize import get_program
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.uop.ops import ThreadKind, UOp

# 196613 = 3*65537+2 and 1000003 are prime: nothing divides them, on any launch dim
ELEMENTWISE = [(196613, 0), (196613, 1), (1000003, 0), (1000003, 1)]
REDUCES = [("sum", (1000003,), None, 0), ("max", (1000003,), None, 1), ("sum", (3, 100003), 1, 1), ("min", (3, 100003), 1, 0),
           ("sum", (196613,), None, 1), ("max", (70001, 3), 0, 0)]

def _slow_emulator(device:str):
  # the PYTHON device runs each thread in Python: the small-limit tests below show the same paths on it
  if device == "PYTHON": pytest.skip("a million elements are too slow for the emulator (test_tiny_limits_on_python covers it)")

@pytest.mark.parametrize("case", ELEMENTWISE, ids=[f"{n}-noopt{o}" for n, o in ELEMENTWISE])
def test_prime_elementwise(device, case):
  _slow_emulator(device)
  n, noopt = case
  a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  with Context(NOOPT=noopt): out = (Tensor(a, device=device) * 2 + 1).numpy()
  np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)

@pytest.mark.parametrize("case", REDUCES, ids=[f"{op}-{'x'.join(map(str, s))}-ax{ax}-noopt{o}" for op, s, ax, o in REDUCES])
def test_prime_reduce(device, case):
  _slow_emulator(device)
  op, shape, axis, noopt = case
  a = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
  with Context(NOOPT=noopt): out = getattr(Tensor(a, device=device), op)(axis=axis).numpy()
  np.testing.assert_allclose(out, getattr(a, op)(axis=axis), rtol=1e-4, atol=1e-3)

def test_non_mergeable_big_axis(device):
  # a transposed read keeps two axes: the long one takes two launch dims (cut), the other the third
  _slow_emulator(device)
  a = np.random.default_rng(0).standard_normal((70001, 3)).astype(np.float32)
  with Context(NOOPT=1): out = (Tensor(a, device=device).T + 1).contiguous().numpy()
  np.testing.assert_allclose(out, a.T + 1)

@pytest.fixture
def tiny_python(monkeypatch):
  """The PYTHON device with launch limits small enough that every kernel below is cut: it checks every memory access it runs."""
  ren = Device["PYTHON"].renderer
  monkeypatch.setattr(ren, "global_max", (7, 5, 3))
  monkeypatch.setattr(ren, "local_max", (16, 16, 16))
  monkeypatch.setattr(ren, "loop_max", 60)
  monkeypatch.setattr(realize, "method_cache", {})
  return ren

def _programs(t:Tensor, ren) -> list:
  with Context(NOOPT=1): return [get_program(si.ast, ren) for si in t.schedule() if si.ast.op is Ops.SINK]

@pytest.mark.parametrize("noopt", [0, 1])
def test_tiny_limits_on_python(tiny_python, noopt):
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal(101).astype(np.float32), rng.standard_normal((4, 101)).astype(np.float32)
  c = rng.standard_normal((11, 13, 5)).astype(np.float32)
  with Context(NOOPT=noopt, CACHELEVEL=0):
    np.testing.assert_allclose((Tensor(a, device="PYTHON") + 1).numpy(), a + 1)
    np.testing.assert_allclose(Tensor(b, device="PYTHON").sum(axis=1).numpy(), b.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(Tensor(b, device="PYTHON").max(axis=1).numpy(), b.max(axis=1))
    # three axes that don't merge (a permuted read): each over its dim's limit
    np.testing.assert_allclose((Tensor(c, device="PYTHON").permute(2, 0, 1) * 3).numpy(), c.transpose(2, 0, 1) * 3, rtol=1e-6)
    np.testing.assert_allclose((-Tensor(c, device="PYTHON")).sum().numpy(), -c.sum(), rtol=1e-5)
    progs = [r.p for r in realize.method_cache.values()]
  for p in progs:
    assert all(g <= m for g, m in zip(p.global_size, tiny_python.global_max)), (p.name, p.global_size)
    assert loop_iterations(p.uops) <= 60, (p.name, loop_iterations(p.uops))

def test_tiny_limits_cut_and_guard(tiny_python):
  # 101 elements on dims of 7 and 5: 15 chunks of 7 (105 > 101), so gidx0 takes 7, and the chunks (over 5) loop; every load and store
  # reaching memory through the cut axis is gated by index < 101
  (p,) = _programs(Tensor.empty(101, device="PYTHON") + 1, tiny_python)
  assert p.global_size[0] == 7 and p.global_size[1] == 1, p.global_size
  assert sum(1 for u in p.uops if u.op is Ops.RANGE) == 1
  gated = [u for u in p.uops if u.op is Ops.INDEX and u.src[0].op is Ops.DEFINE_GLOBAL]
  assert gated and all(len(u.src) == 3 for u in gated), [u.src[1:] for u in gated]
  # 30 = 6*5: chunks of 6 on dim 0 and 5 on dim 1, exact, no guard
  (p,) = _programs(Tensor.empty(30, device="PYTHON") + 1, tiny_python)
  assert p.global_size[:2] == [6, 5] and all(len(u.src) == 2 for u in p.uops if u.op is Ops.INDEX), p.global_size
  # a reduce of 101 over the loop limit: a workgroup of threads adds every n-th element
  (p,) = _programs(Tensor.empty(101, device="PYTHON").sum(), tiny_python)
  assert p.local_size is not None and p.local_size[0] > 1 and loop_iterations(p.uops) <= 60

def test_refused_when_nothing_fits(tiny_python, monkeypatch):
  # one thread per workgroup at most: a long reduce can't be shared, and the kernel is refused, not silently cut short
  monkeypatch.setattr(tiny_python, "local_max", (1, 1, 1))
  with pytest.raises(RuntimeError, match=r"loop iterations, over device PYTHON's limit 60"):
    _programs(Tensor.empty(1000, device="PYTHON").sum(), tiny_python)

def test_loop_cost_counts_exit_tests():
  # the lowerer's estimate and the count of the rendered loops agree: a 3x4 nest runs 3+1 outer and 3*(4+1) inner tests
  assert loop_cost([3], [4], 1) == 4 + 15
  assert loop_cost([], [10], 2) == 22 and loop_cost([2, 3], [], 0) == 3 + 2 * 4

def test_declared_limits():
  # every renderer that launches workgroups declares its per-dim limits, and codegen keeps kernels inside them
  from tinygrad.renderer.cstyle import CUDARenderer, OpenCLRenderer, MetalRenderer, AMDRenderer
  from tinygrad.renderer.ptx import PTXRenderer
  from tinygrad.renderer.wgsl import WGSLRenderer
  assert CUDARenderer.global_max == PTXRenderer.global_max == (2**31-1, 65535, 65535)
  assert WGSLRenderer.global_max == (65535,) * 3 and WGSLRenderer.loop_max == 65535
  # the emulator posing as CUDA takes CUDA's launch limits, so its kernels are cut as CUDA's would be
  from tinygrad.runtime.ops_python import PythonRenderer
  assert PythonRenderer("CUDA").global_max == CUDARenderer.global_max and PythonRenderer("CUDA").local_max == CUDARenderer.local_max
  for ren in (CUDARenderer(), OpenCLRenderer(), MetalRenderer(), AMDRenderer(), PTXRenderer("sm_80"), WGSLRenderer()):
    # a 2D kernel whose outer axis is over CUDA's y limit: it is cut, on every device
    t = Tensor.empty(70001, 3, device="PYTHON").T + 1
    with Context(NOOPT=1): (si,) = [si for si in t.schedule() if si.ast.op is Ops.SINK]
    p = get_program(si.ast, ren)
    assert all(g <= m for g, m in zip(p.global_size, ren.global_max)), (type(ren).__name__, p.global_size)
    assert [u.arg.dim for u in p.uops if u.op is Ops.SPECIAL and u.arg.kind is ThreadKind.GLOBAL]

@pytest.mark.parametrize("n", [3, 37, 100])
def test_tiny_limits_symbolic(tiny_python, n):
  # a symbolic length over the limits: the launch size is a ceil division of the variable, the guard compares with it
  from tinygrad import Variable
  x = Tensor(np.arange(100, dtype=np.float32), device="PYTHON").realize()
  v = Variable("n", 1, 100).bind(n)
  with Context(NOOPT=1, CACHELEVEL=0):
    assert (x.shrink(((0, v),)) * 2).sum().item() == 2 * sum(range(n))
    t = (x.shrink(((0, v),)) * 2 + 1).realize()
  np.testing.assert_equal(np.frombuffer(t.uop.base.buffer.as_buffer(), dtype=np.float32)[:n], np.arange(n) * 2 + 1)
  p = [r.p for r in realize.method_cache.values()][-1]
  assert isinstance(p.global_size[0], UOp) and p.global_size[0].vmax <= 7, p.global_size   # chunks of (n+14)//15: at most dim 0's 7
