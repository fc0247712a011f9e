# every Tensor op against numpy, on random data of several shapes and dtypes, on CPU and the PYTHON emulator
import math, warnings
import numpy as np
import pytest
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes

F32, F16, I32, I64, I8, U8, BOOL = np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_
FLOATS, NUMS, ALL = (F32, F16), (F32, F16, I32, I64), (F32, F16, I32, I64, BOOL)

def _rand(rng:np.random.Generator, shape:tuple, dtype, low:float, high:float) -> np.ndarray:
  if dtype == BOOL: return rng.random(shape) < 0.5
  if np.issubdtype(dtype, np.integer):
    lo = max(int(math.floor(low)), np.iinfo(dtype).min)
    return rng.integers(lo, max(int(math.ceil(high)), lo+1), size=shape, endpoint=True).astype(dtype)
  return rng.uniform(low, high, size=shape).astype(dtype)

def helper_test_op(shapes, np_fxn, tiny_fxn=None, atol=1e-6, rtol=1e-5, dtypes=(F32,), low=-3.0, high=3.0, vals=None, nonzero=False):
  """Compare tiny_fxn on Tensors with np_fxn on the same numpy inputs, for each dtype. vals gives the inputs instead of random data;
  nonzero replaces zeros (and values near 0 for floats) of the last input, for divisions."""
  tiny_fxn = tiny_fxn if tiny_fxn is not None else np_fxn
  for dt in dtypes:
    rng = np.random.default_rng(1337)
    inputs = [np.array(v, dtype=dt) for v in vals] if vals is not None else [_rand(rng, s, dt, low, high) for s in shapes]
    if nonzero and dt != BOOL: inputs[-1] = np.where(np.abs(inputs[-1]) < 0.25, 1, inputs[-1]).astype(dt)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
      warnings.simplefilter("ignore")
      expected = np.asarray(np_fxn(*[x.copy() for x in inputs]))
    out = tiny_fxn(*[Tensor(x) for x in inputs])
    got = out.numpy()
    assert got.shape == expected.shape, f"{dt.__name__}: shape {got.shape} != numpy's {expected.shape}"
    if expected.dtype == np.bool_ or got.dtype == np.bool_: np.testing.assert_equal(got, expected, err_msg=f"dtype {dt.__name__}")
    else:
      a, r = (max(atol, 1e-2), max(rtol, 1e-2)) if F16 in (dt, got.dtype) else (atol, rtol)
      np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), atol=a, rtol=r, err_msg=f"dtype {dt.__name__}")

BINARY_SHAPES = [[(3, 4), (3, 4)], [(3, 1), (1, 4)], [(), (5,)], [(2, 3, 4), (4,)], [(0, 3), (1, 3)], [(1,), (5,)], [(1, 1), ()]]

# ***** elementwise binary *****

