"""Tensor-level semantics checked against PyTorch: zero gradients of used tensors, gradients outside a domain, indexing, device names,
batched linalg."""
import math
import numpy as np
import pytest
import torch
from tinygrad import Tensor

VALS = [0.5, -0.25, 0.0, 2.0, -3.0]

def _grad_pair(fn_tiny, fn_torch, vals=VALS):
  x, tx = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
  fn_tiny(x).sum().backward()
  fn_torch(tx).sum().backward()
  return x.grad, tx.grad

# ops whose derivative is zero: the tensor is used, so its gradient is zeros (as in PyTorch), not None
@pytest.mark.parametrize("name,fn,tfn", [
  ("sign", lambda x: x.sign(), torch.sign),
  ("pow0", lambda x: x**0, lambda x: x**0),
  ("pow0.0", lambda x: x**0.0, lambda x: x**0.0),
  ("round", lambda x: x.round(), torch.round),
  ("floor", lambda x: x.floor(), torch.floor),
  ("ceil", lambda x: x.ceil(), torch.ceil),
  ("trunc", lambda x: x.trunc(), torch.trunc),
  ("mul0", lambda x: x * 0, lambda x: x * 0),
  ("copysign_sign", lambda x: Tensor([1., -2., 3., 4., -5.]).copysign(x), lambda x: torch.tensor([1., -2., 3., 4., -5.]).copysign(x)),
  ("sign_plus", lambda x: x.sign() * 3 + x.floor(), lambda x: x.sign() * 3 + x.floor()),
  ("div_floor", lambda x: x.div(2, rounding_mode="floor"), lambda x: x.div(2, rounding_mode="floor")),
  ("div_trunc", lambda x: x.div(2, rounding_mode="trunc"), lambda x: x.div(2, rounding_mode="trunc")),
  ("floor_divisor", lambda x: Tensor([1., 2., 3., 4., 5.]).div(x + 5, rounding_mode="floor"),
   lambda x: torch.tensor([1., 2., 3., 4., 5.]).div(x + 5, rounding_mode="floor")),
])
def test_zero_derivative_gives_zeros(name, fn, tfn):
  g, tg = _grad_pair(fn, tfn)
  assert g is not None, f"{name}: grad is None"
  np.testing.assert_equal(g.numpy(), tg.numpy())

def test_zero_grad_through_comparison_where():
  # tinygrad's rule: a used tensor gets a Tensor gradient, zeros where the derivative is zero
  x = Tensor(VALS, requires_grad=True)
  (x > 0).where(1.0, 2.0).sum().backward()
  np.testing.assert_equal(x.grad.numpy(), np.zeros(5, np.float32))

def test_gradient_api_zero_derivative():
  x = Tensor(VALS, requires_grad=True)
  (g,) = x.sign().sum().gradient(x)
  np.testing.assert_equal(g.numpy(), np.zeros(5, np.float32))
  with pytest.raises(RuntimeError): Tensor([1.0]).sum().gradient(x)  # not used at all: still an error

def test_detach_only_keeps_none():
  x, w = Tensor(VALS, requires_grad=True), Tensor([1., 2., 3., 4., 5.], requires_grad=True)
  (x.detach() * w).sum().backward()
  assert x.grad is None and w.grad is not None

def test_pow_exponent_zero_forward():
  x = Tensor([0.0, -2.0, math.inf, math.nan])
  np.testing.assert_equal((x**0).numpy(), np.ones(4, np.float32))

def test_pow_minus_two_grad_at_zero():
  g, tg = _grad_pair(lambda x: x**-2, lambda x: x**-2, [0.0, -0.0, 2.0, -0.5, math.inf])
  np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6)

@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_tie_gradient_follows_index(op):
  # ties: torch's gradient goes to the element its index names (the later one), not split between equal elements
  vals = [0.5, -0.25, 2.0, 2.0, -3.0, -3.0]
  g, tg = _grad_pair(lambda x: getattr(x, op)(0)[0], lambda x: getattr(x, op)(0)[0], vals)
  np.testing.assert_equal(g.numpy(), tg.numpy())

