# Autograd semantics against PyTorch: gradients after a realize, .grad flags, nan/inf and zero-variance gradients, casts
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

torch = pytest.importorskip("torch")

A = np.array([[1.67, 1.15, -0.3], [-1.93, 1.16, 0.7]], dtype=np.float32)
W = np.array([[1.0, 2.0, -1.0], [3.0, 4.0, 0.5]], dtype=np.float32)

def _both(fn, realize_at):
  # fn(lib, x, w, mark) -> scalar loss; mark(t) is where the tinygrad run realizes (reads) a value before backward
  r = torch.tensor(A, requires_grad=True)
  fn(torch, r, torch.tensor(W), lambda t: t).backward()
  x = Tensor(A, requires_grad=True)
  def mark(t):
    if realize_at == "numpy": t.numpy()
    elif realize_at == "realize": t.realize()
    return t
  fn(None, x, Tensor(W), mark).backward()
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), atol=1e-5, rtol=1e-5)

GRAPHS = {
  "softmax": lambda lib, x, w, mark: (mark(x.softmax(0)) * w).sum(),
  "expand_sum": lambda lib, x, w, mark: (mark(x.sum(1, keepdim=True)).expand(2, 3) * w).sum(),
  "loss": lambda lib, x, w, mark: mark(((x * w).exp() + x.sin()).mean()),
  "chain": lambda lib, x, w, mark: (mark(mark(mark(x * w).relu() + x).tanh()) * x).sum(),
  "shared": lambda lib, x, w, mark: (lambda h: (h * h.sum(0)).sum() + h.max())(mark(x.exp() * w)),
  "log_softmax": lambda lib, x, w, mark: -(mark(x.log_softmax(1)) * w).sum(),
}

@pytest.mark.parametrize("realize_at", ["numpy", "realize"])
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_backward_after_realize(graph, realize_at): _both(GRAPHS[graph], realize_at)

def test_backward_after_realize_deep_chain():
  # every step realized (an RNN read at each step): backward still reaches x, and the walk is iterative
  x = Tensor([0.5, -0.25], requires_grad=True)
  h = x
  for _ in range(400): h = (h * 0.999 + 0.001).realize()
  h.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [0.999 ** 400] * 2, rtol=1e-4)

def test_gradient_after_realize():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  y = (x * x).realize()
  g, = y.sum().gradient(x)
  assert g.tolist() == [2.0, 4.0, 6.0]

def test_detach_of_realized_stays_detached():
  x = Tensor([1.0, 2.0], requires_grad=True)
  d = x.detach()
  d.realize()
  assert not (d * 2).requires_grad
  (d * x).sum().backward()
  assert x.grad.tolist() == [1.0, 2.0]

def test_inplace_on_realized_nonleaf():
  r = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
  ry = r * 2
  ry[1:] *= r[1:]
  ry.sum().backward()
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  y = (x * 2).realize()
  y[1:] *= x[1:]
  y.realize()
  y.sum().backward()
  assert x.grad.tolist() == r.grad.tolist()

def test_grad_does_not_require_grad():
  x = Tensor([1.0, 2.0], requires_grad=True)
  (x * x).sum().backward()
  assert not x.grad.requires_grad and not (x.grad * 2).requires_grad
  (x * 3).sum().backward()   # accumulates, still plain data
  assert x.grad.tolist() == [5.0, 7.0] and not x.grad.requires_grad

def test_constructors_are_independent_of_grad_tensors():
  # torch: a tensor made by a constructor never requires grad, even when an identical one does
  z = Tensor.zeros(3, requires_grad=True)
  assert z.requires_grad
  for t in (Tensor.zeros(3), Tensor.zeros(3) * 2, Tensor.zeros(3).contiguous(), Tensor.ones(3), Tensor.full((3,), 0.0), Tensor.zeros_like(z)):
    assert not t.requires_grad, t
  o = Tensor.ones(2, 2, requires_grad=True)
  (o * 2).sum().backward()
  k = Tensor.ones(2, 2)
  (k * o).sum().backward()
  assert k.grad is None and o.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]

@pytest.mark.parametrize("vals", [[1.0, 1.0, 1.0], [0.1] * 3, [1e8 + 1] * 3, [0.3] * 7, [-2.5] * 5])
def test_var_of_equal_values_is_zero(vals):
  assert Tensor(vals).var().item() == 0.0 and Tensor(vals).std().item() == 0.0
  assert Tensor(vals).mean().item() == torch.tensor(vals).mean().item()   # divided by n, like torch

@pytest.mark.parametrize("data,axis,correction", [([1.0, 1.0, 1.0], None, 1), ([[1.0, 1.0], [2.0, 3.0]], 1, 1), ([[1.0, 1.0], [2.0, 3.0]], 0, 0),
                                                  ([1.0, 1.0, 1.0], None, 3), ([[5.0, 5.0, 5.0], [1.0, -2.0, 0.5]], 1, 1)])
