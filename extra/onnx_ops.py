"""ONNX operators as Tensor ops. Each op is a function named after it: inputs positional (None where omitted), attributes as keywords.
A parameter named `opset` receives the model's opset for the op's domain (for version-specific semantics), `n_outputs` the node's output
count and `runner`/`env` the runner and the current scope (control flow). A tuple return is several outputs; a list is one sequence."""
from __future__ import annotations
import functools, itertools, math, random, re, struct, weakref, zlib
from typing import Any, Callable
from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType
from tinygrad.uop.ops import Ops, GroupOp
from extra.onnx_parser import onnx_dtype, TensorDataType, DTYPE_TO_ONNX

# ***** helpers *****

def _ints(t: Any) -> list[int]:
  if t is None: return []
  if isinstance(t, Tensor): t = t.tolist()
  if isinstance(t, (list, tuple)): return [int(v) for v in _flatten(t)]
  return [int(t)]

def _floats(t: Any) -> list[float]:
  if isinstance(t, Tensor): t = t.tolist()
  if isinstance(t, (list, tuple)): return [float(v) for v in _flatten(t)]
  return [float(t)]

def _flatten(x: Any) -> list:
  out: list = []
  stack = [x]
  while stack:
    v = stack.pop()
    if isinstance(v, (list, tuple)): stack.extend(reversed(v))
    else: out.append(v)
  return out

def _scalar(t: Any) -> Any:
  if isinstance(t, Tensor): return t.reshape(-1)[0].item() if t.numel() else None
  return t

def _axis(a: int, ndim: int) -> int:
  if not -ndim <= a < max(ndim, 1): raise IndexError(f"axis {a} is out of range for a tensor of {ndim} dims")
  return a + ndim if a < 0 else a

def _i64(v: Any, device: Any = None) -> Tensor: return Tensor(v, dtype=dtypes.int64, device=device)
def _prod(xs) -> int: return functools.reduce(lambda a, b: a * b, xs, 1)

def _take(x: Tensor, axis: int, idx: list[int]|Tensor) -> Tensor:
  """Elements at idx along axis (numpy.take)."""
  if isinstance(idx, list): idx = _i64(idx, x.device) if idx else Tensor.zeros(0, dtype=dtypes.int64, device=x.device)
  return x[(slice(None),) * axis + (idx,)]

def _lowest(dt: DType) -> Any: return -math.inf if dtypes.is_float(dt) else dtypes.min(dt)
def _highest(dt: DType) -> Any: return math.inf if dtypes.is_float(dt) else dtypes.max(dt)

# ***** elementwise *****

def Identity(x): return x
def Neg(x): return -x
def Abs(x): return x.abs()
def Ceil(x): return x.ceil()
def Floor(x): return x.floor()
def Round(x): return x.round()
def Sqrt(x): return x.sqrt()
def Exp(x): return x.exp()
def Log(x): return x.log()
def Reciprocal(x): return x.reciprocal()
def Sin(x): return x.sin()
def Cos(x): return x.cos()
def Tan(x): return x.tan()
def Asin(x): return x.asin()
def Acos(x): return x.acos()
def Atan(x): return x.atan()
def Sinh(x): return x.sinh()
def Cosh(x): return x.cosh()
def Tanh(x): return x.tanh()
def Asinh(x): return x.asinh()
def Acosh(x): return x.acosh()
def Atanh(x): return x.atanh()
# float32 erf in ~20 ops and one division (Tensor.erf's continued fraction takes 30): erf(x)/x a polynomial in x^2 below |x| = 1, above
# 1 - exp(-x^2) * P(1/(1 + |x|/2)); both least-squares fits (numpy.polyfit on Chebyshev nodes), within 2 ulp of math.erf
_ERF_SMALL = [7.9334223e-05, -0.000803482795, 0.0051912166, -0.0268553987, 0.112836257, -0.376126299, 1.12837917]
_ERF_BIG = [-0.0884684755, 0.0458693928, 0.278365955, 0.181560828, 0.302327145, 0.278944623, 0.000197535217]
def _erf(x: Tensor) -> Tensor:
  if x.dtype == dtypes.float64 or not dtypes.is_float(x.dtype) or x.requires_grad: return x.erf()
  xf = x.cast(dtypes.float32)
  # past |x| = 5 erf is 1.0f: the clamp keeps exp(-x^2) normal (denormals cost a microcode assist each, 5x slower on large activations)
  a = xf.abs().minimum(5.0)
  big = 1 - (1 / (1 + a * 0.5))._poly(_ERF_BIG) * (-(a * a)).exp()
  return (a < 1).where(xf * (xf * xf)._poly(_ERF_SMALL), xf.sign() * big).cast(x.dtype)
def Erf(x): return _erf(x)
def Sign(x): return x.sign()
def Relu(x): return x.relu()
def Sigmoid(x): return x.sigmoid()
def Softplus(x): return x.softplus()
def Softsign(x): return x.softsign()
def Mish(x): return x * x.softplus().tanh()
def HardSwish(x): return x * (x / 6 + 0.5).clip(0, 1)
def HardSigmoid(x, alpha=0.2, beta=0.5): return (x * alpha + beta).clip(0, 1)
def _expm1(x: Tensor) -> Tensor: return (x.cast(dtypes.float32) if _f32(x) else x).exp() - 1   # 16-bit exp rounded before the -1 would cancel
def Elu(x, alpha=1.0): return (x > 0).where(x, (_expm1(x) * alpha).cast(x.dtype))
def Selu(x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875): return (x > 0).where(x, (x.exp() - 1) * alpha) * gamma
def Celu(x, alpha=1.0):
  xf = x.cast(dtypes.float32) if x.dtype in (dtypes.bfloat16, dtypes.float16) else x
  return (xf.relu() + ((xf / alpha).exp() - 1).minimum(0) * alpha).cast(x.dtype)
def LeakyRelu(x, alpha=0.01): return (x >= 0).where(x, x * alpha)
def ThresholdedRelu(x, alpha=1.0): return (x > alpha).where(x, 0)
def PRelu(x, slope, opset=16):
  if opset < 7 and slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1]: slope = slope.reshape(-1, *[1] * (x.ndim - 2))   # per channel
  return (x < 0).where(x * slope, x)
def Gelu(x, approximate="none"):
  if approximate == "tanh": return x * 0.5 * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
  return x * 0.5 * (1 + _erf(x / math.sqrt(2)))
def Swish(x, alpha=1.0): return x * (x * alpha).sigmoid()
def Shrink(x, bias=0.0, lambd=0.5): return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, 0)).cast(x.dtype)
def Not(x): return x.logical_not()
def IsNaN(x): return x.isnan()
def IsInf(x, detect_negative=1, detect_positive=1):
  return ((x == math.inf) & bool(detect_positive)) | ((x == -math.inf) & bool(detect_negative))
def BitwiseNot(x): return x.bitwise_not()

def Add(a, b, **_): return a + b
def Sub(a, b, **_): return a - b
def Mul(a, b, **_): return a * b
def Div(a, b, **_): return a.idiv(b) if dtypes.is_int(a.dtype) else a / b
def Pow(a, b): return a.pow(b.cast(a.dtype) if dtypes.is_float(a.dtype) else b).cast(a.dtype)
def Mod(a, b, fmod=0): return a.fmod(b) if fmod else a.mod(b)
def And(a, b): return a.logical_and(b)
def Or(a, b): return a.logical_or(b)
def Xor(a, b): return a.logical_xor(b)
def BitwiseAnd(a, b): return a & b
def BitwiseOr(a, b): return a | b
def BitwiseXor(a, b): return a ^ b
def BitShift(x, y, direction="LEFT"): return x.lshift(y) if direction == "LEFT" else x.rshift(y)
def Equal(a, b):
  if not isinstance(a, Tensor):
    import numpy as np
    return Tensor(np.equal(a, b))
  return a == b
def Less(a, b): return a < b
def LessOrEqual(a, b): return a <= b
def Greater(a, b): return a > b
def GreaterOrEqual(a, b): return a >= b
def Where(c, x, y):
  if not isinstance(x, Tensor):
    import numpy as np
    return np.where(c.numpy(), x, y)
  return c.where(x, y)
def _nan_keep(a: Tensor, b: Tensor, r: Tensor) -> Tensor: return (a.isnan() | b.isnan()).where(math.nan, r) if dtypes.is_float(a.dtype) else r
def Max(*xs): return functools.reduce(lambda a, b: _nan_keep(a, b, a.maximum(b)), xs)
def Min(*xs): return functools.reduce(lambda a, b: _nan_keep(a, b, a.minimum(b)), xs)
def Sum(*xs): return functools.reduce(lambda a, b: a + b, xs)
def Mean(*xs): return Sum(*xs) / len(xs)
def Clip(x, min=None, max=None, opset=13):
  lo, hi = _scalar(min), _scalar(max)
  if lo is not None: x = x.maximum(lo)
  if hi is not None: x = x.minimum(hi)
  return x

# small float formats: (mantissa bits, lowest normal exponent, largest finite value, overflow value without saturation)
_SMALL_FLOATS = {17: (3, -6, 448.0, math.nan), 18: (3, -7, 240.0, math.nan), 19: (2, -14, 57344.0, math.inf), 20: (2, -15, 57344.0, math.nan),
                 23: (1, 0, 6.0, None)}
def _round_small_float(x: Tensor, fmt: int, saturate: int) -> Tensor:
  """Round float32 values to the nearest value of a small float format (ties to even), exactly, via the exponent bits."""
  mbits, emin, top, over = _SMALL_FLOATS[fmt]
  xf = x.cast(dtypes.float32)
  e = ((xf.bitcast(dtypes.uint32) >> 23) & 0xff).cast(dtypes.int32) - 127
  e = e.maximum(emin)
  q = ((e - mbits + 127).cast(dtypes.uint32) << 23).bitcast(dtypes.float32)
  r = (xf / q).round() * q
  big = r.abs() > top
  if saturate or over is None: r = big.where(r.sign() * top, r)
  else: r = big.where(r.sign() * over if over == math.inf else math.nan, r)
  if fmt == 23: r = xf.isnan().where(-0.0, r)   # fp4 has no NaN
  return xf.isnan().where(r if fmt == 23 else math.nan, r)

_SUBBYTE_INTS = {21: (0, 15, dtypes.uint8), 22: (-8, 7, dtypes.int8), 25: (0, 3, dtypes.uint8), 26: (-2, 1, dtypes.int8)}
def _cast(x: Any, to_type: int, saturate: int = 1, round_mode: str = "up") -> Any:
  if not isinstance(x, Tensor): return x
  if to_type in _SUBBYTE_INTS:   # out of range becomes 0, as onnx's reference (ml_dtypes) does
    lo, hi, dt = _SUBBYTE_INTS[to_type]
    v = x.trunc() if dtypes.is_float(x.dtype) else x
    return ((v >= lo) & (v <= hi)).where(v, 0).cast(dt)
  if to_type in _SMALL_FLOATS and dtypes.is_float(x.dtype): return _round_small_float(x, to_type, saturate).cast(onnx_dtype(to_type))
  if to_type == 24 and dtypes.is_float(x.dtype): return _round_e8m0(x, round_mode)
  return x.cast(onnx_dtype(to_type))
def _round_e8m0(x: Tensor, round_mode: str) -> Tensor:
  """To a power of two (e8m0: exponent only, 2**-127 .. 2**127), rounding up, down or to nearest as round_mode says."""
  bits = x.cast(dtypes.float32).bitcast(dtypes.uint32)
  e, mant = ((bits >> 23) & 0xff).cast(dtypes.int32) - 127, bits & 0x7fffff
  if round_mode == "up": e = e + (mant != 0).cast(dtypes.int32)
  elif round_mode == "nearest": e = e + (mant >= 0x400000).cast(dtypes.int32)
  e = (x == 0).where(-127, e).clip(-127, 127)
  val = (e == -127).where(Tensor(0x400000, dtype=dtypes.uint32), ((e + 127).cast(dtypes.uint32) << 23)).bitcast(dtypes.float32)
  return x.isnan().where(math.nan, val)
def Cast(x, to, saturate=1, round_mode="up"):
  if to == TensorDataType.STRING:
    import numpy as np
    return np.array([str(v) for v in x.numpy().reshape(-1)], dtype=object).reshape(x.shape)
  if not isinstance(x, Tensor):
    import numpy as np
    return Tensor(np.asarray(x, dtype=np.float64 if dtypes.is_float(onnx_dtype(to)) else np.int64)).cast(onnx_dtype(to))
  return _cast(x, to, saturate, round_mode)
def CastLike(x, target, saturate=1, round_mode="up", in_types=None):
  to = in_types[1] if in_types and in_types[1] else DTYPE_TO_ONNX[target.dtype]
  return _cast(x, to, saturate, round_mode)
def BitCast(x, to): return x.bitcast(onnx_dtype(to))

# ***** shapes and movement *****

def Shape(x, start=0, end=None):
  return _i64(list(x.shape)[start:end], x.device) if len(list(x.shape)[start:end]) else Tensor.zeros(0, dtype=dtypes.int64, device=x.device)
def Size(x): return _i64(_prod(x.shape), x.device)
def Reshape(x, shape=None, allowzero=0):
  s = _ints(shape)
  s = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(s)]
  return x.reshape(s)
def Flatten(x, axis=1):
  axis = _axis(axis, x.ndim) if axis != x.ndim else axis
  return x.reshape(_prod(x.shape[:axis]), _prod(x.shape[axis:]))
def Squeeze(x, axes=None):
  ax = [_axis(a, x.ndim) for a in _ints(axes)] if axes is not None else [i for i, s in enumerate(x.shape) if s == 1]
  return x.reshape([s for i, s in enumerate(x.shape) if i not in ax])
def Unsqueeze(x, axes=None):
  n = x.ndim + len(ax_ := _ints(axes))
  ax = sorted(_axis(a, n) for a in ax_)
  shape = list(x.shape)
  for a in ax: shape.insert(a, 1)
  return x.reshape(shape)
def Transpose(x, perm=None): return x.permute(perm if perm is not None else list(range(x.ndim))[::-1])
def Concat(*xs, axis=0):
  if not isinstance(xs[0], Tensor):
    import numpy as np
    return np.concatenate(xs, axis=axis)
  return xs[0].cat(*xs[1:], dim=axis)