DOMAIN = [-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]
@pytest.mark.parametrize("op", ["asin", "acos", "acosh", "atanh", "log", "log2", "sqrt", "rsqrt", "log1p", "asinh", "atan", "reciprocal"])
def test_domain_gradients_match_torch(op):
  g, tg = _grad_pair(lambda x: getattr(x, op)(), getattr(torch, op), DOMAIN)
  np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-5, atol=1e-6)

# ***** indexing against torch *****
A4 = np.arange(2*3*4*5, dtype=np.float32).reshape(2, 3, 4, 5)
INDEX_CASES = [
  lambda L: ([[0]], ...), lambda L: [[0, 1]], lambda L: [[[[1]]]], lambda L: [[0, 1], [1, 1]], lambda L: ([[0], [1]], [[1, 2]]),
  lambda L: [0, 1], lambda L: ([1, -1], slice(None), [0, 2]), lambda L: (0, [1, 2]), lambda L: (slice(None), [0, 2], slice(1, 3)),
  lambda L: (..., [0, 1]), lambda L: (None, [0, 1], None), lambda L: ([0, 1], None, [0, 1]), lambda L: (1, ..., -1),
  lambda L: (slice(1, None, 2), slice(None, None, 3)), lambda L: (slice(-1, None), slice(-3, -1)), lambda L: [True, False],
  lambda L: (slice(None), [True, False, True]), lambda L: True, lambda L: False, lambda L: None, lambda L: [],
  lambda L: (slice(None), [], 0), lambda L: ([0, 1], [1, 2], [2, 3], [3, 4]), lambda L: ([[0, 1], [1, 0]], 0, [[1], [2]]),
  lambda L: (0, slice(None), [1, 2], 0), lambda L: (slice(None), 0, slice(None), [1, 2]), lambda L: ([0, 1], slice(1, None), [1, 2]),
  lambda L: ((0, 1), (1, 2)), lambda L: (..., None, 1), lambda L: (0, None, ..., None, 1), lambda L: ([-2, 1], [[-1], [0]]),
  lambda L: (slice(None), slice(None), slice(None), [4, 0, -5]), lambda L: [0, L(1)], lambda L: L(1), lambda L: (L(1), L(2)),
  lambda L: [L(1), L(0)], lambda L: L([[0, 1]]), lambda L: [[0, L(1)]], lambda L: L([True, False]), lambda L: L(True),
  lambda L: (slice(None), L([[True, False, True, False]] * 3)), lambda L: (L([0, 1]), [1, 2]), lambda L: ([0, L(1)], [L(2), 3]),
  lambda L: (5,), lambda L: (0, 0, 0, 0, 0), lambda L: ([0, 2],),
]

def _same(got_fn, exp_fn):
  try: exp = exp_fn()
  except Exception as e:  # noqa: BLE001 - the class is what is compared
    with pytest.raises(type(e)): got_fn()
    return
  got = got_fn()
  assert got.shape == exp.shape
  np.testing.assert_equal(got, exp)

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("n", range(len(INDEX_CASES)))
def test_getitem_vs_torch(n):
  f = INDEX_CASES[n]
  _same(lambda: Tensor(A4)[f(Tensor)].numpy(), lambda: torch.tensor(A4)[f(torch.tensor)].numpy())

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("n", range(len(INDEX_CASES)))
def test_setitem_vs_torch(n):
  f = INDEX_CASES[n]
  def run_torch():
    t = torch.tensor(A4)
    shp = t[f(torch.tensor)].shape
    t[f(torch.tensor)] = torch.arange(float(np.prod(shp))).reshape(shp) - 100
    return t.numpy()
  def run_tiny():
    t = Tensor(A4).contiguous().realize()
    shp = t[f(Tensor)].shape
    t[f(Tensor)] = Tensor.arange(float(np.prod(shp))).reshape(shp) - 100
    return t.numpy()
  _same(run_tiny, run_torch)

