# gradients of every differentiable Tensor op against torch's autograd, through Tensor.backward with a random upstream gradient:
# unary maths and activations (also at the points where torch picks a side: 0, clamp edges, kinks), binary ops on both operands,
# reductions, softmax family, cumulative ops, einsum and matmul; non-contiguous and 0-size inputs, float16/float64, and the PYTHON device
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

torch = pytest.importorskip("torch")
F = torch.nn.functional

def rand(shape, lo=-3.0, hi=3.0, seed=0, dtype=np.float32) -> np.ndarray: return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)

def check_grad(f, tf, *arrays:np.ndarray, rtol=1e-4, atol=1e-5, transform=None, ttransform=None, dtype=dtypes.float32):
  """out = f(*inputs); (out * w).sum().backward() with a random w, against torch. transform/ttransform build a (non-contiguous) view first."""
  tdt = {dtypes.float32: torch.float32, dtypes.float16: torch.float16, dtypes.float64: torch.float64}[dtype]
  xs = [Tensor(a, requires_grad=True) if dtype == dtypes.float32 else Tensor(Tensor(a).cast(dtype).numpy(), requires_grad=True) for a in arrays]
  txs = [torch.tensor(a).to(tdt).requires_grad_() for a in arrays]
  ins = [transform(x) for x in xs] if transform else xs
  tins = [ttransform(x) for x in txs] if ttransform else txs
  out, tout = f(*ins), tf(*tins)
  outs, touts = (out, tout) if isinstance(out, tuple) else ((out,), (tout,))
  loss: Tensor|None = None
  tloss = None
  for i, (o, to) in enumerate(zip(outs, touts)):
    w = rand(tuple(to.shape), 0.5, 1.5, seed=100 + i)
    term, tterm = (o * Tensor(w).cast(o.dtype)).sum(), (to * torch.tensor(w).to(to.dtype)).sum()
    loss, tloss = (term, tterm) if loss is None else (loss + term, tloss + tterm)
  assert loss is not None and tloss is not None
  loss.backward()
  tloss.backward()
  for i, (x, tx) in enumerate(zip(xs, txs)):
    ref = tx.grad.double().numpy() if tx.grad is not None else np.zeros(tx.shape)
    got = x.grad.cast(dtypes.float64).numpy() if x.grad is not None else np.zeros(x.shape)
    assert x.grad is None or (x.grad.dtype == dtype and x.grad.shape == x.shape), f"input {i}: grad {x.grad.dtype} {x.grad.shape}"
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"gradient of input {i}")

def noncontig(x):
  # (4, 3) stored transposed and flipped: the op sees a permuted, flipped view
  return x.permute(1, 0).flip(0)

