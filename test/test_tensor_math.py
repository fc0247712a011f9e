# elementwise Tensor maths against torch: unary functions and activations, binary operators with their dtype promotion, every operator
# dunder (reflected and in place), special values, and the ulp accuracy of the transcendental functions over the whole float range in
# float16, bfloat16, float32 and float64, on CPU (native builtins), with TRANSCENDENTAL=2 (our polynomials) and on PYTHON
import math, operator
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
import tinygrad.engine.realize as realize

torch = pytest.importorskip("torch")
F = torch.nn.functional

TORCH_DT = {dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
            dtypes.int8: torch.int8, dtypes.uint8: torch.uint8, dtypes.int16: torch.int16, dtypes.int32: torch.int32, dtypes.int64: torch.int64,
            dtypes.bool: torch.bool}

def rand(shape, lo=-3.0, hi=3.0, seed=0) -> np.ndarray: return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)

def both(a:np.ndarray, dt=dtypes.float32) -> tuple[Tensor, "torch.Tensor"]:
  """the same values as a tinygrad and a torch tensor of dtype dt (bfloat16 goes through float32, exactly)"""
  return Tensor(a).cast(dt), torch.tensor(a).to(TORCH_DT[dt])

def to_np(t) -> np.ndarray:
  if isinstance(t, Tensor): return t.cast(dtypes.float64).numpy() if dtypes.is_float(t.dtype) else t.numpy()
  return t.double().numpy() if t.is_floating_point() else t.numpy()

def close(got, ref, rtol=1e-5, atol=1e-6, dtype_check=True):
  if dtype_check and isinstance(got, Tensor): assert TORCH_DT[got.dtype] == ref.dtype, f"dtype {got.dtype}, torch gives {ref.dtype}"
  assert tuple(got.shape) == tuple(ref.shape), f"shape {got.shape}, torch gives {tuple(ref.shape)}"
  np.testing.assert_allclose(to_np(got), to_np(ref), rtol=rtol, atol=atol, equal_nan=True)

