# big CPU matmuls pack their operands into tile-major copies first: same values as the plain product, gradients included
import numpy as np
import pytest
from tinygrad import Tensor, Context
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_schedule

@pytest.mark.parametrize("m,k,n", [(16, 8, 32), (24, 5, 64), (8, 64, 96)])
def test_packed_dot_matches_numpy(m, k, n):
  rng = np.random.default_rng(m*k*n)
  an, bn = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor(an, device="CPU", requires_grad=True), Tensor(bn, device="CPU", requires_grad=True)
    out = a @ b
    # the packing copies (a layout that already is tile-major needs none) and the product
    sched = out.schedule()
    assert 2 <= len([si for si in sched if si.ast.op is Ops.SINK]) <= 3
    run_schedule(sched)
    np.testing.assert_allclose(out.numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    (a @ b).sum().backward()
  np.testing.assert_allclose(a.grad.numpy(), np.ones((m, n), np.float32) @ bn.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(b.grad.numpy(), an.T @ np.ones((m, n), np.float32), rtol=1e-5, atol=1e-5)

def test_not_packed_when_tiles_dont_divide():
  with Context(PACKED_DOT_MIN=1):
    a, b = Tensor.ones(7, 3, device="CPU").contiguous().realize(), Tensor.ones(3, 16, device="CPU").contiguous().realize()
    out = a @ b
    sched = out.schedule()
    assert len([si for si in sched if si.ast.op is Ops.SINK]) == 1
    run_schedule(sched)
    np.testing.assert_equal(out.numpy(), np.full((7, 16), 3, np.float32))

def test_packed_conv_weight_matches_torch():
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(7)
  xn, wn, bn = rng.standard_normal((2, 8, 9, 9), dtype=np.float32), rng.standard_normal((32, 8, 3, 3), dtype=np.float32), rng.standard_normal(32, dtype=np.float32)
  with Context(PACKED_CONV_MIN=1):
    x, w, b = Tensor(xn, device="CPU", requires_grad=True), Tensor(wn, device="CPU", requires_grad=True), Tensor(bn, device="CPU")
    out = x.conv2d(w, b, padding=1)
    out.sum().backward()
  xt, wt = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
  ref = torch.nn.functional.conv2d(xt, wt, torch.tensor(bn), padding=1)
  ref.sum().backward()
  np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