UNARY = {
  "neg": (lambda x: -x, lambda x: -x, None), "abs": (Tensor.abs, torch.abs, None), "square": (Tensor.square, torch.square, None),
  "reciprocal": (Tensor.reciprocal, torch.reciprocal, (0.3, 3)), "sqrt": (Tensor.sqrt, torch.sqrt, (0.1, 9)), "rsqrt": (Tensor.rsqrt, torch.rsqrt, (0.1, 9)),
  "exp": (Tensor.exp, torch.exp, None), "exp2": (Tensor.exp2, torch.exp2, None), "expm1": (Tensor.expm1, torch.expm1, None),
  "log": (Tensor.log, torch.log, (0.1, 9)), "log2": (Tensor.log2, torch.log2, (0.1, 9)), "log1p": (Tensor.log1p, torch.log1p, (-0.8, 9)),
  "sin": (Tensor.sin, torch.sin, None), "cos": (Tensor.cos, torch.cos, None), "tan": (Tensor.tan, torch.tan, (-1.4, 1.4)),
  "asin": (Tensor.asin, torch.asin, (-0.95, 0.95)), "acos": (Tensor.acos, torch.acos, (-0.95, 0.95)), "atan": (Tensor.atan, torch.atan, None),
  "sinh": (Tensor.sinh, torch.sinh, None), "cosh": (Tensor.cosh, torch.cosh, None), "tanh": (Tensor.tanh, torch.tanh, None),
  "asinh": (Tensor.asinh, torch.asinh, None), "acosh": (Tensor.acosh, torch.acosh, (1.1, 9)), "atanh": (Tensor.atanh, torch.atanh, (-0.95, 0.95)),
  "erf": (Tensor.erf, torch.erf, None), "sigmoid": (Tensor.sigmoid, torch.sigmoid, (-8, 8)), "logsigmoid": (Tensor.logsigmoid, F.logsigmoid, (-8, 8)),
  "relu": (Tensor.relu, torch.relu, None), "relu6": (Tensor.relu6, F.relu6, (-3, 9)), "hardsigmoid": (Tensor.hardsigmoid, F.hardsigmoid, (-5, 5)),
  "hardswish": (Tensor.hardswish, F.hardswish, (-5, 5)), "hardtanh": (lambda x: x.hardtanh(-0.5, 2), lambda x: F.hardtanh(x, -0.5, 2), None),
  "elu": (lambda x: x.elu(0.7), lambda x: F.elu(x, 0.7), None), "celu": (lambda x: x.celu(0.7), lambda x: F.celu(x, 0.7), None),
  "selu": (Tensor.selu, F.selu, None), "silu": (Tensor.silu, F.silu, None), "swish": (Tensor.swish, F.silu, None),
  "gelu": (lambda x: x.gelu("none"), F.gelu, None), "gelu_tanh": (Tensor.gelu, lambda x: F.gelu(x, approximate="tanh"), None),
  "quick_gelu": (Tensor.quick_gelu, lambda x: x * torch.sigmoid(1.702 * x), None), "mish": (Tensor.mish, F.mish, None),
  "leaky_relu": (lambda x: x.leaky_relu(0.1), lambda x: F.leaky_relu(x, 0.1), None), "softplus": (Tensor.softplus, F.softplus, (-25, 25)),
  "softplus_beta": (lambda x: x.softplus(2.0, 5.0), lambda x: F.softplus(x, 2.0, 5.0), None), "softsign": (Tensor.softsign, F.softsign, None),
  "clamp": (lambda x: x.clamp(-1, 1.5), lambda x: x.clamp(-1, 1.5), None), "clip_min": (lambda x: x.clip(min=0.2), lambda x: x.clip(min=0.2), None),
  "pow_int": (lambda x: x ** 3, lambda x: x ** 3, None), "pow_float": (lambda x: x ** 2.5, lambda x: x ** 2.5, (0.1, 3)),
  "rpow": (lambda x: 2.5 ** x, lambda x: 2.5 ** x, None), "pow_neg": (lambda x: x ** -2, lambda x: x ** -2, (0.3, 3)),
  "pow_half": (lambda x: x ** 0.5, lambda x: x ** 0.5, (0.1, 3)), "mod_scalar": (lambda x: x % 0.7, lambda x: x % 0.7, None),
  "fmod_scalar": (lambda x: x.fmod(0.7), lambda x: torch.fmod(x, 0.7), None), "div_scalar": (lambda x: x / 3, lambda x: x / 3, None),
  "rdiv_scalar": (lambda x: 3 / x, lambda x: 3 / x, (0.3, 3)), "sub_scalar": (lambda x: 1 - x, lambda x: 1 - x, None),
  "copysign": (lambda x: x.copysign(-1.0), lambda x: torch.copysign(x, torch.tensor(-1.0)), None),
  "lerp_scalar": (lambda x: x.lerp(x * 2 + 1, 0.3), lambda x: torch.lerp(x, x * 2 + 1, 0.3), None),
}

@pytest.mark.parametrize("name", list(UNARY))
def test_unary_grad(name):
  f, tf, dom = UNARY[name]
  check_grad(f, tf, rand((4, 3), *(dom or (-3, 3)), seed=1), transform=noncontig, ttransform=noncontig)

@pytest.mark.parametrize("name", ["exp", "tanh", "gelu", "atan", "sigmoid", "relu", "abs", "erf", "softplus", "clamp"])
def test_unary_grad_python_device(device, name):
  f, tf, dom = UNARY[name]
  check_grad(f, tf, rand((2, 3), *(dom or (-3, 3)), seed=2))

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.float64], ids=str)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "gelu", "cos", "atan", "softplus", "hardswish", "abs", "pow_float", "erf"])
def test_unary_grad_dtypes(name, dt):
  # gradients keep the input's dtype; half computes in float32 inside and rounds at the end
  f, tf, dom = UNARY[name]
  tol = 2e-2 if dt == dtypes.float16 else 1e-10
  check_grad(f, tf, rand((3, 4), *(dom or (-3, 3)), seed=3), rtol=tol, atol=tol, dtype=dt)

# where torch picks a side: kinks, clamp edges, zeros
KINKS = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, -0.5, 2.0, 1.5, 0.2, 5.0]
@pytest.mark.parametrize("name", ["abs", "relu", "relu6", "hardsigmoid", "hardswish", "hardtanh", "elu", "celu", "selu", "leaky_relu", "clamp",
                                  "clip_min", "softplus", "logsigmoid", "sigmoid", "tanh", "gelu", "silu", "mish", "softsign", "sign_mul", "sqrt0",
                                  "atan", "erf", "sinh", "asinh", "expm1", "log1p", "tan", "cos", "pow_int", "round", "floor", "trunc"])