def test_std_var_grad_like_torch(data, axis, correction):
  for name in ("std", "var"):
    r = torch.tensor(data, requires_grad=True)
    getattr(r, name)(dim=axis, correction=correction).sum().backward()
    x = Tensor(data, requires_grad=True)
    getattr(x, name)(axis, correction=correction).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), atol=1e-6, equal_nan=True)

def test_var_large_mean_accurate():
  a = (np.float32(1e4) + np.arange(8, dtype=np.float32) * np.float32(0.01)).astype(np.float32)
  np.testing.assert_allclose(Tensor(a).var().item(), torch.tensor(a, dtype=torch.float64).var().item(), rtol=1e-3)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_max_min_propagate_nan(device):
  a = [[1.0, math.nan, 3.0], [1.0, 2.0, -1.0]]
  for name in ("max", "min"):
    for axis in (None, 0, 1):
      want = getattr(torch.tensor(a), "a" + name)(**({} if axis is None else {"dim": axis}))
      np.testing.assert_equal(getattr(Tensor(a, device=device), name)(axis).numpy(), want.numpy())
  # torch.amax (max's values-only, tie-sharing twin): a row holding nan gives every position a nan gradient (grad * (x == max) / 0);
  # an infinite upstream gradient gives the other positions grad * 0 = nan (torch.max() sends it all to the nan, max_pool2d does too)
  for v in ([[1.0, math.nan, 3.0], [2.0, 2.0, -1.0]], [[math.nan, 0.0, -1.0], [-math.inf, 5.0, math.inf]]):
    for name in ("max", "min"):
      for axis in (None, 0, 1):
        for w in (2.0, math.inf):
          r = torch.tensor(v, requires_grad=True)
          (getattr(r, "a" + name)(**({} if axis is None else {"dim": axis})) * w).sum().backward()
          x = Tensor(v, requires_grad=True, device=device)
          (getattr(x, name)(axis) * w).sum().backward()
          np.testing.assert_equal(x.grad.numpy(), r.grad.numpy())

def test_no_grad_through_int_cast():
  r = torch.tensor([1.5, -2.5], requires_grad=True)
  (r.int().float() * 3 + r.bool().float() + r.long().double().float() + r).sum().backward()
  x = Tensor([1.5, -2.5], requires_grad=True)
  (x.cast(dtypes.int32).float() * 3 + x.cast(dtypes.bool).float() + x.cast(dtypes.int64).cast(dtypes.float64).float() + x).sum().backward()
  assert x.grad.tolist() == r.grad.tolist()
  assert not x.cast(dtypes.int32).requires_grad

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_floordiv_sign_of_zero(device):
  a, b = [-0.0, 0.0, -0.0, 0.0, -1.0, 5.0, 1.0], [3.0, 3.0, -3.0, -3.0, 3.0, 3.0, -7.0]
  want = (torch.tensor(a) // torch.tensor(b)).numpy()
  got = (Tensor(a, device=device) // Tensor(b, device=device)).numpy()
  np.testing.assert_equal(got, want)
  assert list(np.signbit(got)) == list(np.signbit(want))

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_rounding_keeps_sign_of_zero(device):
  a = [-0.3, -0.0, 0.0, 0.3, -0.5, 2.5, -2.5, -1.5, 0.7]
  for name in ("trunc", "ceil", "floor", "round"):
    want = getattr(torch.tensor(a), name)().numpy()
    got = getattr(Tensor(a, device=device), name)().numpy()
    np.testing.assert_equal(got, want)
    assert list(np.signbit(got)) == list(np.signbit(want)), name

def test_hand_written_gradients_keep_sign_and_mask_nan():
  # hardswish(-3) is -0.0 in torch; its derivative there is 0 by a select, so a nan arriving from sqrt'(0) = inf * 0 stays out
  a = [-3.0, 3.0, 0.0, -0.0, 0.5, -4.0]
  r = torch.tensor(a, requires_grad=True)
  rv = torch.nn.functional.hardswish(r)
  rv.abs().sqrt().sum().backward()
  x = Tensor(a, requires_grad=True)
  v = x.hardswish()
  v.abs().sqrt().sum().backward()
  assert list(np.signbit(v.numpy())) == list(np.signbit(rv.detach().numpy()))
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-6, equal_nan=True)

F = torch.nn.functional if torch is not None else None
NONFINITE_FNS = {
  "relu": (Tensor.relu, torch.relu), "abs": (Tensor.abs, torch.abs), "sigmoid": (Tensor.sigmoid, torch.sigmoid), "tanh": (Tensor.tanh, torch.tanh),
  "exp": (Tensor.exp, torch.exp), "log": (Tensor.log, torch.log), "sqrt": (Tensor.sqrt, torch.sqrt), "sin": (Tensor.sin, torch.sin),
  "cos": (Tensor.cos, torch.cos), "tan": (Tensor.tan, torch.tan), "clamp": (lambda x: x.clamp(-1, 1), lambda x: x.clamp(-1, 1)),
  "elu": (Tensor.elu, F.elu), "selu": (Tensor.selu, F.selu), "celu": (Tensor.celu, F.celu), "softplus": (Tensor.softplus, F.softplus),
  "leaky_relu": (lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1)), "hardtanh": (Tensor.hardtanh, F.hardtanh),
  "hardsigmoid": (Tensor.hardsigmoid, F.hardsigmoid), "hardswish": (Tensor.hardswish, F.hardswish), "logsigmoid": (Tensor.logsigmoid, F.logsigmoid),
  "erf": (Tensor.erf, torch.erf), "atan": (Tensor.atan, torch.atan), "asinh": (Tensor.asinh, torch.asinh), "softsign": (Tensor.softsign, F.softsign),
  "gelu": (Tensor.gelu, lambda x: F.gelu(x, approximate="tanh")), "square": (Tensor.square, torch.square), "max": (Tensor.max, torch.amax),
  "where": (lambda x: (x > 0).where(x, x * 2), lambda x: torch.where(x > 0, x, x * 2)),
  "silu": (Tensor.silu, F.silu), "mish": (Tensor.mish, F.mish), "expm1": (Tensor.expm1, torch.expm1), "log1p": (Tensor.log1p, torch.log1p),
  "sinh": (Tensor.sinh, torch.sinh), "cosh": (Tensor.cosh, torch.cosh), "asin": (Tensor.asin, torch.asin), "atanh": (Tensor.atanh, torch.atanh),
}