@pytest.mark.parametrize("shapes", BINARY_SHAPES)
@pytest.mark.parametrize("op", ["add", "mul", "maximum", "minimum"])
def test_binary_all_dtypes(device, shapes, op):
  np_fxn = {"add": np.add, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[op]
  helper_test_op(shapes, np_fxn, lambda a, b: getattr(a, op)(b), dtypes=ALL)

@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_sub(device, shapes):
  helper_test_op(shapes, np.subtract, lambda a, b: a - b, dtypes=NUMS)

@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_div(device, shapes):
  helper_test_op(shapes, np.true_divide, lambda a, b: a / b, dtypes=NUMS, nonzero=True)

@pytest.mark.parametrize("shapes", BINARY_SHAPES[:4])
@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons(device, shapes, op):
  import operator
  fxn = getattr(operator, op)
  helper_test_op(shapes, fxn, fxn, dtypes=ALL, low=-2, high=2)

@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise(device, op):
  import operator
  fxn = getattr(operator, {"and": "and_", "or": "or_", "xor": "xor"}[op])
  helper_test_op([(3, 4), (3, 4)], fxn, dtypes=(I32, I64, U8, BOOL), low=-100, high=100)
  helper_test_op([(3, 1), (1, 4)], fxn, dtypes=(I32, BOOL), low=-100, high=100)
  helper_test_op([(3, 4)], lambda a: fxn(a, 6), dtypes=(I32, U8))
  helper_test_op([(3, 4)], lambda a: fxn(a, True), dtypes=(BOOL,))

def test_bitwise_not_and_logical(device):
  helper_test_op([(3, 4)], np.invert, lambda a: ~a, dtypes=(I32, I64, U8, I8, BOOL), low=-100, high=100)
  helper_test_op([(3, 4)], np.logical_not, lambda a: a.logical_not(), dtypes=(F32, I32, BOOL))
  for name in ["and", "or", "xor"]:
    helper_test_op([(3, 4), (3, 4)], getattr(np, f"logical_{name}"), lambda a, b: getattr(a, f"logical_{name}")(b), dtypes=(F32, I32, BOOL), low=-1, high=1)

def test_shifts(device):
  helper_test_op([(3, 4)], lambda a: a << 3, dtypes=(I32, I64, U8), low=-50, high=50)
  helper_test_op([(3, 4)], lambda a: a >> 2, dtypes=(I32, I64, U8), low=-50, high=50)
  helper_test_op(None, np.left_shift, lambda a, b: a << b, vals=[[1, -3, 7, 100], [0, 1, 5, 3]], dtypes=(I32,))
  helper_test_op(None, np.right_shift, lambda a, b: a >> b, vals=[[1, -3, -7, 100], [0, 1, 2, 3]], dtypes=(I32,))

def test_scalar_ops(device):
  helper_test_op([(3, 4)], lambda a: a + 2, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: 2 - a, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: a * 1.5, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: 2 / a, dtypes=NUMS, nonzero=True)
  helper_test_op([(3, 4)], lambda a: a / 4, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: -a, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: 1 < a, dtypes=NUMS)
  helper_test_op([(3, 4)], lambda a: a == 1, dtypes=(I32,), low=0, high=2)
  helper_test_op([(3, 4)], lambda a: a + 2.5, dtypes=(I32, BOOL))
  helper_test_op([(3, 4)], lambda a: a + 1, dtypes=(BOOL,))

def test_unsigned_wraps(device):
  helper_test_op(None, lambda a: a - 3, vals=[[0, 1, 5, 255]], dtypes=(U8,))
  helper_test_op(None, lambda a: -a, vals=[[0, 1, 5, 255]], dtypes=(U8,))
  helper_test_op(None, np.minimum, lambda a, b: a.minimum(b), vals=[[0, 1, 200, 255], [3, 0, 100, 255]], dtypes=(U8,))

# ***** floor division, mod and pow: python/numpy semantics *****

INT_A, INT_B = [-7, -6, -5, -1, 0, 1, 5, 6, 7], [2, -2, 3, -3, 1, -1, 7]
FLT_A, FLT_B = [-7.5, -3.0, -0.5, 0.0, 0.5, 3.0, 7.5, 6.0, -6.0], [2.0, -2.0, 0.5, -1.5, 3.0, 0.25, 1.0]

def _grid(a, b): return [[x for x in a for _ in b], [y for _ in a for y in b]]

def test_floordiv_mod_ints(device):
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=_grid(INT_A, INT_B), dtypes=(I32, I64, I8))
  helper_test_op(None, np.mod, lambda a, b: a % b, vals=_grid(INT_A, INT_B), dtypes=(I32, I64, I8))
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=_grid([0, 5, 255], [1, 2, 7]), dtypes=(U8,))
  helper_test_op(None, np.mod, lambda a, b: a % b, vals=_grid([0, 5, 255], [1, 2, 7]), dtypes=(U8,))
  helper_test_op([(4, 5), (4, 5)], np.floor_divide, lambda a, b: a // b, dtypes=(I32,), low=-50, high=50, nonzero=True)
  helper_test_op([(4, 5), (4, 5)], np.mod, lambda a, b: a % b, dtypes=(I32,), low=-50, high=50, nonzero=True)

def test_floordiv_mod_scalars(device):
  helper_test_op(None, lambda a: a // 3, vals=[INT_A], dtypes=(I32,))
  helper_test_op(None, lambda a: a % -3, vals=[INT_A], dtypes=(I32,))
  helper_test_op(None, lambda a: 7 // a, vals=[INT_B], dtypes=(I32,))
  helper_test_op(None, lambda a: -7 % a, vals=[INT_B], dtypes=(I32,))
  helper_test_op(None, lambda a: a // 2.5, vals=[FLT_A], dtypes=(F32,))

def test_int_division_by_zero_is_zero(device):
  # like numpy (which warns): a hardware integer division by zero would kill the process
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=[[5, -5, 0], [0, 0, 0]], dtypes=(I32,))
  helper_test_op(None, np.mod, lambda a, b: a % b, vals=[[5, -5, 0], [0, 0, 0]], dtypes=(I32,))
  helper_test_op(None, np.mod, lambda a, b: a % b, vals=[[5, 7, 0], [0, 0, 0]], dtypes=(U8,))
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=[[5, 7, 0], [0, 0, 0]], dtypes=(U8,))
  assert Tensor([5, -5]).div(Tensor([0, 0]), rounding_mode="trunc").tolist() == [0, 0]

@pytest.mark.parametrize("op", ["//", "%", "fmod", "trunc"])
def test_int_division_by_a_known_zero_raises_like_torch(device, op):
  # a divisor that is zero when the graph is built (a scalar 0, zeros()) raises torch's RuntimeError("ZeroDivisionError"); a zero that is
  # data (above) gives 0 instead of reading the divisor back before the kernel runs
  torch = pytest.importorskip("torch")
  fn = {"//": lambda a, b: a // b, "%": lambda a, b: a % b, "fmod": lambda a, b: a.fmod(b), "trunc": lambda a, b: a.div(b, rounding_mode="trunc")}[op]
  for lib in (torch, Tensor):
    a = lib.tensor([5, -5, 0]) if lib is torch else Tensor([5, -5, 0])
    for b in (0, lib.zeros(3, dtype=lib.int32 if lib is torch else dtypes.int32)):
      with pytest.raises(RuntimeError, match="ZeroDivisionError"): fn(a, b)
  assert fn(Tensor([5, -5, 0]), 2).tolist() == fn(torch.tensor([5, -5, 0]), 2).tolist() and fn(Tensor([], dtype=dtypes.int32), 0).tolist() == []
  assert fn(Tensor([5.0, -5.0]), 0).shape == (2,)   # floats divide by zero (inf, nan) as in torch

def test_floordiv_mod_floats(device):
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=_grid(FLT_A, FLT_B), dtypes=(F32, F16))
  helper_test_op(None, np.mod, lambda a, b: a % b, vals=_grid(FLT_A, FLT_B), dtypes=(F32, F16))
  helper_test_op([(5, 6), (5, 6)], np.floor_divide, lambda a, b: a // b, dtypes=(F32,), low=-20, high=20, nonzero=True)
  helper_test_op([(5, 6), (5, 6)], np.mod, lambda a, b: a % b, dtypes=(F32,), low=-20, high=20, nonzero=True, atol=1e-4)
  # where a / b is within rounding of a whole number, floor(a / b) and numpy's exact (fmod-based) floor may differ by one: either is fine
  a, b = (np.array(v, dtype=np.float32) for v in _grid([0.3, 0.6, 0.9, 2.1, 4.9, 6.3], [0.1, 0.3, 0.7, 0.9]))
  got = (Tensor(a) // Tensor(b)).numpy()
  assert np.all((got == np.floor(a / b)) | (got == np.floor_divide(a, b))), got
  helper_test_op(None, np.floor_divide, lambda a, b: a // b, vals=_grid([0.75, 1.5, 6.0, -4.5, 10.0], [0.25, 0.75, 1.5, -0.5]), dtypes=(F32,))

def test_div_rounding_modes(device):
  helper_test_op(None, lambda a, b: np.trunc(a / b), lambda a, b: a.div(b, rounding_mode="trunc"), vals=_grid(FLT_A, FLT_B), dtypes=(F32,))
  helper_test_op(None, lambda a, b: np.fix(a / b).astype(np.int32), lambda a, b: a.div(b, rounding_mode="trunc"), vals=_grid(INT_A, INT_B), dtypes=(I32,))
  helper_test_op(None, np.floor_divide, lambda a, b: a.div(b, rounding_mode="floor"), vals=_grid(INT_A, INT_B), dtypes=(I32,))

POW_BASES = [-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]
POW_EXPS = [0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, 2.5, -0.5]

def test_pow_negative_bases(device):
  helper_test_op(None, np.power, lambda a, b: a ** b, vals=_grid(POW_BASES, POW_EXPS), dtypes=(F32,), rtol=1e-5)
  helper_test_op(None, np.power, lambda a, b: a ** b, vals=_grid(POW_BASES, POW_EXPS), dtypes=(F16,))
  helper_test_op([(3, 4), (3, 4)], np.power, lambda a, b: a ** b, dtypes=(F32,), low=0.1, high=3, rtol=1e-5)

@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 5, -1, -2, 0.5, 2.0, -0.5, 1.5])
def test_pow_scalar_exponent(device, exponent):
  helper_test_op(None, lambda a: a ** exponent, vals=[POW_BASES], dtypes=(F32,))
  if isinstance(exponent, int) and exponent >= 0: helper_test_op(None, lambda a: a ** exponent, vals=[[-3, -2, -1, 0, 1, 2, 5]], dtypes=(I32, I64))

def test_pow_ints(device):
  helper_test_op(None, np.power, lambda a, b: a ** b, vals=_grid([-3, -2, -1, 0, 1, 2, 3, 7], [0, 1, 2, 3, 5, 10]), dtypes=(I32, I64))
  helper_test_op(None, lambda a: np.power(2, a), lambda a: 2 ** a, vals=[[0, 1, 2, 10, 30]], dtypes=(I32,))
  helper_test_op(None, lambda a: np.power(2.0, a), lambda a: 2.0 ** a, vals=[[-2.0, 0.0, 0.5, 3.0]], dtypes=(F32,))
  # negative int exponents truncate toward 0 like torch (numpy refuses them)
  assert (Tensor([1, -1, 2, -2, 0]) ** Tensor([-1, -3, -1, -2, 1])).tolist() == [1, -1, 0, 0, 0]
  assert (Tensor([1, -1, 2, 3]) ** -1).tolist() == [1, -1, 0, 0]

# ***** unary *****

UNARY_SHAPES = [(3, 4), (), (0, 2), (1, 5)]

@pytest.mark.parametrize("shape", UNARY_SHAPES)
@pytest.mark.parametrize("name,np_fxn,low,high", [
  ("exp", np.exp, -3, 3), ("exp2", np.exp2, -3, 3), ("log", np.log, 0.01, 5), ("log2", np.log2, 0.01, 5), ("sqrt", np.sqrt, 0, 5),
  ("rsqrt", lambda x: 1/np.sqrt(x), 0.1, 5), ("sin", np.sin, -5, 5), ("cos", np.cos, -5, 5), ("tan", np.tan, -1.2, 1.2),
  ("reciprocal", np.reciprocal, 0.5, 3), ("sigmoid", lambda x: 1/(1+np.exp(-x)), -5, 5), ("tanh", np.tanh, -4, 4),
  ("relu", lambda x: np.maximum(x, 0), -3, 3), ("abs", np.abs, -3, 3), ("sign", np.sign, -3, 3), ("square", np.square, -3, 3),
  ("neg", np.negative, -3, 3), ("trunc", np.trunc, -5, 5), ("floor", np.floor, -5, 5), ("ceil", np.ceil, -5, 5), ("round", np.round, -5, 5),
])
def test_unary_float(device, shape, name, np_fxn, low, high):
  helper_test_op([shape], np_fxn, lambda x: getattr(x, name)(), dtypes=FLOATS, low=low, high=high, atol=1e-5)

@pytest.mark.parametrize("name,np_fxn", [("abs", np.abs), ("sign", np.sign), ("neg", np.negative), ("square", np.square), ("relu", lambda x: np.maximum(x, 0)),
                                         ("trunc", np.trunc), ("floor", np.floor), ("ceil", np.ceil), ("round", np.round)])
def test_unary_int(device, name, np_fxn):
  helper_test_op([(3, 4)], np_fxn, lambda x: getattr(x, name)(), dtypes=(I32, I64), low=-20, high=20)

def test_unary_int_to_float(device):
  helper_test_op([(3, 4)], np.exp, lambda x: x.exp(), dtypes=(I32,), low=-3, high=3, rtol=1e-5)
  helper_test_op([(3, 4)], np.sqrt, lambda x: x.sqrt(), dtypes=(I32, BOOL), low=0, high=9, rtol=1e-5)
  helper_test_op([(3, 4)], np.sin, lambda x: x.sin(), dtypes=(I32,), low=-5, high=5, atol=1e-5)

def test_round_half_even(device):
  vals = [-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, 1.51, -3.7, 1e6 + 0.5, 2.4999]
  helper_test_op(None, np.round, lambda x: x.round(), vals=[vals], dtypes=(F32,))
  helper_test_op(None, np.round, lambda x: x.round(), vals=[[-2.5, -0.5, 0.5, 1.5, 2.5]], dtypes=(F16,))

def test_nan_inf(device):
  vals = [[math.nan, math.inf, -math.inf, 0.0, -1.5, 2.0]]
  helper_test_op(None, np.isnan, lambda x: x.isnan(), vals=vals, dtypes=FLOATS)
  helper_test_op(None, np.isinf, lambda x: x.isinf(), vals=vals, dtypes=FLOATS)
  helper_test_op(None, np.isfinite, lambda x: x.isfinite(), vals=vals, dtypes=FLOATS)
  helper_test_op(None, np.isposinf, lambda x: x.isinf(detect_negative=False), vals=vals, dtypes=(F32,))
  helper_test_op(None, np.isnan, lambda x: x.isnan(), vals=[[1, 2]], dtypes=(I32,))
  helper_test_op(None, lambda x: np.where(np.isnan(x), 0, np.sign(x)), lambda x: x.sign(), vals=vals, dtypes=(F32,))  # torch: sign(nan) = 0
  helper_test_op(None, lambda x: np.log(np.abs(x)), lambda x: x.abs().log(), vals=[[0.0, math.inf, 1.0]], dtypes=(F32,))

def test_clip(device):
  helper_test_op([(3, 4)], lambda x: np.clip(x, -1, 1.5), lambda x: x.clip(-1, 1.5), dtypes=(F32, F16))
  helper_test_op([(3, 4)], lambda x: np.clip(x, -2, 2), lambda x: x.clamp(-2, 2), dtypes=(I32,), low=-10, high=10)
  helper_test_op([(3, 4)], lambda x: np.maximum(x, 0.5), lambda x: x.clip(min_=0.5), dtypes=(F32,))
  helper_test_op([(3, 4), (3, 1), (1, 4)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), lambda x, lo, hi: x.clip(lo, hi), dtypes=(F32,))

def test_where(device):
  helper_test_op([(3, 4), (3, 4), (3, 4)], lambda c, x, y: np.where(c > 0, x, y), lambda c, x, y: (c > 0).where(x, y), dtypes=ALL)
  helper_test_op([(3, 1), (1, 4), ()], lambda c, x, y: np.where(c > 0, x, y), lambda c, x, y: (c > 0).where(x, y), dtypes=(F32, I32))
  helper_test_op([(3, 4)], lambda c: np.where(c > 0, c, 2.5), lambda c: (c > 0).where(c, 2.5), dtypes=(F32,))
  helper_test_op([(3, 4)], lambda c: np.where(c > 0, 1, 0).astype(np.int32), lambda c: (c > 0).where(1, 0), dtypes=(F32,))
  helper_test_op([(3, 4)], lambda c: np.where(c, 1.0, c), lambda c: c.where(1.0, c), dtypes=(F32,))

# ***** casts *****

@pytest.mark.parametrize("src,dst", [(F32, I32), (F32, BOOL), (F32, F16), (I32, F32), (I32, I8), (I32, BOOL), (BOOL, F32), (BOOL, I32), (F16, F32),
                                     (I64, I32), (U8, I32), (I32, I64), (F32, np.float64)])
def test_cast(device, src, dst):
  from tinygrad.tensor import _from_np_dtype
  helper_test_op([(3, 4)], lambda x: x.astype(dst), lambda x: x.cast(_from_np_dtype(dst)), dtypes=(src,), low=-100, high=100)

def test_cast_bfloat16(device):
  helper_test_op(None, lambda x: x, lambda x: x.bfloat16().float(), vals=[[1.0, -2.5, 3.140625, 0.0, 65536.0]], dtypes=(F32,))

@pytest.mark.parametrize("src,dst,shape", [(F32, I32, (3, 4)), (I32, F32, (3, 4)), (F32, np.uint32, (2, 2)), (F32, F16, (2, 3)), (F16, F32, (2, 4)),
                                           (I32, I64, (3, 4)), (I64, I32, (3, 2)), (U8, np.uint32, (2, 8)), (np.uint32, U8, (2, 3)), (I8, U8, (5,))])
def test_bitcast(device, src, dst, shape):
  from tinygrad.tensor import _from_np_dtype
  helper_test_op([shape], lambda x: x.view(dst), lambda x: x.bitcast(_from_np_dtype(dst)), dtypes=(src,), low=-100, high=100)

# ***** movement *****

def test_reshape_view(device):
  helper_test_op([(3, 4)], lambda x: x.reshape(2, 6), lambda x: x.reshape(2, 6))
  helper_test_op([(3, 4)], lambda x: x.reshape(-1), lambda x: x.reshape(-1))
  helper_test_op([(3, 4)], lambda x: x.reshape(2, -1, 3), lambda x: x.view((2, -1, 3)))
  helper_test_op([(3, 4)], lambda x: x.reshape(4, 3), lambda x: x.reshape((4, 3)))
  helper_test_op([()], lambda x: x.reshape(1, 1), lambda x: x.reshape(1, 1))
  helper_test_op([(0, 4)], lambda x: x.reshape(4, 0), lambda x: x.reshape(4, 0))
  helper_test_op([(3, 4)], lambda x: x.reshape(3, 4), lambda x: x.reshape(None, 4))

def test_permute_transpose(device):
  helper_test_op([(2, 3, 4)], lambda x: x.transpose(2, 0, 1), lambda x: x.permute(2, 0, 1), dtypes=ALL)
  helper_test_op([(2, 3, 4)], lambda x: x.transpose(1, 0, 2), lambda x: x.permute((-2, 0, -1)))
  helper_test_op([(2, 3, 4)], lambda x: np.swapaxes(x, 0, 2), lambda x: x.transpose(0, 2))
  helper_test_op([(3, 4)], lambda x: x.T, lambda x: x.T)
  helper_test_op([(2, 3, 4)], lambda x: np.swapaxes(x, -1, -2), lambda x: x.transpose())

def test_expand(device):
  helper_test_op([(3, 1)], lambda x: np.broadcast_to(x, (3, 4)), lambda x: x.expand(3, 4), dtypes=ALL)
  helper_test_op([(3, 1)], lambda x: np.broadcast_to(x, (2, 3, 4)), lambda x: x.expand((2, -1, 4)))
  helper_test_op([()], lambda x: np.broadcast_to(x, (2, 3)), lambda x: x.expand(2, 3))
  helper_test_op([(1, 3)], lambda x: np.broadcast_to(x, (0, 3)), lambda x: x.expand(0, 3))

def test_pad(device):
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((1, 2), (0, 3))), lambda x: x.pad(((1, 2), (0, 3))), dtypes=ALL)
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((0, 0), (1, 2))), lambda x: x.pad((1, 2)))
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((3, 4), (1, 2))), lambda x: x.pad((1, 2, 3, 4)))
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((1, 1), (2, 0)), constant_values=-2.5), lambda x: x.pad(((1, 1), (2, 0)), value=-2.5), dtypes=FLOATS)
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((1, 1), (2, 0)), constant_values=7), lambda x: x.pad(((1, 1), (2, 0)), value=7), dtypes=(I32,))
  helper_test_op([(3, 4)], lambda x: np.pad(x, ((1, 0), (0, 0)), constant_values=np.inf), lambda x: x.pad(((1, 0), None), value=math.inf))
  helper_test_op([(3, 4)], lambda x: x[1:, :2], lambda x: x.pad(((-1, 0), (0, -2))))
  helper_test_op([(3, 4)], lambda x: np.pad(x[:, 1:], ((2, 0), (0, 0))), lambda x: x.pad(((2, 0), (-1, 0))))
  helper_test_op([(0, 2)], lambda x: np.pad(x, ((1, 1), (0, 0)), constant_values=3), lambda x: x.pad(((1, 1), None), value=3))