# (name, tinygrad fn, torch fn, input range)
UNARY = [
  ("neg", lambda x: -x, lambda x: -x, None), ("abs", lambda x: x.abs(), torch.abs, None), ("sign", lambda x: x.sign(), torch.sign, None),
  ("square", lambda x: x.square(), torch.square, None), ("reciprocal", lambda x: x.reciprocal(), torch.reciprocal, (0.2, 4)),
  ("sqrt", lambda x: x.sqrt(), torch.sqrt, (0, 9)), ("rsqrt", lambda x: x.rsqrt(), torch.rsqrt, (0.1, 9)),
  ("exp", lambda x: x.exp(), torch.exp, (-20, 20)), ("exp2", lambda x: x.exp2(), torch.exp2, (-20, 20)),
  ("expm1", lambda x: x.expm1(), torch.expm1, (-3, 3)), ("log", lambda x: x.log(), torch.log, (0.01, 100)),
  ("log2", lambda x: x.log2(), torch.log2, (0.01, 100)), ("log1p", lambda x: x.log1p(), torch.log1p, (-0.9, 10)),
  ("sin", lambda x: x.sin(), torch.sin, (-10, 10)), ("cos", lambda x: x.cos(), torch.cos, (-10, 10)), ("tan", lambda x: x.tan(), torch.tan, (-1.5, 1.5)),
  ("asin", lambda x: x.asin(), torch.asin, (-1, 1)), ("acos", lambda x: x.acos(), torch.acos, (-1, 1)), ("atan", lambda x: x.atan(), torch.atan, (-20, 20)),
  ("sinh", lambda x: x.sinh(), torch.sinh, (-5, 5)), ("cosh", lambda x: x.cosh(), torch.cosh, (-5, 5)), ("tanh", lambda x: x.tanh(), torch.tanh, None),
  ("asinh", lambda x: x.asinh(), torch.asinh, (-20, 20)), ("acosh", lambda x: x.acosh(), torch.acosh, (1, 20)),
  ("atanh", lambda x: x.atanh(), torch.atanh, (-0.99, 0.99)), ("erf", lambda x: x.erf(), torch.erf, None),
  ("trunc", lambda x: x.trunc(), torch.trunc, (-5, 5)), ("floor", lambda x: x.floor(), torch.floor, (-5, 5)), ("ceil", lambda x: x.ceil(), torch.ceil, (-5, 5)),
  ("round", lambda x: x.round(), torch.round, (-5, 5)), ("round2", lambda x: x.round(2), lambda x: torch.round(x, decimals=2), (-5, 5)),
  ("isnan", lambda x: x.isnan(), torch.isnan, None), ("isinf", lambda x: x.isinf(), torch.isinf, None), ("isfinite", lambda x: x.isfinite(), torch.isfinite, None),
  ("logical_not", lambda x: x.logical_not(), torch.logical_not, None),
  ("relu", lambda x: x.relu(), torch.relu, None), ("relu6", lambda x: x.relu6(), F.relu6, (-3, 9)), ("sigmoid", lambda x: x.sigmoid(), torch.sigmoid, (-20, 20)),
  ("logsigmoid", lambda x: x.logsigmoid(), F.logsigmoid, (-20, 20)), ("hardsigmoid", lambda x: x.hardsigmoid(), F.hardsigmoid, (-5, 5)),
  ("hardswish", lambda x: x.hardswish(), F.hardswish, (-5, 5)), ("hardtanh", lambda x: x.hardtanh(-0.5, 2.0), lambda x: F.hardtanh(x, -0.5, 2.0), None),
  ("elu", lambda x: x.elu(0.7), lambda x: F.elu(x, 0.7), None), ("celu", lambda x: x.celu(0.7), lambda x: F.celu(x, 0.7), None),
  ("selu", lambda x: x.selu(), F.selu, None), ("silu", lambda x: x.silu(), F.silu, None), ("swish", lambda x: x.swish(), F.silu, None),
  ("gelu", lambda x: x.gelu("none"), F.gelu, None), ("gelu_tanh", lambda x: x.gelu(), lambda x: F.gelu(x, approximate="tanh"), None),
  ("quick_gelu", lambda x: x.quick_gelu(), lambda x: x * torch.sigmoid(1.702 * x), None),
  ("leaky_relu", lambda x: x.leaky_relu(0.2), lambda x: F.leaky_relu(x, 0.2), None), ("mish", lambda x: x.mish(), F.mish, None),
  ("softplus", lambda x: x.softplus(), F.softplus, (-30, 30)), ("softplus_beta", lambda x: x.softplus(2.0, 4.0), lambda x: F.softplus(x, 2.0, 4.0), None),
  ("softsign", lambda x: x.softsign(), F.softsign, None), ("clamp", lambda x: x.clamp(-1.0, 1.5), lambda x: x.clamp(-1.0, 1.5), None),
  ("clip_min", lambda x: x.clip(min=0.5), lambda x: x.clip(min=0.5), None), ("clamp_max", lambda x: x.clamp(max=-0.5), lambda x: x.clamp(max=-0.5), None),
]
UNARY_IDS = [u[0] for u in UNARY]
UNARY_BY_NAME = {u[0]: u for u in UNARY}

def noncontig(a:np.ndarray) -> tuple[Tensor, "torch.Tensor"]:
  # a permuted, flipped view of a (4, 3) buffer: exercises every movement op feeding the elementwise kernel
  x, tx = Tensor(np.ascontiguousarray(a.T)), torch.tensor(np.ascontiguousarray(a.T))
  return x.permute(1, 0).flip(0), tx.permute(1, 0).flip(0)

@pytest.mark.parametrize("name", UNARY_IDS)
def test_unary(device, name):
  _, f, tf, dom = UNARY_BY_NAME[name]
  x, tx = noncontig(rand((3, 4), *(dom or (-3, 3))))
  close(f(x), tf(tx), rtol=2e-6 if name in ("round", "floor", "ceil", "trunc") else 1e-5)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16, dtypes.float64], ids=str)
@pytest.mark.parametrize("name", [n for n in UNARY_IDS if n not in ("round2",)])
def test_unary_float_dtypes(name, dt):
  _, f, tf, dom = UNARY_BY_NAME[name]
  a = rand((2, 5), *(dom or (-3, 3)), seed=2)
  x, tx = both(a, dt)
  # half and bfloat16 compute in float32 and round once, like torch on the CPU: a result within an ulp or two of the same rounding
  tol = {dtypes.float16: 2e-3, dtypes.bfloat16: 1.6e-2, dtypes.float64: 1e-12}[dt]
  close(f(x), tf(tx), rtol=tol, atol=tol)

INT_OK = ["neg", "abs", "sign", "square", "trunc", "floor", "ceil", "round", "relu", "isnan", "isinf", "isfinite", "logical_not", "clamp_max",
          "exp", "log", "sqrt", "sin", "cos", "sigmoid", "tanh", "erf", "reciprocal", "atan"]
