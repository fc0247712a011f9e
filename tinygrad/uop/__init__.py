from enum import auto, IntEnum, Enum, EnumMeta

class FastEnum(IntEnum):
  # str(Ops.ADD) == "Ops.ADD" and comparisons are int comparisons (fast dict keys)
  def __str__(self): return Enum.__str__(self)
  @staticmethod
  def _generate_next_value_(_, __, ___, last_values): return 1 + max([0, *last_values, *[max(c) for c in FastEnum.__subclasses__()]])

class Ops(FastEnum):
  # ** graph plumbing **
  SINK = auto(); NOOP = auto(); UNIQUE = auto(); DEVICE = auto(); KERNEL = auto(); CUSTOM = auto(); CUSTOMI = auto()

  # ** tensor level **
  BUFFER = auto(); BUFFER_VIEW = auto(); ASSIGN = auto(); COPY = auto(); CONTIGUOUS = auto(); CONTIGUOUS_BACKWARD = auto()
  DETACH = auto(); FUSE = auto(); MULTI = auto(); BIND = auto()
  # movement ops: arg is the new shape / order / (before, after) pairs / flip flags
  RESHAPE = auto(); PERMUTE = auto(); EXPAND = auto(); PAD = auto(); SHRINK = auto(); FLIP = auto()
  # a ShapeTracker applied to its source (arg is the ShapeTracker); VALID is the bool mask of a VIEW
  VIEW = auto(); VALID = auto()
  REDUCE_AXIS = auto()   # arg = (Ops.ADD|Ops.MUL|Ops.MAX, axes)

  # ** kernel level **
  DEFINE_GLOBAL = auto(); DEFINE_LOCAL = auto(); DEFINE_VAR = auto(); DEFINE_ACC = auto(); DEFINE_REG = auto()
  RANGE = auto(); SPECIAL = auto(); ENDRANGE = auto(); IF = auto(); ENDIF = auto(); BARRIER = auto()
  REDUCE = auto()  # src = (value, *ranges), arg = the reduce Op
  INDEX = auto(); LOAD = auto(); STORE = auto()
  PREFETCH = auto()   # src = (INDEX, optional gate), arg = the cache level (1, 2, 3) to fill: a hint, no result
  VECTORIZE = auto(); GEP = auto(); VCONST = auto(); CAT = auto(); PTRCAT = auto(); UNROLL = auto(); CONTRACT = auto(); WMMA = auto()

  # ** ALU **
  CAST = auto(); BITCAST = auto()
  EXP2 = auto(); EXP = auto(); TANH = auto(); LOG2 = auto(); SIN = auto(); SQRT = auto(); RECIP = auto(); NEG = auto(); TRUNC = auto()
  ADD = auto(); MUL = auto(); SHL = auto(); SHR = auto(); IDIV = auto(); MAX = auto(); MOD = auto(); CMPLT = auto(); CMPNE = auto(); CMPEQ = auto()
  XOR = auto(); OR = auto(); AND = auto(); THREEFRY = auto(); SUB = auto(); FDIV = auto(); POW = auto()
  WHERE = auto(); MULACC = auto()

  CONST = auto()

# Python 3.11's EnumType has a __getattr__, which sends every `Ops.X` through a slow attribute hook (~0.4 us, and the compiler reads Ops
# members millions of times). Ops gets a metaclass with EnumType's methods but without __getattr__ (which 3.12 dropped anyway).
if "__getattr__" in EnumMeta.__dict__:
  class _FastEnumType(type):
    def __setattr__(cls, name:str, value):
      if name in cls.__dict__.get("_member_map_", {}): raise AttributeError(f"cannot reassign member {name!r}")
      type.__setattr__(cls, name, value)
    def __delattr__(cls, name:str):
      if name in cls.__dict__.get("_member_map_", {}): raise AttributeError(f"cannot delete member {name!r}")
      type.__delattr__(cls, name)
  for _k, _v in EnumMeta.__dict__.items():
    if _k not in ("__getattr__", "__dict__", "__weakref__", "__new__", "__prepare__", "__setattr__", "__delattr__"): setattr(_FastEnumType, _k, _v)
  setattr(Ops, "__class__", _FastEnumType)

class GroupOp:
  Unary = {Ops.EXP2, Ops.EXP, Ops.TANH, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIP, Ops.NEG, Ops.TRUNC}
  Binary = {Ops.ADD, Ops.MUL, Ops.IDIV, Ops.MAX, Ops.MOD, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.XOR, Ops.SHL, Ops.SHR, Ops.OR, Ops.AND,
            Ops.THREEFRY, Ops.SUB, Ops.FDIV, Ops.POW}
  Ternary = {Ops.WHERE, Ops.MULACC}
  ALU = set.union(Unary, Binary, Ternary)
  Irreducible = {Ops.CONST, Ops.DEFINE_VAR, Ops.SPECIAL, Ops.RANGE}
  Movement = {Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.PAD, Ops.SHRINK, Ops.FLIP}
  Buffer = {Ops.LOAD, Ops.STORE, Ops.VALID, Ops.CONST, Ops.DEFINE_VAR}
  Block = {Ops.RANGE, Ops.ENDRANGE, Ops.IF, Ops.ENDIF}
  # f(x, y) == f(y, x)
  Commutative = {Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.XOR, Ops.AND, Ops.OR}
  # f(f(x, y), z) == f(x, f(y, z))
  Associative = {Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.MAX}
  # f(x, 0) == f(x): safe to evaluate on the zero padding of a masked view
  UnsafePad = {Ops.RECIP, Ops.LOG2, Ops.EXP2, Ops.EXP, Ops.IDIV, Ops.POW}
  Comparison = {Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ}
  All = set(Ops)
