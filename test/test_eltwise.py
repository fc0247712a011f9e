# elementwise speed work that shows in the graph: single-node exp/tanh, the gradient carrier dropped going forward, row reduces with
# SIMD lanes on the reduce axis. Values are checked against torch.
import numpy as np, torch
from tinygrad import Tensor, Device, Context
from tinygrad.uop import Ops
from tinygrad.codegen.program import get_program

def _asts(t:Tensor) -> list:
  return [si.ast for si in t.schedule()]

def test_exp_tanh_are_one_node():
  x = Tensor.empty(8, 8)
  for t, op in ((x.exp(), Ops.EXP), (x.tanh(), Ops.TANH)):
    nodes = list(t.uop.toposort())
    assert sum(u.op is op for u in nodes) == 1
    assert sum(u.op in (Ops.ADD, Ops.MUL, Ops.WHERE, Ops.MULACC) for u in nodes) == 0   # nothing composite at the tensor level

def test_gradient_carrier_dropped_forward():
  # a tensor that requires grad computes the same kernel forward as one that doesn't: the hand-written backward costs nothing forward
  xn = np.linspace(-5, 5, 64, dtype=np.float32)
  for f in (Tensor.sigmoid, Tensor.erf, Tensor.expm1, Tensor.sinh):
    a, b = Tensor(xn), Tensor(xn, requires_grad=True)
    assert _asts(f(a)) == _asts(f(b)), f.__name__
    ya = f(b)
    ya.sum().backward()
    xt = torch.tensor(xn, requires_grad=True)
    getattr(torch, f.__name__)(xt).sum().backward()
    np.testing.assert_allclose(ya.numpy(), getattr(torch, f.__name__)(torch.tensor(xn)).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)

def test_exp_tanh_grad():
  xn = np.array([-30, -3, -0.5, 0, 0.25, 2, 20, 80], dtype=np.float32)
  for name in ("exp", "tanh"):
    x, xt = Tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
    getattr(x, name)().sum().backward()
    getattr(xt, name)().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=2e-6)

def test_softmax_sum_kernel_unrolls_reduce_axis():
  # the sum of exps is read along its contiguous reduce axis: on a vector renderer that axis gets the SIMD lanes (vector loads, one
  # vector accumulator), not side-by-side rows gathered lane by lane
  renderer = Device[Device.DEFAULT].renderer
  if not renderer.vector_alu_lanes: return
  x = Tensor.empty(64, 1024)
  with Context(ROW_FUSE=0): asts = _asts(x.softmax(-1))
  sum_ast = next(a for a in asts if any(u.op is Ops.REDUCE_AXIS and u.arg[0] is Ops.ADD for u in a.toposort()))
  opts = get_program(sum_ast, renderer).applied_opts
  assert any(o.op.name == "UNROLL" and o.arg >= 4 for o in opts) and not any(o.op.name == "UPCAST" for o in opts), opts
  # one row kernel (CPU): the max's loop and the sum's loop both get the lanes (vector accumulators), the output loop vector stores
  if not renderer.has_local:
    (row_ast,) = _asts(x.softmax(-1))
    prg = get_program(row_ast, renderer)
    assert {o.axis for o in prg.applied_opts if o.op.name == "UNROLL" and o.arg >= 8} == {0, 1}, prg.applied_opts
    assert any(o.op.name == "UPCAST" and o.arg >= 8 for o in prg.applied_opts), prg.applied_opts
    assert len([u for u in prg.uops if u.op is Ops.DEFINE_ACC and u.dtype.count > 1]) == 2
  xn = np.random.default_rng(0).standard_normal((64, 1024), dtype=np.float32)
  np.testing.assert_allclose(Tensor(xn).softmax(-1).numpy(), torch.tensor(xn).softmax(-1).numpy(), rtol=1e-5, atol=1e-8)