@pytest.mark.parametrize("name", INT_OK)
@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int64, dtypes.int8, dtypes.uint8, dtypes.bool], ids=str)
def test_unary_int_dtypes(name, dt):
  # torch's dtype rules: maths functions give the default float, exact ones (abs, floor ...) keep the int dtype
  if dt == dtypes.bool and name in ("neg", "abs", "sign", "square", "trunc", "floor", "ceil", "round", "relu", "clamp_max"): pytest.skip("torch refuses")
  if dt == dtypes.uint8 and name in ("neg",): pytest.skip("unsigned negation wraps")
  _, f, tf, _ = UNARY_BY_NAME[name]
  a = np.random.default_rng(3).integers(0 if dt in (dtypes.uint8, dtypes.bool) else -9, 10, (3, 4))
  x, tx = Tensor(a.astype(np.int64)).cast(dt), torch.tensor(a).to(TORCH_DT[dt])
  close(f(x), tf(tx), rtol=1e-6)

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -3.0, 6.0, 1e-40, -1e-40, 1e-20, 88.0, -88.0, 100.0, -100.0, 1e30, -1e30, math.inf, -math.inf, math.nan]

@pytest.mark.parametrize("name", UNARY_IDS)
def test_unary_special_values(name):
  # zeros, infinities, nan, denormals and overflow edges against torch in float64 rounded to float32: ours is built to that accuracy, while
  # torch's float32 kernels lose digits in a few tails (sigmoid(-100) underflows to 0, 1 + erf(-2.1) in gelu cancels). The sign of a zero
  # result is not checked.
  _, f, tf, _ = UNARY_BY_NAME[name]
  a = np.array(SPECIALS if not name.startswith("gelu") else SPECIALS[:-3] + SPECIALS[-2:], dtype=np.float32)   # torch: gelu(inf) = nan
  got, ref = to_np(f(Tensor(a))), to_np(tf(torch.tensor(a, dtype=torch.float64)).float())
  # gelu's 1 + erf(x/sqrt2) cancels for negative x in float32 too (a few 1e-6), a denormal result keeps fewer digits (atol)
  ok = np.isclose(got, ref, rtol=3e-7 if not name.startswith("gelu") else 2e-5, atol=1e-40, equal_nan=True)
  assert ok.all(), f"{name}: at {a[~ok].tolist()} got {got[~ok].tolist()}, torch {ref[~ok].tolist()}"

@pytest.mark.parametrize("shape", [(0,), (0, 3), (1,), (), (2, 1, 3)], ids=str)
@pytest.mark.parametrize("name", ["exp", "tan", "gelu", "atan", "clamp", "round", "relu6"])
def test_unary_shapes(device, name, shape):
  _, f, tf, dom = UNARY_BY_NAME[name]
  a = rand(shape, *(dom or (-3, 3)), seed=4)
  close(f(Tensor(a)), tf(torch.tensor(a)))

# ***** binary ops, promotion, broadcasting *****

BINARY = {
  "add": (operator.add, operator.add), "sub": (operator.sub, operator.sub), "mul": (operator.mul, operator.mul), "truediv": (operator.truediv, operator.truediv),
  "div_trunc": (lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: torch.div(a, b, rounding_mode="trunc")),
  "div_floor": (lambda a, b: a.div(b, rounding_mode="floor"), lambda a, b: torch.div(a, b, rounding_mode="floor")),
  "floordiv": (operator.floordiv, operator.floordiv), "mod": (operator.mod, operator.mod), "remainder": (Tensor.remainder, torch.remainder),
  "fmod": (Tensor.fmod, torch.fmod), "idiv": (Tensor.idiv, lambda a, b: torch.div(a, b, rounding_mode="trunc")),
  "maximum": (Tensor.maximum, torch.maximum), "minimum": (Tensor.minimum, torch.minimum), "copysign": (Tensor.copysign, torch.copysign),
  "lt": (operator.lt, operator.lt), "le": (operator.le, operator.le), "gt": (operator.gt, operator.gt), "ge": (operator.ge, operator.ge),
  "eq": (operator.eq, operator.eq), "ne": (operator.ne, operator.ne),
  "pow": (operator.pow, operator.pow), "atan_like_where": (lambda a, b: (a > b).where(a, b), lambda a, b: torch.where(a > b, a, b)),
}
FLOAT_BINARY = list(BINARY)
INT_BINARY = ["add", "sub", "mul", "truediv", "div_trunc", "div_floor", "floordiv", "mod", "fmod", "idiv", "maximum", "minimum", "lt", "le", "gt",
              "ge", "eq", "ne", "copysign", "atan_like_where"]
BCAST = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (5,)), ((2, 3, 4), (4,)), ((0, 3), (1, 3)), ((1,), (1, 1))]