def test_shrink_flip(device):
  helper_test_op([(4, 5)], lambda x: x[1:3, 0:4], lambda x: x.shrink(((1, 3), (0, 4))), dtypes=ALL)
  helper_test_op([(4, 5)], lambda x: x[:, 2:2], lambda x: x.shrink((None, (2, 2))))
  helper_test_op([(4, 5)], lambda x: np.flip(x, 0), lambda x: x.flip(0), dtypes=ALL)
  helper_test_op([(2, 4, 5)], lambda x: np.flip(x, (0, 2)), lambda x: x.flip((0, -1)))

def test_flatten_unflatten_squeeze(device):
  helper_test_op([(2, 3, 4)], lambda x: x.reshape(2, 12), lambda x: x.flatten(1))
  helper_test_op([(2, 3, 4)], lambda x: x.reshape(6, 4), lambda x: x.flatten(0, 1))
  helper_test_op([(2, 3, 4)], lambda x: x.reshape(-1), lambda x: x.flatten())
  helper_test_op([()], lambda x: x.reshape(1), lambda x: x.flatten())
  helper_test_op([(2, 12)], lambda x: x.reshape(2, 3, 4), lambda x: x.unflatten(1, (3, 4)))
  helper_test_op([(2, 12)], lambda x: x.reshape(2, 2, 6), lambda x: x.unflatten(-1, (2, -1)))
  helper_test_op([(1, 3, 1, 4)], np.squeeze, lambda x: x.squeeze())
  helper_test_op([(1, 3, 1, 4)], lambda x: np.squeeze(x, 2), lambda x: x.squeeze(2))
  helper_test_op([(1, 3, 1, 4)], lambda x: x, lambda x: x.squeeze(1))
  helper_test_op([(1, 3, 1, 4)], lambda x: np.squeeze(x, (0, 2)), lambda x: x.squeeze((0, -2)))
  helper_test_op([(3, 4)], lambda x: np.expand_dims(x, 0), lambda x: x.unsqueeze(0))
  helper_test_op([(3, 4)], lambda x: np.expand_dims(x, 2), lambda x: x.unsqueeze(-1))
  helper_test_op([(3, 4)], lambda x: np.expand_dims(x, 1), lambda x: x.unsqueeze(-2))
  helper_test_op([()], lambda x: np.expand_dims(x, 0), lambda x: x.unsqueeze(0))

