# every gradient rule of tinygrad/gradient.py against torch's autograd, on CPU
import numpy as np
import pytest
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.helpers import GlobalCounters
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.gradient import compute_gradient, pm_gradient

torch = pytest.importorskip("torch")

@pytest.fixture(autouse=True)
def cpu(monkeypatch):
  monkeypatch.setitem(Device.__dict__, "DEFAULT", "CPU")

def _rand(*shape, lo=-2.0, hi=2.0, seed=0, dtype=np.float32) -> np.ndarray:
  return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)

def check(tiny_f, torch_f, *arrays:np.ndarray, atol=1e-5, rtol=1e-4):
  """Gradients of tiny_f(*inputs) with a random upstream gradient w (the root is the output itself, not a sum) against torch's."""
  xs = [Tensor(a, requires_grad=True) for a in arrays]
  out = tiny_f(*xs)
  w = _rand(*out.shape, seed=7, dtype=np.dtype(out.dtype.fmt))
  grads = compute_gradient(out.uop, Tensor(w).uop, {x.uop for x in xs})
  txs = [torch.tensor(a, requires_grad=True) for a in arrays]
  torch_f(*txs).backward(torch.tensor(w))
  for i, (x, tx) in enumerate(zip(xs, txs)):
    if (g := grads.get(x.uop)) is None:  # absent: a zero gradient (x ** 0 doesn't depend on x at all)
      np.testing.assert_equal(tx.grad.numpy(), np.zeros_like(arrays[i]), err_msg=f"input {i} has no gradient, torch's isn't 0")
      continue
    assert g.dtype == x.dtype and g.shape == x.shape, f"input {i}: gradient {g.dtype} {g.shape}, expected {x.dtype} {x.shape}"
    np.testing.assert_allclose(Tensor(g).numpy(), tx.grad.numpy(), atol=atol, rtol=rtol, err_msg=f"gradient of input {i}")

def grad_of_sum(y:Tensor, *targets:Tensor) -> dict[UOp, UOp]:
  root = y.sum().uop
  return compute_gradient(root, root.const_like(1.0), {t.uop for t in targets})

# ***** elementwise *****

A34, B4, B31 = _rand(3, 4), _rand(4, seed=1), _rand(3, 1, seed=2)
POS34 = _rand(3, 4, lo=0.2, hi=3.0, seed=3)

@pytest.mark.parametrize("b", [A34 * 0.5, B4, B31], ids=["same", "row", "col"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_broadcast(op, b):
  if op == "div": b = np.where(np.abs(b) < 0.3, 1.0, b).astype(np.float32)
  f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y}[op]
  check(f, f, A34, b)

def test_scalar_operands():
  check(lambda x: 3.0 - x * 2.0 + 1.0 / (x * x + 1.0), lambda x: 3.0 - x * 2.0 + 1.0 / (x * x + 1.0), A34)

@pytest.mark.parametrize("name", ["neg", "reciprocal", "sqrt", "exp", "log", "exp2", "log2", "sin", "cos", "sigmoid", "tanh", "relu", "square"])
def test_unary(name):
  x = POS34 if name in ("sqrt", "log", "log2", "reciprocal") else A34
  check(lambda t: getattr(t, name)(), lambda t: getattr(t, name)(), x)

def test_relu_and_maximum_at_zero():
  x = np.array([-1.0, 0.0, 2.0, 0.0, -0.5], dtype=np.float32)
  check(lambda t: t.relu(), lambda t: t.relu(), x)                                       # 0 at x == 0, like torch.relu
  check(lambda t: t.maximum(0.0), lambda t: torch.maximum(t, torch.zeros_like(t)), x)    # 0.5 at x == 0, like torch.maximum

TIES_A = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.5]], dtype=np.float32)
TIES_B = np.array([[1.0, 3.0, 2.0], [-1.0, 0.5, 0.25]], dtype=np.float32)

@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_ties(op):
  check(lambda x, y: getattr(x, op)(y), lambda x, y: getattr(torch, op)(x, y), TIES_A, TIES_B)

def test_where():
  cond = A34 > 0
  check(lambda x, y: Tensor(cond).where(x, y), lambda x, y: torch.where(torch.tensor(cond), x, y), A34, B4)
  check(lambda x: Tensor(cond).where(x * 2, 0.0), lambda x: torch.where(torch.tensor(cond), x * 2, 0.0), A34)

def _zeros34(g): np.testing.assert_equal(Tensor(g).numpy(), np.zeros((3, 4), np.float32))