@pytest.mark.parametrize("shapes", BCAST, ids=str)
@pytest.mark.parametrize("op", FLOAT_BINARY)
def test_binary_float(device, op, shapes):
  f, tf = BINARY[op]
  a, b = rand(shapes[0], seed=5), rand(shapes[1], seed=6)
  if op in ("truediv", "div_trunc", "div_floor", "floordiv", "mod", "remainder", "fmod", "idiv"): b = np.where(np.abs(b) < 0.3, 0.7, b).astype(np.float32)
  if op == "pow": a = np.abs(a).astype(np.float32)
  (x, tx), (y, ty) = both(a), both(b)
  close(f(x, y), tf(tx, ty), rtol=3e-6)

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int64, dtypes.int8, dtypes.uint8], ids=str)
@pytest.mark.parametrize("op", INT_BINARY)
def test_binary_int(op, dt):
  f, tf = BINARY[op]
  rng = np.random.default_rng(7)
  lo = 0 if dt == dtypes.uint8 else -50
  a, b = rng.integers(lo, 50, (3, 4)), rng.integers(lo, 50, (3, 4))
  if op in ("div_trunc", "div_floor", "floordiv", "mod", "fmod", "idiv"): b = np.where(b == 0, 3, b)
  x, y = Tensor(a).cast(dt), Tensor(b).cast(dt)
  tx, ty = torch.tensor(a).to(TORCH_DT[dt]), torch.tensor(b).to(TORCH_DT[dt])
  close(f(x, y), tf(tx, ty))

def test_float_mod_and_floordiv_edges(device):
  # torch's fmod-based algorithms, bit for bit: signs, exact multiples, zero and infinite divisors
  a = np.array([5.0, -5.0, 5.0, -5.0, 0.3, -0.0, 1.0, -1.0, 7.5, 1e30, 3.0, 0.0], dtype=np.float32)
  b = np.array([3.0, 3.0, -3.0, -3.0, 0.1, 2.0, 0.0, math.inf, -math.inf, 3.0, 1e-30, -2.0], dtype=np.float32)
  (x, tx), (y, ty) = both(a), both(b)
  for f, tf in [(operator.mod, torch.remainder), (operator.floordiv, torch.floor_divide), (Tensor.fmod, torch.fmod), (operator.truediv, operator.truediv)]:
    np.testing.assert_array_equal(to_np(f(x, y)), to_np(tf(tx, ty)))

F32S = st.floats(width=32, allow_subnormal=False)   # torch's float32 CPU kernels treat denormal inputs as 0 in places
@settings(max_examples=60, deadline=None)
@given(st.lists(F32S, min_size=8, max_size=8), st.lists(F32S, min_size=8, max_size=8))
def test_division_family_bit_exact(a, b):
  (x, tx), (y, ty) = both(np.array(a, dtype=np.float32)), both(np.array(b, dtype=np.float32))
  for f, tf in [(operator.mod, torch.remainder), (operator.floordiv, torch.floor_divide), (Tensor.fmod, torch.fmod), (operator.truediv, operator.truediv),
                (lambda p, q: p.div(q, rounding_mode="trunc"), lambda p, q: torch.div(p, q, rounding_mode="trunc")), (Tensor.copysign, torch.copysign)]:
    np.testing.assert_array_equal(to_np(f(x, y)), to_np(tf(tx, ty)))

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64], ids=str)
def test_shifts(device, dt):
  # torch: a count outside [0, bits) gives 0, or -1 for a negative value shifted right
  bits = 8 * dt.itemsize
  a = np.array([5, -5, 100, -100, 1, 7, 3, -1] if not dtypes.is_unsigned(dt) else [5, 250, 100, 1, 7, 3, 128, 1], dtype=np.int64)
  cnt = np.array([0, 1, 3, bits - 1, bits, bits + 3, -1 if not dtypes.is_unsigned(dt) else 2, 2], dtype=np.int64)
  x, tx = Tensor(a).cast(dt), torch.tensor(a).to(TORCH_DT[dt])
  c, tc = Tensor(cnt).cast(dt), torch.tensor(cnt).to(TORCH_DT[dt])
  for f, tf in [(operator.lshift, operator.lshift), (operator.rshift, operator.rshift)]:
    np.testing.assert_array_equal(f(x, c).numpy(), tf(tx, tc).numpy())
    np.testing.assert_array_equal(f(x, 2).numpy(), tf(tx, 2).numpy())
  np.testing.assert_array_equal((2 << Tensor(np.array([1, 3])).cast(dt)).numpy(), (2 << torch.tensor([1, 3]).to(TORCH_DT[dt])).numpy())