@pytest.mark.parametrize("name", sorted(NONFINITE_FNS))
def test_grads_at_nonfinite_inputs(name):
  tfn, rfn = NONFINITE_FNS[name]
  for v in (math.nan, math.inf, -math.inf, 0.0, -0.0):
    r = torch.tensor([v], requires_grad=True)
    rfn(r).sum().backward()
    x = Tensor([v], requires_grad=True)
    tfn(x).sum().backward()
    np.testing.assert_equal(x.grad.numpy(), r.grad.numpy(), err_msg=f"{name}'({v})")

def test_backward_after_realize_through_zero_derivative():
  # found by the fuzzer: a value reached only through a piecewise-constant op (sign) still leads backward to x, which gets zeros
  x = Tensor([1.5, -2.0], requires_grad=True)
  y = Tensor(False).where(x.leaky_relu(0.1), -1.5).sign() * 2
  y.realize()
  y.sum().backward()
  assert x.grad.tolist() == [0.0, 0.0]
  i = x.argmax().realize()   # an int result that was realized doesn't make later float results require grad
  assert not (Tensor([1.0, 2.0])[i] * 2).requires_grad

@pytest.mark.parametrize("name", ["tanh", "sigmoid", "hardswish", "softplus", "erf", "elu"])
def test_infinite_upstream_gradient(name):
  # an infinite gradient arriving (float overflow upstream) times a finite derivative is inf, not nan (fuzz case 23000242: gelu -> tan)
  tfn, rfn = NONFINITE_FNS[name]
  r = torch.tensor([0.5, -0.5, 2.0], requires_grad=True)
  (rfn(r) * 3e38 * 10).sum().backward()
  x = Tensor([0.5, -0.5, 2.0], requires_grad=True)
  (tfn(x) * 3e38 * 10).sum().backward()
  np.testing.assert_equal(x.grad.numpy(), r.grad.numpy())

@pytest.mark.parametrize("name", sorted(NONFINITE_FNS))
def test_grads_nonfinite_upstream(name):
  # torch's chain rule is upstream * derivative: an inf or nan arriving at a 0 derivative is nan (silu'(inf) = 1 + inf * 0), a select
  # (relu, hardswish, clamp) keeps it out; silu, gelu and mish use torch's one-formula backward (silu'(0) times inf is inf, not nan)
  tfn, rfn = NONFINITE_FNS[name]
  vals = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 1e30, -1e30]
  for up in (math.inf, -math.inf, math.nan, 0.0):
    r = torch.tensor(vals, requires_grad=True)
    (rfn(r) * up).sum().backward()
    x = Tensor(vals, requires_grad=True)
    (tfn(x) * up).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-6, equal_nan=True, err_msg=f"{name}' times {up}")

def test_sin_grad_of_big_values():
  # sin's derivative is cos computed with the same range reduction as the value: sin(pi/2 - x) would round a big x away
  vals = [1e30, -1e30, 3e7, 1e20, 12345.678, 2.0**100]
  r = torch.tensor(vals, requires_grad=True)
  r.sin().sum().backward()
  x = Tensor(vals, requires_grad=True)
  x.sin().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-6)

