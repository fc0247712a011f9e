from __future__ import annotations
import enum, functools, math, struct
from dataclasses import dataclass, field
from typing import Any, Callable, Final
from tinygrad.helpers import getenv, prod

ConstType = float|int|bool

# every DType is frozen; equality and hashing go through a precomputed key so lookups in dicts/sets stay cheap
@dataclass(frozen=True, eq=False, repr=False)
class DType:
  priority: int          # order in promotion and sorting
  itemsize: int          # bytes of the whole (vector) type
  name: str              # C-style name, used by renderers
  fmt: str|None          # struct/memoryview format char, None where Python has none (bfloat16, fp8)
  count: int             # vector width, 1 for scalars
  _scalar: DType|None    # the scalar type of a vector type
  _key: tuple = field(init=False, compare=False)
  _hash: int = field(init=False, compare=False)
  def __post_init__(self):
    object.__setattr__(self, '_key', self._fields())
    object.__setattr__(self, '_hash', hash(self._key))
  def _fields(self) -> tuple: return (self.priority, self.itemsize, self.name, self.fmt, self.count, self._scalar)
  def __eq__(self, x: object) -> bool:
    return self is x or (isinstance(x, DType) and type(x) is type(self) and self._hash == x._hash and self._key == x._key)
  def __hash__(self) -> int: return self._hash
  def __lt__(self, x: DType) -> bool: return self._order() < x._order()
  def _order(self) -> tuple: return (self.priority, self.itemsize, self.name, self.fmt or "", self.count)
  # pickling goes back through the constructors so unpickled dtypes are the interned objects (and hashes are recomputed)
  def __reduce__(self):
    if self._scalar is None: return (DType.new, (self.priority, self.itemsize, self.name, self.fmt))
    return (_vec, (self._scalar, self.count))
  def __repr__(self) -> str:
    if self._scalar is not None: return f"{self._scalar!r}.vec({self.count})"
    return f"dtypes.{_SHORT_NAMES.get(self.name, self.name)}"
  @staticmethod
  @functools.cache
  def new(priority: int, itemsize: int, name: str, fmt: str|None) -> DType: return DType(priority, itemsize, name, fmt, 1, None)
  def vec(self, sz: int) -> DType: return _vec(self, sz)
  def scalar(self) -> DType: return self._scalar if self._scalar is not None else self
  def ptr(self, size: int = -1, local: bool = False) -> PtrDType: return _ptr(self, size, local)
  @property
  def vcount(self) -> int: return self.count
  @property
  def base(self) -> DType: return self

class AddrSpace(enum.Enum):   # where a pointer points, as tinygrad names it
  GLOBAL = enum.auto()
  LOCAL = enum.auto()
  REG = enum.auto()

@dataclass(frozen=True, eq=False, repr=False)
class PtrDType(DType):
  _base: DType
  local: bool
  v: int              # vector width of the pointer itself (a vector of pointers)
  size: int = -1      # number of elements pointed at, -1 when unknown
  def _fields(self) -> tuple: return super()._fields() + (self._base, self.local, self.v, self.size)
  def __reduce__(self): return (_make_ptr, (self._base, self.size, self.local, self.v))
  def __repr__(self) -> str:
    return f"{self._base!r}.ptr({self.size}{', local=True' if self.local else ''})" + (f".vec({self.v})" if self.v != 1 else "")
  @property
  def base(self) -> DType: return self._base
  @property
  def addrspace(self) -> AddrSpace: return AddrSpace.LOCAL if self.local else AddrSpace.GLOBAL
  @property
  def vcount(self) -> int: return self.v
  def vec(self, sz: int) -> PtrDType: return _ptr_vec(self, sz)
  def ptr(self, size: int = -1, local: bool = False) -> PtrDType: raise TypeError(f"can't make a pointer to a pointer ({self})")
  def scalar(self) -> PtrDType: return self._base.ptr(self.size, self.local)

@dataclass(frozen=True, eq=False, repr=False)
class ImageDType(PtrDType):
  shape: tuple[int, ...] = ()   # (height, width, 4) for images on GPUs with IMAGE=1
  def _fields(self) -> tuple: return super()._fields() + (self.shape,)
  def __reduce__(self):
    return (ImageDType, (self.priority, self.itemsize, self.name, self.fmt, self.count, None, self._base, self.local, self.v, self.size, self.shape))
  def __repr__(self) -> str: return f"dtypes.{self.name}({self.shape})" + (f".vec({self.v})" if self.v != 1 else "")
  def vec(self, sz: int) -> ImageDType:
    if self.v != 1: raise ValueError(f"can't vectorize {self} with size {sz}: it is already a vector")
    if sz == 1: return self
    return ImageDType(self.priority, self.itemsize, self.name, self.fmt, self.count, None, self._base, self.local, sz, self.size, self.shape)
  def scalar(self) -> ImageDType:
    return self if self.v == 1 else ImageDType(*(self._key[:5] + (None, self._base, self.local, 1, self.size, self.shape)))

