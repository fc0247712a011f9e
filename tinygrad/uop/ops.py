from __future__ import annotations
import math, struct, weakref, functools, inspect, itertools, operator, enum
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple, Union, TYPE_CHECKING
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.mathtraits import MathTrait
from tinygrad.dtype import DType, PtrDType, dtypes, ConstType, truncate
from tinygrad.helpers import prod, all_int

# ***** python semantics of every ALU op (the reference for constant folding and the PYTHON device) *****

def _fdiv(x, y):
  try: return x / y
  except ZeroDivisionError: return math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1.0, y)
def _recip(x):
  try: return 1.0 / x
  except ZeroDivisionError: return math.copysign(math.inf, x)
def _exp2(x):
  try: return 2.0 ** x
  except OverflowError: return math.inf
def _exp(x):
  try: return math.exp(x)
  except OverflowError: return math.inf
def _log2(x): return math.nan if x < 0 or math.isnan(x) else (-math.inf if x == 0 else (math.inf if x == math.inf else math.log2(x)))
def _sqrt(x): return math.nan if x < 0 or math.isnan(x) else math.sqrt(x)
def _sin(x): return math.nan if math.isinf(x) or math.isnan(x) else math.sin(x)
def _trunc(x): return x if not isinstance(x, float) or math.isinf(x) or math.isnan(x) else math.copysign(float(math.trunc(x)), x)  # -0.3 -> -0.0
def _idiv(x, y): return 0 if y == 0 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)   # C semantics: truncate toward zero
def _mod(x, y): return 0 if y == 0 else (abs(x) % abs(y)) * (1 if x >= 0 else -1)                   # sign of the dividend, as in C
def _pow(x, y):
  # C's pow: overflow keeps the sign of an odd integer power, 0 to a negative power is inf, other domain errors are nan
  odd = isinstance(y, (int, float)) and not math.isinf(y) and float(y).is_integer() and int(y) % 2 == 1
  try: return math.pow(x, y)
  except OverflowError: return -math.inf if x < 0 and odd else math.inf
  except ValueError: return (math.copysign(math.inf, x) if odd else math.inf) if x == 0 else math.nan
def _shl(x, y): return x << y if y >= 0 else x >> -y

python_alu: dict[Ops, Callable] = {
  Ops.LOG2: _log2, Ops.EXP2: _exp2, Ops.EXP: _exp, Ops.TANH: math.tanh, Ops.SQRT: _sqrt, Ops.RECIP: _recip, Ops.SIN: _sin, Ops.TRUNC: _trunc,
  Ops.NEG: lambda x: (not x) if isinstance(x, bool) else -x, Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul,
  Ops.SHR: operator.rshift, Ops.SHL: _shl, Ops.MAX: max, Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq,
  Ops.XOR: operator.xor, Ops.OR: operator.or_, Ops.AND: operator.and_, Ops.MOD: _mod, Ops.IDIV: _idiv, Ops.FDIV: _fdiv, Ops.POW: _pow,
  Ops.MULACC: lambda x, y, z: (x*y)+z, Ops.WHERE: lambda x, y, z: y if x else z}

def exec_alu(op:Ops, dtype:DType, operands, truncate_output=True):
  if dtype.count > 1: return tuple(exec_alu(op, dtype.scalar(), [x[i] if isinstance(x, tuple) else x for x in operands]) for i in range(dtype.count))
  if dtype.scalar() == dtypes.bool and op in {Ops.ADD, Ops.MUL, Ops.MAX}: op = {Ops.ADD: Ops.OR, Ops.MUL: Ops.AND, Ops.MAX: Ops.OR}[op]
  if dtypes.is_int(dtype) and op is Ops.RECIP: raise ValueError(f"RECIP is a float op, got {dtype}")
  alu = python_alu[op](*operands)
  return truncate.get(dtype.scalar(), lambda x: x)(alu) if truncate_output else alu

# ***** UOp: immutable, hash-consed graph node *****

def _argkey(arg:Any) -> Any:
  # 0.0 == -0.0 and nan != nan: keep floats apart by their bits so hash-consing never merges distinct constants
  if arg is None or type(arg) is int: return arg   # (the common cases first: this runs for every UOp built)
  if isinstance(arg, float): return (float, struct.pack("<d", arg))
  if isinstance(arg, bool): return (bool, arg)   # True == 1, but a bool CONST is not an int one
  if isinstance(arg, tuple):
    for a in arg:
      if isinstance(a, float): return tuple(_argkey(a) for a in arg)
  return arg

class UOpMetaClass(type):
  # key -> weak reference to the UOp. A plain dict of weakrefs (not a WeakValueDictionary, whose get and set are Python code): a dead
  # UOp's callback drops its entry unless a new UOp took the key meanwhile
  ucache: dict[tuple, weakref.ReferenceType[UOp]] = {}
  def __call__(cls, op:Ops, dtype:DType=dtypes.void, src:tuple[UOp, ...]=tuple(), arg:Any=None):
    # (the dtype by its fields: a scalar dtype's hash is then all C, DType.__hash__ is a Python call)
    key = (op, dtype._key, src, arg if arg is None or type(arg) is int or op in _PLAIN_ARG else _argkey(arg))
    if (ref := _ucache.get(key)) is not None and (ret := ref()) is not None: return ret
    new: UOp = object.__new__(cls)  # type: ignore[arg-type]
    new.op, new.dtype, new.src, new.arg = op, dtype, src, arg
    # the callback (all in C: a dead UOp costs no Python call) drops the entry. No new UOp can have taken the key by then: a weakref's
    # callback runs as its object is freed, and only UOp creation (never a callback) makes UOps
    _ucache[key] = _weakref(new, _partial(_ucache_pop, key))
    return new
_ucache = UOpMetaClass.ucache
_ucache_pop, _weakref, _partial = _ucache.pop, weakref.ref, functools.partial
_PLAIN_ARG = GroupOp.Movement | {Ops.REDUCE_AXIS, Ops.VIEW}   # args of ints, ops and ShapeTrackers: no float to keep apart

_MISSING = object()   # a memo not filled in yet (None is a value: no shape, no device)