@pytest.mark.parametrize("idx", [
  0, -1, 2, (1, 2), (-1, -2), slice(None), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(3, 0, -2), slice(-2, None),
  slice(10, 20), slice(-10, 2), (slice(None), 1), (Ellipsis, 1), (1, Ellipsis), (None, 1), (slice(None), None, slice(1, None, 3)),
  (slice(None, None, -3), slice(None, None, 2)), (Ellipsis,), (None,), (Ellipsis, None), (1, None, slice(None, None, -1)), (slice(4, 1, -1), -3),
  (slice(0, 0),), (slice(None, None, 7),),
])
def test_getitem(device, idx):
  helper_test_op([(4, 5)], lambda x: x[idx], dtypes=(F32, I32, BOOL))

def test_getitem_3d(device):
  helper_test_op([(3, 4, 5)], lambda x: x[1:, ::-2, 3])
  helper_test_op([(3, 4, 5)], lambda x: x[..., ::2])
  helper_test_op([(3, 4, 5)], lambda x: x[None, :, None, 1, ..., None])
  helper_test_op([(3, 4, 5)], lambda x: x[-1][2][::-1])
  helper_test_op([()], lambda x: x[...])
  helper_test_op([()], lambda x: x[None])

# ***** ops on non-contiguous views *****