@pytest.mark.parametrize("op", ["and_", "or_", "xor"])
@pytest.mark.parametrize("dt", [dtypes.bool, dtypes.uint8, dtypes.int32, dtypes.int64], ids=str)
def test_bitwise(op, dt):
  rng = np.random.default_rng(8)
  a, b = rng.integers(0 if dt in (dtypes.uint8, dtypes.bool) else -100, 100 if dt != dtypes.bool else 2, (2, 2, 3, 4))
  x, y, tx, ty = Tensor(a).cast(dt), Tensor(b).cast(dt), torch.tensor(a).to(TORCH_DT[dt]), torch.tensor(b).to(TORCH_DT[dt])
  f = getattr(operator, op)
  close(f(x, y), f(tx, ty))
  close(~x, ~tx)
  close(getattr(x, {"and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor"}[op])(y), f(tx, ty))

PROMO = [dtypes.bool, dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
@pytest.mark.parametrize("d1", PROMO, ids=str)
@pytest.mark.parametrize("d2", PROMO, ids=str)
def test_promotion(d1, d2):
  # the lattice agrees with torch's result_type for every pair here (DESIGN: JAX-like, same answers on these types)
  x, y = Tensor([1, 0, 1]).cast(d1), Tensor([1, 1, 0]).cast(d2)
  tx, ty = torch.tensor([1, 0, 1]).to(TORCH_DT[d1]), torch.tensor([1, 1, 0]).to(TORCH_DT[d2])
  assert TORCH_DT[(x + y).dtype] == torch.result_type(tx, ty)
  assert TORCH_DT[(x * y).dtype] == (tx * ty).dtype
  assert TORCH_DT[x.maximum(y).dtype] == torch.maximum(tx, ty).dtype
  assert (x < y).dtype == dtypes.bool and (x == y).dtype == dtypes.bool

def test_python_scalars_keep_dtype():
  # Python scalars take the tensor's dtype (a float meeting ints gives the default float), like torch
  for dt in (dtypes.float16, dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.bfloat16):
    x, tx = Tensor([1, 2, 3]).cast(dt), torch.tensor([1, 2, 3]).to(TORCH_DT[dt])
    for f in (lambda t: t + 1, lambda t: 2 * t, lambda t: t - 1, lambda t: t * 2.5, lambda t: t / 2, lambda t: t ** 2, lambda t: t > 1):
      assert TORCH_DT[f(x).dtype] == f(tx).dtype, f"{dt}: {f(x).dtype} vs {f(tx).dtype}"
  assert (Tensor([True]) + 1).dtype == dtypes.int32   # DESIGN: the default int is int32 (torch: int64)

# ***** every operator dunder, reflected and in place *****

DUNDERS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul", "lt", "le", "gt", "ge",
           "eq", "ne"]
@pytest.mark.parametrize("name", DUNDERS)
def test_dunders(device, name):
  is_int = name in ("and", "or", "xor", "lshift", "rshift")
  a = np.array([[3, 1], [2, 5]], dtype=np.int32) if is_int else np.array([[1.5, -2.0], [0.5, 3.0]], dtype=np.float32)
  b = np.array([[1, 2], [3, 1]], dtype=np.int32) if is_int else np.array([[0.5, 1.5], [-2.0, 2.0]], dtype=np.float32)
  op = getattr(operator, name + ("_" if name in ("and", "or") else ""))
  (x, tx), (y, ty) = (Tensor(a), torch.tensor(a)), (Tensor(b), torch.tensor(b))
  if name == "pow": x, tx = x.abs(), tx.abs()
  close(op(x, y), op(tx, ty), dtype_check=not is_int)
  if name not in ("matmul", "lt", "le", "gt", "ge", "eq", "ne"):
    s = 2 if is_int else 1.5
    close(op(x, s), op(tx, s), dtype_check=not is_int)   # tensor op scalar
    close(op(s, x), op(s, tx), dtype_check=not is_int)   # reflected: scalar op tensor
    iop = getattr(operator, "i" + name)
    x2, tx2 = Tensor(np.array(tx.numpy()) if name != "pow" else np.abs(a)).realize(), tx.clone()
    ret = iop(x2, y)
    assert ret is x2   # in place returns the same tensor, now holding the result
    close(x2, iop(tx2, ty), dtype_check=not is_int)

def test_inplace_reads_target_through_view():
  y = Tensor([[1.0, 2.0], [3.0, 4.0]]).realize()
  y += y.T
  np.testing.assert_array_equal(y.numpy(), [[2.0, 5.0], [5.0, 8.0]])