POOLS = {
  "max_pool2d": (lambda t: t.max_pool2d(2), lambda t: F.max_pool2d(t, 2)),
  "max_pool2d_overlap": (lambda t: t.max_pool2d(3, stride=1, padding=1), lambda t: F.max_pool2d(t, 3, stride=1, padding=1)),
  "max_pool2d_dilated": (lambda t: t.max_pool2d(2, stride=2, dilation=2), lambda t: F.max_pool2d(t, 2, stride=2, dilation=2)),
  "avg_pool2d": (lambda t: t.avg_pool2d(2), lambda t: F.avg_pool2d(t, 2)),
  "avg_pool2d_pad": (lambda t: t.avg_pool2d(3, stride=2, padding=1), lambda t: F.avg_pool2d(t, 3, stride=2, padding=1)),
  "avg_pool2d_nocount": (lambda t: t.avg_pool2d(3, stride=2, padding=1, count_include_pad=False),
                         lambda t: F.avg_pool2d(t, 3, stride=2, padding=1, count_include_pad=False)),
}

@pytest.mark.parametrize("name", sorted(POOLS))
def test_pools_with_nan_and_inf(name):
  # torch: a window holding nan gives nan (max_pool2d's gradient goes to the nan, as to its argmax), an infinity is an ordinary max;
  # avg pools pass nan/inf through the sum (no ties here: torch gives a tie to one position, tinygrad shares it)
  a = np.array([[[[1., np.nan, 3., 4., 0.5], [5., 6., -np.inf, 8., 1.], [np.inf, 1., 2., 3., -1.], [0., 0.25, np.nan, np.inf, 2.],
                  [-np.inf, -np.inf, -2., 7., 6.5]]]], dtype=np.float32)
  tfn, rfn = POOLS[name]
  r = torch.tensor(a, requires_grad=True)
  ro = rfn(r)
  w = np.arange(1, ro.numel() + 1, dtype=np.float32).reshape(ro.shape)
  (ro * torch.tensor(w)).sum().backward()
  x = Tensor(a, requires_grad=True)
  xo = tfn(x)
  (xo * Tensor(w)).sum().backward()
  np.testing.assert_allclose(xo.numpy(), ro.detach().numpy(), rtol=1e-6, equal_nan=True)
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-6, equal_nan=True)

def test_gradient_read_after_sibling_gradient_realized():
  # x0's gradient realizes a buffer that x1's gradient (a detached view of it) also reads; the realize of x1.grad used to leave its
  # CONTIGUOUS unrealized ("realize left CONTIGUOUS"), because mapping it to the buffer would have opened a gradient path through the detach
  import torch
  a, b, w = np.array([[1., 2., 3.]], np.float32), np.array([[5.]], np.float32), np.array([[1., 2., 3., 4.]], np.float32)
  ts = [Tensor(v, requires_grad=True) for v in (a, b, w)]
  rs = [torch.tensor(v, requires_grad=True) for v in (a, b, w)]
  out, ref = ts[0].cat(ts[1], dim=1).sum(keepdim=True).reshape(-1) @ ts[2], torch.cat([rs[0], rs[1]], dim=1).sum(dim=(0, 1), keepdim=True).reshape(-1) @ rs[2]
  out.realize()
  (out * Tensor([1., -2., 3., 0.5])).sum().backward()
  (ref * torch.tensor([1., -2., 3., 0.5])).sum().backward()
  for t, r in zip(ts, rs): np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-6)
  assert not ts[1].grad.requires_grad

def test_var_std_grad_with_infinities():
  # fuzz cases 2000073, 3000137 (--mix nonfinite): torch's var gradient is 2 * (x - mean) / (n - 1), so a row holding an infinity gives its
  # finite elements -inf or inf (the mean's own path added inf - inf = nan), and an infinite first element must not shift the row to nan
  a = np.array([[0.5, math.inf, -1.0], [-math.inf, 2.0, 3.0], [1.0, 2.0, 4.0], [math.nan, 1.0, 0.0]], dtype=np.float32)
  w = np.array([1.5, -2.0, 0.5, 1.0], dtype=np.float32)
  for name in ("var", "std"):
    r = torch.tensor(a, requires_grad=True)
    (getattr(r, name)(dim=1) * torch.tensor(w)).sum().backward()
    x = Tensor(a, requires_grad=True)
    out = getattr(x, name)(1)
    (out * Tensor(w)).sum().backward()
    np.testing.assert_allclose(out.numpy(), getattr(r, name)(dim=1).detach().numpy(), rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-6, equal_nan=True)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_backward_through_reduce_over_empty_axis(device):
  # fuzz case 7000881 (--mix empty, LLVM): backward reached any() over a size-0 axis, whose max gradient summed an empty list of window
  # positions (TypeError); any over an empty axis is False, like torch, and the inputs get zeros
  a, w = np.ones((4, 0), np.float32), np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  cond = np.array([[True], [True], [True], [False]])
  r, rw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
  (torch.where(torch.tensor(cond), r * 2, torch.ones(4, 1)).any(1) * rw).sum().backward()
  x, xw = Tensor(a, requires_grad=True, device=device), Tensor(w, requires_grad=True, device=device)
  (Tensor(cond, device=device).where(x * 2, Tensor.ones(4, 1, device=device)).any(1) * xw).sum().backward()
  np.testing.assert_equal(xw.grad.numpy(), rw.grad.numpy())
  assert x.grad is None or x.grad.shape == (4, 0)
  y = Tensor(np.ones((3, 0), np.float32), requires_grad=True, device=device)
  (y.sum(1) * 2).sum().backward()
  assert y.grad.shape == (3, 0)