def test_ops_on_views(device):
  helper_test_op([(3, 4), (4, 3)], lambda a, b: a.T + b, lambda a, b: a.permute(1, 0) + b)
  helper_test_op([(3, 4), (3, 4)], lambda a, b: np.flip(a, 1) * b[::-1], lambda a, b: a.flip(1) * b[::-1], dtypes=(F32, I32))
  helper_test_op([(5, 6)], lambda a: (a[1:4, 2:] - 1).sum(0), lambda a: (a.shrink(((1, 4), (2, 6))) - 1).sum(0))
  helper_test_op([(3, 4)], lambda a: np.exp(np.pad(a, ((1, 1), (0, 2)))), lambda a: a.pad(((1, 1), (0, 2))).exp())
  helper_test_op([(3, 4)], lambda a: np.pad(a, ((1, 1), (0, 2)), constant_values=1) ** 2, lambda a: a.pad(((1, 1), (0, 2)), value=1) ** 2)
  helper_test_op([(3, 1)], lambda a: np.broadcast_to(a, (3, 4)).T.max(1), lambda a: a.expand(3, 4).T.max(1))
  helper_test_op([(2, 3, 4)], lambda a: a.transpose(2, 0, 1)[::-1, 1:, ::2] // 2, lambda a: a.permute(2, 0, 1)[::-1, 1:, ::2] // 2, dtypes=(I32,), low=-9, high=9)
  helper_test_op([(4, 4)], lambda a: a[::2, ::-2].reshape(-1) * 3, dtypes=(F32, I32))
  helper_test_op([(3, 4)], lambda a: a.T.reshape(2, 6), lambda a: a.T.reshape(2, 6))

# ***** reductions *****

REDUCE_AXES = [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2), ()]