def test_imatmul():
  # @= on a tensor that isn't realized yet just becomes the product (a realized one hits test_inplace_reads_target_through_view)
  x, y = Tensor([[1.0, 2.0], [3.0, 4.0]]) * 1, Tensor([[0.5, 1.0], [1.0, -1.0]])
  x @= y
  close(x, torch.tensor([[1.0, 2.0], [3.0, 4.0]]) @ torch.tensor([[0.5, 1.0], [1.0, -1.0]]))

def test_unary_dunders():
  a = np.array([1.5, -2.0, 0.0], dtype=np.float32)
  x, tx = Tensor(a), torch.tensor(a)
  close(-x, -tx); close(+x, +tx); close(abs(x), abs(tx))
  close(~Tensor([1, -2]), ~torch.tensor([1, -2], dtype=torch.int32))
  assert float(Tensor(2.5)) == 2.5 and int(Tensor(3)) == 3 and bool(Tensor(1.0))

def test_aliases():
  a, b = rand((3,), seed=9), rand((3,), 0.5, 2, seed=10)
  (x, tx), (y, ty) = both(a), both(b)
  for name in ("true_divide", "multiply", "subtract", "floor_divide", "remainder", "fmod", "bitwise_left_shift"):
    if name == "bitwise_left_shift": close(Tensor([1, 2]).bitwise_left_shift(3), torch.tensor([1, 2], dtype=torch.int32).bitwise_left_shift(3)); continue
    close(getattr(x, name)(y), getattr(tx, name)(ty))

def test_lerp_where_copysign(device):
  a, b, w = rand((3, 4), seed=11), rand((3, 4), seed=12), rand((3, 4), -0.5, 1.5, seed=13)
  (x, tx), (y, ty), (z, tz) = both(a), both(b), both(w)
  close(x.lerp(y, z), torch.lerp(tx, ty, tz))
  close(x.lerp(y, 0.25), torch.lerp(tx, ty, 0.25))
  close(Tensor.where(x > 0, x, y), torch.where(tx > 0, tx, ty))
  close((x > 0).where(1.5, x), torch.where(tx > 0, 1.5, tx))
  close(x.copysign(y), torch.copysign(tx, ty))
  z0 = np.array([1.0, 2.0, -3.0, 4.0], dtype=np.float32)
  s0 = np.array([-0.0, 0.0, math.nan, -math.inf], dtype=np.float32)
  np.testing.assert_array_equal(np.signbit(Tensor(z0).copysign(Tensor(s0)).numpy()), np.signbit(torch.copysign(torch.tensor(z0), torch.tensor(s0)).numpy()))
  close(Tensor([1, -2]).copysign(Tensor([-1, 1])), torch.copysign(torch.tensor([1, -2]), torch.tensor([-1, 1])))   # ints give floats

def test_nan_comparisons_and_maximum():
  a = np.array([math.nan, 1.0, math.nan, -math.inf], dtype=np.float32)
  b = np.array([1.0, math.nan, math.nan, 2.0], dtype=np.float32)
  (x, tx), (y, ty) = both(a), both(b)
  for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    np.testing.assert_array_equal(op(x, y).numpy(), op(tx, ty).numpy())
  for f, tf in [(Tensor.maximum, torch.maximum), (Tensor.minimum, torch.minimum)]:
    np.testing.assert_array_equal(f(x, y).numpy(), tf(tx, ty).numpy())
  np.testing.assert_array_equal(x.relu().numpy(), torch.relu(tx).numpy())
  np.testing.assert_array_equal(x.clamp(0, 1).numpy(), tx.clamp(0, 1).numpy())

def test_pow_special_cases():
  a = np.array([-2.0, -0.5, 0.0, -0.0, 1.0, 2.0, math.inf, -math.inf, math.nan], dtype=np.float32)
  x, tx = both(a)
  for e in (0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, -3, 4):
    np.testing.assert_allclose(to_np(x ** e), to_np(tx ** e), rtol=1e-6, equal_nan=True, err_msg=f"x ** {e}")
  e = np.array([0.5, 2.0, -1.0, 3.0, 0.0, math.nan, -2.0, 3.0, 0.0], dtype=np.float32)
  np.testing.assert_allclose(to_np(x ** Tensor(e)), to_np(tx ** torch.tensor(e)), rtol=1e-6, equal_nan=True)
  np.testing.assert_allclose(to_np(2 ** Tensor(e)), to_np(2 ** torch.tensor(e)), rtol=1e-6, equal_nan=True)
  # ints stay exact and wrap like torch
  close(Tensor([3, -2, 7]) ** 3, torch.tensor([3, -2, 7], dtype=torch.int32) ** 3)
  close(Tensor([3, 5], dtype=dtypes.int64) ** Tensor([40, 2], dtype=dtypes.int64), torch.tensor([3, 5]) ** torch.tensor([40, 2]))