def Split(x, split=None, axis=0, num_outputs=None, n_outputs=1):
  axis = _axis(axis, x.ndim)
  if split is not None: sizes = _ints(split)
  else:
    n = num_outputs or n_outputs
    c = -(-x.shape[axis] // n)
    sizes = [min(c, x.shape[axis] - c * i) for i in range(n)]
  return tuple(x.split(sizes, axis))
def Slice(x, starts, ends, axes=None, steps=None):
  st, en = _ints(starts), _ints(ends)
  ax = _ints(axes) if axes is not None else list(range(len(st)))
  sp = _ints(steps) if steps is not None else [1] * len(st)
  sl = [slice(None)] * x.ndim
  for s, e, a, p in zip(st, en, ax, sp): sl[_axis(a, x.ndim)] = slice(s, e, p)
  return x[tuple(sl)]
def _broadcast_shape(*shapes) -> tuple[int, ...]:
  n = max(len(s) for s in shapes)
  out = []
  for dims in zip(*[(1,) * (n - len(s)) + tuple(s) for s in shapes]):
    big = [d for d in dims if d != 1]
    if big and any(d != big[0] for d in big): raise RuntimeError(f"shapes {shapes} don't broadcast")
    out.append(big[0] if big else 1)
  return tuple(out)
def Expand(x, shape):
  s = _broadcast_shape(x.shape, _ints(shape))
  return x.reshape((1,) * (len(s) - x.ndim) + tuple(x.shape)).expand(s)
def Tile(x, repeats): return x.repeat(_ints(repeats))
def _norm_index(idx: Tensor, n: int) -> Tensor: return (idx < 0).where(idx + n, idx)
def Gather(x, indices, axis=0, runner=None):
  axis = _axis(axis, x.ndim)
  if not isinstance(x, Tensor):
    import numpy as np
    return np.take(x, indices.numpy(), axis=axis)
  if indices.ndim == 0 and indices.numel() == 1:
    i = int(indices.item())
    return _take(x, axis, [i + x.shape[axis] if i < 0 else i]).squeeze(axis)
  return _take(x, axis, _norm_index(indices.cast(dtypes.int64), x.shape[axis]))

def GatherElements(x, indices, axis=0):
  axis = _axis(axis, x.ndim)
  return x.gather(axis, _norm_index(indices, x.shape[axis]))
def _nd_linear(data_shape, indices: Tensor, batch_dims: int) -> tuple[Tensor, int]:
  k = indices.shape[-1]
  dims = data_shape[batch_dims:batch_dims + k]
  strides = [_prod(dims[i + 1:]) for i in range(k)]
  idx = _norm_index(indices.cast(dtypes.int64), _i64(list(dims), indices.device))
  lin = (idx * _i64(strides, indices.device)).sum(-1) if k else Tensor.zeros(indices.shape[:-1], dtype=dtypes.int64, device=indices.device)
  nb = _prod(data_shape[:batch_dims])
  if batch_dims:
    b = Tensor.arange(nb, dtype=dtypes.int64, device=indices.device).reshape(list(data_shape[:batch_dims]) + [1] * (lin.ndim - batch_dims))
    lin = lin + b * _prod(dims)
  return lin, nb * _prod(dims)
def GatherND(data, indices, batch_dims=0):
  lin, n = _nd_linear(data.shape, indices, batch_dims)
  rest = data.shape[batch_dims + indices.shape[-1]:]
  return _take(data.reshape((n,) + tuple(rest)), 0, lin.reshape(-1)).reshape(tuple(lin.shape) + tuple(rest))
_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
def ScatterND(data, indices, updates, reduction="none"):
  lin, n = _nd_linear(data.shape, indices, 0)
  rest = tuple(data.shape[indices.shape[-1]:])
  flat, m = data.reshape((n,) + rest), _prod(lin.shape)
  idx = lin.reshape((m,) + (1,) * len(rest)).expand((m,) + rest)
  upd = updates.reshape((m,) + rest)
  out = flat.scatter(0, idx, upd) if reduction == "none" else flat.scatter_reduce(0, idx, upd, _REDUCTIONS[reduction])
  return out.reshape(data.shape)
def ScatterElements(data, indices, updates, axis=0, reduction="none"):
  axis = _axis(axis, data.ndim)
  idx = _norm_index(indices, data.shape[axis])
  return data.scatter(axis, idx, updates) if reduction == "none" else data.scatter_reduce(axis, idx, updates, _REDUCTIONS[reduction])
Scatter = ScatterElements
def Pad(x, pads=None, constant_value=None, axes=None, mode="constant", value=0.0, paddings=None):
  p = _ints(pads if pads is not None else paddings)
  ax = [_axis(a, x.ndim) for a in _ints(axes)] if axes is not None else list(range(x.ndim))
  pairs: list[tuple[int, int]] = [(0, 0)] * x.ndim
  for i, a in enumerate(ax): pairs[a] = (p[i], p[i + len(ax)])
  v = _scalar(constant_value) if constant_value is not None else value
  if mode == "constant": return x.pad(tuple(pairs), value=v if v is not None else 0)
  return x.pad(tuple(pairs), mode={"reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode])
def ConstantOfShape(shape, value=None):
  s = _ints(shape)
  if value is None: return Tensor.zeros(s, dtype=dtypes.float32)
  return Tensor.full(s, value.reshape(-1)[0].item(), dtype=value.dtype, device=value.device) if _prod(s) else Tensor.zeros(s, dtype=value.dtype)
def Constant(value=None, value_float=None, value_floats=None, value_int=None, value_ints=None, value_string=None, value_strings=None,
             sparse_value=None):
  if value is not None: return value
  if sparse_value is not None: return sparse_value
  if value_float is not None: return Tensor(value_float, dtype=dtypes.float32)
  if value_floats is not None: return Tensor(value_floats, dtype=dtypes.float32)
  if value_int is not None: return _i64(value_int)
  if value_ints is not None: return _i64(value_ints)
  import numpy as np
  return np.array(value_string if value_string is not None else value_strings, dtype=object)
def Range(start, limit, delta):
  s, l, d = _scalar(start), _scalar(limit), _scalar(delta)
  n = max(math.ceil((l - s) / d), 0)
  return (Tensor.arange(n, device=start.device).cast(start.dtype) * d + s).cast(start.dtype) if n else Tensor.zeros(0, dtype=start.dtype)
def OneHot(indices, depth, values, axis=-1):
  d = int(_scalar(depth))
  axis = _axis(axis, indices.ndim + 1)
  idx = _norm_index(indices.cast(dtypes.int64), d).unsqueeze(axis)
  ar = Tensor.arange(d, dtype=dtypes.int64).reshape([d if i == axis else 1 for i in range(indices.ndim + 1)])
  return (idx == ar).where(values[1], values[0])
def Trilu(x, k=None, upper=1):
  kk = int(_scalar(k)) if k is not None else 0
  return x.triu(kk) if upper else x.tril(kk)
def Compress(x, condition, axis=None):
  keep = [i for i, c in enumerate(_flatten(condition.tolist())) if c]
  if axis is None: return _take(x.reshape(-1), 0, keep)
  return _take(x, _axis(axis, x.ndim), keep)
def DepthToSpace(x, blocksize, mode="DCR"):
  b, c, h, w = x.shape
  if mode == "DCR": y = x.reshape(b, blocksize, blocksize, c // blocksize**2, h, w).permute(0, 3, 4, 1, 5, 2)
  else: y = x.reshape(b, c // blocksize**2, blocksize, blocksize, h, w).permute(0, 1, 4, 2, 5, 3)
  return y.reshape(b, c // blocksize**2, h * blocksize, w * blocksize)
def SpaceToDepth(x, blocksize, mode="DCR"):
  b, c, h, w = x.shape
  y = x.reshape(b, c, h // blocksize, blocksize, w // blocksize, blocksize).permute((0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
  return y.reshape(b, c * blocksize**2, h // blocksize, w // blocksize)
def EyeLike(x, dtype=None, k=0):
  n, m = x.shape
  dt = onnx_dtype(dtype) if dtype is not None else x.dtype
  return (Tensor.arange(n).reshape(n, 1) + k == Tensor.arange(m).reshape(1, m)).cast(dt)
def NonZero(x):
  vals = _flatten(x.tolist()) if x.ndim else [x.item()]
  hits = [i for i, v in enumerate(vals) if v]
  coords = [[(i // _prod(x.shape[d + 1:])) % x.shape[d] for i in hits] for d in range(x.ndim)]
  return _i64(coords, x.device).reshape(x.ndim, len(hits)) if hits else Tensor.zeros(x.ndim, 0, dtype=dtypes.int64)
def Unique(x, axis=None, sorted=1):
  if axis is None: items, rest = [(v,) for v in _flatten(x.tolist())], None
  else:
    axis = _axis(axis, x.ndim)
    xm = x.transpose(0, axis) if axis else x
    items, rest = [tuple(_flatten(r)) for r in xm.tolist()], xm.shape[1:]
  first: dict = {}
  for i, it in enumerate(items): first.setdefault(it, i)
  keys = list(first)
  if sorted: keys.sort()
  pos = {k: i for i, k in enumerate(keys)}
  inverse = [pos[it] for it in items]
  counts = [0] * len(keys)
  for i in inverse: counts[i] += 1
  if axis is None: y = Tensor([k[0] for k in keys], dtype=x.dtype) if keys else Tensor.zeros(0, dtype=x.dtype)
  else:
    y = Tensor([list(k) for k in keys], dtype=x.dtype).reshape((len(keys),) + tuple(rest))
    y = y.transpose(0, axis) if axis else y
  return y, _i64([first[k] for k in keys]), _i64(inverse), _i64(counts)
def TopK(x, k, axis=-1, largest=1, sorted=1):
  kk, axis = int(_scalar(k)), _axis(axis, x.ndim)
  # stable sort keeps the lower index first among equal values, as ONNX asks
  order = _stable_argsort(x, axis, bool(largest))
  idx = order.shrink(tuple((0, kk) if i == axis else None for i in range(x.ndim)))
  return x.gather(axis, idx), idx.cast(dtypes.int64)
def _stable_argsort(x: Tensor, axis: int, descending: bool) -> Tensor:
  return x.sort(axis, descending=descending, stable=True)[1]
def ReverseSequence(x, sequence_lens, batch_axis=1, time_axis=0):
  lens, t = _ints(sequence_lens), x.shape[time_axis]
  idx = [[(l - 1 - i if i < l else i) for l in lens] for i in range(t)]   # (time, batch)
  it = _i64(idx, x.device)
  if batch_axis < time_axis: it = it.transpose(0, 1)
  it = it.reshape(list(it.shape) + [1] * (x.ndim - 2)).expand(x.shape)
  return x.gather(time_axis, it)

# ***** reductions *****

def _reduce(x, axes, keepdims, noop_with_empty_axes, op: str, opset: int, new_opset: int, attr_axes=None):
  ax_in = axes if opset >= new_opset else attr_axes if attr_axes is not None else axes
  ax = _ints(ax_in) if ax_in is not None else []
  if not ax:
    if noop_with_empty_axes and opset >= new_opset: return x
    ax = list(range(x.ndim))
  ax = sorted({_axis(a, x.ndim) for a in ax})
  dt = x.dtype
  if any(x.shape[a] == 0 for a in ax):
    ident = {"sum": 0, "mean": math.nan, "prod": 1, "max": _lowest(dt), "min": _highest(dt), "l1": 0, "l2": 0, "logsum": -math.inf,
             "logsumexp": -math.inf, "sumsquare": 0}[op]
    shape = [1 if i in ax else s for i, s in enumerate(x.shape)] if keepdims else [s for i, s in enumerate(x.shape) if i not in ax]
    return Tensor.full(shape, ident, dtype=dt)
  k = bool(keepdims)
  if op == "sum": r = x.sum(ax, keepdim=k)
  elif op == "mean": r = x.mean(ax, keepdim=k)
  elif op == "prod": r = x.prod(ax, keepdim=k)
  elif op == "max": r = x.cast(dtypes.uint8).max(ax, keepdim=k) if dt == dtypes.bool else x.max(ax, keepdim=k)
  elif op == "min": r = x.cast(dtypes.uint8).min(ax, keepdim=k) if dt == dtypes.bool else x.min(ax, keepdim=k)
  elif op == "l1": r = x.abs().sum(ax, keepdim=k)
  elif op == "l2":
    xf = x if dtypes.is_float(dt) else x.cast(dtypes.float32)
    r = (xf * xf).sum(ax, keepdim=k).sqrt()
  elif op == "logsum": r = x.sum(ax, keepdim=k).log()
  elif op == "logsumexp": r = x.logsumexp(ax, keepdim=k)
  else: r = (x * x).sum(ax, keepdim=k)
  return r.cast(dt)
def _make_reduce(op: str, new_opset: int) -> Callable:
  def fn(x, axes=None, keepdims=1, noop_with_empty_axes=0, opset=18): return _reduce(x, axes, keepdims, noop_with_empty_axes, op, opset, new_opset)
  return fn
ReduceSum = _make_reduce("sum", 13)
ReduceMean, ReduceProd, ReduceMax, ReduceMin = (_make_reduce(o, 18) for o in ("mean", "prod", "max", "min"))
ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare = (_make_reduce(o, 18) for o in ("l1", "l2", "logsum", "logsumexp", "sumsquare"))
def _arg(x, axis, keepdims, select_last_index, largest):
  axis = _axis(axis, x.ndim)
  xx = x.flip(axis) if select_last_index else x
  i = (xx.argmax(axis, keepdim=True) if largest else xx.argmin(axis, keepdim=True)).cast(dtypes.int64)
  if select_last_index: i = (x.shape[axis] - 1) - i
  return i if keepdims else i.squeeze(axis)
def ArgMax(x, axis=0, keepdims=1, select_last_index=0): return _arg(x, axis, keepdims, select_last_index, True)
def ArgMin(x, axis=0, keepdims=1, select_last_index=0): return _arg(x, axis, keepdims, select_last_index, False)
def _cum(x, axis, exclusive, reverse, prod: bool):
  ax = _axis(int(_scalar(axis)), x.ndim)
  if reverse: x = x.flip(ax)
  if exclusive:
    x = x.pad(tuple((1, -1) if i == ax else None for i in range(x.ndim)), value=1 if prod else 0)
  y = (x.cumprod(ax) if prod else x.cumsum(ax)).cast(x.dtype)
  return y.flip(ax) if reverse else y
def CumSum(x, axis, exclusive=0, reverse=0): return _cum(x, axis, exclusive, reverse, False)
def CumProd(x, axis, exclusive=0, reverse=0): return _cum(x, axis, exclusive, reverse, True)

def _flat2d(fn: Callable, x: Tensor, axis: int, opset: int, new_opset: int = 13) -> Tensor:
  # contiguous: works around a fusion bug where a reduce feeding softmax is recomputed with another summation order, so x - max(x) > 0
  x = x.contiguous()
  if opset >= new_opset: return fn(x, _axis(axis, x.ndim))
  a = _axis(axis, x.ndim)
  return fn(x.reshape(_prod(x.shape[:a]), _prod(x.shape[a:])), 1).reshape(x.shape)
def _shifted_exp(t: Tensor, a: int) -> tuple[Tensor, Tensor, Tensor]:
  # (x - max, exp of it, sum of those) in float32 (half rounds once at the end). Differences below -80 (a -10000 or -inf attention mask)
  # exp to 0 (the true value is under 2e-35): exp of the clamped value stays normal, and so does the softmax after the division; a
  # denormal costs a microcode assist in every kernel that reads it (the attention's probabilities @ V ran 20x slower)
  d = (xf := t.cast(dtypes.float32) if _f32(t) else t) - xf.max(a, keepdim=True).detach()
  e = (d < -80).where(0.0, (d < -80).where(-80.0, d).exp())
  return d, e, e.sum(a, keepdim=True)
def _softmax(t: Tensor, a: int) -> Tensor:
  if _f32(t):   # 16-bit: each step rounded to the type, as ONNX's reference (numpy) does; numpy sums bfloat16 in bfloat16 one add at a time
    e = (t - t.max(a, keepdim=True)).exp()
    return e / e.sum(a, keepdim=True, dtype=e.dtype if e.dtype == dtypes.bfloat16 else None)
  return ((e := _shifted_exp(t, a))[1] * e[2].reciprocal()).cast(t.dtype)
def _log_softmax(t: Tensor, a: int) -> Tensor: return ((e := _shifted_exp(t, a))[0] - e[2].log()).cast(t.dtype)
def Softmax(x, axis=None, opset=13): return _flat2d(_softmax, x, (-1 if opset >= 13 else 1) if axis is None else axis, opset)
def LogSoftmax(x, axis=None, opset=13): return _flat2d(_log_softmax, x, (-1 if opset >= 13 else 1) if axis is None else axis, opset)
def _hardmax(t: Tensor, a: int) -> Tensor:
  return (t.argmax(a, keepdim=True) == Tensor.arange(t.shape[a]).reshape([-1 if i == a else 1 for i in range(t.ndim)])).cast(t.dtype)
def Hardmax(x, axis=None, opset=13): return _flat2d(_hardmax, x, (-1 if opset >= 13 else 1) if axis is None else axis, opset)

# ***** linear algebra *****

def _f32(x: Tensor) -> bool: return x.dtype in (dtypes.float16, dtypes.bfloat16)
def _operand(x: Tensor, reads: Any) -> Tensor:
  """A matmul operand is read once per output column (row): elementwise maths in front of it (a gelu, a layer norm's scale and shift,
  a softmax's exp) runs in its own kernel, fused into the kernel that produced its input, instead of again in every read."""
  if not isinstance(reads, int) or reads <= 1: return x
  seen, stack = set(), [x.uop]
  while stack:
    u = stack.pop()
    if u in seen or u.is_realized or u.op in (Ops.REDUCE_AXIS, Ops.CONTIGUOUS): continue
    seen.add(u)
    if u.op in GroupOp.ALU: return x.contiguous()
    stack.extend(u.src)
  return x
def _operands(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
  return _operand(a, b.shape[-1] if b.ndim > 1 else 1), _operand(b, a.shape[-2] if a.ndim > 1 else 1)
def MatMul(a, b):
  a, b = _operands(a, b)
  return (a.cast(dtypes.float32) @ b.cast(dtypes.float32)).cast(a.dtype) if _f32(a) else a @ b
def Gemm(A, B, C=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
  a, b = _operands(A.T if transA else A, B.T if transB else B)
  y = (a @ b) * alpha if alpha != 1.0 else a @ b
  if C is not None: y = y + (C * beta if beta != 1.0 else C)
  return y.cast(A.dtype)
def Einsum(*xs, equation): return Tensor.einsum(equation, *xs)
def MatMulInteger(A, B, a_zero_point=None, b_zero_point=None):
  a = A.cast(dtypes.int32) - (a_zero_point.cast(dtypes.int32) if a_zero_point is not None else 0)
  b = B.cast(dtypes.int32) - (b_zero_point.cast(dtypes.int32) if b_zero_point is not None else 0)
  return (a @ b).cast(dtypes.int32)
def Det(x):
  # LU without pivot search is unstable; Gaussian elimination with partial pivoting on the host is exact enough for small matrices
  import numpy as np
  return Tensor(np.linalg.det(x.numpy()).astype(np.float32 if x.dtype == dtypes.float32 else np.float64), dtype=x.dtype)

# ***** convolution and pooling *****

def _pads(x_spatial, k, s, d, pads, auto_pad, ceil_mode=0) -> list[tuple[int, int]]:
  n = len(k)
  if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    out = []
    for i in range(n):
      o = -(-x_spatial[i] // s[i])
      total = max((o - 1) * s[i] + (k[i] - 1) * d[i] + 1 - x_spatial[i], 0)
      small, big = total // 2, total - total // 2
      out.append((small, big) if auto_pad == "SAME_UPPER" else (big, small))
    return out
  if auto_pad == "VALID" or pads is None: return [(0, 0)] * n
  return [(pads[i], pads[i + n]) for i in range(n)]

def _conv_args(x, kernel_shape, strides, dilations, pads, auto_pad):
  n = len(kernel_shape)
  s, d = strides or [1] * n, dilations or [1] * n
  return s, d, _pads(x.shape[2:], kernel_shape, s, d, pads, auto_pad)

def Conv(x, W, B=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None):
  k = kernel_shape or list(W.shape[2:])
  s, d, p = _conv_args(x, k, strides, dilations, pads, auto_pad)
  if W.uop.is_realized and not W.requires_grad:   # a constant weight (an initializer): packed for the device once, then reused
    # (in the panels of the output width's register tile; a Winograd conv's weight transformed, in the panels of its GEMMs)
    padded = tuple(sz + sum(pp) if isinstance(sz, int) else sz for sz, pp in zip(x.shape[2:], p))
    wino = Tensor._winograd_tile(x.shape[:2] + padded, W.shape, group, tuple(s), tuple(d), W.dtype, True) if x.dtype == W.dtype else 0
    width = f"wino{wino}" if wino else (x.shape[-1] + sum(p[-1]) - d[-1] * (k[-1] - 1) - 1) // s[-1] + 1 if isinstance(x.shape[-1], int) else None
    if (packed := _packed_weights.get(id(W))) is None or packed[0]() is not W or packed[1] != width:
      _packed_weights[id(W)] = packed = (weakref.ref(W), width, W.winograd_conv_weight(m=wino) if wino else W.pack_conv_weight(group, width))
      weakref.finalize(W, _packed_weights.pop, id(W), None)   # the copy lives as long as the weight
    if wino:
      y = x.pad(((0, 0), (0, 0)) + tuple(p))._winograd_conv(packed[2])
      return y if B is None else y + B.reshape(1, -1, 1, 1)
    W = packed[2]
  # 16-bit: exact products summed in float32, rounded once (numpy's reference does the same)
  half, f32 = x.dtype, (lambda t: t.cast(dtypes.float32) if t is not None and _f32(t) else t)
  # the padding goes to conv2d (as torch's flat pairs, last dim first), which can lay out the padded input for the device
  return f32(x).conv2d(f32(W), f32(B), groups=group, stride=tuple(s), dilation=tuple(d), padding=[v for pair in reversed(p) for v in pair]).cast(half)
_packed_weights: dict[int, tuple[weakref.ref, int|str|None, Tensor]] = {}

def ConvInteger(x, w, x_zero_point=None, w_zero_point=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None,
                strides=None):
  xi = x.cast(dtypes.int32) - (x_zero_point.cast(dtypes.int32) if x_zero_point is not None else 0)
  wi = w.cast(dtypes.int32) - (w_zero_point.cast(dtypes.int32).reshape(-1, *[1] * (w.ndim - 1)) if w_zero_point is not None else 0)
  return Conv(xi, wi, None, auto_pad, dilations, group, kernel_shape, pads, strides).cast(dtypes.int32)

def ConvTranspose(x, W, B=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, output_padding=None, output_shape=None,
                  pads=None, strides=None):
  k = kernel_shape or list(W.shape[2:])
  n = len(k)
  s, d = strides or [1] * n, dilations or [1] * n
  op = output_padding or [0] * n
  full = [(x.shape[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 for i in range(n)]
  if output_shape is not None:
    total = [full[i] + op[i] - output_shape[-n:][i] for i in range(n)]
    p = [((t // 2, t - t // 2) if auto_pad == "SAME_UPPER" else (t - t // 2, t // 2)) for t in total]
  elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    total = [full[i] + op[i] - x.shape[2 + i] * s[i] for i in range(n)]
    p = [((t // 2, t - t // 2) if auto_pad == "SAME_UPPER" else (t - t // 2, t // 2)) for t in total]
  elif auto_pad == "VALID" or pads is None: p = [(0, 0)] * n
  else: p = [(pads[i], pads[i + n]) for i in range(n)]
  y = x.conv_transpose2d(W, None, groups=group, stride=tuple(s), dilation=tuple(d))
  y = y.pad(((0, 0), (0, 0)) + tuple((-a, -b + op[i]) for i, (a, b) in enumerate(p)))
  return y + B.reshape(1, -1, *[1] * n) if B is not None else y

def _pool_setup(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode):
  n = len(kernel_shape)
  k, s, d = list(kernel_shape), strides or [1] * n, dilations or [1] * n
  p = _pads(x.shape[2:], k, s, d, pads, auto_pad)
  extra = []
  for i in range(n):
    size = x.shape[2 + i] + p[i][0] + p[i][1]
    eff = (k[i] - 1) * d[i] + 1
    o = (-(-(size - eff) // s[i]) if ceil_mode else (size - eff) // s[i]) + 1
    if ceil_mode and (o - 1) * s[i] >= x.shape[2 + i] + p[i][0]: o -= 1
    extra.append(max((o - 1) * s[i] + eff - size, 0))
  return k, s, d, p, extra

def _windows(x: Tensor, pairs, k, s, d, value) -> Tensor:
  return x.pad(((0, 0), (0, 0)) + tuple(pairs), value=value)._pool(tuple(k), tuple(s), tuple(d))

def MaxPool(x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0, strides=None, n_outputs=1):
  k, s, d, p, extra = _pool_setup(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
  n = len(k)
  pairs = [(a, b + e) for (a, b), e in zip(p, extra)]
  w = _windows(x, pairs, k, s, d, _lowest(x.dtype))
  # the max over the window dims as they are (flattening them first turns every read's index into divisions), with no nan check (a
  # second reduce): a nan is skipped, as onnxruntime's comparisons skip it
  y = w._max_skip_nan(tuple(range(-n, 0)))
  if n_outputs < 2: return y
  flat_w = w.reshape(*w.shape[:2 + n], -1)
  sp = x.shape[2:]
  if storage_order: pos = [sum(c * _prod(sp[:j]) for j, c in enumerate(cs)) for cs in itertools.product(*[range(v) for v in sp])]
  else: pos = list(range(_prod(sp)))
  idx = _i64(pos, x.device).reshape(1, 1, *sp).expand(x.shape[0], x.shape[1], *sp)
  iw = _windows(idx, pairs, k, s, d, -1)
  iw = iw.reshape(*iw.shape[:2 + n], -1)
  am = flat_w.argmax(-1, keepdim=True)
  ind = iw.gather(-1, am).squeeze(-1)
  base = Tensor.arange(x.shape[0] * x.shape[1], dtype=dtypes.int64).reshape(x.shape[0], x.shape[1], *[1] * n) * _prod(sp)
  return y, ind + base

def AveragePool(x, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None, pads=None, strides=None):
  k, s, d, p, extra = _pool_setup(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
  n = len(k)
  pairs = [(a, b + e) for (a, b), e in zip(p, extra)]
  summed = _windows(x, pairs, k, s, d, 0).sum(tuple(range(-n, 0)))
  ones = Tensor.ones(1, 1, *x.shape[2:], dtype=x.dtype)
  if count_include_pad: ones = ones.pad(((0, 0), (0, 0)) + tuple(p), value=1)
  cnt = _windows(ones, [(0, e) for e in extra] if count_include_pad else pairs, k, s, d, 0).sum(tuple(range(-n, 0)))
  return (summed / cnt).cast(x.dtype)

def LpPool(x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2, pads=None, strides=None):
  k, s, d, pp, extra = _pool_setup(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
  n = len(k)
  w = _windows(x.abs().pow(p), [(a, b + e) for (a, b), e in zip(pp, extra)], k, s, d, 0)
  return w.sum(tuple(range(-n, 0))).pow(1 / p)

def GlobalAveragePool(x): return x.mean(tuple(range(2, x.ndim)), keepdim=True)
def GlobalMaxPool(x): return x.max(tuple(range(2, x.ndim)), keepdim=True)
def GlobalLpPool(x, p=2): return x.abs().pow(p).sum(tuple(range(2, x.ndim)), keepdim=True).pow(1 / p)

def MaxUnpool(x, I, output_shape=None, kernel_shape=None, pads=None, strides=None):
  n = len(kernel_shape)
  s = strides or [1] * n
  p = pads or [0] * (2 * n)
  if output_shape is not None: out = _ints(output_shape)[2:]
  else: out = [(x.shape[2 + i] - 1) * s[i] + kernel_shape[i] - p[i] - p[i + n] for i in range(n)]
  b, c = x.shape[:2]
  # indices address the unpooled shape the pool saw; a larger output_shape pads it at the end
  inferred = [(x.shape[2 + i] - 1) * s[i] + kernel_shape[i] - p[i] - p[i + n] for i in range(n)]
  y = Tensor.zeros(b, c, _prod(inferred), dtype=x.dtype).scatter(2, I.reshape(b, c, -1) % _prod(inferred), x.reshape(b, c, -1))
  return y.reshape(b, c, *inferred).pad(((0, 0), (0, 0)) + tuple((0, o - i) for o, i in zip(out, inferred)))

# ***** normalization *****

def BatchNormalization(x, scale, B, input_mean, input_var, epsilon=1e-5, momentum=0.9, training_mode=0, spatial=1, is_test=0, n_outputs=1):
  shp = (1, -1) + (1,) * (x.ndim - 2)
  if training_mode:
    ax = tuple(i for i in range(x.ndim) if i != 1)
    mean, var = x.mean(ax), x.var(ax, correction=0)
    y = (x - mean.reshape(shp)) / (var.reshape(shp) + epsilon).sqrt() * scale.reshape(shp) + B.reshape(shp)
    return y, input_mean * momentum + mean * (1 - momentum), input_var * momentum + var * (1 - momentum)
  y = (x - input_mean.reshape(shp)) * (scale / (input_var + epsilon).sqrt()).reshape(shp) + B.reshape(shp)
  return y if n_outputs == 1 else (y,) + (input_mean, input_var)[:n_outputs - 1]
def InstanceNormalization(x, scale, B, epsilon=1e-5):
  ax = tuple(range(2, x.ndim))
  shp = (1, -1) + (1,) * (x.ndim - 2)
  mean, var = x.mean(ax, keepdim=True), x.var(ax, keepdim=True, correction=0)
  return (x - mean) / (var + epsilon).sqrt() * scale.reshape(shp) + B.reshape(shp)
def LayerNormalization(x, scale, B=None, axis=-1, epsilon=1e-5, stash_type=1):
  a = _axis(axis, x.ndim)
  ax = tuple(range(a, x.ndim))
  xf = x.cast(dtypes.float32) if stash_type == 1 else x
  mean = xf.mean(ax, keepdim=True)
  inv = ((xf - mean).square().mean(ax, keepdim=True) + epsilon).rsqrt()
  y = ((xf - mean) * inv).cast(x.dtype) * scale
  if B is not None: y = y + B
  # stored once: its readers (the next matmul, the residual add, the next normalization's reduces) don't each recompute it and the chain behind it
  return y.contiguous(), mean, inv
def RMSNormalization(x, scale, axis=-1, epsilon=1e-5, stash_type=1):
  ax = tuple(range(_axis(axis, x.ndim), x.ndim))
  xf = x.cast(dtypes.float32) if stash_type == 1 else x
  return (xf * (xf.square().mean(ax, keepdim=True) + epsilon).rsqrt()).cast(x.dtype) * scale
def GroupNormalization(x, scale, bias, epsilon=1e-5, num_groups=1, stash_type=1, opset=21):
  b, c = x.shape[:2]
  xf = x.cast(dtypes.float32) if stash_type == 1 else x
  g = xf.reshape(b, num_groups, -1)
  y = ((g - g.mean(-1, keepdim=True)) * (g.var(-1, keepdim=True, correction=0) + epsilon).rsqrt()).reshape(x.shape).cast(x.dtype)
  shp = (1, -1) + (1,) * (x.ndim - 2)
  if scale.shape[0] != c:   # opset 18: one scale and bias per group
    scale, bias = scale.repeat_interleave(c // num_groups), bias.repeat_interleave(c // num_groups)
  return y * scale.reshape(shp) + bias.reshape(shp)
def LRN(x, size, alpha=1e-4, beta=0.75, bias=1.0):
  c = x.shape[1]
  sq = x.square().reshape(x.shape[0], 1, c, -1)
  lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
  win = sq.pad(((0, 0), (0, 0), (lo, hi), (0, 0)))._pool((size, 1)).sum((-1, -2)).reshape(x.shape)
  return x / (bias + alpha / size * win).pow(beta)
def LpNormalization(x, axis=-1, p=2):
  n = x.abs().sum(axis, keepdim=True) if p == 1 else x.square().sum(axis, keepdim=True).sqrt()
  return (n == 0).where(0, x / n).cast(x.dtype)
def MeanVarianceNormalization(x, axes=(0, 2, 3)):
  mean = x.mean(tuple(axes), keepdim=True)
  return (x - mean) / ((x.square().mean(tuple(axes), keepdim=True) - mean.square()).sqrt() + 1e-9)

def _numpy_uniform(seed: int, n: int) -> list[float]:
  # numpy's legacy RandomState: MT19937 seeded by init_genrand, doubles from two draws (53 bits), which is what Python's random.random() makes
  mt = [seed & 0xffffffff]
  for i in range(1, 624): mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xffffffff)
  rng = random.Random()
  rng.setstate((3, (*mt, 624), None))
  return [rng.random() for _ in range(n)]
def Dropout(data, ratio=None, training_mode=None, seed=None, is_test=0, n_outputs=1, opset=13):
  r = _scalar(ratio) if isinstance(ratio, Tensor) else (ratio if ratio is not None else 0.5)
  training = bool(_scalar(training_mode)) if training_mode is not None else False
  if not training or r == 0:
    return data if n_outputs == 1 else (data, Tensor.ones(data.shape, dtype=dtypes.bool))
  if seed is None: mask = Tensor.rand(data.shape, device=data.device) >= r
  else:   # seeded: the mask of ONNX's reference, np.random.seed(seed); np.random.uniform(size=shape) >= ratio, reproducible everywhere
    mask = Tensor([u >= r for u in _numpy_uniform(int(seed), _prod(data.shape))], device=data.device, dtype=dtypes.bool).reshape(data.shape)
  y = mask.where(data * (1 / (1 - r)), 0).cast(data.dtype)
  return y if n_outputs == 1 else (y, mask)

# ***** losses *****

def NegativeLogLikelihoodLoss(x, target, weight=None, ignore_index=None, reduction="mean"):
  c = x.shape[1]
  t = target.cast(dtypes.int64)
  valid = (t != ignore_index) if ignore_index is not None else Tensor.ones(t.shape, dtype=dtypes.bool)
  tc = valid.where(t, 0)
  picked = -x.gather(1, tc.unsqueeze(1)).squeeze(1)
  w = _take(weight, 0, tc.reshape(-1)).reshape(t.shape) if weight is not None else Tensor.ones(t.shape, dtype=x.dtype)
  w = valid.where(w, 0).cast(x.dtype)
  loss = picked * w
  del c
  if reduction == "none": return loss
  if reduction == "sum": return loss.sum()
  return loss.sum() / w.sum()
def SoftmaxCrossEntropyLoss(scores, labels, weights=None, ignore_index=None, reduction="mean", n_outputs=1):
  logp = scores.log_softmax(1)
  loss = NegativeLogLikelihoodLoss(logp, labels, weights, ignore_index, reduction)
  return loss if n_outputs == 1 else (loss, logp)

# ***** resize *****

def _cubic_kernel(x: float, A: float) -> float:
  x = abs(x)
  if x <= 1: return ((A + 2) * x - (A + 3)) * x * x + 1
  if x < 2: return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
  return 0.0

def _resize_weights(n_in: int, n_out: int, scale: float, mode: str, ctm: str, nearest_mode: str, A: float, exclude_outside: int,
                    antialias: int, roi: tuple[float, float]|None) -> tuple[list[list[tuple[int, float]]], list[bool]]:
  """Per output index: (input index, weight) taps, and whether it lies outside the roi (tf_crop_and_resize extrapolation)."""
  rows, outside = [], []
  out_w = scale * n_in
  for xo in range(n_out):
    if ctm == "align_corners": xi = 0.0 if out_w == 1 else xo * (n_in - 1) / (out_w - 1)
    elif ctm == "asymmetric": xi = xo / scale
    elif ctm == "tf_crop_and_resize":
      assert roi is not None
      xi = (roi[1] - roi[0]) * (n_in - 1) / 2 if out_w == 1 else roi[0] * (n_in - 1) + xo * (roi[1] - roi[0]) * (n_in - 1) / (out_w - 1)
    elif ctm == "pytorch_half_pixel": xi = -0.5 if out_w == 1 else (xo + 0.5) / scale - 0.5
    elif ctm == "half_pixel_symmetric": xi = (n_in / 2) * (1 - n_out / out_w) + (xo + 0.5) / scale - 0.5
    else: xi = (xo + 0.5) / scale - 0.5
    outside.append(ctm == "tf_crop_and_resize" and (xi < 0 or xi > n_in - 1))
    base = math.floor(xi)
    ratio = 1.0 if xi == base else xi - base
    if mode == "nearest":
      if xi == base: taps = [(base, 1.0)]
      else:
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": False, "ceil": True}[nearest_mode]
        taps = [(base + 1 if up else base, 1.0)]
    elif antialias and scale < 1:
      start = math.floor(-(1 if mode == "linear" else 2) / scale) + 1
      end = (2 if mode == "linear" else 4) - start if mode == "linear" else 2 - start + 2
      if mode == "linear": offs = range(start, start + 2 - 2 * start)
      else: offs = range(start, 2 - start)
      del end
      ws = [max(0.0, 1 - abs((o - ratio) * scale)) if mode == "linear" else _cubic_kernel((o - ratio) * scale, A) for o in offs]
      tot = sum(ws)
      taps = [(base + o, w / tot) for o, w in zip(offs, ws)]
    elif mode == "linear": taps = [(base, 1 - ratio), (base + 1, ratio)] if xi != base else [(base, 1.0)]
    else:
      if xi == base: base, ratio = base - 1, 1.0   # an exact sample: the taps sit one to the left, weight 1 on the third
      r = ratio
      cs = [_cubic_kernel(r + 1, A), _cubic_kernel(r, A), _cubic_kernel(1 - r, A), _cubic_kernel(2 - r, A)]
      taps = list(zip([base - 1, base, base + 1, base + 2], cs))
    if exclude_outside:
      taps = [(i, w) for i, w in taps if 0 <= i < n_in]
      tot = sum(w for _, w in taps)
      taps = [(i, w / tot) for i, w in taps]
    rows.append([(min(max(i, 0), n_in - 1), w) for i, w in taps])
  return rows, outside

def Resize(X, roi=None, scales=None, sizes=None, antialias=0, axes=None, coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
           exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy="stretch", mode="nearest", nearest_mode="round_prefer_floor",
           opset=19):
  if opset < 11:   # Resize-10: (X, scales), asymmetric coordinates, floor rounding for nearest
    scales, roi, coordinate_transformation_mode, nearest_mode = roi, None, "asymmetric", "floor"
  ax = [_axis(a, X.ndim) for a in axes] if axes is not None else list(range(X.ndim))
  sc = _floats(scales) if scales is not None and scales.numel() else None
  sz = _ints(sizes) if sizes is not None and sizes.numel() else None
  rr = _floats(roi) if roi is not None and roi.numel() else None
  if sz is not None:
    if keep_aspect_ratio_policy != "stretch":
      f = (min if keep_aspect_ratio_policy == "not_larger" else max)(s / X.shape[a] for s, a in zip(sz, ax))
      sz = [int(math.floor(f * X.shape[a] + 0.5)) for a in ax]
      sc = [f] * len(ax)
    else: sc = [s / X.shape[a] for s, a in zip(sz, ax)]
  else:
    assert sc is not None, "Resize needs scales or sizes"
    sz = [int(math.floor(X.shape[a] * s)) for a, s in zip(ax, sc)]
  y = X
  mode = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
  for i, a in enumerate(ax):
    if sz[i] == X.shape[a] and sc[i] == 1.0 and coordinate_transformation_mode != "tf_crop_and_resize": continue
    roi_a = (rr[i], rr[i + len(ax)]) if rr is not None and len(rr) == 2 * len(ax) else \
      (rr[a], rr[a + X.ndim]) if rr is not None else None
    rows, outside = _resize_weights(X.shape[a], sz[i], sc[i], mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
                                    exclude_outside, antialias, roi_a)
    if all(len(r) == 1 and r[0][1] == 1.0 for r in rows): y = _take(y, a, [r[0][0] for r in rows])
    else:
      mat = [[0.0] * X.shape[a] for _ in rows]
      for o, r in enumerate(rows):
        for j, w in r: mat[o][j] += w
      m = Tensor(mat, dtype=dtypes.float32 if y.dtype != dtypes.float64 else dtypes.float64)
      yt = y.cast(m.dtype).transpose(a, -1)
      y = (yt @ m.T).transpose(a, -1)
      if not dtypes.is_float(X.dtype): y = y.round().clip(dtypes.min(X.dtype), dtypes.max(X.dtype))
      y = y.cast(X.dtype)
    if any(outside):
      mask = Tensor(outside).reshape([-1 if j == a else 1 for j in range(X.ndim)])
      y = mask.where(extrapolation_value, y).cast(X.dtype)
  return y

def Upsample(X, scales=None, mode="nearest", opset=9):
  return Resize(X, None, scales, None, mode=mode, coordinate_transformation_mode="asymmetric", nearest_mode="floor", opset=11)

# ***** sequences and optionals *****

def SequenceEmpty(dtype=None): return []
def SequenceConstruct(*xs): return list(xs)
def SequenceAt(seq, position): return seq[int(_scalar(position))]
def SequenceLength(seq): return _i64(len(seq))
def SequenceInsert(seq, t, position=None):
  s = list(seq)
  if position is None: s.append(t)
  else:
    p = int(_scalar(position))
    s.insert(p + len(s) if p < 0 else p, t)
  return s
def SequenceErase(seq, position=None):
  s = list(seq)
  p = int(_scalar(position)) if position is not None else -1
  del s[p]
  return s
def ConcatFromSequence(seq, axis, new_axis=0):
  if new_axis: return Tensor.stack(*seq, dim=axis)
  return seq[0].cat(*seq[1:], dim=axis)
def SplitToSequence(x, split=None, axis=0, keepdims=1):
  axis = _axis(axis, x.ndim)
  if split is None:
    parts = list(x.split(1, axis))
    return [p.squeeze(axis) for p in parts] if not keepdims else parts
  sp = _ints(split)
  if split.ndim == 0: return list(x.split(sp[0], axis))
  return list(x.split(sp, axis))
def Optional(input=None, type=None): return input
def OptionalHasElement(x=None): return Tensor(x is not None)
def OptionalGetElement(x): return x

# ***** control flow *****

def If(cond, then_branch, else_branch, runner, env):
  return tuple(runner.run_subgraph(then_branch if bool(_scalar(cond)) else else_branch, env, []))

def Loop(M, cond, *v_initial, body, runner, env):
  trip = int(_scalar(M)) if M is not None else None
  keep_going = bool(_scalar(cond)) if cond is not None else True
  state, scans = list(v_initial), None
  i = 0
  while keep_going and (trip is None or i < trip):
    outs = runner.run_subgraph(body, env, [_i64(i), Tensor(keep_going)] + state)
    keep_going = bool(_scalar(outs[0]))
    state = outs[1:1 + len(state)]
    if scans is None: scans = [[] for _ in outs[1 + len(state):]]
    for s, v in zip(scans, outs[1 + len(state):]): s.append(v)
    i += 1
  n_scan = len(body.output) - 1 - len(state)
  scan_outs = [Tensor.stack(*s) if s and isinstance(s[0], Tensor) else s for s in (scans or [[] for _ in range(n_scan)])]
  return tuple(state) + tuple(scan_outs)

def Scan(*inputs, body, num_scan_inputs, scan_input_axes=None, scan_input_directions=None, scan_output_axes=None,
         scan_output_directions=None, directions=None, runner, env, opset=16):
  if opset < 9:   # Scan-8: a sequence_lens input first and a batch dim on everything; run each batch entry as Scan-9 would
    rest = inputs[1:]
    per = [Scan(*[t[bi] for t in rest], body=body, num_scan_inputs=num_scan_inputs, scan_input_directions=directions, runner=runner,
                env=env) for bi in range(rest[0].shape[0])]
    return tuple(Tensor.stack(*[o[j] for o in per], dim=0) for j in range(len(per[0])))
  n_state = len(inputs) - num_scan_inputs
  state, xs = list(inputs[:n_state]), list(inputs[n_state:])
  in_axes = [_axis(a, x.ndim) for a, x in zip(scan_input_axes or [0] * len(xs), xs)]
  in_dirs = scan_input_directions or [0] * len(xs)
  steps = xs[0].shape[in_axes[0]]
  outs_per_step: list[list[Tensor]] = []
  for t in range(steps):
    sl = [x.shrink(tuple(((steps - 1 - t if d else t), (steps - t if d else t + 1)) if i == a else None for i in range(x.ndim))).squeeze(a)
          for x, a, d in zip(xs, in_axes, in_dirs)]
    outs = runner.run_subgraph(body, env, state + sl)
    state = outs[:n_state]
    outs_per_step.append(outs[n_state:])
  n_out = len(body.output) - n_state
  out_axes, out_dirs = scan_output_axes or [0] * n_out, scan_output_directions or [0] * n_out
  scan_outs = []
  for j in range(n_out):
    seq = [o[j] for o in outs_per_step]
    if out_dirs[j]: seq = seq[::-1]
    st = Tensor.stack(*seq, dim=0)
    scan_outs.append(st.permute(*_move_axis(st.ndim, 0, _axis(out_axes[j], st.ndim))) if out_axes[j] else st)
  return tuple(state) + tuple(scan_outs)
def _move_axis(ndim: int, src: int, dst: int) -> list[int]:
  order = [i for i in range(ndim) if i != src]
  order.insert(dst, src)
  return order

def SequenceMap(seq, *others, body, runner, env):
  n = len(seq)
  outs: list[list] = [[] for _ in body.output]
  for i in range(n):
    args = [seq[i]] + [o[i] if isinstance(o, list) else o for o in others]
    for j, v in enumerate(runner.run_subgraph(body, env, args)): outs[j].append(v)
  return tuple(outs)

# ***** attention and transformer blocks *****

def Attention(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, is_causal=0, kv_num_heads=None, q_num_heads=None,
              qk_matmul_output_mode=0, scale=None, softcap=0.0, softmax_precision=None, left_window_size=-1, right_window_size=-1, n_outputs=1):
  rank3, b = Q.ndim == 3, Q.shape[0]
  if rank3:
    Q = Q.reshape(b, Q.shape[1], q_num_heads, -1).transpose(1, 2)
    K = K.reshape(b, K.shape[1], kv_num_heads, -1).transpose(1, 2)
    V = V.reshape(b, V.shape[1], kv_num_heads, -1).transpose(1, 2)
  s = math.sqrt(scale if scale is not None else 1 / math.sqrt(Q.shape[3]))
  present_k = past_key.cat(K, dim=2) if past_key is not None else K
  present_v = past_value.cat(V, dim=2) if past_value is not None else V
  lq, lk = Q.shape[2], present_k.shape[2]
  neg = -math.inf
  bias = Tensor.zeros(lq, lk, dtype=Q.dtype)
  if attn_mask is not None:
    if (pw := lk - attn_mask.shape[-1]) > 0:
      attn_mask = attn_mask.pad(tuple([None] * (attn_mask.ndim - 1) + [(0, pw)]), value=False if attn_mask.dtype == dtypes.bool else neg)
    bias = bias + (attn_mask.where(0.0, neg).cast(Q.dtype) if attn_mask.dtype == dtypes.bool else attn_mask)
  qi, kj = Tensor.arange(lq).reshape(lq, 1), Tensor.arange(lk).reshape(1, lk)
  if nonpad_kv_seqlen is not None and past_key is None:
    offset: Any = (nonpad_kv_seqlen.cast(dtypes.int32).reshape(-1, 1, 1, 1) - lq)
  else: offset = past_key.shape[2] if past_key is not None else 0
  if is_causal: bias = bias + (kj <= qi + offset).where(0.0, neg).cast(Q.dtype)
  if left_window_size is not None and left_window_size >= 0: bias = bias + (qi + offset - kj <= left_window_size).where(0.0, neg).cast(Q.dtype)
  if right_window_size is not None and right_window_size >= 0: bias = bias + (kj - qi - offset <= right_window_size).where(0.0, neg).cast(Q.dtype)
  if nonpad_kv_seqlen is not None:
    bias = bias + (Tensor.arange(lk).reshape(1, 1, 1, lk) < nonpad_kv_seqlen.reshape(-1, 1, 1, 1)).where(0.0, neg).cast(Q.dtype)
  hq, hk = Q.shape[1], present_k.shape[1]
  k, v = present_k, present_v
  if hq != hk: k, v = k.repeat_interleave(hq // hk, 1), v.repeat_interleave(hq // hk, 1)
  # 16-bit inputs: products and sums in float32 (numpy's reference rounds only where it stores)
  low = Q.dtype in (dtypes.float16, dtypes.bfloat16)
  qk = ((Q * s).cast(dtypes.float32) @ (k * s).cast(dtypes.float32).transpose(-1, -2)).cast(Q.dtype) if low else (Q * s) @ (k * s).transpose(-1, -2)
  if softcap and softcap > 0: qk = (qk / softcap).tanh() * softcap
  qkb = qk + bias
  qk_out = qkb if qk_matmul_output_mode == 2 else qk
  sm_in = qkb.cast(onnx_dtype(softmax_precision)) if softmax_precision is not None else qkb
  mx = sm_in.max(-1, keepdim=True)
  all_masked = mx == neg
  e = (sm_in - all_masked.where(0, mx)).exp()
  tot = e.sum(-1, keepdim=True, dtype=e.dtype if e.dtype == dtypes.bfloat16 else None)   # numpy sums bfloat16 in bfloat16, one add at a time
  p = e / (tot == 0).where(1, tot)
  p = (bias.max(-1, keepdim=True) == neg).where(0, p)
  if qk_matmul_output_mode == 3: qk_out = p
  p = p.cast(Q.dtype)
  y = (p.cast(dtypes.float32) @ v.cast(dtypes.float32)).cast(Q.dtype) if low else p @ v
  if rank3: y = y.transpose(1, 2).reshape(b, lq, -1)
  return (y, present_k, present_v, qk_out.cast(Q.dtype))[:max(n_outputs, 1)]

def RotaryEmbedding(X, cos_cache, sin_cache, position_ids=None, interleaved=0, num_heads=0, rotary_embedding_dim=0):
  rank3 = X.ndim == 3
  if rank3: X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
  else: X = X.transpose(1, 2)   # (b, s, h, d)
  d = X.shape[-1]
  rd = rotary_embedding_dim or d
  if position_ids is not None: cos, sin = _take(cos_cache, 0, position_ids.cast(dtypes.int64)), _take(sin_cache, 0, position_ids.cast(dtypes.int64))
  else: cos, sin = cos_cache, sin_cache
  cos, sin = cos[..., :rd // 2].unsqueeze(2), sin[..., :rd // 2].unsqueeze(2)   # (b, s, 1, rd/2)
  xr, rest = X[..., :rd], X[..., rd:]
  if interleaved: x1, x2 = xr[..., 0::2], xr[..., 1::2]
  else: x1, x2 = xr[..., :rd // 2], xr[..., rd // 2:]
  r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
  out = Tensor.stack(r1, r2, dim=-1).reshape(*r1.shape[:-1], rd) if interleaved else r1.cat(r2, dim=-1)
  y = out.cat(rest, dim=-1) if rest.shape[-1] else out
  return y.reshape(y.shape[0], y.shape[1], -1) if rank3 else y.transpose(1, 2)

def SwiGLU(a, b, alpha=1.0): return a * (a * alpha).sigmoid() * b

# ***** recurrent *****

_ACTS: dict[str, Callable] = {
  "relu": lambda x, a, b: x.relu(), "tanh": lambda x, a, b: x.tanh(), "sigmoid": lambda x, a, b: x.sigmoid(),
  "affine": lambda x, a, b: x * a + b, "leakyrelu": lambda x, a, b: LeakyRelu(x, a), "thresholdedrelu": lambda x, a, b: ThresholdedRelu(x, a),
  "scaledtanh": lambda x, a, b: (x * b).tanh() * a, "hardsigmoid": lambda x, a, b: HardSigmoid(x, a, b), "elu": lambda x, a, b: Elu(x, a),
  "softsign": lambda x, a, b: x.softsign(), "softplus": lambda x, a, b: x.softplus()}
_ACT_DEFAULTS = {"leakyrelu": (0.01, 0.0), "thresholdedrelu": (1.0, 0.0), "hardsigmoid": (0.2, 0.5), "elu": (1.0, 0.0), "scaledtanh": (1.0, 1.0)}

def _acts(activations, alpha, beta, defaults: list[str], ndir: int) -> list[list[Callable]]:
  names = [a.lower() for a in (activations or defaults * ndir)]
  al, be = list(alpha or []), list(beta or [])
  fns = []
  for i, n in enumerate(names):
    da, db = _ACT_DEFAULTS.get(n, (0.0, 0.0))
    a, b = (al[i] if i < len(al) else da), (be[i] if i < len(be) else db)
    fns.append(functools.partial(lambda x, f, a, b: f(x, a, b), f=_ACTS[n], a=a, b=b))
  k = len(defaults)
  return [fns[d * k:(d + 1) * k] for d in range(ndir)]

def _recurrent(kind: str, X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations, clip, direction,
               hidden_size, layout, linear_before_reset=0, input_forget=0, n_outputs=1):
  if layout: X = X.transpose(0, 1)
  seq, batch = X.shape[0], X.shape[1]
  ndir, H = W.shape[0], hidden_size or R.shape[-1]
  gates = {"rnn": 1, "gru": 3, "lstm": 4}[kind]
  defaults = {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}[kind]
  acts = _acts(activations, activation_alpha, activation_beta, defaults, ndir)
  if initial_h is not None and layout: initial_h = initial_h.transpose(0, 1)
  if initial_c is not None and layout: initial_c = initial_c.transpose(0, 1)
  lens = _ints(sequence_lens) if sequence_lens is not None else [seq] * batch
  ys, hs, cs = [], [], []
  for d in range(ndir):
    w, r = W[d], R[d]
    bias = B[d] if B is not None else Tensor.zeros(2 * gates * H, dtype=X.dtype)
    wb, rb = bias[:gates * H], bias[gates * H:]
    h = initial_h[d] if initial_h is not None else Tensor.zeros(batch, H, dtype=X.dtype)
    c = initial_c[d] if initial_c is not None else Tensor.zeros(batch, H, dtype=X.dtype)
    p = P[d] if P is not None else None
    reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
    xw = X @ w.T + wb   # (seq, batch, gates*H)
    out: list[Tensor|None] = [None] * seq
    f = acts[d]
    for step in range(seq):
      t = seq - 1 - step if reverse else step
      if reverse: active = [seq - 1 - step < l for l in lens]
      else: active = [t < l for l in lens]
      xt = xw[t]
      if kind == "rnn":
        pre = xt + h @ r.T + rb
        if clip is not None: pre = pre.clip(-clip, clip)
        hn, cn = f[0](pre), c
      elif kind == "gru":
        xz, xr_, xh = xt.chunk(3, -1)
        rz, rr, rh = r.chunk(3, 0)
        bz, br, bh = rb.chunk(3, 0)
        def cl(v): return v.clip(-clip, clip) if clip is not None else v
        z = f[0](cl(xz + h @ rz.T + bz))
        rg = f[0](cl(xr_ + h @ rr.T + br))
        hh = f[1](cl(xh + rg * (h @ rh.T + bh))) if linear_before_reset else f[1](cl(xh + (rg * h) @ rh.T + bh))
        hn, cn = (1 - z) * hh + z * h, c
      else:
        g = xt + h @ r.T + rb
        if clip is not None: g = g.clip(-clip, clip)
        gi, go, gf, gc = g.chunk(4, -1)
        if p is not None:
          pi, po, pf = p.chunk(3, 0)
          gi, gf = gi + pi * c, gf + pf * c
        i_, f_ = f[0](gi), f[0](gf)
        if input_forget: f_ = 1 - i_
        cn = f_ * c + i_ * f[1](gc)
        if p is not None: go = go + po * cn
        hn = f[0](go) * f[2](cn)
      # contiguous: works around a scheduler bug (stacking a step with one computed from it reads out of bounds; see the report)
      hn, cn = hn.contiguous(), cn.contiguous()
      if all(active): h, c, yt = hn, cn, hn
      else:
        m = Tensor(active).reshape(batch, 1)
        h, c, yt = m.where(hn, h), m.where(cn, c), m.where(hn, 0).cast(X.dtype)
      out[t] = yt
    ys.append(Tensor.stack(*[o for o in out if o is not None], dim=0))
    hs.append(h)
    cs.append(c)
  Y, Yh, Yc = Tensor.stack(*ys, dim=1), Tensor.stack(*hs, dim=0), Tensor.stack(*cs, dim=0)
  if layout: Y, Yh, Yc = Y.permute(2, 0, 1, 3), Yh.transpose(0, 1), Yc.transpose(0, 1)
  return (Y, Yh, Yc)[:max(n_outputs, 1)] if kind == "lstm" else (Y, Yh)[:max(n_outputs, 1)]

def RNN(X, W, R, B=None, sequence_lens=None, initial_h=None, activation_alpha=None, activation_beta=None, activations=None, clip=None,
        direction="forward", hidden_size=None, layout=0, n_outputs=1):
  return _recurrent("rnn", X, W, R, B, sequence_lens, initial_h, None, None, activation_alpha, activation_beta, activations, clip, direction,
                    hidden_size, layout, n_outputs=n_outputs)
def GRU(X, W, R, B=None, sequence_lens=None, initial_h=None, activation_alpha=None, activation_beta=None, activations=None, clip=None,
        direction="forward", hidden_size=None, layout=0, linear_before_reset=0, n_outputs=1):
  return _recurrent("gru", X, W, R, B, sequence_lens, initial_h, None, None, activation_alpha, activation_beta, activations, clip, direction,
                    hidden_size, layout, linear_before_reset=linear_before_reset, n_outputs=n_outputs)
def LSTM(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, activation_alpha=None, activation_beta=None,
         activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0, layout=0, n_outputs=1):
  return _recurrent("lstm", X, W, R, B, sequence_lens, initial_h, initial_c, P, activation_alpha, activation_beta, activations, clip, direction,
                    hidden_size, layout, input_forget=input_forget, n_outputs=n_outputs)

# ***** detection, grids, images *****

def NonMaxSuppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None, score_threshold=None, center_point_box=0):
  mx = int(_scalar(max_output_boxes_per_class)) if max_output_boxes_per_class is not None else 0
  iou_t = float(_scalar(iou_threshold)) if iou_threshold is not None else 0.0
  sc_t = float(_scalar(score_threshold)) if score_threshold is not None else -math.inf
  bx, sc = boxes.tolist(), scores.tolist()
  def corners(b):
    if center_point_box: return (b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2)
    return (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))
  def iou(a, b):
    ih, iw = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if ih <= 0 or iw <= 0: return 0.0
    inter = ih * iw
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
  out = []
  for bi in range(len(bx)):
    cb = [corners(b) for b in bx[bi]]
    for ci in range(len(sc[bi])):
      order = sorted((i for i, s in enumerate(sc[bi][ci]) if s > sc_t), key=lambda i: -sc[bi][ci][i])
      kept: list[int] = []
      for i in order:
        if len(kept) >= mx: break
        if all(iou(cb[i], cb[k]) <= iou_t for k in kept): kept.append(i)
      out += [[bi, ci, k] for k in kept]
  return _i64(out) if out else Tensor.zeros(0, 3, dtype=dtypes.int64)

def AffineGrid(theta, size, align_corners=0):
  sz = _ints(size)
  n, spatial = sz[0], sz[2:]
  def lin(m):
    if align_corners: return [(-1 + 2 * i / (m - 1)) if m > 1 else 0.0 for i in range(m)]
    return [(2 * i + 1) / m - 1 for i in range(m)]
  axes = [lin(m) for m in spatial]   # (D), H, W
  coords = [list(reversed(p)) + [1.0] for p in itertools.product(*axes)]   # x, y, (z), 1
  base = Tensor(coords, dtype=theta.dtype)   # (prod, nd+1)
  g = base.unsqueeze(0) @ theta.transpose(1, 2)   # (N, prod, nd)
  return g.reshape(n, *spatial, len(spatial))

def CenterCropPad(x, shape, axes=None):
  sh = _ints(shape)
  ax = [_axis(a, x.ndim) for a in axes] if axes is not None else list(range(x.ndim))
  pairs: list[Any] = [None] * x.ndim
  for a, s in zip(ax, sh):
    diff = s - x.shape[a]
    if diff >= 0: pairs[a] = (diff // 2, diff - diff // 2)
    else: pairs[a] = (-((-diff) // 2), -((-diff) - (-diff) // 2))
  return x.pad(tuple(pairs))

def Col2Im(x, image_shape, block_shape, dilations=None, pads=None, strides=None):
  img, blk = _ints(image_shape), _ints(block_shape)
  n = len(img)
  d, s = dilations or [1] * n, strides or [1] * n
  p = pads or [0] * (2 * n)
  padded = [img[i] + p[i] + p[i + n] for i in range(n)]
  outs = [(padded[i] - d[i] * (blk[i] - 1) - 1) // s[i] + 1 for i in range(n)]
  b, ck, L = x.shape
  c = ck // _prod(blk)
  # each (kernel offset, block position) lands on one padded pixel: a scatter-add as a one-hot matmul
  idx = []
  for ko in itertools.product(*[range(k) for k in blk]):
    for bo in itertools.product(*[range(o) for o in outs]):
      pos = [bo[i] * s[i] + ko[i] * d[i] for i in range(n)]
      idx.append(sum(pos[i] * _prod(padded[i + 1:]) for i in range(n)))
  src = x.reshape(b, c, _prod(blk) * L)
  out = Tensor.zeros(b, c, _prod(padded), dtype=x.dtype).scatter_reduce(2, _i64(idx).reshape(1, 1, -1).expand(b, c, len(idx)), src, "sum")
  out = out.reshape(b, c, *padded)
  return out.shrink((None, None) + tuple((p[i], p[i] + img[i]) for i in range(n)))

def _window(size, periodic, output_datatype, terms: list[float]) -> Tensor:
  n = int(_scalar(size))
  N = n if periodic else n - 1
  v = [sum(c * math.cos(2 * math.pi * k * i / N) for k, c in enumerate(terms)) for i in range(n)]
  return Tensor(v, dtype=dtypes.float64).cast(onnx_dtype(output_datatype))
def HannWindow(size, output_datatype=1, periodic=1): return _window(size, periodic, output_datatype, [0.5, -0.5])
def HammingWindow(size, output_datatype=1, periodic=1): return _window(size, periodic, output_datatype, [25 / 46, -21 / 46])
def BlackmanWindow(size, output_datatype=1, periodic=1): return _window(size, periodic, output_datatype, [0.42, -0.5, 0.08])

# ***** quantization *****

def _qrange(dt: DType) -> tuple[float, float]:
  if dt == dtypes.fp8e4m3: return (-448.0, 448.0)
  if dt == dtypes.fp8e5m2: return (-57344.0, 57344.0)
  return (dtypes.min(dt), dtypes.max(dt))
def _per_axis(s: Tensor, x: Tensor, axis: int, block_size: int) -> Tensor:
  if s.ndim == 0 or s.numel() == 1 and s.ndim <= 1: return s.reshape(())
  axis = _axis(axis, x.ndim)
  if block_size: return s.repeat_interleave(block_size, axis).shrink(tuple((0, x.shape[i]) for i in range(x.ndim)))
  return s.reshape([-1 if i == axis else 1 for i in range(x.ndim)])
def QuantizeLinear(x, y_scale, y_zero_point=None, axis=1, block_size=0, output_dtype=0, saturate=1, precision=0, in_types=None):
  to = (in_types[2] if in_types and len(in_types) > 2 and in_types[2] else DTYPE_TO_ONNX.get(y_zero_point.dtype, 2)) \
    if y_zero_point is not None else output_dtype or 2
  dt = onnx_dtype(to)
  sc = _per_axis(y_scale, x, axis, block_size)
  xf = x.cast(dtypes.float32) / sc.cast(dtypes.float32)
  if to in _SUBBYTE_INTS or to == 23:
    zp = _per_axis(y_zero_point, x, axis, block_size).cast(dtypes.float32) if y_zero_point is not None else 0
    if to == 23: return _round_small_float(xf + zp, 23, 1)
    lo, hi, _ = _SUBBYTE_INTS[to]
    return (xf.round() + zp).clip(lo, hi).cast(dt)
  if dt in dtypes.fp8s:
    zp = _per_axis(y_zero_point, x, axis, block_size).cast(dtypes.float32) if y_zero_point is not None else 0
    y = xf + zp
    if saturate: y = y.isnan().where(y, y.clip(*_qrange(dt)))
    return y.cast(dt)
  y = xf.round()
  if y_zero_point is not None: y = y + _per_axis(y_zero_point, x, axis, block_size).cast(dtypes.float32)
  return y.clip(*_qrange(dt)).cast(dt)
def DequantizeLinear(x, x_scale, x_zero_point=None, axis=1, block_size=0, output_dtype=0, precision=0):
  sc = _per_axis(x_scale, x, axis, block_size)
  xf = x.cast(dtypes.float32)
  if x_zero_point is not None: xf = xf - _per_axis(x_zero_point, x, axis, block_size).cast(dtypes.float32)
  return (xf * sc.cast(dtypes.float32)).cast(onnx_dtype(output_dtype) if output_dtype else x_scale.dtype)
def DynamicQuantizeLinear(x):
  lo, hi = x.min().minimum(0), x.max().maximum(0)
  scale = (hi - lo) / 255
  zp = (-lo / scale).round().clip(0, 255)
  y = ((x / scale).round() + zp).clip(0, 255).cast(dtypes.uint8)
  return y, scale.cast(x.dtype), zp.cast(dtypes.uint8)
def QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
  af = a.cast(dtypes.float32) - _per_axis(a_zero_point, a, -2, 0).cast(dtypes.float32)
  bf = b.cast(dtypes.float32) - _per_axis(b_zero_point, b, -1, 0).cast(dtypes.float32)
  acc = (af * _per_axis(a_scale, a, -2, 0).cast(dtypes.float32)) @ (bf * _per_axis(b_scale, b, -1, 0).cast(dtypes.float32))
  y = (acc / _per_axis(y_scale, acc, -1, 0).cast(dtypes.float32)).round() + _per_axis(y_zero_point, acc, -1, 0).cast(dtypes.float32)
  return y.clip(*_qrange(y_zero_point.dtype)).cast(y_zero_point.dtype)
def QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, auto_pad="NOTSET", dilations=None, group=1,
                kernel_shape=None, pads=None, strides=None):
  xf = (x.cast(dtypes.float32) - x_zero_point.cast(dtypes.float32).reshape(())) * x_scale.cast(dtypes.float32).reshape(())
  wf = (w.cast(dtypes.float32) - _per_axis(w_zero_point, w, 0, 0).cast(dtypes.float32)) * _per_axis(w_scale, w, 0, 0).cast(dtypes.float32)
  bf = B.cast(dtypes.float32) * (x_scale.cast(dtypes.float32).reshape(()) * w_scale.cast(dtypes.float32)) if B is not None else None
  acc = Conv(xf, wf, bf, auto_pad, dilations, group, kernel_shape, pads, strides)
  y = (acc / y_scale.cast(dtypes.float32).reshape(())).round() + y_zero_point.cast(dtypes.float32).reshape(())
  return y.clip(*_qrange(y_zero_point.dtype)).cast(y_zero_point.dtype)

# ***** random *****

def _rand_dtype(dtype, like=None) -> DType: return onnx_dtype(dtype) if dtype is not None else (like.dtype if like is not None else dtypes.float32)
def RandomNormal(shape, dtype=None, mean=0.0, scale=1.0, seed=None):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.randn(*shape) * scale + mean).cast(_rand_dtype(dtype))
def RandomUniform(shape, dtype=None, high=1.0, low=0.0, seed=None):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.rand(*shape) * (high - low) + low).cast(_rand_dtype(dtype))
def RandomNormalLike(x, dtype=None, mean=0.0, scale=1.0, seed=None): return RandomNormal(x.shape, None, mean, scale, seed).cast(_rand_dtype(dtype, x))
def RandomUniformLike(x, dtype=None, high=1.0, low=0.0, seed=None): return RandomUniform(x.shape, None, high, low, seed).cast(_rand_dtype(dtype, x))
def Bernoulli(x, dtype=None, seed=None):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.rand(*x.shape) < x).cast(_rand_dtype(dtype, x))
def Multinomial(x, dtype=6, sample_size=1, seed=None):
  if seed is not None: Tensor.manual_seed(int(seed))
  return x.exp().multinomial(sample_size, replacement=True).cast(onnx_dtype(dtype))

# ***** images: the lossless formats the standard library decodes (zlib for PNG); JPEG, JPEG 2000 and WebP need a codec *****

def _png(b: bytes) -> tuple[int, int, int, bytes]:
  w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", b[16:29])
  if depth != 8 or (ch := {0: 1, 2: 3, 6: 4}.get(ctype)) is None or interlace:
    raise NotImplementedError(f"ImageDecoder: PNG of bit depth {depth}, color type {ctype}, interlace {interlace}")
  idat, pos = bytearray(), 8
  while pos + 8 <= len(b):
    n, kind = struct.unpack(">I4s", b[pos:pos + 8])
    if kind == b"IDAT": idat += b[pos + 8:pos + 8 + n]
    pos += 12 + n
  raw, stride, prev, out = zlib.decompress(idat), w * ch, bytearray(w * ch), bytearray()
  for y in range(h):   # undo each row's filter (none, sub, up, average, paeth), left to right
    f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if len(row) != stride or f > 4: raise ValueError(f"ImageDecoder: PNG row {y} is truncated or has filter {f}")
    for i in range(stride):
      (a, c), up = (row[i - ch], prev[i - ch]) if i >= ch else (0, 0), prev[i]
      if f == 4: pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
      row[i] = (row[i] + (0, a, up, (a + up) // 2, a if f == 4 and pa <= pb and pa <= pc else up if f == 4 and pb <= pc else c)[f]) & 255
    out += row
    prev = row
  return h, w, ch, bytes(out)

def _bmp(b: bytes) -> tuple[int, int, int, bytes]:
  (off,), (w, h), (bpp, comp) = struct.unpack("<I", b[10:14]), struct.unpack("<ii", b[18:26]), struct.unpack("<HI", b[28:34])
  if bpp != 24 or comp != 0: raise NotImplementedError(f"ImageDecoder: BMP of {bpp} bits, compression {comp}")
  stride = (w * 3 + 3) & ~3   # rows padded to 4 bytes, stored bottom-up unless the height is negative
  rows = [b[off + y * stride:off + y * stride + w * 3] for y in (reversed(range(h)) if h > 0 else range(-h))]
  if any(len(r) != w * 3 for r in rows): raise ValueError("ImageDecoder: BMP pixel data is truncated")
  bgr, rgb = b"".join(rows), bytearray(w * abs(h) * 3)
  rgb[0::3], rgb[1::3], rgb[2::3] = bgr[2::3], bgr[1::3], bgr[0::3]
  return abs(h), w, 3, bytes(rgb)

def _pnm(b: bytes) -> tuple[int, int, int, bytes]:
  if (m := re.match(rb"P([56])(?:(?:\s|#[^\n]*\n)+(\d+)){3}\s", b)) is None: raise ValueError("ImageDecoder: malformed PNM header")
  w, h, maxval = (int(v) for v in re.findall(rb"\d+", re.sub(rb"#[^\n]*\n", b"", m.group(0)[2:])))
  if maxval > 255: raise NotImplementedError(f"ImageDecoder: PNM of maxval {maxval}")
  ch = 3 if m.group(1) == b"6" else 1
  if len(px := b[m.end():m.end() + w * h * ch]) != w * h * ch: raise ValueError("ImageDecoder: PNM pixel data is truncated")
  return h, w, ch, px

def _tiff(b: bytes) -> tuple[int, int, int, bytes]:
  e = "<" if b[:2] == b"II" else ">"
  ifd, tags = struct.unpack(e + "I", b[4:8])[0], {}
  for i in range(struct.unpack(e + "H", b[ifd:ifd + 2])[0]):
    tag, typ, n, val = struct.unpack(e + "HHI4s", b[ifd + 2 + 12 * i:ifd + 14 + 12 * i])
    if typ not in (3, 4): continue
    size = 2 if typ == 3 else 4
    raw = val if n * size <= 4 else b[(o := struct.unpack(e + "I", val)[0]):o + n * size]
    tags[tag] = struct.unpack(e + ("H" if typ == 3 else "I") * n, raw[:n * size])
  w, h, ch = tags[256][0], tags[257][0], tags.get(277, (1,))[0]
  if tags.get(259, (1,))[0] != 1 or set(tags.get(258, (8,))) != {8} or tags.get(262, (2,))[0] not in (1, 2):
    raise NotImplementedError("ImageDecoder: only uncompressed 8-bit RGB or grayscale TIFF")
  px = b"".join(b[o:o + n] for o, n in zip(tags[273], tags[279]))[:w * h * ch]
  if len(px) != w * h * ch: raise ValueError("ImageDecoder: TIFF pixel data is truncated")
  return h, w, ch, px

def ImageDecoder(encoded_stream, pixel_format="RGB"):
  b = bytes(encoded_stream.cast(dtypes.uint8).tolist())
  fmts = {b"\x89PNG\r\n\x1a\n": _png, b"BM": _bmp, b"P5": _pnm, b"P6": _pnm, b"II*\0": _tiff, b"MM\0*": _tiff}
  if (dec := next((f for magic, f in fmts.items() if b.startswith(magic)), None)) is None:
    raise NotImplementedError("ImageDecoder: PNG, BMP, PNM and TIFF decode here (standard library only); JPEG, JPEG 2000 and WebP need a codec")
  try: h, w, ch, px = dec(b)
  except (struct.error, zlib.error, KeyError, IndexError) as err:
    raise ValueError(f"ImageDecoder: malformed {dec.__name__[1:].upper()} data: {err}") from None
  img = Tensor(px, device=encoded_stream.device).reshape(h, w, ch)[..., :3]   # an alpha channel is dropped
  if ch == 1: img = img.expand(h, w, 3)
  if pixel_format == "BGR": return img.flip(-1)
  if pixel_format == "Grayscale":   # PIL's ITU-R 601-2 luma, in fixed point as it rounds
    r, g, bl = (img[..., i:i + 1].cast(dtypes.int32) for i in range(3))
    return ((r * 19595 + g * 38470 + bl * 7471 + 0x8000) // 65536).cast(dtypes.uint8)
  return img

# ***** strings (numpy object arrays) *****

def _np():
  import numpy as np
  return np
def StringConcat(X, Y): return _np().char.add(_np().asarray(X, dtype=str), _np().asarray(Y, dtype=str)).astype(object)
def StringSplit(X, delimiter=None, maxsplit=None):
  np = _np()
  parts = [(s.split(delimiter, maxsplit if maxsplit is not None else -1) if delimiter else s.split(None, maxsplit if maxsplit is not None else -1))
           for s in X.reshape(-1)]
  width = max([len(p) for p in parts], default=0)
  out = np.array([p + [""] * (width - len(p)) for p in parts], dtype=object).reshape(X.shape + (width,))
  return out, Tensor(np.array([len(p) for p in parts], dtype=np.int64).reshape(X.shape))
def StringNormalizer(X, case_change_action="NONE", is_case_sensitive=0, locale=None, stopwords=None):
  np = _np()
  stops = set(stopwords or [])
  low = {s.lower() for s in stops}
  flat = X.reshape(-1) if X.ndim == 1 else X.reshape(-1)
  keep = [s for s in flat if not ((s in stops) if is_case_sensitive else (s.lower() in low))]
  if case_change_action == "LOWER": keep = [s.lower() for s in keep]
  elif case_change_action == "UPPER": keep = [s.upper() for s in keep]
  if not keep: keep = [""]
  out = np.array(keep, dtype=object)
  return out.reshape(1, -1) if X.ndim == 2 else out
def RegexFullMatch(X, pattern=""):
  import re
  rx = re.compile(pattern)
  return Tensor(_np().array([rx.fullmatch(s) is not None for s in X.reshape(-1)], dtype=bool).reshape(X.shape))

# ***** training (ai.onnx.preview.training) *****

def Adagrad(R, T, *xs, decay_factor=0.0, epsilon=0.0, norm_coefficient=0.0):
  n = len(xs) // 3
  r = float(_scalar(R)) / (1 + float(_scalar(T)) * decay_factor)
  outs_x, outs_h = [], []
  for x, g, h in zip(xs[:n], xs[n:2 * n], xs[2 * n:]):
    gr = g + norm_coefficient * x
    hn = h + gr * gr
    outs_x.append(x - r * gr / (hn.sqrt() + epsilon))
    outs_h.append(hn)
  return tuple(outs_x + outs_h)
def Momentum(R, T, *xs, alpha, beta, mode, norm_coefficient):
  n = len(xs) // 3
  r, t = float(_scalar(R)), int(_scalar(T))
  outs_x, outs_v = [], []
  for x, g, v in zip(xs[:n], xs[n:2 * n], xs[2 * n:]):
    gr = g + norm_coefficient * x
    vn = alpha * v + (beta if t > 0 else 1) * gr
    outs_x.append(x - r * (gr + alpha * vn) if mode == "nesterov" else x - r * vn)
    outs_v.append(vn)
  return tuple(outs_x + outs_v)
def Adam(R, T, *xs, alpha=0.9, beta=0.999, epsilon=0.0, norm_coefficient=0.0, norm_coefficient_post=0.0):
  n = len(xs) // 4
  r, t = float(_scalar(R)), int(_scalar(T))
  ox, ov, oh = [], [], []
  for x, g, v, h in zip(xs[:n], xs[n:2 * n], xs[2 * n:3 * n], xs[3 * n:]):
    gr = g + norm_coefficient * x
    vn, hn = alpha * v + (1 - alpha) * gr, beta * h + (1 - beta) * gr * gr
    rr = r * math.sqrt(1 - beta ** (t + 1)) / (1 - alpha ** (t + 1)) if t > 0 else r
    xn = x - rr * vn / (hn.sqrt() + epsilon)
    ox.append(xn - norm_coefficient_post * xn)
    ov.append(vn)
    oh.append(hn)
  return tuple(ox + ov + oh)

# ***** ai.onnx.ml *****

def LabelEncoder(X, default_float=-0.0, default_int64=-1, default_string="_Unused", default_tensor=None, keys_floats=None, keys_int64s=None,
                 keys_strings=None, keys_tensor=None, values_floats=None, values_int64s=None, values_strings=None, values_tensor=None):
  np = _np()
  def flat(t): return list((t.numpy() if isinstance(t, Tensor) else t).reshape(-1))
  keys = keys_strings or keys_int64s or keys_floats or (flat(keys_tensor) if keys_tensor is not None else [])
  if values_tensor is not None: vals, out_dt = list((values_tensor.numpy() if isinstance(values_tensor, Tensor) else values_tensor).reshape(-1)), "t"
  elif values_strings is not None: vals, out_dt = values_strings, "s"
  elif values_int64s is not None: vals, out_dt = values_int64s, "i"
  else: vals, out_dt = values_floats or [], "f"
  if isinstance(keys_tensor, np.ndarray): keys = list(keys_tensor.reshape(-1))
  table = dict(zip(keys, vals))
  if default_tensor is not None: dflt = default_tensor.numpy().reshape(-1)[0] if isinstance(default_tensor, Tensor) else default_tensor.reshape(-1)[0]
  else: dflt = {"s": default_string, "i": default_int64, "f": default_float, "t": None}[out_dt]
  xs = X.reshape(-1) if isinstance(X, np.ndarray) else X.numpy().reshape(-1)
  res = [table.get(k.item() if hasattr(k, "item") else k, dflt) for k in xs]
  shape = X.shape
  if out_dt == "s" or (out_dt == "t" and isinstance(values_tensor, np.ndarray)): return np.array(res, dtype=object).reshape(shape)
  if out_dt == "i": return _i64(res).reshape(shape)
  if out_dt == "f": return Tensor(res, dtype=dtypes.float32).reshape(shape)
  return Tensor(np.array(res, dtype=values_tensor.numpy().dtype)).reshape(shape)
def Binarizer(X, threshold=0.0): return (X > threshold).cast(X.dtype)
def ArrayFeatureExtractor(X, Y): return _take(X, X.ndim - 1, Y.reshape(-1).cast(dtypes.int64))

# ***** grid sampling, DFT, caches *****

def _reflect(x: Tensor, lo: float, hi: float) -> Tensor:
  rng = hi - lo
  def fold(dx: Tensor, near: float, far: float) -> Tensor:
    n = (dx / rng).floor()
    r = dx - n * rng
    return (n.mod(2) == 0).where(near + r if near == lo else near - r, far - r if far == hi else far + r)
  below, above = fold(lo - x, lo, hi), fold(x - hi, hi, lo)
  return (x < lo).where(below, (x > hi).where(above, x))

def GridSample(X, grid, align_corners=0, mode="linear", padding_mode="zeros"):
  mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
  n, c, spatial = X.shape[0], X.shape[1], X.shape[2:]
  r, out_sp = len(spatial), grid.shape[1:-1]
  P = _prod(out_sp)
  g = grid.reshape(n, P, r).cast(dtypes.float32)
  coords, bounds = [], []
  for i, size in enumerate(spatial):
    v = g[:, :, r - 1 - i]
    x = (v + 1) / 2 * (size - 1) if align_corners else ((v + 1) * size - 1) / 2
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    if mode == "nearest": x = x.round()
    if padding_mode == "border": x = ((x < lo) | (x > hi)).where(x.clip(0, size - 1), x)
    elif padding_mode == "reflection": x = _reflect(x, lo, hi)
    coords.append(x)
    bounds.append((lo, hi))
  def taps(x: Tensor) -> list[tuple[Tensor, Tensor]]:
    if mode == "nearest": return [(x.trunc(), Tensor.ones_like(x))]
    x0 = x.floor()
    t = x - x0
    if mode == "linear": return [(x0, 1 - t), (x0 + 1, t)]
    A = -0.75
    def cub(d): return ((A * (d + 1) - 5 * A) * (d + 1) + 8 * A) * (d + 1) - 4 * A
    def near(d): return ((A + 2) * d - (A + 3)) * d * d + 1
    return [(x0 - 1, cub(t)), (x0, near(t)), (x0 + 1, near(1 - t)), (x0 + 2, cub(1 - t))]
  flat = X.reshape(n, c, _prod(spatial))
  out = None
  for combo in itertools.product(*[taps(x) for x in coords]):
    lin, w, valid = None, None, None
    for i, ((idx, wt), size) in enumerate(zip(combo, spatial)):
      if padding_mode == "reflection": idx = _reflect(idx, *bounds[i]).trunc()
      ok = (idx >= 0) & (idx <= size - 1)
      idx = idx.clip(0, size - 1).cast(dtypes.int64)
      lin = idx if lin is None else lin * size + idx
      w = wt if w is None else w * wt
      valid = ok if valid is None else valid & ok
    assert lin is not None and w is not None and valid is not None
    vals = flat.gather(2, lin.reshape(n, 1, P).expand(n, c, P))
    if padding_mode == "zeros": w = valid.where(w, 0)
    term = vals.cast(dtypes.float32) * w.reshape(n, 1, P)
    out = term if out is None else out + term
  assert out is not None
  return out.reshape(n, c, *out_sp).cast(X.dtype)

def TensorScatter(past_cache, update, write_indices=None, axis=-2, mode="linear"):
  axis = _axis(axis, past_cache.ndim)
  b, mx, s = past_cache.shape[0], past_cache.shape[axis], update.shape[axis]
  wi = write_indices.cast(dtypes.int64) if write_indices is not None else Tensor.zeros(b, dtype=dtypes.int64)
  pos = wi.reshape(b, 1) + Tensor.arange(s, dtype=dtypes.int64).reshape(1, s)
  if mode == "circular": pos = pos.mod(mx)
  shape = [b if i == 0 else s if i == axis else 1 for i in range(update.ndim)]
  idx = (pos.reshape(b, s) if axis != 0 else pos).reshape(shape).expand(update.shape)
  return past_cache.scatter(axis, idx, update)

def _dft(x: Tensor, axis: int, n: int, inverse: bool, onesided: bool) -> Tensor:
  """x (..., 2) real/imag with the signal on `axis`; -> (..., 2) with n (or n//2+1) outputs on axis."""
  size = x.shape[axis]
  if size < n: x = x.pad(tuple((0, n - size) if i == axis else None for i in range(x.ndim)))
  elif size > n: x = x.shrink(tuple((0, n) if i == axis else None for i in range(x.ndim)))
  k_out = n // 2 + 1 if onesided else n
  sign = 1 if inverse else -1
  ang = [[2 * math.pi * k * j / n for k in range(k_out)] for j in range(n)]
  cos = Tensor([[math.cos(a) for a in row] for row in ang], dtype=dtypes.float64).cast(x.dtype)
  sin = Tensor([[sign * math.sin(a) for a in row] for row in ang], dtype=dtypes.float64).cast(x.dtype)
  xt = x.transpose(axis, -2)   # (..., n, 2) with the signal next to last
  re, im = xt[..., 0], xt[..., 1]   # (..., n)
  yr, yi = re @ cos - im @ sin, re @ sin + im @ cos
  if inverse: yr, yi = yr / n, yi / n
  return Tensor.stack(yr, yi, dim=-1).transpose(axis, -2)

def DFT(x, dft_length=None, axis=None, inverse=0, onesided=0, opset=20):
  if opset < 20: ax = axis if axis is not None else 1
  else: ax = int(_scalar(axis)) if isinstance(axis, Tensor) else (axis if axis is not None else -2)
  ax = _axis(ax, x.ndim)
  if x.shape[-1] == 1: x = x.cat(Tensor.zeros_like(x), dim=-1)
  n = int(_scalar(dft_length)) if dft_length is not None else 2 * (x.shape[ax] - 1) if inverse and onesided else x.shape[ax]
  if inverse and onesided:   # the input holds n//2+1 bins: rebuild the Hermitian-symmetric rest
    half = x
    m = half.shape[ax]
    mirror = _take(half, ax, [n - k for k in range(m, n)])
    conj = mirror * Tensor([1.0, -1.0], dtype=x.dtype)
    return _dft(half.cat(conj, dim=ax), ax, n, True, False)[..., :1]   # a real signal
  return _dft(x, ax, n, bool(inverse), bool(onesided))

def STFT(signal, frame_step, window=None, frame_length=None, onesided=1):
  step = int(_scalar(frame_step))
  flen = int(_scalar(frame_length)) if frame_length is not None else window.shape[0]
  if signal.shape[-1] == 1: signal = signal.cat(Tensor.zeros_like(signal), dim=-1)
  nf = (signal.shape[1] - flen) // step + 1
  frames = Tensor.stack(*[signal[:, f * step:f * step + flen] for f in range(nf)], dim=1)   # (b, nf, flen, 2)
  if window is not None: frames = frames * window.reshape(1, 1, flen, 1).cast(frames.dtype)
  return _dft(frames, 2, flen, False, bool(onesided))

def MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, output_datatype=1):
  nm, nd, sr = int(_scalar(num_mel_bins)), int(_scalar(dft_length)), int(_scalar(sample_rate))
  lo, hi = float(_scalar(lower_edge_hertz)), float(_scalar(upper_edge_hertz))
  bins = nd // 2 + 1
  def mel(f): return 2595 * math.log10(1 + f / 700)
  lo_m, hi_m = mel(lo), mel(hi)
  step = (hi_m - lo_m) / (nm + 2)
  edges = [math.floor(((700 * (10 ** ((lo_m + i * step) / 2595) - 1)) * (nd + 1)) / sr) for i in range(nm + 2)]
  w = [[0.0] * nm for _ in range(bins)]
  for i in range(nm):
    left, center, right = edges[i], edges[i + 1], edges[i + 2]
    if center == left: w[center][i] = 1.0
    else:
      for j in range(left, center + 1): w[j][i] = (j - left) / (center - left)
    if right != center:
      for j in range(center, right): w[j][i] = (right - j) / (right - center)
  return Tensor(w, dtype=dtypes.float32).cast(onnx_dtype(output_datatype))

def TfIdfVectorizer(X, max_gram_length, max_skip_count, min_gram_length, mode, ngram_counts, ngram_indexes, pool_int64s=None, pool_strings=None,
                    weights=None):
  pool = list(pool_strings if pool_strings is not None else pool_int64s)
  bounds = list(ngram_counts) + [len(pool)]
  table: dict[tuple, int] = {}
  for n in range(len(ngram_counts)):   # bounds[n]..bounds[n+1] hold the (n+1)-grams
    for start in range(bounds[n], bounds[n + 1], n + 1):
      table[tuple(pool[start:start + n + 1])] = ngram_indexes[_gram_slot(bounds, n, start)]
  rows = X.tolist() if isinstance(X, Tensor) else X.tolist()
  batched = isinstance(rows[0], list) if rows else False
  rows = rows if batched else [rows]
  width = max(ngram_indexes) + 1
  out = []
  for row in rows:
    counts = [0.0] * width
    for n in range(min_gram_length, max_gram_length + 1):
      for skip in range(0, (max_skip_count if n > 1 else 0) + 1):
        span = (n - 1) * (skip + 1)
        for s in range(len(row) - span):
          key = tuple(row[s + k * (skip + 1)] for k in range(n))
          if key in table: counts[table[key]] += 1
    if mode == "IDF": counts = [(weights[i] if weights else 1.0) if c > 0 else 0.0 for i, c in enumerate(counts)]
    elif mode == "TFIDF": counts = [c * (weights[i] if weights else 1.0) for i, c in enumerate(counts)]
    out.append(counts)
  return Tensor(out if batched else out[0], dtype=dtypes.float32)
def _gram_slot(bounds: list[int], n: int, start: int) -> int:
  """Index into ngram_indexes of the pool entry starting at `start`: one slot per n-gram, counting all shorter grams first."""
  return sum((bounds[i + 1] - bounds[i]) // (i + 1) for i in range(n)) + (start - bounds[n]) // (n + 1)

def CausalConvWithState(input, weight, bias=None, past_state=None, activation="none", n_outputs=1):
  b, c, _ = input.shape
  k = weight.shape[2]
  pad = past_state if past_state is not None else Tensor.zeros(b, c, k - 1, dtype=input.dtype)
  padded = pad.cat(input, dim=2) if k > 1 else input
  y = Conv(padded, weight, bias, group=c)
  if activation in ("silu", "swish"): y = (y.cast(dtypes.float32) * y.cast(dtypes.float32).sigmoid()).cast(input.dtype)
  state = padded.shrink((None, None, (padded.shape[2] - (k - 1), padded.shape[2])))
  return (y, state)[:max(n_outputs, 1)]

def LinearAttention(query, key, value, past_state=None, decay=None, beta=None, chunk_size=None, kv_num_heads=None, q_num_heads=None, scale=None,
                    update_rule="gated_delta", n_outputs=1):
  b, t, _ = query.shape
  dk, dv, group = query.shape[-1] // q_num_heads, value.shape[-1] // kv_num_heads, q_num_heads // kv_num_heads
  def heads(x: Tensor, h: int) -> Tensor: return x.reshape(b, t, h, -1).transpose(1, 2).cast(dtypes.float32)
  q, k, v = heads(query, q_num_heads), heads(key, kv_num_heads), heads(value, kv_num_heads)
  gating, delta = update_rule in ("gated", "gated_delta"), update_rule in ("delta", "gated_delta")
  g = None
  if decay is not None: g = decay.reshape(b, t, kv_num_heads, 1).transpose(1, 2) if decay.shape[-1] == kv_num_heads else heads(decay, kv_num_heads)
  bt = beta.reshape(b, t, beta.shape[-1], 1).transpose(1, 2).cast(dtypes.float32) if beta is not None else None
  state = past_state.cast(dtypes.float32) if past_state is not None else Tensor.zeros(b, kv_num_heads, dk, dv)
  sc = scale if scale else 1 / math.sqrt(dk)
  outs = []
  for i in range(t):
    qt, kt, vt = q[:, :, i], k[:, :, i], v[:, :, i]
    if gating and g is not None: state = state * g[:, :, i].cast(dtypes.float32).exp().unsqueeze(-1)
    if delta and bt is not None: vt = bt[:, :, i] * (vt - (state * kt.unsqueeze(-1)).sum(-2))
    state = (state + kt.unsqueeze(-1) * vt.unsqueeze(-2)).contiguous()
    read = state.repeat_interleave(group, 1) if group > 1 else state
    outs.append((qt.unsqueeze(-1) * read).sum(-2) * sc)
  out = Tensor.stack(*outs, dim=2).transpose(1, 2).reshape(b, t, q_num_heads * dv).cast(query.dtype)
  return (out, state.cast(past_state.dtype if past_state is not None else query.dtype))[:max(n_outputs, 1)]

def TreeEnsemble(X, nodes_splits, nodes_featureids, nodes_modes, nodes_truenodeids, nodes_falsenodeids, nodes_trueleafs, nodes_falseleafs,
                 leaf_targetids, leaf_weights, tree_roots, post_transform=0, aggregate_function=1, nodes_hitrates=None,
                 nodes_missing_value_tracks_true=None, membership_values=None, n_targets=None):
  splits, weights = _floats(nodes_splits), _floats(leaf_weights)
  nodes_modes, nodes_featureids, nodes_truenodeids, nodes_falsenodeids, nodes_trueleafs, nodes_falseleafs, leaf_targetids, tree_roots = \
    (_ints(v) for v in (nodes_modes, nodes_featureids, nodes_truenodeids, nodes_falsenodeids, nodes_trueleafs, nodes_falseleafs, leaf_targetids,
                        tree_roots))
  members: list[set[float]] = []
  if membership_values is not None:
    cur: set[float] = set()
    for v in _floats(membership_values):
      if math.isnan(v): members.append(cur); cur = set()
      else: cur.add(v)
  member_of, k = {}, 0
  for i, m in enumerate(nodes_modes):
    if m == 6: member_of[i], k = members[k], k + 1
  missing = _ints(nodes_missing_value_tracks_true) if nodes_missing_value_tracks_true is not None else [0] * len(nodes_modes)
  cmp = [lambda x, s: x <= s, lambda x, s: x < s, lambda x, s: x >= s, lambda x, s: x > s, lambda x, s: x == s, lambda x, s: x != s,
         lambda x, s: x in s]
  rows = X.cast(dtypes.float64).tolist()
  nt = n_targets or (max(leaf_targetids) + 1)
  init = {0: 0.0, 1: 0.0, 2: math.inf, 3: -math.inf}[aggregate_function]
  out = []
  for row in rows:
    res = [init] * nt
    for root in tree_roots:
      node, leaf = root, bool(nodes_trueleafs[root] and nodes_falseleafs[root] and nodes_truenodeids[root] == nodes_falsenodeids[root])
      while not leaf:   # walk down iteratively: deep trees don't recurse
        x = row[nodes_featureids[node]]
        go = (math.isnan(x) and bool(missing[node])) or cmp[nodes_modes[node]](x, member_of.get(node, splits[node]))
        node, leaf = (nodes_truenodeids[node], bool(nodes_trueleafs[node])) if go else (nodes_falsenodeids[node], bool(nodes_falseleafs[node]))
      t, w = leaf_targetids[node], weights[node]
      if aggregate_function == 0: res[t] += w / len(tree_roots)
      elif aggregate_function == 1: res[t] += w
      elif aggregate_function == 2: res[t] = min(res[t], w)
      else: res[t] = max(res[t], w)
    out.append(res)
  return Tensor(out, dtype=dtypes.float64).cast(X.dtype)

def RoiAlign(X, rois, batch_indices, coordinate_transformation_mode="half_pixel", mode="avg", output_height=1, output_width=1,
             sampling_ratio=0, spatial_scale=1.0):
  _, c, h, w = X.shape
  off = 0.5 if coordinate_transformation_mode == "half_pixel" else 0.0
  outs = []
  for roi, b in zip(rois.tolist(), _ints(batch_indices)):
    x0, y0, x1, y1 = (v * spatial_scale - off for v in roi)
    rw, rh = x1 - x0, y1 - y0
    if not off: rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / output_height, rw / output_width
    gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / output_height)
    gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / output_width)
    idx: list[list[int]] = []
    wts: list[list[float]] = []
    for ph, pw in itertools.product(range(output_height), range(output_width)):
      ri, rw_ = [], []
      for iy, ix in itertools.product(range(gh), range(gw)):
        y, x = y0 + ph * bh + (iy + 0.5) * bh / gh, x0 + pw * bw + (ix + 0.5) * bw / gw
        if y < -1 or y > h or x < -1 or x > w: ri += [0] * 4; rw_ += [0.0] * 4; continue
        y, x = max(y, 0.0), max(x, 0.0)
        yl, xl = int(y), int(x)
        if yl >= h - 1: yh = yl = h - 1; y = yl
        else: yh = yl + 1
        if xl >= w - 1: xh = xl = w - 1; x = xl
        else: xh = xl + 1
        ly, lx = y - yl, x - xl
        ri += [yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh]
        rw_ += [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx]
      idx.append(ri)
      wts.append(rw_)
    k = len(idx[0])
    vals = _take(X[b].reshape(c, h * w), 1, _i64(idx).reshape(-1)).reshape(c, len(idx), k) * Tensor(wts, dtype=X.dtype)
    if mode == "avg": r = vals.sum(-1) / max(gh * gw, 1)
    else: r = vals.reshape(c, len(idx), k // 4, 4).max(-1).max(-1)
    outs.append(r.reshape(c, output_height, output_width))
  return Tensor.stack(*outs, dim=0) if outs else Tensor.zeros(0, c, output_height, output_width, dtype=X.dtype)

def DeformConv(X, W, offset, B=None, mask=None, dilations=None, group=1, kernel_shape=None, offset_group=1, pads=None, strides=None):
  n, c, h, w = X.shape
  o = W.shape[0]
  kh, kw = kernel_shape or W.shape[2:]
  sh, sw = strides or [1, 1]
  dh, dw = dilations or [1, 1]
  pt, pl, _, _ = pads or [0, 0, 0, 0]
  oh, ow = offset.shape[2], offset.shape[3]
  K, P, G = kh * kw, oh * ow, offset_group
  off = offset.reshape(n, G, K, 2, oh, ow)
  ky = Tensor([k // kw * dh for k in range(K)], dtype=X.dtype).reshape(1, 1, K, 1, 1)
  kx = Tensor([k % kw * dw for k in range(K)], dtype=X.dtype).reshape(1, 1, K, 1, 1)
  py = Tensor([i * sh - pt for i in range(oh)], dtype=X.dtype).reshape(1, 1, 1, oh, 1)
  px = Tensor([j * sw - pl for j in range(ow)], dtype=X.dtype).reshape(1, 1, 1, 1, ow)
  y, x = py + ky + off[:, :, :, 0], px + kx + off[:, :, :, 1]   # (n, G, K, oh, ow)
  inside = (y > -1) & (y < h) & (x > -1) & (x < w)
  y0, x0 = y.floor(), x.floor()
  xg = X.reshape(n, G, c // G, h * w)
  sampled = None
  for cy, cx in ((0, 0), (0, 1), (1, 0), (1, 1)):
    yy, xx = y0 + cy, x0 + cx
    wt = (1 - (y - yy).abs()) * (1 - (x - xx).abs())
    ok = inside & (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
    idx = (yy.clip(0, h - 1) * w + xx.clip(0, w - 1)).cast(dtypes.int64).reshape(n, G, 1, K * P).expand(n, G, c // G, K * P)
    term = xg.gather(3, idx) * ok.where(wt, 0).reshape(n, G, 1, K * P)
    sampled = term if sampled is None else sampled + term
  assert sampled is not None
  sampled = sampled.reshape(n, G, c // G, K, P)
  if mask is not None: sampled = sampled * mask.reshape(n, G, 1, K, P)
  cols = sampled.reshape(n, group, (c // group) * K, P)
  out = W.reshape(group, o // group, (c // group) * K) @ cols   # (n, group, o/group, P)
  out = out.reshape(n, o, oh, ow)
  return out + B.reshape(1, o, 1, 1) if B is not None else out

def FlexAttention(Q, K, V, scale=None, score_mod=None, prob_mod=None, softmax_precision=None, runner=None, env=None):
  hq, hk, e = Q.shape[1], K.shape[1], Q.shape[3]
  if hq != hk: K, V = K.repeat_interleave(hq // hk, 1), V.repeat_interleave(hq // hk, 1)
  s = math.sqrt(scale if scale is not None else 1 / math.sqrt(e))
  scores = (Q * s) @ (K * s).transpose(-1, -2)
  cdt = onnx_dtype(softmax_precision) if softmax_precision is not None else dtypes.float32 if Q.dtype.itemsize < 4 else Q.dtype
  scores = scores.cast(cdt)
  if score_mod is not None: scores = runner.run_subgraph(score_mod, env, [scores])[0].cast(cdt)
  p = scores.softmax(-1)
  if prob_mod is not None: p = runner.run_subgraph(prob_mod, env, [p])[0].cast(cdt)
  return (p @ V.cast(cdt)).cast(V.dtype)

# ***** registry *****

_ML_OPS, _TRAINING_OPS = ("LabelEncoder", "Binarizer", "ArrayFeatureExtractor", "TreeEnsemble"), ("Adagrad", "Momentum", "Adam")
_ALL = {k: v for k, v in globals().items() if k[:1].isupper() and getattr(v, "__module__", None) == __name__ and not isinstance(v, type)}
DOMAIN_OPS: dict[str, dict[str, Callable]] = {"": {k: v for k, v in _ALL.items() if k not in _ML_OPS + _TRAINING_OPS + ("FlexAttention",)},
                                              "ai.onnx.preview": {"FlexAttention": FlexAttention},
                                              "ai.onnx.ml": {k: _ALL[k] for k in _ML_OPS},
                                              "ai.onnx.preview.training": {k: _ALL[k] for k in _TRAINING_OPS}}

def lookup(domain: str, op_type: str, opset: int) -> Callable|None:
  return DOMAIN_OPS.get(domain, {}).get(op_type)

def register(domain: str, fns: dict[str, Callable]) -> None: DOMAIN_OPS.setdefault(domain, {}).update(fns)