@pytest.mark.parametrize("axis", REDUCE_AXES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_reduce(device, axis, keepdim, op):
  np_fxn = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}[op]
  helper_test_op([(2, 3, 4)], lambda x: np_fxn(x, axis=axis, keepdims=keepdim), lambda x: getattr(x, op)(axis, keepdim=keepdim),
                 dtypes=ALL if op != "mean" else (F32, F16, I32), atol=1e-5, rtol=1e-5)

@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
def test_prod(device, axis):
  helper_test_op([(2, 3, 2)], lambda x: np.prod(x, axis=axis), lambda x: x.prod(axis), dtypes=(F32, I32, I64), low=-2, high=2)
  helper_test_op([(2, 3)], lambda x: np.prod(x, axis=axis if axis != (0, 1) else None, keepdims=True),
                 lambda x: x.prod(axis if axis != (0, 1) else None, keepdim=True), dtypes=(F32,))

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_any_all(device, axis):
  helper_test_op([(3, 4)], lambda x: np.any(x, axis=axis), lambda x: x.any(axis), dtypes=(BOOL, I32, F32), low=-1, high=1)
  helper_test_op([(3, 4)], lambda x: np.all(x, axis=axis), lambda x: x.all(axis), dtypes=(BOOL, I32, F32), low=-1, high=1)
  helper_test_op([(3, 4)], lambda x: np.all(x > -1, axis=axis, keepdims=True), lambda x: (x > -1).all(axis, keepdim=True), dtypes=(I32,), low=0, high=3)