# ***** errors name the op, the argument, what was given and what is allowed *****

def test_errors():
  f, i = Tensor([1.5, 2.5]), Tensor([1, 2])
  with pytest.raises(TypeError, match=r"lshift needs int tensors, got dtypes.float"): f << 1
  with pytest.raises(TypeError, match=r"bitwise_and needs int or bool tensors, got dtypes.float"): f & f
  with pytest.raises(TypeError, match=r"lerp needs float tensors"): i.lerp(i, 0.5)
  with pytest.raises(ValueError, match=r"gelu: approximate must be 'none' or 'tanh', got 'erf'"): f.gelu("erf")
  with pytest.raises(ValueError, match=r"div: rounding_mode must be None, 'trunc' or 'floor', got 'round'"): f.div(f, rounding_mode="round")
  with pytest.raises(ValueError, match="clamp needs at least one of min and max"): f.clamp()
  with pytest.raises(TypeError, match="subtraction of bool tensors"): Tensor([True]) - Tensor([False])
  with pytest.raises(ValueError, match=r"maximum: shapes \(2,\) and \(3,\) can't be broadcast"): f.maximum(Tensor([1.0, 2.0, 3.0]))

# ***** transcendental accuracy in ulps over the whole float range *****

mpmath = pytest.importorskip("mpmath")
FINFO = {dtypes.float16: (5, 10), dtypes.bfloat16: (8, 7), dtypes.float32: (8, 23), dtypes.float64: (11, 52)}
MP = {
  "exp": (Tensor.exp, lambda v: mpmath.exp(v), None), "exp2": (Tensor.exp2, lambda v: mpmath.mpf(2) ** v, None),
  "expm1": (Tensor.expm1, lambda v: mpmath.expm1(v), None), "log": (Tensor.log, lambda v: mpmath.log(v), (0, math.inf)),
  "log2": (Tensor.log2, lambda v: mpmath.log(v, 2), (0, math.inf)), "log1p": (Tensor.log1p, lambda v: mpmath.log1p(v), (-1, math.inf)),
  "sqrt": (Tensor.sqrt, lambda v: mpmath.sqrt(v), (0, math.inf)), "rsqrt": (Tensor.rsqrt, lambda v: 1 / mpmath.sqrt(v), (1e-300, math.inf)),
  "sin": (Tensor.sin, lambda v: mpmath.sin(v), None), "cos": (Tensor.cos, lambda v: mpmath.cos(v), None), "tan": (Tensor.tan, lambda v: mpmath.tan(v), None),
  "asin": (Tensor.asin, lambda v: mpmath.asin(v), (-1, 1)), "acos": (Tensor.acos, lambda v: mpmath.acos(v), (-1, 1)),
  "atan": (Tensor.atan, lambda v: mpmath.atan(v), None), "sinh": (Tensor.sinh, lambda v: mpmath.sinh(v), None),
  "cosh": (Tensor.cosh, lambda v: mpmath.cosh(v), None), "tanh": (Tensor.tanh, lambda v: mpmath.tanh(v), None),
  "asinh": (Tensor.asinh, lambda v: mpmath.asinh(v), None), "acosh": (Tensor.acosh, lambda v: mpmath.acosh(v), (1, math.inf)),
  "atanh": (Tensor.atanh, lambda v: mpmath.atanh(v), (-1, 1)), "erf": (Tensor.erf, lambda v: mpmath.erf(v), None),
  "sigmoid": (Tensor.sigmoid, lambda v: 1 / (1 + mpmath.exp(-v)), None),
  "logsigmoid": (Tensor.logsigmoid, lambda v: -mpmath.log1p(mpmath.exp(-v)) if v > -50 else v - mpmath.log1p(mpmath.exp(v)), None),
  "softplus": (lambda t: t.softplus(threshold=1e30), lambda v: mpmath.log1p(mpmath.exp(v)), None),
}
# float32/64 allow 3 ulp (cos and tan take three roundings of sin values); half and bfloat16 compute in float32 and round once: 1 ulp
MAX_ULP = {dtypes.float16: 1.0, dtypes.bfloat16: 1.0, dtypes.float32: 3.0, dtypes.float64: 3.0}