def test_optimizer_steps_params_made_by_a_fill():
  # Tensor.zeros(requires_grad=True) is a buffer filled by an ASSIGN: the first step realized that fill into the leaf's buffer, whose views
  # then got the fill as their gradient origin (a cycle through the buffer at the next backward, or a bias that stopped learning)
  from tinygrad.nn.optim import SGD
  wn, xn = np.array([[1.0, 2, 3], [0, 1, 0]], np.float32), np.array([[1.0, 2, 3]], np.float32)
  w, b = Tensor(wn, requires_grad=True), Tensor.zeros(2, requires_grad=True)
  tw, tb = torch.tensor(wn, requires_grad=True), torch.zeros(2, requires_grad=True)
  opt, topt = SGD([w, b], lr=0.1), torch.optim.SGD([tw, tb], lr=0.1)
  with Tensor.train():
    for _ in range(3):
      opt.zero_grad(); (Tensor(xn) @ w.T + b).square().sum().backward(); opt.step()
      topt.zero_grad(); (torch.tensor(xn) @ tw.T + tb).square().sum().backward(); topt.step()
  np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=1e-5)
  np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-5)

def test_backward_through_an_in_place_update():
  # y += x into a realized buffer that needs no gradient: the gradient sees y's new value (torch's add_), not a cycle through y's buffer
  y, x = Tensor([1.0, 2.0]).realize(), Tensor([1.0, 1.0], requires_grad=True)
  y.assign(y + x).realize()
  (y * y).sum().backward()
  ty, tx = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0], requires_grad=True)
  ty = ty.add_(tx)
  (ty * ty).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())

def test_gradient_needs_the_value_before_an_in_place_update():
  # d(y*w)/dw is y's old value; (y*w)**2 reads the new one. One realize computes both: the old value is copied before the ASSIGN runs
  yn, wn = [2.0, 2.0, 0.5], [2.0, 0.5, 1.0]
  y, w = Tensor(yn).contiguous().realize(), Tensor(wn, requires_grad=True)
  y *= w
  (y * y).sum().backward()
  ty, tw = torch.tensor(yn), torch.tensor(wn, requires_grad=True)
  ty.mul_(tw)
  (ty * ty).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())
  np.testing.assert_allclose(y.numpy(), ty.detach().numpy())

@pytest.mark.parametrize("op", ["+=", "*=", "setitem"])
def test_in_place_on_a_leaf_that_requires_grad_raises(op):
  def run(t):
    if op == "+=": t += 1
    elif op == "*=": t *= 2
    else: t[0] = 5.0
    return t
  with pytest.raises(RuntimeError): run(torch.tensor([1.0, 2.0], requires_grad=True))
  with pytest.raises(RuntimeError): run(Tensor([1.0, 2.0], requires_grad=True))
  # under no_grad both change it (an optimizer's step); assign (tinygrad's API) works on a leaf too
  with torch.no_grad(): want = run(torch.tensor([1.0, 2.0], requires_grad=True))
  with Tensor.no_grad(): got = run(Tensor([1.0, 2.0], requires_grad=True))
  assert got.tolist() == want.tolist() and got.requires_grad and got.is_leaf
  assert Tensor([1.0, 2.0], requires_grad=True).assign(Tensor([3.0, 4.0])).tolist() == [3.0, 4.0]

@pytest.mark.parametrize("then_add", [False, True])
def test_gradient_after_an_in_place_update_was_realized(then_add):
  # y *= x realized: y's buffer now holds y*x, but d(y*x)/dx is y's old value (copied before the ASSIGN ran), also after a later y += 1
  x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 5.0]).contiguous().realize()
  tx, ty = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 5.0])
  y.assign(y * x).realize()
  ty.mul_(tx)
  if then_add:
    y.assign(y + 1).realize()
    ty.add_(1)
  (y * y).sum().backward()
  (ty * ty).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
  np.testing.assert_allclose(y.numpy(), ty.detach().numpy())