def test_reduce_empty(device):
  helper_test_op([(0, 3)], lambda x: np.sum(x, axis=0), lambda x: x.sum(0), dtypes=(F32, I32, BOOL))
  helper_test_op([(0, 3)], np.sum, lambda x: x.sum(), dtypes=(F32, I32))
  helper_test_op([(0, 3)], lambda x: np.prod(x, axis=0), lambda x: x.prod(0), dtypes=(F32, I32))
  helper_test_op([(0, 3)], lambda x: np.max(x, axis=1), lambda x: x.max(1), dtypes=(F32,))
  helper_test_op([(3, 0)], lambda x: np.any(x, axis=1), lambda x: x.any(1), dtypes=(BOOL,))
  helper_test_op([(3, 0)], lambda x: np.all(x, axis=1), lambda x: x.all(1), dtypes=(BOOL,))
  helper_test_op([(0, 3)], lambda x: np.mean(x, axis=0), lambda x: x.mean(0), dtypes=(F32,))

def test_reduce_dtypes_values(device):
  # small ints sum in int32 without overflowing int8, half sums accumulate in float32
  helper_test_op([(4, 50)], lambda x: np.sum(x, axis=1), lambda x: x.sum(1), dtypes=(I8, U8), low=0, high=120)
  helper_test_op(None, lambda x: np.sum(x.astype(np.float32)), lambda x: x.sum(), vals=[[2048.0] + [1.0]*64], dtypes=(F16,))
  helper_test_op([(5, 6)], lambda x: np.mean(x, axis=0), lambda x: x.mean(0), dtypes=(I32, BOOL))
  helper_test_op(None, lambda x: np.max(x), lambda x: x.max(), vals=[[-2**31, -5, -2**31 + 1]], dtypes=(I32,))
  helper_test_op(None, lambda x: np.min(x), lambda x: x.min(), vals=[[-2**31, 5, 2**31 - 1]], dtypes=(I32,))
  helper_test_op(None, lambda x: np.min(x), lambda x: x.min(), vals=[[0, 255, 3]], dtypes=(U8,))

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_var_std(device, axis):
  helper_test_op([(4, 5)], lambda x: np.var(x, axis=axis, ddof=1), lambda x: x.var(axis), atol=1e-5)
  helper_test_op([(4, 5)], lambda x: np.std(x, axis=axis, ddof=0, keepdims=True), lambda x: x.std(axis, keepdim=True, correction=0), atol=1e-5)

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin(device, axis):
  helper_test_op([(4, 5)], lambda x: np.argmax(x, axis=axis), lambda x: x.argmax(axis), dtypes=(F32, I32, BOOL), low=-3, high=3)
  helper_test_op([(4, 5)], lambda x: np.argmin(x, axis=axis), lambda x: x.argmin(axis), dtypes=(F32, I32, BOOL), low=-3, high=3)
  helper_test_op([(4, 5)], lambda x: np.argmax(x, axis=axis, keepdims=True), lambda x: x.argmax(axis, keepdim=True), dtypes=(F32,))
  # ties go to the first index
  helper_test_op(None, np.argmax, lambda x: x.argmax(), vals=[[1, 3, 3, 0, 3]], dtypes=(I32,))