def test_grad_at_kinks(name):
  extra = {"sign_mul": (lambda x: x.sign() * x, lambda x: x.sign() * x), "sqrt0": (lambda x: (x * x).sqrt(), lambda x: (x * x).sqrt()),
           "round": (lambda x: x.round() + x, lambda x: x.round() + x), "floor": (lambda x: x.floor() + x, lambda x: x.floor() + x),
           "trunc": (lambda x: x.trunc() * 2 + x, lambda x: x.trunc() * 2 + x)}
  f, tf = extra[name] if name in extra else UNARY[name][:2]
  a = np.array(KINKS, dtype=np.float32)
  if name == "sqrt0": a = a[a != 0]   # 0 * inf
  check_grad(f, tf, a)

def test_grad_at_infinities():
  # the backward formulas torch uses, also where the forward saturates (no 0 * inf = nan from branches that aren't taken)
  a = np.array([math.inf, -math.inf, 100.0, -100.0, 1e30, -1e30], dtype=np.float32)
  for name in ("tanh", "sigmoid", "atan", "erf", "softplus", "logsigmoid", "elu", "silu", "gelu", "mish", "relu", "hardswish", "softsign", "asinh"):
    f, tf = UNARY[name][:2]
    x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    f(x).sum().backward(); tf(tx).sum().backward()
    got, ref = x.grad.numpy(), tx.grad.numpy()
    finite = np.isfinite(a)   # d/dx at an infinite x is a convention; compare at the finite ones and require no nan from the others
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-30, err_msg=name)
    assert not np.isnan(got[~finite]).any() or np.isnan(ref[~finite]).any(), f"{name}: nan gradient at inf"

# ***** binary ops: gradients to both operands, with broadcasting *****

BINARY = {
  "add": (lambda a, b: a + b, None), "sub": (lambda a, b: a - b, None), "mul": (lambda a, b: a * b, None), "div": (lambda a, b: a / b, "nonzero"),
  "pow": (lambda a, b: a ** b, "pos_base"), "maximum": (lambda a, b: a.maximum(b), None), "minimum": (lambda a, b: a.minimum(b), None),
  "mod": (lambda a, b: a % b, "nonzero"), "where": (lambda a, b: (a > b).where(a, b * 2), None),
  "lerp": (lambda a, b: a.lerp(b, (a * 0.3).sigmoid()), None), "copysign": (lambda a, b: a.copysign(b), None),
  "clamp_tensor": (lambda a, b: a.clamp(b, b + 1), None), "atan2_like": (lambda a, b: (a / (b * b + 1)).atan(), None),
  "hypot_like": (lambda a, b: (a * a + b * b).sqrt(), None), "matmul": (lambda a, b: a @ b.T, None),
}
TORCH_BINARY = {
  "maximum": torch.maximum, "minimum": torch.minimum, "where": lambda a, b: torch.where(a > b, a, b * 2), "lerp": lambda a, b: torch.lerp(a, b, (a * 0.3).sigmoid()),
  "copysign": torch.copysign, "clamp_tensor": lambda a, b: torch.clamp(a, b, b + 1), "mod": torch.remainder,
}
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (1, 4)), ((0, 4), (4,))], ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_grad(name, shapes):
  f, kind = BINARY[name]
  if name == "matmul" and (shapes[0][-1] != shapes[1][-1] or len(shapes[1]) != 2): pytest.skip("matmul with b.T needs a 2-D b of matching inner dim")
  if name in ("copysign",) and shapes[0] != shapes[1]: pytest.skip("torch's copysign backward needs equal shapes")
  a, b = rand(shapes[0], seed=4), rand(shapes[1], seed=5)
  if kind == "nonzero": b = np.where(np.abs(b) < 0.4, 0.9, b).astype(np.float32)
  if kind == "pos_base": a = np.abs(a) + 0.2
  check_grad(f, TORCH_BINARY.get(name, f), a, b)

def test_maximum_minimum_ties():
  # torch: a tie sends half the gradient to each side
  a, b = np.array([1.0, 2.0, 3.0, -1.0], dtype=np.float32), np.array([1.0, 1.0, 3.0, 0.0], dtype=np.float32)
  check_grad(lambda x, y: x.maximum(y), torch.maximum, a, b)
  check_grad(lambda x, y: x.minimum(y), torch.minimum, a, b)

def test_pow_grad_edges():
  # x ** y at x = 0 and negative bases with whole exponents (torch's masks for 0 ** y with y >= 0)
  a, b = np.array([0.0, 0.0, -2.0, 2.0, 1.5], dtype=np.float32), np.array([2.0, 0.0, 3.0, -1.0, 0.5], dtype=np.float32)
  check_grad(lambda x, y: x ** y, lambda x, y: x ** y, a, b)

