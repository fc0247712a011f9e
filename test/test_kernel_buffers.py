# a kernel takes at most its device's Renderer.max_bufs buffers: a graph fusing more (a sum of thousands of tensors, found by fuzzing: ctypes
# refused 5001 arguments on CPU, WebGPU binds 32 storage buffers on lavapipe) is cut into several kernels
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_schedule

def _bufs_per_kernel(*ts:Tensor) -> list[int]:
  sched = Tensor.schedule(*ts)
  run_schedule(list(sched))
  return [len(si.bufs) for si in sched if si.ast.op is Ops.SINK]

def test_sum_of_many_tensors(device):
  n = (Device[device].renderer.max_bufs or 40) + 30
  vals = np.random.default_rng(0).standard_normal(n).astype(np.float32)
  out = sum((Tensor([float(v)]) for v in vals), Tensor([0.0]))
  if (lim := Device[device].renderer.max_bufs) is not None: assert max(_bufs_per_kernel(out)) <= lim
  np.testing.assert_allclose(out.numpy(), [vals.astype(np.float64).sum()], rtol=1e-4)

@pytest.mark.parametrize("limit", [4, 5, 8])
def test_small_limit_cuts_wide_graphs(monkeypatch, limit):
  monkeypatch.setattr(Device["CPU"].renderer, "max_bufs", limit)
  rng = np.random.default_rng(limit)
  xs = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(12)]
  ts = [Tensor(x, device="CPU") for x in xs]
  # a wide elementwise tree, a reduce of it, a where over three reads, a matmul of sums
  wide = sum(ts[1:], ts[0]) * ts[0] - ts[5]
  red = (ts[2] * ts[3] + ts[4] * ts[6]).sum(1) + ts[7].max(1)
  sel = (ts[8] > 0).where(ts[9] + ts[10], ts[11])
  mm = (ts[0] + ts[1] + ts[2]) @ (ts[3] + ts[4] + ts[5]).T
  assert max(_bufs_per_kernel(wide, red, sel, mm)) <= limit
  np.testing.assert_allclose(wide.numpy(), sum(xs[1:], xs[0]) * xs[0] - xs[5], rtol=1e-5)
  np.testing.assert_allclose(red.numpy(), (xs[2] * xs[3] + xs[4] * xs[6]).sum(1) + xs[7].max(1), rtol=1e-5)
  np.testing.assert_allclose(sel.numpy(), np.where(xs[8] > 0, xs[9] + xs[10], xs[11]), rtol=1e-6)
  np.testing.assert_allclose(mm.numpy(), (xs[0] + xs[1] + xs[2]) @ (xs[3] + xs[4] + xs[5]).T, rtol=1e-5)

def test_backward_through_a_wide_sum():
  xs = [Tensor([float(i)], requires_grad=True) for i in range(1100)]
  out = sum(x * x for x in xs)
  out.sum().backward()
  Tensor.realize(*[x.grad for x in xs])   # one schedule for all the gradients
  assert out.item() == pytest.approx(sum(i * i for i in range(1100)), rel=1e-5)
  np.testing.assert_equal(np.concatenate([x.grad.numpy() for x in xs]), 2 * np.arange(1100, dtype=np.float32))