@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), -2), ((0,), 0), ((1,), 0),
                                        ((), 0)])
def test_cumsum(device, shape, axis):
  helper_test_op([shape], lambda x: np.cumsum(x, axis=axis if shape else None).reshape(shape), lambda x: x.cumsum(axis), dtypes=(F32, I32), atol=1e-5)

# ***** matmul *****

@pytest.mark.parametrize("shapes", [[(3, 4), (4, 5)], [(4,), (4, 5)], [(3, 4), (4,)], [(4,), (4,)], [(2, 3, 4), (4, 5)], [(2, 1, 3, 4), (5, 4, 2)],
                                    [(3, 4), (2, 4, 5)], [(1, 1), (1, 1)], [(3, 0), (0, 2)], [(0, 3), (3, 2)]])
def test_matmul(device, shapes):
  helper_test_op(shapes, np.matmul, lambda a, b: a @ b, dtypes=(F32, I32), atol=1e-5)
  helper_test_op(shapes, np.matmul, lambda a, b: a.dot(b), dtypes=(F16,))

def test_matmul_mixed_and_reversed(device):
  helper_test_op([(3, 4), (4, 2)], lambda a, b: a @ b.astype(np.int32), lambda a, b: a @ b.cast(dtypes.int32), atol=1e-5)
  helper_test_op([(3, 4), (4, 2)], lambda a, b: a @ b, lambda a, b: b.__rmatmul__(a))

def test_linear(device):
  helper_test_op([(2, 3), (3, 4), (4,)], lambda x, w, b: x @ w + b, lambda x, w, b: x.linear(w, b), atol=1e-5)
  helper_test_op([(2, 3), (3, 4)], lambda x, w: x @ w, lambda x, w: x.linear(w), atol=1e-5)
  helper_test_op([(2, 3), (3,)], lambda x, w: x * w, lambda x, w: x.linear(w))

# ***** joining *****

def test_cat_stack(device):
  helper_test_op([(2, 3), (4, 3)], lambda a, b: np.concatenate([a, b], 0), lambda a, b: a.cat(b), dtypes=(F32, I32, BOOL))
  helper_test_op([(2, 3), (2, 1), (2, 0)], lambda a, b, c: np.concatenate([a, b, c], -1), lambda a, b, c: a.cat(b, c, dim=-1))
  helper_test_op([(2, 3), (2, 3)], lambda a, b: np.stack([a, b], 0), lambda a, b: a.stack(b), dtypes=(F32, BOOL))
  helper_test_op([(2, 3), (2, 3), (2, 3)], lambda a, b, c: np.stack([a, b, c], -1), lambda a, b, c: Tensor.stack(a, b, c, dim=-1))
  helper_test_op([(2, 3), (2, 3)], lambda a, b: np.stack([a, b], 1), lambda a, b: a.stack(b, dim=1))

# ***** in place on realized tensors against numpy *****

def test_inplace_ops(device):
  a = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
  t = Tensor(a).realize()
  t += 3; a += 3
  t *= 2; a *= 2
  t //= 3; a //= 3
  t %= 4; a %= 4
  t -= Tensor([[1], [2]]); a -= np.array([[1], [2]], dtype=np.int32)
  t <<= 1; a <<= 1
  t |= 1; a |= 1
  np.testing.assert_equal(t.numpy(), a)
  f = Tensor([1.0, 4.0]).realize()
  f /= 2
  f **= 2
  assert f.tolist() == [0.25, 4.0]