def test_comparisons_and_trunc_have_no_gradient():
  # used, so zeros (a Tensor, not missing)
  x = Tensor(A34, requires_grad=True)
  _zeros34(grad_of_sum((x > 0).where(1.0, 2.0), x)[x.uop])
  _zeros34(grad_of_sum(x.floor() + x.trunc(), x)[x.uop])
  assert x.uop not in grad_of_sum(x.detach() * 2, x)
  check(lambda t: t * (t > 0).float() + t.floor(), lambda t: t * (t > 0).float() + t.floor(), A34)

def test_bitcast_has_no_gradient():
  x = Tensor(A34, requires_grad=True)
  _zeros34(grad_of_sum(x.bitcast(dtypes.int32).cast(dtypes.float32), x)[x.uop])

# ***** pow *****

@pytest.mark.parametrize("x, e", [
  (np.array([0.0, -2.0, 1.5, -0.5, 3.0], np.float32), 2),      # x == 0 with y == 2
  (np.array([-2.0, -1.0, 0.0, 0.5, 2.0], np.float32), 3),      # negative bases, odd exponent
  (np.array([-2.0, -0.5, 0.5, 2.0], np.float32), -2),
  (np.array([0.25, 1.0, 2.0, 9.0], np.float32), 0.5),
  (np.array([0.25, 1.0, 2.0], np.float32), -1.5),
  (np.array([0.0, -1.0, 2.0], np.float32), 0),
], ids=["sq_at_0", "cube_neg", "neg_int", "sqrt", "neg_frac", "zero_exp"])
def test_pow_scalar_exponent(x, e):
  check(lambda t: t ** e, lambda t: t ** e, x)

def test_pow_tensor_exponent_and_rpow():
  base, ex = _rand(3, 4, lo=0.2, hi=3.0), _rand(3, 4, lo=-2.0, hi=2.0, seed=4)
  check(lambda x, y: x ** y, lambda x, y: x ** y, base, ex)
  check(lambda y: 2.0 ** y, lambda y: 2.0 ** y, ex)

def test_pow_op():
  # the POW rule itself, on the edge cases torch defines: x == 0 (y = 0, 1, 2, -1), negative bases with whole and fractional exponents
  x = np.array([0.0, 0.0, 0.0, 0.0, -2.0, -2.0, -3.0, -2.0, 1.5, 2.0], np.float32)
  y = np.array([0.0, 1.0, 2.0, -1.0, 2.0, 3.0, -1.0, 0.5, 0.0, -0.5], np.float32)
  check(lambda a, b: Tensor(a.uop.alu(Ops.POW, b.uop)), torch.pow, x, y)

# ***** ops Tensor doesn't build, straight from UOps *****

def test_sub_fdiv_mulacc_neg_ops():
  b = np.where(np.abs(B4) < 0.3, 1.0, B4).astype(np.float32)
  b = np.broadcast_to(b, (3, 4)).copy()
  check(lambda x, y: Tensor(x.uop.alu(Ops.SUB, y.uop)), lambda x, y: x - y, A34, b)
  check(lambda x, y: Tensor(x.uop.alu(Ops.FDIV, y.uop)), lambda x, y: x / y, A34, b)
  check(lambda x, y: Tensor(x.uop.alu(Ops.MULACC, y.uop, x.uop)), lambda x, y: x * y + x, A34, b)
  check(lambda x: Tensor(x.uop.alu(Ops.NEG)), lambda x: -x, A34)

# ***** reductions *****

@pytest.mark.parametrize("axis", [0, 1, (0, 1)])
def test_sum_mean(axis):
  check(lambda t: t.sum(axis), lambda t: t.sum(axis), A34)
  check(lambda t: t.mean(axis, keepdim=True), lambda t: t.mean(axis, keepdim=True), A34)

MAXTIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [5.0, 1.0, -1.0, 5.0]], dtype=np.float32)

@pytest.mark.parametrize("axis", [0, 1, (0, 1)])
def test_max_min_ties(axis):
  # split equally between tied positions, like torch.amax / amin
  check(lambda t: t.max(axis), lambda t: t.amax(axis), MAXTIES)
  check(lambda t: t.min(axis), lambda t: t.amin(axis), MAXTIES)

def test_prod_with_zeros():
  x = np.array([[1.5, -2.0, 3.0], [0.0, 2.0, -1.0], [0.0, 0.0, 4.0], [2.0, 0.5, 0.0]], dtype=np.float32)
  check(lambda t: t.prod(1), lambda t: t.prod(1), x)
  check(lambda t: t.prod(0), lambda t: t.prod(0), x)
  check(lambda t: t.prod(), lambda t: t.prod(), x[:2])    # one zero in the whole tensor
  check(lambda t: t.prod(), lambda t: t.prod(), x)        # several zeros: all 0