class _Buffers:
  """A Buffer for every BUFFER UOp that has one (weak, so graphs that die free their memory). The UOp's memo holds it, so a read is one dict
  lookup; the registry TinyJit walks (values()) holds it under a weak reference to the UOp whose callback, all C, drops the entry as the UOp
  dies: registering and forgetting a buffer cost no Python call but this one."""
  def __init__(self) -> None: self._refs: dict[weakref.ReferenceType[UOp], Any] = {}
  def __setitem__(self, u:UOp, buf:Any) -> None:
    # (a second set for a live UOp keeps the first key, whose callback still drops it; the new reference dies unused, never calling back)
    u.__dict__["_buffer"] = self._refs[_weakref(u, self._refs.pop)] = buf
  def __delitem__(self, u:UOp) -> None:
    del u.__dict__["_buffer"]
    del self._refs[_weakref(u)]   # (the stored reference goes with its entry: its callback never runs)
  def pop(self, u:UOp, *default:Any) -> Any:
    if "_buffer" not in u.__dict__:
      if default: return default[0]
      raise KeyError(u)
    ret = u.__dict__["_buffer"]
    del self[u]
    return ret
  def get(self, u:UOp, default:Any=None) -> Any: return u.__dict__.get("_buffer", default)
  def __getitem__(self, u:UOp) -> Any: return u.__dict__["_buffer"]
  def __contains__(self, u:object) -> bool: return isinstance(u, UOp) and "_buffer" in u.__dict__
  def __len__(self) -> int: return len(self._refs)
  def values(self) -> list[Any]: return list(self._refs.values())
buffers = _Buffers()
_unique_counter = itertools.count()