def test_lerp_weight_grad():
  a, b, w = rand((3, 4), seed=6), rand((3, 4), seed=7), rand((3, 4), -0.5, 1.5, seed=8)
  check_grad(lambda x, y, z: x.lerp(y, z), torch.lerp, a, b, w)

def test_fmod_remainder_grads():
  a, b = rand((3, 4), seed=9), np.where(np.abs(rand((3, 4), seed=10)) < 0.4, 0.9, rand((3, 4), seed=10)).astype(np.float32)
  check_grad(lambda x, y: x.fmod(y), torch.fmod, a, b)
  check_grad(lambda x, y: x % y, torch.remainder, a, b)

# ***** reductions and friends *****

REDUCE = {
  "sum": (lambda x: x.sum(1), lambda x: x.sum(1)), "sum_all": (lambda x: x.sum(), lambda x: x.sum()),
  "mean": (lambda x: x.mean((0, 2)), lambda x: x.mean((0, 2))), "prod": (lambda x: x.prod(1), lambda x: x.prod(1)),
  "max": (lambda x: x.max(2), lambda x: x.amax(2)), "min": (lambda x: x.min(0, keepdim=True), lambda x: x.amin(0, keepdim=True)),
  "var": (lambda x: x.var(1), lambda x: x.var(1)), "std": (lambda x: x.std((1, 2), correction=0), lambda x: x.std((1, 2), correction=0)),
  "var_mean": (lambda x: x.var_mean(2), lambda x: torch.var_mean(x, 2)), "std_mean": (lambda x: x.std_mean(0), lambda x: torch.std_mean(x, 0)),
  "softmax": (lambda x: x.softmax(1), lambda x: x.softmax(1)), "log_softmax": (lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1)),
  "logsumexp": (lambda x: x.logsumexp(1), lambda x: x.logsumexp(1)), "logcumsumexp": (lambda x: x.logcumsumexp(2), lambda x: x.logcumsumexp(2)),
  "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1)), "cumprod": (lambda x: x.cumprod(2), lambda x: x.cumprod(2)),
  "cummax": (lambda x: x.cummax(1)[0], lambda x: x.cummax(1)[0]), "cummin": (lambda x: x.cummin(2)[0], lambda x: x.cummin(2)[0]),
  "einsum": (lambda x: Tensor.einsum("ijk,ikl->jl", x, x), lambda x: torch.einsum("ijk,ikl->jl", x, x)),
  "einsum_diag": (lambda x: Tensor.einsum("iij->j", x[:, :2, :2]), lambda x: torch.einsum("iij->j", x[:, :2, :2])),
  "norm_like": (lambda x: (x * x).sum(-1).sqrt(), lambda x: (x * x).sum(-1).sqrt()),
}
@pytest.mark.parametrize("name", list(REDUCE))
def test_reduce_grad(name):
  f, tf = REDUCE[name]
  a = rand((2, 3, 4), -1.5, 1.5, seed=11) if name != "einsum" else rand((2, 4, 4), seed=11)
  check_grad(f, tf, a, rtol=2e-4)
  check_grad(f, tf, a, rtol=2e-4, transform=lambda x: x.flip(1), ttransform=lambda x: x.flip(1))

@pytest.mark.parametrize("name", ["sum", "mean", "softmax", "cumsum", "prod"])
def test_reduce_grad_python_device(device, name):
  f, tf = REDUCE[name]
  check_grad(f, tf, rand((2, 3, 2), seed=12))

def test_prod_with_zeros_grad():
  a = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 5.0]], dtype=np.float32)
  check_grad(lambda x: x.prod(1), lambda x: x.prod(1), a)

def test_max_ties_grad():
  # like torch.amax: the positions that hold the max share the gradient equally
  a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype=np.float32)
  check_grad(lambda x: x.max(1), lambda x: x.amax(1), a)

def test_linear_relu_grad():
  x, w, b = rand((5, 8), seed=13), rand((8, 4), seed=14), rand((4,), seed=15)
  check_grad(lambda x, w, b: x.linear(w, b).relu(), lambda x, w, b: torch.relu(x @ w + b), x, w, b)

def test_grad_accumulates_and_detach():
  x = Tensor([1.0, 2.0], requires_grad=True)
  (x * 3).sum().backward()
  (x * x).sum().backward()
  assert x.grad is not None and x.grad.tolist() == [5.0, 7.0]   # adds up across calls, like torch
  y = Tensor([1.0, 2.0], requires_grad=True)
  z = Tensor([3.0], requires_grad=True)
  (y.exp() * z.detach()).sum().backward()
  assert z.grad is None and y.grad is not None

def test_grad_empty():
  x = Tensor(np.zeros((0, 3), dtype=np.float32), requires_grad=True)
  x.exp().sum().backward()
  assert x.grad is not None and x.grad.shape == (0, 3)