# ***** movement *****

X234 = _rand(2, 3, 4, seed=5)

@pytest.mark.parametrize("name", ["reshape", "permute", "expand", "pad", "pad_value", "shrink", "flip", "slice_step", "transpose"])
def test_movement(name):
  tiny_f, torch_f = {
    "reshape": (lambda t: t.reshape(4, 6), lambda t: t.reshape(4, 6)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda t: t.permute(2, 0, 1)),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda t: t[:, :1].expand(2, 5, 4)),
    "pad": (lambda t: t.pad(((0, 0), (1, 2), (0, 1))), lambda t: torch.nn.functional.pad(t, (0, 1, 1, 2))),
    "pad_value": (lambda t: t.pad(((1, 0), None, (2, 1)), value=3.0), lambda t: torch.nn.functional.pad(t, (2, 1, 0, 0, 1, 0), value=3.0)),
    "shrink": (lambda t: t.shrink(((1, 2), (0, 2), (1, 4))), lambda t: t[1:2, 0:2, 1:4]),
    "flip": (lambda t: t.flip((0, 2)), lambda t: t.flip((0, 2))),
    "slice_step": (lambda t: t[:, ::2, 1::2], lambda t: t[:, ::2, 1::2]),
    "transpose": (lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2)),
  }[name]
  check(tiny_f, torch_f, X234)

def test_expand_half_accumulates_in_float():
  # 4096 ones summed in float16 would stop at 2048
  xt = Tensor(np.ones((1, 3), np.float16), requires_grad=True)
  y = xt.expand(4096, 3)
  g = compute_gradient(y.uop, Tensor(np.ones((4096, 3), np.float16)).uop, {xt.uop})[xt.uop]
  assert g.dtype == dtypes.float16
  np.testing.assert_equal(Tensor(g).numpy(), np.full((1, 3), 4096, np.float16))

def test_expand_of_const_gradient():
  # the usual x.expand(...).sum().backward(): the gradient reaching EXPAND is a broadcast constant
  xt = Tensor(np.ones((1, 3), np.float32), requires_grad=True)
  g = grad_of_sum(xt.expand(100, 3), xt)[xt.uop]
  np.testing.assert_equal(Tensor(g).numpy(), np.full((1, 3), 100, np.float32))

def test_cast_half_to_float():
  x = _rand(3, 4, dtype=np.float16)
  check(lambda t: t.float() * 3.0, lambda t: t.float() * 3.0, x, atol=1e-3, rtol=1e-3)
  check(lambda t: (t * t).sum(1, dtype=dtypes.float32), lambda t: (t * t).float().sum(1), x, atol=1e-2, rtol=1e-3)

# ***** compositions *****

def test_matmul():
  check(lambda a, b: a @ b, lambda a, b: a @ b, _rand(3, 4), _rand(4, 5, seed=1))
  check(lambda a, b: a @ b, lambda a, b: a @ b, _rand(2, 3, 4, seed=2), _rand(4, seed=3))

def test_softmax():
  def tiny_softmax(t:Tensor) -> Tensor:
    e = (t - t.max(1, keepdim=True)).exp()
    return e / e.sum(1, keepdim=True)
  check(tiny_softmax, lambda t: torch.softmax(t, 1), _rand(4, 6, lo=-3, hi=3))

def test_mlp_loss_with_sum_root():
  # the scalar form Tensor.backward uses: root = loss, root gradient = 1
  x, w1, w2 = _rand(5, 3), _rand(3, 4, seed=1), _rand(4, 2, seed=2)
  tw1, tw2 = Tensor(w1, requires_grad=True), Tensor(w2, requires_grad=True)
  loss = (Tensor(x) @ tw1).relu().matmul(tw2).tanh().square().mean()
  grads = compute_gradient(loss.uop, loss.uop.const_like(1.0), {tw1.uop, tw2.uop})
  pw1, pw2 = torch.tensor(w1, requires_grad=True), torch.tensor(w2, requires_grad=True)
  (torch.tensor(x) @ pw1).relu().matmul(pw2).tanh().square().mean().backward()
  np.testing.assert_allclose(Tensor(grads[tw1.uop]).numpy(), pw1.grad.numpy(), atol=1e-6, rtol=1e-4)
  np.testing.assert_allclose(Tensor(grads[tw2.uop]).numpy(), pw2.grad.numpy(), atol=1e-6, rtol=1e-4)

# ***** the walk *****

def test_node_used_twice_adds():
  check(lambda t: t * t + t, lambda t: t * t + t, A34)
  check(lambda t: (h := t.exp()) * h + h.sin(), lambda t: (h := t.exp()) * h + h.sin(), A34 * 0.5)