# the constructors are cached so equal dtypes are the same object: dtypes.float.vec(4) is dtypes.float.vec(4)
@functools.cache
def _vec(dt: DType, sz: int) -> DType:
  if dt.count != 1: raise ValueError(f"can't vectorize {dt} with size {sz}: it is already a vector")
  if sz == 1 or dt.priority == -1: return dt  # void has no vectors
  return DType(dt.priority, dt.itemsize*sz, f"{_SHORT_NAMES.get(dt.name, dt.name)}{sz}", None, sz, dt)
@functools.cache
def _ptr(dt: DType, size: int, local: bool) -> PtrDType:
  return PtrDType(dt.priority, dt.itemsize, dt.name, dt.fmt, dt.count, None, dt, local, 1, size)
@functools.cache
def _ptr_vec(dt: PtrDType, sz: int) -> PtrDType:
  if dt.v != 1: raise ValueError(f"can't vectorize {dt} with size {sz}: it is already a vector")
  if sz == 1: return dt
  return PtrDType(dt.priority, dt.itemsize, dt.name, dt.fmt, dt.count, None, dt._base, dt.local, sz, dt.size)
def _make_ptr(base: DType, size: int, local: bool, v: int) -> PtrDType: return base.ptr(size, local).vec(v)

# ***** fp8 (OCP e4m3fn and e5m2) *****

# exponent bits, mantissa bits, has infinity
_FP8_SPEC: dict[str, tuple[int, int, bool]] = {"float8_e4m3": (4, 3, False), "float8_e5m2": (5, 2, True)}

def _fp8_spec(dtype: DType) -> tuple[int, int, bool]:
  if (spec := _FP8_SPEC.get(dtype.name)) is None or dtype.count != 1: raise ValueError(f"expected an fp8 dtype (fp8e4m3 or fp8e5m2), got {dtype}")
  return spec

def fp8_to_float(x: int, dtype: DType) -> float:
  ebits, mbits, has_inf = _fp8_spec(dtype)
  sign, e, m, bias = -1.0 if x & 0x80 else 1.0, (x >> mbits) & ((1 << ebits) - 1), x & ((1 << mbits) - 1), (1 << (ebits-1)) - 1
  if e == (1 << ebits) - 1:
    if has_inf: return sign * math.inf if m == 0 else math.nan
    if m == (1 << mbits) - 1: return math.nan   # e4m3fn: only all-ones is NaN, the rest of the top exponent is finite
  if e == 0: return sign * math.ldexp(m, 1 - bias - mbits)
  return sign * math.ldexp((1 << mbits) + m, e - bias - mbits)

def float_to_fp8(x: float, dtype: DType) -> int:
  ebits, mbits, has_inf = _fp8_spec(dtype)
  bias = (1 << (ebits-1)) - 1
  sign = 0x80 if math.copysign(1.0, x) < 0 else 0
  if math.isnan(x): return sign | 0x7f
  # e4m3fn saturates (max 448, like torch and CUDA's satfinite); e5m2 is IEEE-like and overflows to inf
  max_byte = 0x7e if not has_inf else ((((1 << ebits) - 2) << mbits) | ((1 << mbits) - 1))
  max_val = fp8_to_float(max_byte, dtype)
  x = _f32(abs(x))   # torch converts through float32, so round there first to match its double rounding
  if math.isinf(x): return sign | (max_byte if not has_inf else (((1 << ebits) - 1) << mbits))
  if x == 0: return sign
  exp = max(math.frexp(x)[1] - 1, 1 - bias)     # unbiased exponent of the quantum, clamped at the subnormal range
  q = round(math.ldexp(x, mbits - exp))         # python's round is round-half-even, and this scaling is exact
  val = math.ldexp(q, exp - mbits)
  if val > max_val: return sign | (max_byte if not has_inf else (((1 << ebits) - 1) << mbits))
  if q >= (2 << mbits): q, exp = q >> 1, exp + 1  # rounding carried into the next binade
  if q < (1 << mbits): return sign | q            # subnormal
  return sign | ((exp + bias) << mbits) | (q - (1 << mbits))

# ***** truncation of python values into a dtype's range *****

def _f32(x: float) -> float:
  try: return struct.unpack("<f", struct.pack("<f", x))[0]
  except OverflowError: return math.copysign(math.inf, x)