# ***** lazy readers of a buffer updated in place: like PyTorch's eager ops, a value keeps what it read before the update *****

@pytest.mark.parametrize("update", ["+=", "assign", "setitem", "two"])
def test_lazy_reader_keeps_the_value_before_an_in_place_update(update):
  def run(y, keep_fn):
    keep = keep_fn(y)
    later = keep * 2   # a reader of the reader
    if update == "+=": y += 1
    elif update == "assign": y = y.assign(y * y + 1) if isinstance(y, Tensor) else y.mul_(y).add_(1)
    elif update == "setitem": y[1] = 7.0
    else:
      y += 1
      y *= 3
    return keep, later, y
  ty = torch.tensor([1.0, 2.0, 3.0])
  tk, tl, ty = run(ty, lambda t: t * 1)
  y = Tensor([1.0, 2.0, 3.0]).realize()
  k, l, y = run(y, lambda t: t * 1)
  y.realize()
  np.testing.assert_equal(k.numpy(), tk.numpy())
  np.testing.assert_equal(l.numpy(), tl.numpy())
  np.testing.assert_equal(y.numpy(), ty.numpy())

def test_lazy_reader_of_an_earlier_update_in_a_chain():
  # mid reads the value after the first update; the realize of y runs both (the second overwrites the buffer mid would read)
  y = Tensor([1.0, 2.0]).realize()
  y += 1
  mid = y * 10
  y *= 3
  y.realize()
  assert mid.tolist() == [20.0, 30.0] and y.tolist() == [6.0, 9.0]

def _mlp_step(lib, opt_cls, xn, wn, w2n, steps=3):
  losses = []
  if lib is torch:
    w, w2 = torch.tensor(wn, requires_grad=True), torch.tensor(w2n, requires_grad=True)
    opt = getattr(torch.optim, opt_cls)([w, w2], lr=0.1)
  else:
    from tinygrad.nn import optim
    w, w2 = Tensor(wn, requires_grad=True), Tensor(w2n, requires_grad=True)
    opt = getattr(optim, opt_cls)([w, w2], lr=0.1)
  for _ in range(steps):
    opt.zero_grad()
    loss = (lib.tensor(xn) if lib is torch else Tensor(xn)).matmul(w).relu().matmul(w2).square().mean()
    loss.backward()
    opt.step()
    losses.append((loss.item(), w.grad.numpy().copy()))   # read after the step: the loss and the grads from before it
  return losses, w.detach().numpy()