# ***** device names: "cpu", "CPU" and "cpu:0" name one device *****
@pytest.mark.parametrize("make", [
  lambda d: Tensor([1., 2., 3.], device=d), lambda d: Tensor.full((3,), 2.0, device=d), lambda d: Tensor.arange(3, device=d).float(),
  lambda d: Tensor.rand(3, device=d), lambda d: Tensor(np.ones(3, np.float32), device=d), lambda d: Tensor.linspace(0, 1, 3, device=d),
  lambda d: Tensor.eye(3, device=d)[0], lambda d: Tensor([1., 2., 3.]).to(d), lambda d: Tensor.zeros(3).zeros_like(device=d),
])
def test_device_names_canonical(make):
  for name in ("cpu", "Cpu", "cpu:0"):
    a, b = make(name), Tensor([3., 2., 1.], device="CPU")
    assert a.device == b.device == "CPU"
    np.testing.assert_equal((a < b).numpy(), a.numpy() < b.numpy())
    assert b[Tensor([0, 1], device=name)].shape == (2,)
    b[Tensor([0], device=name)] = Tensor([5.], device=name)
    assert b.numpy()[0] == 5.

# ***** batched linalg *****
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 2, 3), (1, 4, 4), (2, 0, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_batched(shape, full):
  a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
  U, S, Vh = Tensor(a).svd(full)
  tU, tS, tVh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
  assert (U.shape, S.shape, Vh.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tVh.shape))
  if not a.size: return
  k = min(shape[-2:])
  u, s, vh = U.numpy(), S.numpy(), Vh.numpy()
  np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-5)
  np.testing.assert_allclose(s, tS.numpy(), atol=1e-5)
  np.testing.assert_allclose(u.swapaxes(-1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), atol=1e-5)

@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (3, 4, 6), (2, 3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_batched(shape, mode):
  a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
  Q, R = Tensor(a).qr(mode)
  tQ, tR = torch.linalg.qr(torch.tensor(a), mode=mode)
  assert (Q.shape, R.shape) == (tuple(tQ.shape), tuple(tR.shape))
  q, r = Q.numpy(), R.numpy()
  np.testing.assert_allclose(q @ r, a, atol=1e-5)
  np.testing.assert_allclose(q.swapaxes(-1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-5)
  np.testing.assert_equal(np.tril(r, -1), 0)

def test_torch_view_names():
  # torch's other names for views, compared with torch; each aliases its base (an update of the base shows through it)
  views = {"swapaxes": lambda x: x.swapaxes(0, 2), "swapdims": lambda x: x.swapdims(-1, 1), "mT": lambda x: x.mT, "t": lambda x: x[0].t(),
           "movedim": lambda x: x.movedim(0, -1), "moveaxis2": lambda x: x.moveaxis((0, 1), (2, 0)), "narrow": lambda x: x.narrow(2, -3, 2),
           "unbind": lambda x: x.unbind(1)[2], "view_as": lambda x: x.view_as(x.reshape(4, 6)), "expand_as": lambda x: x[:1].expand_as(x),
           "reshape_as": lambda x: x.reshape_as(x.reshape(6, 4)), "type_as": lambda x: x.type_as(x)}
  for name, f in views.items():
    t, g = torch.arange(24.0).reshape(2, 3, 4), Tensor.arange(24.0).reshape(2, 3, 4).contiguous().realize()
    vt, vg = f(t), f(g)
    t += 1
    g += 1
    np.testing.assert_equal(vg.numpy(), vt.numpy(), err_msg=name)
  assert Tensor.ones(2, 3).type_as(Tensor([1], dtype="int32")).dtype.name == "int"