def _f16(x: float) -> float:
  try: return struct.unpack("<e", struct.pack("<e", x))[0]
  except OverflowError: return math.copysign(math.inf, x)
def _bf16(x: float) -> float:
  x = _f32(float(x))
  if math.isnan(x): return x
  bits = struct.unpack("<I", struct.pack("<f", x))[0]
  bits = ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) << 16   # round to nearest even on the upper 16 bits
  return struct.unpack("<f", struct.pack("<I", bits))[0]
def _wrap_int(bits: int, signed: bool) -> Callable[[Any], int]:
  def f(x: Any) -> int:
    # C leaves non-finite float -> int undefined; pick 0 rather than raising in the middle of constant folding
    if isinstance(x, float) and not math.isfinite(x): return 0
    x = int(x) & ((1 << bits) - 1)
    return x - (1 << bits) if signed and x >= (1 << (bits-1)) else x
  return f

# ***** dtypes *****

class dtypes:
  @staticmethod
  @functools.cache
  def is_float(x: DType) -> bool: return x.scalar() in _FLOATS or isinstance(x, ImageDType)
  @staticmethod
  @functools.cache
  def is_int(x: DType) -> bool: return x.scalar() in _INTS
  @staticmethod
  @functools.cache
  def is_unsigned(x: DType) -> bool: return x.scalar() in _UINTS
  @staticmethod
  def is_bool(x: DType) -> bool: return x.scalar() == dtypes.bool
  @staticmethod
  def from_py(x: Any) -> DType:
    if type(x).__module__ == "numpy" and getattr(x, "shape", None) == (): return to_dtype(x.dtype.name)   # a numpy scalar keeps its dtype, like torch
    if isinstance(x, bool): return dtypes.bool
    if isinstance(x, float): return dtypes.default_float
    if isinstance(x, int): return dtypes.default_int
    if isinstance(x, (list, tuple)): return least_upper_dtype(*(dtypes.from_py(xi) for xi in x)) if len(x) else dtypes.default_float
    raise RuntimeError(f"could not infer dtype of {x!r} with type {type(x).__name__}: expected a bool, int, float, or a (nested) list/tuple of them")
  @staticmethod
  def as_const(val: Any, dtype: DType) -> Any:
    if isinstance(val, tuple):
      if len(val) != dtype.count: raise ValueError(f"constant {val} has {len(val)} elements, but {dtype} has {dtype.count}")
      return tuple(dtypes.as_const(x, dtype.scalar()) for x in val)
    if dtypes.is_int(dtype): return int(val)
    return float(val) if dtypes.is_float(dtype) else bool(val)
  @staticmethod
  @functools.cache
  def min(dtype: DType) -> ConstType:
    if dtypes.is_int(dtype): return 0 if dtypes.is_unsigned(dtype) else -2**(dtype.scalar().itemsize*8-1)
    return -math.inf if dtypes.is_float(dtype) else False
  @staticmethod
  @functools.cache
  def max(dtype: DType) -> ConstType:
    if dtypes.is_int(dtype): return 2**(dtype.scalar().itemsize*8) - 1 + dtypes.min(dtype)
    return math.inf if dtypes.is_float(dtype) else True
  @staticmethod
  def finfo(dtype: DType) -> tuple[int, int]:
    """(exponent bits, mantissa bits) of a float dtype"""
    if (ret := _FINFO.get(dtype.scalar().name)) is None: raise ValueError(f"finfo expects a float dtype, got {dtype}")
    return ret
  @staticmethod
  def fields() -> dict[str, DType]: return dict(DTYPES_DICT)
  @staticmethod
  def imageh(shp: tuple[int, ...]) -> ImageDType: return ImageDType(100, 2, "imageh", 'e', 1, None, dtypes.float32, False, 1, prod(shp), tuple(shp))
  @staticmethod
  def imagef(shp: tuple[int, ...]) -> ImageDType: return ImageDType(100, 4, "imagef", 'f', 1, None, dtypes.float32, False, 1, prod(shp), tuple(shp))

  void: Final[DType] = DType.new(-1, 0, "void", None)
  bool: Final[DType] = DType.new(0, 1, "bool", '?')
  int8: Final[DType] = DType.new(1, 1, "signed char", 'b')
  uint8: Final[DType] = DType.new(2, 1, "unsigned char", 'B')
  int16: Final[DType] = DType.new(3, 2, "short", 'h')
  uint16: Final[DType] = DType.new(4, 2, "unsigned short", 'H')
  int32: Final[DType] = DType.new(5, 4, "int", 'i')
  uint32: Final[DType] = DType.new(6, 4, "unsigned int", 'I')
  int64: Final[DType] = DType.new(7, 8, "long", 'q')
  uint64: Final[DType] = DType.new(8, 8, "unsigned long", 'Q')
  fp8e4m3: Final[DType] = DType.new(9, 1, "float8_e4m3", None)
  fp8e5m2: Final[DType] = DType.new(10, 1, "float8_e5m2", None)
  float16: Final[DType] = DType.new(11, 2, "half", 'e')
  bfloat16: Final[DType] = DType.new(12, 2, "__bf16", None)
  float32: Final[DType] = DType.new(13, 4, "float", 'f')
  float64: Final[DType] = DType.new(14, 8, "double", 'd')

  # aliases
  half, float, double = float16, float32, float64
  uchar, ushort, uint, ulong = uint8, uint16, uint32, uint64
  char, short, int, long = int8, int16, int32, int64

  default_float: DType = float32
  default_int: DType = int32

  fp8s = (fp8e4m3, fp8e5m2)
  floats = fp8s + (float16, bfloat16, float32, float64)
  uints = (uint8, uint16, uint32, uint64)
  sints = (int8, int16, int32, int64)
  ints = uints + sints
  all = floats + ints + (bool,)