def test_deep_chain_no_recursion_error():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  y = x
  for i in range(10_000): y = y * 1.0001 if i % 2 else y + 0.5
  assert len(y.uop.toposort()) > 10_000
  g = compute_gradient(y.uop, y.uop.const_like(1.0), {x.uop})[x.uop]
  # every MUL scales the gradient once (in float32 maths)
  np.testing.assert_allclose(Tensor(g).numpy(), np.full(2, float(np.float32(1.0001)) ** 5000), rtol=1e-5)

def test_deep_chain_realizes():
  x = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
  y = x
  for _ in range(10_000): y = y + x
  g = compute_gradient(y.uop, y.uop.const_like(1.0), {x.uop})[x.uop]
  np.testing.assert_equal(Tensor(g).numpy(), np.full(2, 10_001, np.float32))

def test_target_not_on_a_path_is_absent():
  x, z = Tensor(A34, requires_grad=True), Tensor(B4, requires_grad=True)
  y = x * 2
  grads = compute_gradient(y.uop, y.uop.const_like(1.0), {x.uop, z.uop})
  assert x.uop in grads and z.uop not in grads
  # root itself as a target gets the root gradient
  assert compute_gradient(y.uop, y.uop.const_like(1.0), {y.uop})[y.uop] is y.uop.const_like(1.0)

def test_detach_stops_gradient():
  check(lambda t: t * t.detach(), lambda t: t * t.detach(), A34)
  x = Tensor(A34, requires_grad=True)
  assert x.uop not in grad_of_sum(x.detach() * 3, x)
  # a detached tensor can be a target itself (torch's x.detach().requires_grad_())
  d = x.detach()
  grads = grad_of_sum(d * d, x, d)
  assert x.uop not in grads
  np.testing.assert_allclose(Tensor(grads[d.uop]).numpy(), 2 * A34, rtol=1e-6)

def test_contiguous_copy_assign():
  check(lambda t: t.contiguous() * 2, lambda t: t.contiguous() * 2, A34)
  check(lambda t: t.clone() * t, lambda t: t.clone() * t, A34)
  x = Tensor(A34, requires_grad=True)
  cb = UOp(Ops.CONTIGUOUS_BACKWARD, x.dtype, (x.uop,))
  g = compute_gradient(cb, cb.const_like(2.0), {x.uop})[x.uop]
  assert g.op is Ops.CONTIGUOUS
  np.testing.assert_equal(Tensor(g).numpy(), np.full((3, 4), 2.0, np.float32))
  # ASSIGN: the value written gets the gradient, the target's old contents none
  t = Tensor(np.zeros((3, 4), np.float32), requires_grad=True)
  t.assign(x * 3)
  assert t.uop.op is Ops.ASSIGN
  grads = compute_gradient(t.uop, t.uop.const_like(1.0), {x.uop, t.uop.src[0]})
  np.testing.assert_equal(Tensor(grads[x.uop]).numpy(), np.full((3, 4), 3.0, np.float32))
  _zeros34(grads[t.uop.src[0]])

def test_lazy_and_checked():
  x = Tensor(A34, requires_grad=True)
  y = (x.exp() * x).sum()
  GlobalCounters.reset()
  grads = compute_gradient(y.uop, y.uop.const_like(1.0), {x.uop})
  assert GlobalCounters.kernel_count == 0 and isinstance(grads[x.uop], UOp)
  with pytest.raises(ValueError, match="shape"): compute_gradient(y.uop, Tensor(A34).uop, {x.uop})
  # an op without a rule says which
  sym = UOp(Ops.CUSTOM, x.dtype, (x.uop,), "f({})")
  with pytest.raises(NotImplementedError, match="CUSTOM"): compute_gradient(sym, sym.const_like(1.0), {x.uop})

def test_rules_are_a_pattern_matcher():
  assert Ops.REDUCE_AXIS in pm_gradient.pdict and Ops.EXPAND in pm_gradient.pdict and Ops.POW in pm_gradient.pdict

def test_backward_accumulates_like_torch():
  torch = pytest.importorskip("torch")
  xn, wn = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32), np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
  x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
  xt, wt = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
  for _ in range(2):
    (x @ w).relu().sum().backward()
    (xt @ wt).relu().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-5, atol=1e-6)
  gx, = ((x * x).sum()).gradient(x)
  np.testing.assert_allclose(gx.numpy(), 2 * xn, rtol=1e-6)
  with pytest.raises(ValueError, match="needs gradient="): (x * 2).backward()