class UOp(MathTrait, metaclass=UOpMetaClass):
  __slots__ = ("op", "dtype", "src", "arg", "__dict__", "__weakref__")
  op: Ops
  dtype: DType
  src: tuple[UOp, ...]
  arg: Any
  if TYPE_CHECKING:   # the metaclass builds UOps (and sets these fields) without calling __init__
    def __init__(self, op:Ops, dtype:DType=dtypes.void, src:tuple[UOp, ...]=tuple(), arg:Any=None): ...
  def __reduce__(self): return UOp, (self.op, self.dtype, self.src, self.arg)
  def replace(self, **kwargs) -> UOp:
    new = (kwargs.pop("op", self.op), kwargs.pop("dtype", self.dtype), kwargs.pop("src", self.src), kwargs.pop("arg", self.arg))
    assert not kwargs, f"unknown fields {kwargs}"
    return self if new == (self.op, self.dtype, self.src, self.arg) else UOp(*new)
  def __bool__(self): raise TypeError(f"a symbolic UOp has no truth value, use resolve(): {self.render()}")
  def __repr__(self) -> str: return pretty_print(self)
  def argstr(self) -> str: return f"({', '.join(map(str, self.arg))})" if self.op is Ops.REDUCE_AXIS else repr(self.arg)

  # *** graph walks, all iterative so deep graphs never hit the recursion limit ***
  def toposort(self, gate:Callable[[UOp], bool]|None=None) -> dict[UOp, None]:
    visited: dict[UOp, None] = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    while stack:
      node, children_done = stack.pop()
      if node in visited: continue
      if children_done: visited[node] = None
      elif gate is None or gate(node):
        stack.append((node, True))
        stack.extend((s, False) for s in reversed(node.src) if s not in visited)
    return visited
  def _cached(self, key:str, fxn:Callable[[UOp], Any]) -> Any:
    # per-node memo filled bottom-up in topological order, never recursing
    if (ret := (d := self.__dict__).get(key, _MISSING)) is not _MISSING: return ret
    # the usual case, a new node over known ones, needs no walk (a loop, not all(): this runs for every node built)
    for s in self.src:
      if key not in (sd := s.__dict__):
        if s.src:
          for u in self.toposort(gate=lambda u: key not in u.__dict__): u.__dict__[key] = fxn(u)
          return d[key]
        sd[key] = fxn(s)   # a leaf (DEVICE, UNIQUE ...) needs no walk
    d[key] = ret = fxn(self)
    return ret
  @property
  def sparents(self) -> dict[UOp, None]: return self.toposort()
  def variables(self) -> list[UOp]:
    return sorted({x.src[0] if x.op is Ops.BIND else x for x in self.toposort() if x.op in (Ops.DEFINE_VAR, Ops.BIND)}, key=lambda v: v.arg)
  def substitute(self, dvars:dict[UOp, UOp], gate:Callable[[UOp], bool]|None=None) -> UOp:
    # gate: the nodes to look inside (default all); a node it rejects is kept whole
    if not dvars: return self
    new: dict[UOp, UOp] = {}
    for u in self.toposort(gate):
      if u in dvars: new[u] = dvars[u]
      else: new[u] = u.replace(src=tuple(new.get(s, s) for s in u.src)) if u.src else u
    return new.get(self, self)

  # *** shapes: every UOp with a shape has a ShapeTracker ***
  # (try/except: a memo hit, the usual case, costs one dict lookup)
  @property
  def st(self):
    try: return self.__dict__["_st"]
    except KeyError: return self._cached("_st", _compute_st)
  @property
  def shape(self) -> tuple[sint, ...]:
    try: st = self.__dict__["_st"]
    except KeyError: st = self._cached("_st", _compute_st)
    if st is None: raise ValueError(f"{self.op} has no shape")
    return st.shape
  @property
  def size(self) -> int: return self.arg if self.op is Ops.BUFFER else prod(self.shape)  # type: ignore[arg-type]
  @property
  def full_shape(self) -> tuple[sint, ...]:
    # the largest shape of the VIEWs in a kernel AST: the iteration space before reductions
    if self.op is Ops.VIEW: return self.shape
    shapes = [x.shape for x in self.toposort() if x.op is Ops.VIEW]
    return tuple(0 if 0 in s else smax(s) for s in zip(*shapes)) if shapes else ()
  @property
  def axis_arg(self) -> tuple[int, ...]:
    assert self.op is Ops.REDUCE_AXIS, f"axis_arg on {self.op}"
    return self.arg[1]

  # *** tensor level ***
  @property
  def base(self) -> UOp:
    u = self
    while u.op in GroupOp.Movement or u.op is Ops.VIEW and u.src and u.src[0].op is not Ops.DEVICE: u = u.src[0]
    return u
  @property
  def device(self) -> str|tuple[str, ...]:
    if (ret := self.__dict__.get("_device", _MISSING)) is _MISSING: ret = self._cached("_device", _compute_device)
    if ret is None: raise ValueError(f"{self.op} has no device")
    return ret
  @staticmethod
  def new_buffer(device:str, size:int, dtype:DType) -> UOp:
    return UOp(Ops.BUFFER, dtype, (UOp(Ops.UNIQUE, arg=next(_unique_counter)), UOp(Ops.DEVICE, arg=device)), size)
  @property
  def buf_uop(self) -> UOp:
    if self.op is Ops.BUFFER: return self
    if (b := self.base).op is Ops.BUFFER: return b
    if b.op is Ops.ASSIGN: return b.src[0].buf_uop
    raise ValueError(f"{self.op} is not backed by a buffer")
  @property
  def buffer(self):
    from tinygrad.device import Buffer
    if self.op is not Ops.BUFFER: return self.buf_uop.buffer
    if (ret := self.__dict__.get("_buffer")) is not None: return ret
    if not isinstance(self.device, str): raise ValueError(f"buffer on multiple devices {self.device}")
    buffers[self] = ret = Buffer(self.device, self.size, self.dtype if not isinstance(self.dtype, PtrDType) else self.dtype.base)
    return ret
  @property
  def is_realized(self) -> bool:
    b = self.base
    return b.op is Ops.BUFFER and (buf := b.__dict__.get("_buffer")) is not None and buf.is_allocated()
  @property
  def realized(self):
    return buffers[self.base] if self.is_realized else None

  # *** constructors ***
  @staticmethod
  def const(dtype:DType, b:ConstType|UOp|tuple, device:str|None=None, shape:tuple[sint, ...]|None=None) -> UOp:
    if isinstance(b, UOp): return b.unbind()[0] if b.op is Ops.BIND else b
    if isinstance(b, tuple) and all_same_tuple(b): b = b[0]
    ret = UOp(Ops.VCONST if isinstance(b, tuple) else Ops.CONST, dtype, arg=dtypes.as_const(b, dtype))
    if device is not None:
      ret = ret.replace(src=(UOp(Ops.DEVICE, arg=device),))
      if shape is not None: ret = ret.reshape((1,)*len(shape)).expand(shape)
    return ret
  def const_like(self, b:ConstType|UOp|tuple) -> UOp:
    # tensor-level nodes (those on a device) get a broadcast CONST of their shape; kernel-level ones a plain scalar
    if isinstance(dev := self._cached("_device", _compute_device), str) and (st := self.st) is not None:
      return UOp.const(self.dtype, b, dev, st.shape)
    return UOp.const(self.dtype, b)
  def alu(self, op:Ops, *src:UOp) -> UOp:
    out_dtype = self.dtype if op in (Ops.SHL, Ops.SHR) else (self, *src)[-1].dtype
    if op in GroupOp.Comparison: out_dtype = dtypes.bool.vec(out_dtype.count) if out_dtype.count > 1 else dtypes.bool
    return UOp(op, out_dtype, (self,)+src)
  def cast(self, dtype:DType) -> UOp: return self if self.dtype is dtype or self.dtype == dtype else UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype:DType) -> UOp: return self if self.dtype == dtype else UOp(Ops.BITCAST, dtype, (self,))
  def sink(self, *srcs:UOp) -> UOp: return UOp(Ops.SINK, dtypes.void, (self,)+srcs)
  def contiguous(self) -> UOp: return UOp(Ops.CONTIGUOUS, self.dtype, (self,))
  def detach(self) -> UOp: return UOp(Ops.DETACH, self.dtype, (self,))
  def copy_to_device(self, device:str) -> UOp: return UOp(Ops.COPY, self.dtype, (self, UOp(Ops.DEVICE, arg=device)))
  def assign(self, x:UOp) -> UOp: return UOp(Ops.ASSIGN, self.dtype, (self, x))
  def r(self, op:Ops, axis:tuple[int, ...]) -> UOp:
    shape = self.shape
    axis = tuple(sorted([a for a in axis if (type(s := shape[a]) is int and s != 1) or (type(s) is not int and resolve(s != 1))]))
    return self if not axis else UOp(Ops.REDUCE_AXIS, self.dtype, (self,), (op, axis))
  def view(self, st) -> UOp: return UOp(Ops.VIEW, self.dtype, (self,), st)
  def valid(self, st) -> UOp: return UOp(Ops.VALID, dtypes.bool, (st.to_uop(),))
  def index(self, idx:UOp, valid:UOp|None=None) -> UOp: return UOp(Ops.INDEX, self.dtype, (self, idx) if valid is None else (self, idx, valid))
  def load(self, *src:UOp, dtype:DType|None=None) -> UOp:
    return UOp(Ops.LOAD, dtype if dtype is not None else (self.dtype.base if isinstance(self.dtype, PtrDType) else self.dtype), (self,)+src)
  def store(self, *src:UOp) -> UOp: return UOp(Ops.STORE, dtypes.void, (self,)+src)
  def gep(self, i:int|tuple[int, ...]) -> UOp:
    if isinstance(i, int): i = (i,)
    if self.dtype.count == len(i) and i == tuple(range(len(i))): return self
    return UOp(Ops.GEP, self.dtype.scalar().vec(len(i)) if len(i) > 1 else self.dtype.scalar(), (self,), i)
  @staticmethod
  def range(dtype:DType, end:sint, idx:int) -> UOp: return UOp(Ops.RANGE, dtype, (sint_to_uop(end, dtype),), idx)

  # movement ops: the ShapeTracker validates them and raises ValueError with the shapes
  def _mop(self, op:Ops, arg:tuple) -> UOp:
    ret = UOp(op, self.dtype, (self,), arg)
    # validate now, so a bad movement fails where it is written
    if "_st" not in (d := ret.__dict__):
      if (src_st := self.st) is None: raise ValueError(f"{op} on {self.op}, which has no shape")
      d["_st"] = _moved_st(src_st, op, arg)
    return ret
  def reshape(self, arg:tuple[sint, ...]) -> UOp:
    return self if (st := self.st) is not None and st.shape == (arg := tuple(arg)) else self._mop(Ops.RESHAPE, arg)
  def permute(self, arg:tuple[int, ...]) -> UOp: return self if (arg := tuple(arg)) == tuple(range(len(arg))) else self._mop(Ops.PERMUTE, arg)
  def expand(self, arg:tuple[sint, ...]) -> UOp: return self if self.shape == (arg := tuple(arg)) else self._mop(Ops.EXPAND, arg)
  def pad(self, arg:tuple[tuple[sint, sint], ...]) -> UOp:
    return self if all(resolve(b == 0) and resolve(e == 0) for b, e in arg) else self._mop(Ops.PAD, tuple(tuple(x) for x in arg))
  def shrink(self, arg:tuple[tuple[sint, sint], ...]) -> UOp:
    if all(resolve(b == 0) and resolve(e == s) for (b, e), s in zip(arg, self.shape)): return self
    return self._mop(Ops.SHRINK, tuple(tuple(x) for x in arg))
  def flip(self, arg:tuple[bool, ...]) -> UOp: return self if not any(arg) else self._mop(Ops.FLIP, tuple(arg))

  # *** symbolic ***
  @staticmethod
  def variable(name:str, min_val:ConstType, max_val:ConstType, dtype:DType=dtypes.int32) -> UOp:
    if not isinstance(min_val, (int, float)) or not isinstance(max_val, (int, float)) or min_val > max_val:
      raise ValueError(f"variable {name}: bounds must be numbers with min <= max, got [{min_val}, {max_val}]")
    return UOp(Ops.DEFINE_VAR, dtype, arg=(name, min_val, max_val))
  @property
  def expr(self) -> str:
    assert self.op is Ops.DEFINE_VAR, f"expr on {self.op}"
    return self.arg[0]
  def bind(self, val:int) -> UOp:
    assert self.op is Ops.DEFINE_VAR, f"bind on {self.op}"
    if not self.arg[1] <= val <= self.arg[2]:
      raise ValueError(f"bind {val} to variable {self.arg[0]} out of its range [{self.arg[1]}, {self.arg[2]}]")
    return UOp(Ops.BIND, self.dtype, (self, self.const_like(val)))
  def unbind(self) -> tuple[UOp, int]:
    assert self.op is Ops.BIND and self.src[0].op is Ops.DEFINE_VAR and self.src[1].op is Ops.CONST, f"can't unbind {self}"
    return self.src[0], self.src[1].arg
  @property
  def val(self) -> int: return self.unbind()[1]
  @property
  def vmin(self) -> ConstType: return self._min_max[0]
  @property
  def vmax(self) -> ConstType: return self._min_max[1]
  @property
  def _min_max(self) -> tuple[ConstType, ConstType]: return self._cached("_mm", _compute_min_max)
  def const_factor(self) -> int:
    # the largest known integer factor of this expression
    if self.op is Ops.CONST: return self.arg
    if self.op is Ops.VCONST: return math.gcd(*self.arg)
    if self.op is Ops.ADD: return math.gcd(self.src[0].const_factor(), self.src[1].const_factor())
    if self.op is Ops.MUL: return self.src[0].arg if self.src[0].op is Ops.CONST else self.src[1].arg if self.src[1].op is Ops.CONST else 1
    return 1
  def divides(self, v:int) -> UOp|None:
    # self // v when v divides self exactly, else None
    if v == 1: return self
    if self.op is Ops.CONST: return self.const_like(self.arg//v) if self.arg % v == 0 else None
    if self.op is Ops.VCONST: return self.const_like(tuple(x//v for x in self.arg)) if all(x % v == 0 for x in self.arg) else None
    if self.op is Ops.ADD: return d0+d1 if (d0 := self.src[0].divides(v)) is not None and (d1 := self.src[1].divides(v)) is not None else None
    if self.op is Ops.MUL:
      if (d0 := self.src[0].divides(v)) is not None: return d0 * self.src[1]
      if (d1 := self.src[1].divides(v)) is not None: return self.src[0] * d1
    return None
  def split_uop(self, sep:Ops) -> Iterator[UOp]:
    stack = [self]
    while stack:
      u = stack.pop()
      if u.op is sep: stack.extend(reversed(u.src))
      else: yield u
  def simplify(self) -> UOp:
    from tinygrad.uop.symbolic import symbolic
    return graph_rewrite(self, symbolic)
  def ssimplify(self) -> UOp|ConstType: return ret.arg if (ret := self.simplify()).op is Ops.CONST else ret
  def sym_infer(self, var_vals:dict[UOp, int]) -> ConstType: return sym_infer(self, var_vals)
  def render(self, simplify=True) -> str:
    u = self.simplify() if simplify else self
    return u._cached("_render", _render_one)

def all_same_tuple(b:tuple) -> bool: return len(b) > 0 and all(x == b[0] and type(x) is type(b[0]) for x in b)

# ***** per-node computations used through UOp._cached *****

_ST_SPECIAL = {Ops.VIEW, Ops.BUFFER, Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.BIND, Ops.DEVICE, Ops.UNIQUE, Ops.SINK, Ops.KERNEL, Ops.NOOP,
               *GroupOp.Block, Ops.DEFINE_GLOBAL, Ops.DEFINE_LOCAL, Ops.DEFINE_ACC, Ops.DEFINE_REG, Ops.SPECIAL, Ops.INDEX, Ops.BARRIER, Ops.UNROLL,
               Ops.CONTRACT, Ops.STORE, Ops.LOAD, Ops.VALID, Ops.COPY, Ops.REDUCE_AXIS, Ops.ASSIGN, Ops.CONTIGUOUS, Ops.DETACH,
               Ops.CONTIGUOUS_BACKWARD, Ops.FUSE}
# ShapeTrackers are immutable: the same movement of the same one (a graph rebuilt on every call) is looked up, not worked out again
@functools.lru_cache(maxsize=8192)
def _moved_st(st, op:Ops, arg:tuple):
  return getattr(st, op.name.lower())(arg)
@functools.lru_cache(maxsize=8192)
def _contiguous_st(shape:tuple[sint, ...]):
  from tinygrad.shape.shapetracker import ShapeTracker
  return ShapeTracker.from_shape(shape)

def _compute_st(u:UOp):
  if (op := u.op) in GroupOp.Movement:
    if (src_st := u.src[0].st) is None: raise ValueError(f"{u.op} on {u.src[0].op}, which has no shape")
    return _moved_st(src_st, op, u.arg)
  if op not in _ST_SPECIAL:   # elementwise: every source with a shape has the same one
    shape = None
    for s in u.src:   # (a loop, not a comprehension: this runs for every node built)
      if (st := s.st) is None: continue
      if shape is None: shape = st.shape
      elif st.shape != shape: raise ValueError(f"{u.op} needs sources of one shape, got {[x.shape for x in u.src if x.st is not None]}")
    return None if shape is None else _contiguous_st(shape)
  if op is Ops.VIEW: return u.arg
  if op is Ops.BUFFER: return _contiguous_st((u.arg,))
  if op in (Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.BIND):
    if u.src and u.src[0].op is Ops.VIEW: return u.src[0].st
    return _contiguous_st(()) if u.src and u.src[0].op is Ops.DEVICE else None
  if op in (Ops.LOAD, Ops.VALID): return next((s.st for s in u.src if s.op is Ops.VIEW), None)
  if op is Ops.COPY: return _contiguous_st(u.src[0].shape)
  if op is Ops.REDUCE_AXIS: return _contiguous_st(u.src[0].st.reduce(u.arg[1]))
  if op in (Ops.ASSIGN, Ops.CONTIGUOUS, Ops.DETACH, Ops.CONTIGUOUS_BACKWARD, Ops.FUSE):
    if (src_st := next((st for s in u.src if (st := s.st) is not None), None)) is None: return None
    return src_st if op is Ops.ASSIGN else _contiguous_st(src_st.shape)
  return None   # DEVICE, UNIQUE, SINK, KERNEL, the kernel-level definitions, STORE ...: no shape

def _compute_device(u:UOp) -> str|tuple[str, ...]|None:
  if u.op is Ops.DEVICE: return u.arg
  if u.op is Ops.COPY: return u.src[1].arg
  for s in u.src:   # (a loop, not a generator: this runs for every node built)
    if (d := s.__dict__["_device"]) is not None: return d
  return None

# the arg of a FUSE whose value is 0 going forward and only carries a gradient (Tensor._with_grad): the scheduler drops it
ZERO_FORWARD = "zero_forward"

def _isinf(x) -> bool: return isinstance(x, float) and math.isinf(x)

def _compute_min_max(u:UOp) -> tuple[ConstType, ConstType]:
  # nan in, nan out: a float op on a maybe-nan float has no bounds (else relu6(nan) would count as in [0, 6])
  if dtypes.is_float(u.dtype) and u.dtype.count == 1 and any(_maybe_nan(s) for s in u.src): return (-math.inf, math.inf)
  lo, hi = _min_max_unchecked(u)
  # int maths that can leave the type's range wraps around, and a float bound that is nan (a nan constant, inf-inf) says nothing: unknown
  if dtypes.is_int(u.dtype) and u.dtype.count == 1 and (lo < dtypes.min(u.dtype) or hi > dtypes.max(u.dtype)) or lo != lo or hi != hi:
    return (dtypes.min(u.dtype), dtypes.max(u.dtype))
  return lo, hi
# a float whose bounds reach inf may be nan (a load, inf-inf, 0*inf), and nan < y is False whatever y is
def _maybe_nan(x:UOp) -> bool: return dtypes.is_float(x.dtype) and (_isinf(x.vmin) or _isinf(x.vmax))

def _min_max_unchecked(u:UOp) -> tuple[ConstType, ConstType]:
  dt = u.dtype
  if dt.count > 1 or isinstance(dt, PtrDType) or dt == dtypes.void: return (-math.inf, math.inf)
  s0 = u.src[0] if u.src else None
  if u.op is Ops.CONST: return (u.arg, u.arg)
  if u.op is Ops.DEFINE_VAR: return (u.arg[1], u.arg[2])
  if u.op is Ops.BIND: return u.src[0]._min_max
  if u.op is Ops.RANGE: return (0, u.src[-1].vmax - 1)
  if u.op is Ops.SPECIAL: return (0, (u.arg[1] if isinstance(u.arg[1], int) else u.arg[1].vmax) - 1)
  if u.op is Ops.ADD:
    a, b = u.src[0]._min_max, u.src[1]._min_max
    return (a[0]+b[0], a[1]+b[1]) if dt != dtypes.bool else (a[0] or b[0], a[1] or b[1])
  if u.op is Ops.SUB: return (u.src[0].vmin-u.src[1].vmax, u.src[0].vmax-u.src[1].vmin)
  if u.op is Ops.MUL:
    if dt == dtypes.bool: return (u.src[0].vmin and u.src[1].vmin, u.src[0].vmax and u.src[1].vmax)
    vals = [x*y for x in u.src[0]._min_max for y in u.src[1]._min_max if not (_isinf(x) or _isinf(y)) or (x != 0 and y != 0)]
    return (min(vals), max(vals)) if len(vals) == 4 else (dtypes.min(dt), dtypes.max(dt))
  if u.op in (Ops.IDIV, Ops.MOD) and u.src[1].vmin == u.src[1].vmax and dtypes.is_int(dt):
    c = u.src[1].vmin
    if c == 0: return (dtypes.min(dt), dtypes.max(dt))
    lo, hi = u.src[0]._min_max
    if u.op is Ops.IDIV: return (_idiv(lo, c), _idiv(hi, c)) if c > 0 else (_idiv(hi, c), _idiv(lo, c))
    c = abs(c)
    return (0 if lo >= 0 else max(-(c-1), lo), 0 if hi <= 0 else min(c-1, hi))
  if u.op is Ops.MAX: return (max(u.src[0].vmin, u.src[1].vmin), max(u.src[0].vmax, u.src[1].vmax))
  if u.op is Ops.CMPLT: return (u.src[0].vmax < u.src[1].vmin and not any(_maybe_nan(x) for x in u.src), u.src[0].vmin < u.src[1].vmax)
  if u.op is Ops.CMPNE:
    a, b = u.src[0]._min_max, u.src[1]._min_max
    return ((a[1] < b[0]) or (b[1] < a[0]), not (a[0] == a[1] == b[0] == b[1]))
  if u.op is Ops.CMPEQ:
    a, b = u.src[0]._min_max, u.src[1]._min_max
    return (a[0] == a[1] == b[0] == b[1], not ((a[1] < b[0]) or (b[1] < a[0])))
  if u.op is Ops.WHERE: return (min(u.src[1].vmin, u.src[2].vmin), max(u.src[1].vmax, u.src[2].vmax))
  if dt == dtypes.bool and u.op in (Ops.AND, Ops.OR):
    a, b = u.src[0]._min_max, u.src[1]._min_max
    return (a[0] and b[0], a[1] and b[1]) if u.op is Ops.AND else (a[0] or b[0], a[1] or b[1])
  if u.op is Ops.AND and dtypes.is_int(dt) and s0 is not None and (u.src[1].vmin >= 0 or s0.vmin >= 0):
    return (0, min(x.vmax for x in u.src if x.vmin >= 0))
  if u.op is Ops.SHL and u.src[1].op is Ops.CONST and s0 is not None and s0.vmin >= 0 and u.src[1].arg >= 0:
    return (s0.vmin << u.src[1].arg, s0.vmax << u.src[1].arg)
  if u.op is Ops.SHR and u.src[1].op is Ops.CONST and s0 is not None and s0.vmin >= 0 and u.src[1].arg >= 0:
    return (s0.vmin >> u.src[1].arg, s0.vmax >> u.src[1].arg)
  if u.op is Ops.CAST and s0 is not None and (dtypes.is_int(dt) or dt == dtypes.bool) and not dtypes.is_float(s0.dtype):
    lo, hi = s0._min_max
    if dtypes.min(dt) <= lo and hi <= dtypes.max(dt): return (bool(lo), bool(hi)) if dt == dtypes.bool else (int(lo), int(hi))
  if u.op is Ops.CAST and s0 is not None and dtypes.is_float(dt) and not dtypes.is_float(s0.dtype): return (float(s0.vmin), float(s0.vmax))
  return (dtypes.min(dt), dtypes.max(dt))

_render_ops: dict[Ops, Callable] = {
  Ops.ADD: lambda a, b: f"({a}+{b})", Ops.SUB: lambda a, b: f"({a}-{b})", Ops.MUL: lambda a, b: f"({a}*{b})", Ops.IDIV: lambda a, b: f"({a}//{b})",
  Ops.MOD: lambda a, b: f"({a}%{b})", Ops.MAX: lambda a, b: f"max({a}, {b})", Ops.CMPLT: lambda a, b: f"({a}<{b})",
  Ops.CMPNE: lambda a, b: f"({a}!={b})",
  Ops.CMPEQ: lambda a, b: f"({a}=={b})", Ops.AND: lambda a, b: f"({a}&{b})", Ops.OR: lambda a, b: f"({a}|{b})", Ops.XOR: lambda a, b: f"({a}^{b})",
  Ops.SHL: lambda a, b: f"({a}<<{b})", Ops.SHR: lambda a, b: f"({a}>>{b})", Ops.WHERE: lambda c, a, b: f"({a} if {c} else {b})",
  Ops.NEG: lambda a: f"(-{a})", Ops.CAST: lambda a: a}

def _render_one(u:UOp) -> str:
  if u.op is Ops.CONST: return str(u.arg)
  if u.op is Ops.DEFINE_VAR: return u.arg[0]
  if u.op is Ops.BIND: return u.src[0].__dict__["_render"]
  if u.op is Ops.RANGE: return f"ridx{u.arg}"
  if u.op is Ops.SPECIAL: return str(u.arg[0])
  if u.op in _render_ops: return _render_ops[u.op](*[s.__dict__["_render"] for s in u.src])
  return f"<{u.op.name}>"

def pretty_print(u:UOp, max_depth:int=12) -> str:
  # nested like the constructor; shared nodes print once with an id, depth is capped so huge graphs stay printable
  seen: dict[UOp, int] = {}
  def pp(x:UOp, depth:int, indent:str) -> str:
    if x in seen: return f"{indent}x{seen[x]}"
    seen[x] = len(seen)
    if depth > max_depth: return f"{indent}UOp({x.op}, ...)"
    head = f"{indent}UOp({x.op}, {x.dtype}, arg={x.argstr()}"
    if not x.src: return head + ", src=())"
    return head + ", src=(\n" + ",\n".join(pp(s, depth+1, indent+"  ") for s in x.src) + "))"
  return pp(u, 0, "")

# ***** symbolic integers: plain ints or UOps *****

sint = Union[int, UOp]
Variable = UOp

def sint_to_uop(x:sint, dtype:DType=dtypes.int32) -> UOp: return UOp.const(dtype, x) if isinstance(x, int) else x
def resolve(x:Any, default:bool=True) -> bool:
  # the truth of a symbolic bool when its bounds decide it, else default
  if not isinstance(x, UOp): return bool(x)
  if x.dtype.scalar() != dtypes.bool: raise ValueError(f"resolve needs a bool UOp, got {x.dtype}")
  return bool(x.vmin) if x.vmin == x.vmax else default
def smax(*lst) -> sint:
  vals = lst[0] if len(lst) == 1 and isinstance(lst[0], (tuple, list)) else lst
  return max(vals) if all_int(vals) else functools.reduce(lambda a, b: sint_to_uop(a).maximum(b).ssimplify(), vals)
def smin(*lst) -> sint:
  vals = lst[0] if len(lst) == 1 and isinstance(lst[0], (tuple, list)) else lst
  return min(vals) if all_int(vals) else functools.reduce(lambda a, b: sint_to_uop(a).minimum(b).ssimplify(), vals)
def ssimplify(x:sint) -> sint: return x.ssimplify() if isinstance(x, UOp) else x  # type: ignore[return-value]
def sym_infer(x:sint|float, var_vals:dict[UOp, int]) -> Any:
  if not isinstance(x, UOp): return x
  vals: dict[UOp, Any] = {}
  topo = x.toposort()
  bound = {u.src[0]: u.src[1].arg for u in topo if u.op is Ops.BIND}   # the DEFINE_VAR under a BIND is visited before the BIND
  for u in topo:
    if u.op is Ops.CONST: vals[u] = u.arg
    elif u.op is Ops.DEFINE_VAR:
      if u not in var_vals and u not in bound: raise ValueError(f"no value for variable {u.arg[0]}; given {[v.arg[0] for v in var_vals]}")
      vals[u] = var_vals.get(u, bound.get(u))
    elif u.op is Ops.BIND: vals[u] = var_vals.get(u.src[0], u.src[1].arg)
    elif u.op is Ops.CAST: vals[u] = truncate.get(u.dtype.scalar(), lambda v: v)(vals[u.src[0]])   # int8(300) is 44, int(2.5) is 2
    elif u.op in python_alu: vals[u] = exec_alu(u.op, u.dtype, [vals[s] for s in u.src])
    else: raise ValueError(f"can't infer {u.op}")
  return vals[x]

# ***** pattern matching *****

class UPat(MathTrait):
  __slots__ = ("op", "dtype", "arg", "name", "src", "allowed_len", "early_reject", "_in_src")
  def __init__(self, op:Ops|tuple[Ops, ...]|set[Ops]|None=None, dtype:DType|tuple[DType, ...]|None=None,
               src:tuple[UPat, ...]|list[UPat]|UPat|None=None, arg:Any=None, name:str|None=None, allow_any_len:bool=False):
    self.op: tuple[Ops, ...]|None = None if op is None else (tuple(op) if isinstance(op, (tuple, set, list)) else (op,))
    self.dtype: tuple[DType, ...]|None = None if dtype is None else (tuple(dtype) if isinstance(dtype, (tuple, set, list)) else (dtype,))
    self.arg, self.name, self._in_src = arg, name, src
    # src: tuple = in order, list = any order (commutative), a single UPat = every source matches it
    self.src: list|None = None
    if isinstance(src, list): self.src = [tuple(p) for p in itertools.permutations(src)]
    elif isinstance(src, tuple): self.src = [src]
    elif isinstance(src, UPat): self.src = [itertools.repeat(src)]
    self.allowed_len = -1 if allow_any_len or isinstance(src, UPat) or src is None else len(src)
    # ops that must appear among the sources: a cheap reject before the full match
    self.early_reject: set[Ops] = set()
    if isinstance(src, (tuple, list)): self.early_reject = {pp.op[0] for pp in src if pp.op is not None and len(pp.op) == 1}

  @staticmethod
  def any(*pats:UPat) -> UPat: return UPatAny(*pats)
  def __or__(self, other): return UPat.any(self, other) if isinstance(other, UPat) else super().__or__(other)
  @staticmethod
  def var(name:str|None=None, dtype:DType|tuple[DType, ...]|None=None) -> UPat: return UPat(dtype=dtype, name=name)
  @staticmethod
  def cvar(name:str|None=None, dtype:DType|tuple[DType, ...]|None=None, vec=True) -> UPat:
    return UPat((Ops.CONST, Ops.VCONST) if vec else Ops.CONST, dtype, name=name)
  @staticmethod
  def const(dtype:DType|tuple[DType, ...]|None, b:ConstType) -> UPat: return UPat(Ops.CONST, dtype=dtype, arg=b)
  def named(self, name:str) -> UPat:
    return UPat(self.op, self.dtype, self._in_src, self.arg, name, self.allowed_len == -1 and self._in_src is not None)
  def alu(self, op:Ops, *src:UPat) -> UPat:
    asrc = (self,)+src
    return UPat(op, dtypes.bool if op in GroupOp.Comparison else None, list(asrc) if op in GroupOp.Commutative else asrc)
  def const_like(self, b:ConstType) -> UPat: return UPat.const(self.dtype, b)
  def cast(self, dtype=None) -> UPat: return UPat(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype=None) -> UPat: return UPat(Ops.BITCAST, dtype, (self,))
  def load(self, *src:UPat, **kwargs) -> UPat: return UPat(Ops.LOAD, src=(self,)+src, **kwargs)
  def store(self, *src:UPat, **kwargs) -> UPat: return UPat(Ops.STORE, dtypes.void, (self,)+src, **kwargs)
  def index(self, idx:UPat, valid:UPat|None=None) -> UPat: return UPat(Ops.INDEX, self.dtype, (self, idx) if valid is None else (self, idx, valid))
  def view(self, st=None, **kwargs) -> UPat: return UPat(Ops.VIEW, src=(self,), arg=st, **kwargs)
  def reduce(self, *src:UPat, **kwargs) -> UPat: return UPat(Ops.REDUCE, src=(self,)+src, **kwargs)
  def sink(self, *srcs:UPat, **kwargs) -> UPat: return UPat(Ops.SINK, src=(self,)+srcs, **kwargs)
  def gep(self, i:int|None=None, **kwargs) -> UPat: return UPat(Ops.GEP, src=(self,), arg=None if i is None else (i,), **kwargs)
  def __repr__(self):
    return f"UPat({self.op}, {self.dtype}, arg={self.arg!r}, name={self.name!r}, src={self._in_src!r})"

  def match(self, uop:UOp, store:dict[str, UOp]) -> list[dict[str, UOp]]:
    if (self.op is not None and uop.op not in self.op) or \
       (self.dtype is not None and uop.dtype not in self.dtype and uop.dtype.scalar() not in self.dtype) or \
       (self.arg is not None and self.arg != uop.arg) or (self.allowed_len != -1 and len(uop.src) != self.allowed_len): return []
    if self.name is not None:
      if (prev := store.get(self.name)) is None: store = {**store, self.name: uop}
      elif prev is not uop: return []
    return [store] if self.src is None else self._match_src(uop, store)
  def _match_src(self, uop:UOp, store:dict[str, UOp]) -> list[dict[str, UOp]]:
    res: list[dict[str, UOp]] = []
    assert self.src is not None
    for vp in self.src:
      stores = [store]
      for uu, vv in zip(uop.src, vp):
        stores = [s2 for s in stores for s2 in vv.match(uu, s)]
        if not stores: break
      res.extend(stores)
    return res

class UPatAny(UPat):
  def __init__(self, *pats:UPat):
    super().__init__()
    self.alternatives = pats
    ops = [p.op for p in pats]
    self.op = None if any(o is None for o in ops) else tuple(dict.fromkeys(o for os_ in ops for o in os_))  # type: ignore[union-attr]
  def match(self, uop:UOp, store:dict[str, UOp]) -> list[dict[str, UOp]]:
    return [s for p in self.alternatives for s in p.match(uop, store)]

@functools.cache
def _takes_ctx(fxn:Callable) -> bool: return "ctx" in inspect.signature(fxn).parameters   # matchers are summed often: inspect each rule once

class PatternMatcher:
  def __init__(self, patterns:list[tuple[UPat, Callable]]):
    self.patterns = patterns
    # rules indexed by op: only the rules that can match a node's op are tried, so big tables stay fast
    self.pdict: dict[Ops, list[tuple[UPat, Callable, frozenset, bool]]] = {}
    for p, fxn in patterns:
      entry = (p, fxn, frozenset(p.early_reject), _takes_ctx(fxn))
      for op in (p.op if p.op is not None else tuple(Ops)): self.pdict.setdefault(op, []).append(entry)
  def __reduce__(self): return PatternMatcher, (self.patterns,)
  def __add__(self, more:PatternMatcher) -> PatternMatcher: return PatternMatcher(self.patterns+more.patterns)
  def rewrite(self, uop:UOp, ctx:Any=None) -> UOp|None:
    src_ops = {u.op for u in uop.src}
    for p, fxn, early_reject, has_ctx in self.pdict.get(uop.op, ()):
      if not early_reject <= src_ops: continue
      for match in p.match(uop, {}):
        if (ret := (fxn(ctx=ctx, **match) if has_ctx else fxn(**match))) is not None and ret is not uop: return ret
    return None

def graph_rewrite_map(sink:UOp, pm:PatternMatcher|None, ctx:Any=None, bottom_up:bool=False, bpm:PatternMatcher|None=None,
                      memo:dict[UOp, UOp]|None=None) -> dict[UOp, UOp]:
  """Rewrite to a fixed point with an explicit stack. pm is applied after a node's sources are rewritten, bpm (or pm when bottom_up) before.
  Returns the map from every visited node to its rewrite. memo: that map from earlier calls with the same matchers and ctx, which it
  extends (many small rewrites over shared subgraphs then visit each node once)."""
  if bottom_up: pm, bpm = None, pm
  replace: dict[UOp, UOp] = {} if memo is None else memo
  # stage 0: (maybe) pre-rewrite and queue the sources; 1: rebuild with new sources and post-rewrite; 2: link n to the result of its rewrite
  stack: list[tuple[UOp, int, UOp]] = [(sink, 0, sink)]
  while stack:
    n, stage, new_n = stack.pop()
    if n in replace: continue
    if stage == 0:
      if bpm is not None:
        seen = 0
        while (r := bpm.rewrite(new_n, ctx)) is not None:
          new_n = r
          if (seen := seen+1) > 10_000_000: raise RuntimeError(f"bottom-up rewrite did not reach a fixed point on {n.op}")
          if new_n in replace: break
        if new_n in replace:
          replace[n] = replace[new_n]
          continue
      stack.append((n, 1, new_n))
      stack.extend((x, 0, x) for x in reversed(new_n.src) if x not in replace)
    elif stage == 1:
      new_src = tuple(replace[x] for x in new_n.src)
      if new_src == new_n.src:
        if pm is None or (r := pm.rewrite(new_n, ctx)) is None:
          replace[n] = new_n
          continue
        x = r
      else: x = UOp(new_n.op, new_n.dtype, new_src, new_n.arg)
      if x in replace: replace[n] = replace[x]
      else: stack.extend([(n, 2, x), (x, 0, x)])
    else: replace[n] = replace[new_n]
  return replace

def graph_rewrite(sink:UOp, pm:PatternMatcher|None, ctx:Any=None, bottom_up:bool=False, name:str|None=None, bpm:PatternMatcher|None=None,
                  memo:dict[UOp, UOp]|None=None) -> UOp:
  return graph_rewrite_map(sink, pm, ctx, bottom_up, bpm, memo)[sink]

def track_rewrites(name:Any=None):
  # hook for VIZ: today a transparent decorator
  def _decorator(fxn): return fxn
  return _decorator

# tinygrad's names, for tools written against it: a matcher VIZ would count matches of, the rewriter with its tables, and substitution
class TrackedPatternMatcher(PatternMatcher): pass
class RewriteContext:
  def __init__(self, pm:PatternMatcher|None, bpm:PatternMatcher|None=None, ctx:Any=None): self.pm, self.bpm, self.ctx = pm, bpm, ctx
  def unified_rewrite(self, root:UOp) -> UOp: return graph_rewrite_map(root, self.pm, self.ctx, bpm=self.bpm)[root]
_substitute = PatternMatcher([(UPat(tuple(Ops), name="x"), lambda ctx, x: ctx.get(x))])

def print_uops(uops:list[UOp]):
  for i, u in enumerate(uops):
    srcs = [uops.index(x) if x in uops else "--" for x in u.src]
    print(f"{i:4d} {str(u.op):20s}: {str(u.dtype):30s} {str(srcs):32s} {u.argstr()}")

# ***** what the optimizer tells codegen about a kernel: the kind of each axis (set by tinygrad/opt/kernel.py) *****

class AxisType(enum.Enum):
  THREAD = enum.auto(); GLOBAL = enum.auto(); LOCAL = enum.auto(); GROUP_REDUCE = enum.auto()
  REDUCE = enum.auto(); UNROLL = enum.auto(); UPCAST = enum.auto()
  def __lt__(self, x:AxisType): return self.value < x.value

class ThreadKind(enum.Enum):
  GLOBAL = enum.auto(); LOCAL = enum.auto(); CORE = enum.auto()   # a workgroup id, a thread in the workgroup, a host thread of the pool

class ThreadId(NamedTuple):
  """The arg of Ops.SPECIAL: the launch dimension a thread id indexes. name (what renderers print) and size stay arg[0] and arg[1]."""
  name: str
  size: sint
  kind: ThreadKind
  dim: int
  @staticmethod
  def make(kind:ThreadKind, dim:int, size:sint) -> ThreadId:
    return ThreadId("core_id" if kind is ThreadKind.CORE else f"{'g' if kind is ThreadKind.GLOBAL else 'l'}idx{dim}", size, kind, dim)

@dataclass(frozen=True)
class KernelInfo:
  name: str = "test"
  axis_types: tuple[AxisType, ...] = ()
  applied_opts: tuple = ()   # the Opts that made this kernel
  # the WMMA arg (name, dims, dtype_in, dtype_out, device, threads, (A, B, C lane axes), K lane axes) when the reduce runs on a tensor core
  tensor_core: tuple|None = None
  prefetch: tuple[int|tuple[int, int], ...] = ()   # buffers (DEFINE_GLOBAL args) whose next panel the reduce prefetches, or (buffer, n):
                                                   # its lines n iterations ahead (codegen/prefetch)
  @property
  def global_dims(self) -> int: return sum(1 for a in self.axis_types if a in (AxisType.GLOBAL, AxisType.THREAD))