_FLOATS, _INTS, _UINTS = frozenset(dtypes.floats), frozenset(dtypes.ints), frozenset(dtypes.uints)
_FINFO: dict[str, tuple[int, int]] = {"float8_e4m3": (4, 3), "float8_e5m2": (5, 2), "half": (5, 10), "__bf16": (8, 7), "float": (8, 23),
                                      "double": (11, 52)}

DTypeLike = str|DType

DTYPES_DICT: dict[str, DType] = {k: getattr(dtypes, k) for k in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                                                  "fp8e4m3", "fp8e5m2", "float16", "bfloat16", "float32", "float64")}
INVERSE_DTYPES_DICT: dict[str, str] = {**{v.name: k for k, v in DTYPES_DICT.items()}, "void": "void"}
_ALIASES: dict[str, DType] = {k: getattr(dtypes, k) for k in ("half", "float", "double", "uchar", "ushort", "uint", "ulong", "char", "short", "int",
                                                               "long")}
# short names for repr and vector names (float4, uchar4 ... as OpenCL/Metal spell them)
_SHORT_NAMES: dict[str, str] = {**{v.name: k for k, v in DTYPES_DICT.items()}, **{v.name: k for k, v in _ALIASES.items()}, "void": "void"}

# torch's names for the fp8 formats (torch.float8_e4m3fn and torch.float8_e5m2 are these, bit for bit)
_TORCH_NAMES: dict[str, DType] = {"float8_e4m3fn": dtypes.fp8e4m3, "float8_e5m2": dtypes.fp8e5m2, "bf16": dtypes.bfloat16}

def _from_torch_dtype(torch_dtype: Any) -> DType:
  """The DType of a torch.dtype (torch itself is not imported)."""
  if (name := str(torch_dtype).removeprefix("torch.")) in DTYPES_DICT or name in _TORCH_NAMES: return to_dtype(name)
  raise TypeError(f"torch dtype {torch_dtype} has no tinygrad dtype; expected one of bool, (u)int8-64, float16/32/64, bfloat16, float8")
def _to_np_dtype(dtype: DType) -> Any:
  """The numpy dtype of a tinygrad dtype, or None where numpy has none (bfloat16, fp8)."""
  import numpy as np
  return np.dtype(dtype.scalar().fmt) if dtype.scalar().fmt is not None else None
def _from_np_dtype(npdtype: Any) -> DType:
  import numpy as np
  npdtype = np.dtype(npdtype)
  for dt in dtypes.all:
    if dt.fmt is not None and np.dtype(dt.fmt) == npdtype: return dt
  raise TypeError(f"numpy dtype {npdtype} has no tinygrad dtype; expected one of bool, (u)int8-64, float16/32/64")

def to_dtype(x: DTypeLike) -> DType:
  if isinstance(x, DType): return x
  if isinstance(x, str) and (ret := DTYPES_DICT.get(x.lower()) or _ALIASES.get(x.lower()) or _TORCH_NAMES.get(x.lower())) is not None: return ret
  raise ValueError(f"unknown dtype {x!r}, expected a DType or one of: {', '.join(list(DTYPES_DICT) + list(_ALIASES))}")

if (_env_default_float := getenv("DEFAULT_FLOAT", "")):
  if not dtypes.is_float(_df := to_dtype(_env_default_float)): raise ValueError(f"DEFAULT_FLOAT={_env_default_float} is not a float dtype")
  dtypes.default_float = _df