def whole_range(dt, n:int, dom, seed:int) -> np.ndarray:
  """n finite values of dt from uniformly random bit patterns (so log-uniform magnitudes, denormals included) inside dom, plus edge values"""
  g = torch.Generator().manual_seed(seed)
  bits = 8 * dt.itemsize
  ity = {16: torch.int16, 32: torch.int32, 64: torch.int64}[bits]
  v = torch.randint(-2**(bits-1), 2**(bits-1) - 1, (n * 4,), generator=g, dtype=ity).view(TORCH_DT[dt]).double()
  v = torch.cat([torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 10.0, 88.0, -88.0, 1e4, -1e4, 1e-7, 1e-30]).to(TORCH_DT[dt]).double(), v])
  v = v[torch.isfinite(v)]
  if dom is not None: v = v[(v >= dom[0]) & (v <= dom[1])]
  return v[:n].numpy()

_refs: dict = {}
def ulps(name:str, dt, x:np.ndarray, got:np.ndarray) -> np.ndarray:
  e, m = FINFO[dt]
  big = 2.0 ** (2 ** (e - 1)) if e < 11 else 1.7976931348623157e308   # past the largest finite value: inf counts as this
  emin = 2 - 2 ** (e - 1)
  out = []
  for xv, g in zip(x.tolist(), got.tolist()):
    if (key := (name, dt, xv)) not in _refs: _refs[key] = MP[name][1](mpmath.mpf(xv))
    r = _refs[key]
    if isinstance(r, mpmath.mpc) or mpmath.isnan(r): out.append(0.0 if math.isnan(g) else math.inf); continue
    if math.isnan(g): out.append(math.inf); continue
    rc, gc = max(min(r, mpmath.mpf(big)), -mpmath.mpf(big)), max(min(g, big), -big)
    rr = torch.tensor(float(rc), dtype=torch.float64).to(TORCH_DT[dt]).double().item()   # the correctly rounded answer
    if gc == max(min(rr, big), -big): out.append(0.0); continue
    a = min(abs(float(rc)), big / 2)
    spacing = 2.0 ** (max(math.frexp(a)[1] - 1, emin) - m) if a > 0 else 2.0 ** (emin - m)
    out.append(float(abs(mpmath.mpf(gc) - rc) / spacing))
  return np.array(out)

MODES = ["CPU", "CPU-TRANSCENDENTAL=2", "PYTHON"]
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("name", list(MP))
def test_ulp_whole_range(name, dt, mode, monkeypatch):
  mpmath.mp.prec = 80
  dev = mode.split("-")[0]
  # method_cache keys kernels by (device, ast, BEAM, NOOPT): a kernel compiled without TRANSCENDENTAL=2 would be reused (see report)
  monkeypatch.setattr(realize, "method_cache", {})
  fn, _, dom = MP[name]
  if name in ("cos", "tan"):
    # the top binade, where 2x overflows, falls back to cos x = 1 - 2 sin(x/2)**2: absolute (not relative) error, see test_cos_top_binade
    top = 2.0 ** (2 ** (FINFO[dt][0] - 1) - 1)
    dom = (-top * (1 - 2.0 ** -FINFO[dt][1]), top * (1 - 2.0 ** -FINFO[dt][1]))
  x = whole_range(dt, 48 if dev == "PYTHON" else 300, dom, seed=sum(map(ord, name)))
  with Context(TRANSCENDENTAL=2 if "TRANSCENDENTAL" in mode else 1):
    t = Tensor(x, device=dev).cast(dt)
    got = fn(t).cast(dtypes.float64).numpy()
  u = ulps(name, dt, x, got)
  worst = int(np.argmax(u))
  assert u[worst] <= MAX_ULP[dt], f"{name} {dt} {mode}: {u[worst]:.2f} ulp at x={x[worst]!r}: got {got[worst]!r}, exact {_refs[(name, dt, x[worst].item())]}"

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64], ids=str)
def test_cos_top_binade(dt):
  # |x| >= 2**127 (float32) / 2**1023 (float64): cos and tan are off by a few ulp of 1, not of the result
  e, m = FINFO[dt]
  x = np.array([1.5, -1.9, 1.0, 1.25, 1.999], dtype=np.float64) * 2.0 ** (2 ** (e - 1) - 1)
  got = Tensor(x).cast(dt).cos().cast(dtypes.float64).numpy()
  ref = np.array([float(mpmath.cos(mpmath.mpf(float(v)))) for v in Tensor(x).cast(dt).cast(dtypes.float64).numpy()])
  np.testing.assert_allclose(got, ref, atol=4 * 2.0 ** -m, rtol=0)