@pytest.mark.parametrize("opt_cls", ["SGD", "Adam"])
def test_loss_read_after_the_optimizer_step(opt_cls):
  rng = np.random.default_rng(0)
  xn, wn, w2n = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (3, 5), (5, 2)])
  got, gw = _mlp_step(Tensor, opt_cls, xn, wn, w2n)
  want, tw = _mlp_step(torch, opt_cls, xn, wn, w2n)
  for (gl, gg), (wl, wg) in zip(got, want):
    np.testing.assert_allclose(gl, wl, rtol=1e-4)
    np.testing.assert_allclose(gg, wg, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(gw, tw, rtol=1e-4, atol=1e-6)

def test_optimizer_step_with_a_lazy_loss_adds_its_kernel_but_copies_no_weight():
  # the loss, read later, is computed by the step's schedule before the weights change; its backward is done, so no weight is copied
  from tinygrad.nn.optim import SGD
  from tinygrad.uop import Ops
  w = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
  opt = SGD([w], lr=0.1)
  loss = (Tensor([[1.0, -1.0]]) @ w).relu().sum()
  loss.backward()
  sched = Tensor.schedule(*opt.schedule_step())
  assert not any(si.ast.op is Ops.COPY for si in sched)
  assert loss.uop.base.op is Ops.BUFFER

def test_backward_again_after_the_step_raises_like_torch():
  from tinygrad.nn.optim import SGD
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  opt = SGD([w], lr=0.1)
  loss = (w * w).sum()
  loss.backward()
  opt.step()
  assert loss.item() == 14.0 and w.grad.tolist() == [2.0, 4.0, 6.0]
  tw = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
  tl = (tw * tw).sum()
  tl.backward()
  with torch.no_grad(): tw -= 0.1 * tw.grad
  with pytest.raises(RuntimeError): tl.backward()
  with pytest.raises(RuntimeError, match="modified by an inplace operation"): loss.backward()

def test_reader_that_requires_grad_keeps_its_gradient_after_an_update():
  # keep = y*w is realized before y's update runs; its gradient still needs y's old value (a copy made before the ASSIGN)
  yn, wn, xn = [2.0, -1.0, 0.5], [1.5, 2.0, -3.0], [0.5, 3.0, 2.0]
  w, x = Tensor(wn, requires_grad=True), Tensor(xn, requires_grad=True)
  y = Tensor(yn).contiguous().realize()
  keep = y * w
  y.assign(y * x).realize()
  (keep * keep * y).sum().backward()
  tw, tx = torch.tensor(wn, requires_grad=True), torch.tensor(xn, requires_grad=True)
  ty = torch.tensor(yn)
  tk = ty * tw
  ty = ty * tx
  (tk * tk * ty).sum().backward()
  np.testing.assert_allclose(keep.numpy(), tk.detach().numpy())
  np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

# cases extra/fuzz_inplace_grad.py found: backward meeting an unrealized ASSIGN (into a buffer with a gradient origin, or after another
# ASSIGN of the chain), and chains whose gradient reads a value a later update overwrote
@pytest.mark.parametrize("steps", [
  [("*=", "w", True), ("-=exp", "x", False)],             # an ASSIGN into a realized nonleaf (its target has a gradient origin)
  [("assign*", "x", False), ("*=", "w", True)],           # a realize of a chain of two ASSIGNs
  [("*=", "x", False), ("assign_yy", None, False)],       # no realize: the gradient reads the value of the first update
  [("+=", "x", False), ("-=exp", "w", False), ("*=", "w", False)],
  [("assign_yy", None, True), ("assign_yy", None, False), ("*=", "w", True)],
])
@pytest.mark.parametrize("nonleaf", [False, True])
def test_gradient_through_chains_of_in_place_updates(steps, nonleaf):
  yn, wn, xn = [0.5, -1.0, 2.0], [2.0, -1.0, 0.5], [2.0, 3.0, 0.5]
  def run(lib):
    T = torch.tensor if lib is torch else Tensor
    w, x = T(wn, requires_grad=True), T(xn, requires_grad=True)
    y = T(yn) * w if nonleaf else (T(yn) if lib is torch else Tensor(yn).contiguous().realize())
    for op, src, realize in steps:
      s = x if src == "x" else w
      if lib is torch:
        y = {"*=": lambda: y * s, "-=exp": lambda: y - s.exp(), "+=": lambda: y + s, "assign*": lambda: y * s, "assign_yy": lambda: y * y}[op]()
      else:
        if op == "*=": y *= s
        elif op == "-=exp": y -= s.exp()
        elif op == "+=": y += s
        elif op == "assign*": y.assign(y * s)
        else: y.assign(y * y)
        if realize: y.realize()
    (y * y).sum().backward()
    return [x.grad.numpy() if x.grad is not None else np.zeros(3), w.grad.numpy() if w.grad is not None else np.zeros(3), y.detach().numpy()]
  for g, t in zip(run(Tensor), run(torch)): np.testing.assert_allclose(g, t, rtol=1e-5)

def test_realized_value_keeps_its_gradient_after_a_buffer_it_read_is_updated():
  # z = y*x realized keeps its graph for backward (its origin), which reads y's buffer; y's update (no grad) runs later: the origin reads a
  # copy of the old contents (torch raises here; the mathematically right gradient is 2*y_old**2*x)
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  y = Tensor([2.0, 3.0, 4.0]).contiguous().realize()
  z = (y * x).realize()
  y.assign(y * y + 1).realize()
  (z * z).sum().backward()
  tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
  tz = torch.tensor([2.0, 3.0, 4.0]) * tx
  (tz * tz).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
  assert y.tolist() == [5.0, 10.0, 17.0]
  # z's graph reads that copy from now on: another update of y changes nothing for it
  y.assign(y * 0).realize()
  (z * z).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), 2 * tx.grad.numpy())

# ***** what a live gradient graph must not cost: buffers updated in place are freed with their tensor, reads don't recompute *****

@pytest.mark.parametrize("update", ["assign", "+=", "setitem", "assign_grad"])
@pytest.mark.parametrize("reads", [False, True])
@pytest.mark.parametrize("pending", [False, True])
def test_buffer_updated_in_place_is_freed_with_its_tensor(update, reads, pending):
  import gc, weakref
  p = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
  w = Tensor([1.0, 1.0, 1.0, 1.0]).contiguous().realize()
  loss = (p * w if reads else p * 2).sum().realize()
  if update == "assign": w.assign(w + p.detach())
  elif update == "+=": w += 1
  elif update == "setitem": w[1:3] = 5.0
  else: w.assign(w * p)
  if not pending: w.realize()
  ref = weakref.ref(w.uop.buf_uop.buffer)
  loss.backward()
  np.testing.assert_equal(p.grad.numpy(), [1.0] * 4 if reads else [2.0] * 4)
  del w
  gc.collect()
  # (a gradient graph that reads w keeps its old contents while it lives, as PyTorch's saved tensors do)
  if reads: del loss, p
  gc.collect()
  assert ref() is None