# JAX-like promotion lattice (https://jax.readthedocs.io/en/latest/jep/9407-type-promotion.html) without weak or complex types
promo_lattice: dict[DType, list[DType]] = {
  dtypes.bool: [dtypes.int8, dtypes.uint8], dtypes.int8: [dtypes.int16], dtypes.int16: [dtypes.int32], dtypes.int32: [dtypes.int64],
  dtypes.int64: [dtypes.fp8e4m3, dtypes.fp8e5m2], dtypes.uint8: [dtypes.int16, dtypes.uint16], dtypes.uint16: [dtypes.int32, dtypes.uint32],
  dtypes.uint32: [dtypes.int64, dtypes.uint64], dtypes.uint64: [dtypes.fp8e4m3, dtypes.fp8e5m2],
  dtypes.fp8e4m3: [dtypes.float16, dtypes.bfloat16], dtypes.fp8e5m2: [dtypes.float16, dtypes.bfloat16],
  dtypes.float16: [dtypes.float32], dtypes.bfloat16: [dtypes.float32], dtypes.float32: [dtypes.float64], dtypes.float64: []}

@functools.cache
def _ancestors(dt: DType) -> frozenset[DType]:
  if dt not in promo_lattice: raise ValueError(f"{dt} has no place in the promotion lattice (expected a scalar dtype other than void)")
  return frozenset({dt}).union(*(_ancestors(p) for p in promo_lattice[dt]))

@functools.cache
def least_upper_dtype(*ds: DType) -> DType:
  if (images := [d for d in ds if isinstance(d, ImageDType)]): return images[0]
  if not ds: raise ValueError("least_upper_dtype needs at least one dtype")
  if len(ds) == 2 and ds[0] is ds[1] or all(d == ds[0] for d in ds): return ds[0]
  return min(frozenset.intersection(*(_ancestors(d.scalar()) for d in ds)))

def least_upper_float(dt: DType) -> DType: return dt if dtypes.is_float(dt) else least_upper_dtype(dt, dtypes.default_float)

@functools.cache   # (SUM_DTYPE is read once, by the cached getenv)
def sum_acc_dtype(dt: DType) -> DType:
  # small ints accumulate in 32 bits; half/bfloat16/fp8 accumulate in float32 (SUM_DTYPE) and Tensor.sum casts the result back
  if dtypes.is_unsigned(dt): return least_upper_dtype(dt, dtypes.uint32)
  if dtypes.is_int(dt) or dt.scalar() == dtypes.bool: return least_upper_dtype(dt, dtypes.int32)
  return least_upper_dtype(dt, to_dtype(getenv("SUM_DTYPE", "float32")))

def can_safe_cast(dt0: DType, dt1: DType) -> bool:
  """whether every value of dt0 is exactly representable in dt1"""
  dt0, dt1 = dt0.scalar(), dt1.scalar()
  if dt0 == dt1 or dt0 == dtypes.bool: return True
  if dt1 == dtypes.bool or dtypes.is_float(dt0) and not dtypes.is_float(dt1): return False
  if dtypes.is_int(dt0) and dtypes.is_int(dt1): return dtypes.min(dt1) <= dtypes.min(dt0) and dtypes.max(dt0) <= dtypes.max(dt1)
  if dtypes.is_int(dt0):   # int -> float: the magnitude has to fit the significand (and so the exponent range)
    return dt0.itemsize*8 - (0 if dtypes.is_unsigned(dt0) else 1) <= dtypes.finfo(dt1)[1] + 1
  (e0, m0), (e1, m1) = dtypes.finfo(dt0), dtypes.finfo(dt1)
  return e0 <= e1 and m0 <= m1

truncate: dict[DType, Callable[[Any], Any]] = {
  dtypes.bool: bool, dtypes.float64: float, dtypes.float32: lambda x: _f32(float(x)), dtypes.float16: lambda x: _f16(float(x)),
  dtypes.bfloat16: _bf16,
  dtypes.fp8e4m3: lambda x: fp8_to_float(float_to_fp8(float(x), dtypes.fp8e4m3), dtypes.fp8e4m3),
  dtypes.fp8e5m2: lambda x: fp8_to_float(float_to_fp8(float(x), dtypes.fp8e5m2), dtypes.fp8e5m2),
  **{dt: _wrap_int(dt.itemsize*8, dt not in dtypes.uints) for dt in dtypes.ints}}
truncate_fp16, truncate_bf16 = truncate[dtypes.float16], truncate[dtypes.bfloat16]   # tinygrad's names; rounding as a cast rounds