def test_reads_of_a_value_run_its_kernel_once_while_a_gradient_graph_lives():
  from tinygrad import GlobalCounters
  p = Tensor(A, requires_grad=True)
  tp = torch.tensor(A, requires_grad=True)
  for fn in [lambda x, p: x * 2 + 1, lambda x, p: (p * x).exp(), lambda x, p: (p * x).reshape(3, 2)]:
    y, ty = fn(Tensor(W), p), fn(torch.tensor(W), tp)
    GlobalCounters.reset()
    for _ in range(3): np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.tolist(), ty.tolist(), rtol=1e-6)
    assert GlobalCounters.kernel_count == 1
    if y.requires_grad:
      y.sum().backward(); ty.sum().backward()
      np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6)
      p.grad = tp.grad = None

@pytest.mark.parametrize("make", ["randn_contiguous", "uniform", "scaled", "linear_weight"])
def test_backward_of_a_lazy_leaf_after_reading_the_loss(make):
  # a leaf made requires_grad while still a graph (nn.Linear's weight before any realize): a realize that reads it (loss.item()) must leave
  # backward a path to it (it raised "no tensor with requires_grad=True is used")
  from tinygrad import nn
  x = {"randn_contiguous": lambda: Tensor.randn(2, 3).contiguous(), "uniform": lambda: Tensor.uniform(2, 3, low=-1, high=1),
       "scaled": lambda: Tensor(A) * 0.5, "linear_weight": lambda: nn.Linear(3, 2).weight}[make]()
  x.requires_grad = True
  y = (x * x).sum() * 0.5 + (x * Tensor(W)).exp().mean()
  val = y.item()
  y.backward()
  r = torch.tensor(x.numpy(), requires_grad=True)
  ry = (r * r).sum() * 0.5 + (r * torch.tensor(W)).exp().mean()
  ry.backward()
  assert math.isclose(val, ry.item(), rel_tol=1e-5)
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("update", ["+=", "*=", "two"])
def test_gradient_of_a_value_read_before_its_buffer_was_updated(update):
  # before is computed from y's buffer before the update (in the realize that runs it): its gradient is that of the old value (y = p*2)
  def run(lib, p):
    y = p * 2
    if lib is Tensor: y.realize()
    before = y[1:] * 3
    if update in ("+=", "two"): y += p
    if update in ("*=", "two"): y *= p
    if lib is Tensor: y.realize()
    loss = before.sum() + (y * y).sum() + (before * y[:1]).sum()
    loss.backward()
    return before, y
  r, x = torch.tensor(A, requires_grad=True), Tensor(A, requires_grad=True)
  for g, w in zip(run(Tensor, x), run(torch, r)): np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-5)

@pytest.mark.parametrize("view", ["row", "T"])
@pytest.mark.parametrize("update", ["+=", "*="])
def test_view_of_a_tracked_buffer_sees_its_update(view, update):
  # v aliases y (a realized non-leaf): a read through v after y's update sees it, one before keeps the old value, gradients as torch's
  def run(lib, p):
    y = p * 2
    if lib is Tensor: y.realize()
    v = y[1:] if view == "row" else y.T
    before = v * 3
    if update == "+=": y += p
    else: y *= p
    z = v * 1
    ((z * z).sum() + (y * y).sum() + before.sum()).backward()
    return before, z, y
  r, x = torch.tensor(A, requires_grad=True), Tensor(A, requires_grad=True)
  for g, w in zip(run(Tensor, x), run(torch, r)): np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-5)

THROUGH = {"v+=": lambda y, v, p: v.__iadd__(p[1:] * 3), "v*=": lambda y, v, p: v.__imul__(2), "v[0]=": lambda y, v, p: v.__setitem__(0, p[0] * 7),
           "T+=": lambda y, v, p: y.T.__iadd__(p.T), "flip_step": lambda y, v, p: y[::2].__imul__(p[::2])}

@pytest.mark.parametrize("update", list(THROUGH))
def test_update_through_a_view_of_a_tracked_buffer(update):
  # y (a realized non-leaf) updated through a view: the other aliases (y, w) read the update, values read before keep the old, grads as torch's
  def run(lib, p):
    y = p * 2
    if lib is Tensor: y.realize()
    v, w = y[1:], y[:2]
    before = w * 3
    THROUGH[update](y, v, p)
    ((w * w).sum() + (y * p).sum() + (before * v).sum()).backward()
    return before, w * 1, y, v
  r, x = torch.tensor(A, requires_grad=True), Tensor(A, requires_grad=True)
  for g, w in zip(run(Tensor, x), run(torch, r)): np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-5)
