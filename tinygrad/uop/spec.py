# the contract of each IR stage (docs/ir.md) as PatternMatchers: a rule returns True for a well-formed UOp, False (or no match) for a bad one
from __future__ import annotations
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, print_uops, ThreadId
from tinygrad.dtype import DType, PtrDType, dtypes

def _is_int(dt:DType) -> bool: return not isinstance(dt, PtrDType) and dtypes.is_int(dt)
def _is_bool(dt:DType) -> bool: return not isinstance(dt, PtrDType) and dt.scalar() == dtypes.bool
def _is_st(arg:Any) -> bool:
  from tinygrad.shape.shapetracker import ShapeTracker   # late: the shape package sits on top of the IR
  return isinstance(arg, ShapeTracker)

def _const_ok(dt:DType, v:Any) -> bool:
  # the python type of a constant matches its dtype: bool for bool, int (not bool) for ints, float for floats
  if dtypes.is_float(dt): return isinstance(v, float)
  if dtypes.is_int(dt): return isinstance(v, int) and not isinstance(v, bool)
  return dt.scalar() == dtypes.bool and isinstance(v, bool)

def alu_ok(x:UOp) -> bool:
  """dtype rules shared by every stage: comparisons give bool, sources share the result dtype except WHERE's condition and shift amounts"""
  n = 1 if x.op in GroupOp.Unary else 2 if x.op in GroupOp.Binary else 3
  if len(x.src) != n or isinstance(x.dtype, PtrDType) or x.dtype == dtypes.void: return False
  s = x.src
  if x.op in GroupOp.Comparison: return _is_bool(x.dtype) and x.dtype.count == s[0].dtype.count and s[0].dtype == s[1].dtype
  if x.op is Ops.WHERE: return _is_bool(s[0].dtype) and s[0].dtype.count in (1, x.dtype.count) and s[1].dtype == x.dtype == s[2].dtype
  if x.op in (Ops.SHL, Ops.SHR): return _is_int(x.dtype) and s[0].dtype == x.dtype and _is_int(s[1].dtype)
  if x.op in (Ops.IDIV, Ops.MOD): return _is_int(x.dtype) and s[0].dtype == s[1].dtype == x.dtype
  if x.op in (Ops.XOR, Ops.OR, Ops.AND): return (_is_int(x.dtype) or _is_bool(x.dtype)) and s[0].dtype == s[1].dtype == x.dtype
  if x.op is Ops.THREEFRY: return x.dtype.scalar() == dtypes.uint64 and s[0].dtype == s[1].dtype == x.dtype
  return all(y.dtype == x.dtype for y in s)

def const_ok(x:UOp) -> bool:
  if x.op is Ops.VCONST: return isinstance(x.arg, tuple) and len(x.arg) == x.dtype.count > 1 and all(_const_ok(x.dtype.scalar(), v) for v in x.arg)
  return not isinstance(x.dtype, PtrDType) and _const_ok(x.dtype.scalar(), x.arg)

def _var_ok(x:UOp) -> bool:
  return _is_int(x.dtype) and x.dtype.count == 1 and isinstance(x.arg, tuple) and len(x.arg) == 3 and isinstance(x.arg[0], str) \
    and isinstance(x.arg[1], int) and isinstance(x.arg[2], int) and x.arg[1] <= x.arg[2]

def _bind_ok(x:UOp) -> bool:
  v, c = x.src
  return x.dtype == v.dtype == c.dtype and v.arg[1] <= c.arg <= v.arg[2]

def _reduce_axis_ok(x:UOp) -> bool:
  return isinstance(x.arg, tuple) and len(x.arg) == 2 and x.arg[0] in (Ops.ADD, Ops.MUL, Ops.MAX) and isinstance(x.arg[1], tuple) \
    and all(isinstance(a, int) for a in x.arg[1]) and x.dtype == x.src[0].dtype

def _cast_ok(x:UOp) -> bool: return x.dtype != dtypes.void
def _bitcast_ok(x:UOp) -> bool:
  return not isinstance(x.dtype, PtrDType) and not isinstance(x.src[0].dtype, PtrDType) and x.dtype.itemsize == x.src[0].dtype.itemsize

# rules every stage shares
shared_spec = PatternMatcher([
  (UPat(Ops.SINK, dtypes.void), lambda: True),
  (UPat(Ops.NOOP), lambda: True),
  (UPat(GroupOp.ALU, name="x"), alu_ok),
  (UPat(Ops.CAST, src=(UPat(),), name="x"), _cast_ok),
  (UPat(Ops.BITCAST, src=(UPat(),), name="x"), _bitcast_ok),
  (UPat(Ops.VCONST, src=(), name="x"), const_ok),
  (UPat(Ops.CONST, src=(), name="x"), const_ok),
  (UPat(Ops.DEFINE_VAR, src=(), name="x"), _var_ok),
  (UPat(Ops.BIND, src=(UPat(Ops.DEFINE_VAR), UPat(Ops.CONST)), name="x"), _bind_ok),
])

# ***** stage 1: the tensor graph *****

def _shape_ok(x:UOp) -> bool:
  # elementwise sources have one shape: computing the ShapeTracker raises otherwise
  try: x.st  # noqa: B018
  except (ValueError, AssertionError): return False
  return True

def _device_ok(x:UOp) -> bool:
  return isinstance(x.arg, str) or (isinstance(x.arg, tuple) and len(x.arg) > 0 and all(isinstance(d, str) for d in x.arg))
def _same(x:UOp) -> bool: return x.dtype == x.src[0].dtype

tensor_uop_spec = PatternMatcher([
  (UPat(Ops.DEVICE, dtypes.void, src=(), name="x"), _device_ok),
  (UPat(Ops.UNIQUE, dtypes.void, src=(), name="x"), lambda x: isinstance(x.arg, int)),
  (UPat(Ops.BUFFER, src=(UPat(Ops.UNIQUE), UPat(Ops.DEVICE)), name="x"),
   lambda x: isinstance(x.arg, int) and x.arg >= 0 and x.dtype != dtypes.void and not isinstance(x.dtype, PtrDType)),
  (UPat(Ops.BUFFER_VIEW, src=(UPat(Ops.BUFFER),), name="x"), lambda x: isinstance(x.arg, tuple) and x.dtype != dtypes.void),
  (UPat(Ops.CONST, src=(UPat(Ops.DEVICE),), name="x"), const_ok),
  (UPat(GroupOp.Movement, src=(UPat(),), name="x"), lambda x: isinstance(x.arg, tuple) and _same(x) and _shape_ok(x)),
  (UPat(Ops.VIEW, src=(UPat(),), name="x"), lambda x: _same(x) and _is_st(x.arg)),
  (UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST), name="x"), lambda x: None if _shape_ok(x) else False),   # then the shared dtype rules
  (UPat(Ops.REDUCE_AXIS, src=(UPat(),), name="x"), lambda x: _reduce_axis_ok(x) and all(a < len(x.src[0].shape) for a in x.arg[1])),
  (UPat((Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.DETACH, Ops.FUSE), src=(UPat(),), name="x"), _same),
  # a custom backward rule (gradient.custom_grads): the value, then the inputs it gets gradients for
  (UPat(Ops.CONTIGUOUS_BACKWARD, name="x"), lambda x: _same(x) and isinstance(x.arg, tuple) and isinstance(x.arg[0], str)),
  (UPat(Ops.COPY, src=(UPat(), UPat(Ops.DEVICE)), name="x"), _same),
  (UPat(Ops.ASSIGN, src=(UPat(), UPat()), name="x"), lambda x: x.dtype == x.src[0].dtype == x.src[1].dtype),
  (UPat(Ops.MULTI, name="x"), lambda x: len(x.src) > 0 and all(s.dtype == x.dtype for s in x.src)),
  (UPat(Ops.KERNEL), lambda: True),
]) + shared_spec

# ***** stage 2: the kernel AST *****

def _store_ast_ok(x:UOp) -> bool:
  buf, _, val = x.src
  return isinstance(buf.dtype, PtrDType) and val.dtype == buf.dtype.base

kernel_ast_spec = PatternMatcher([
  (UPat(Ops.SINK, dtypes.void, src=UPat(Ops.STORE)), lambda: True),
  (UPat(Ops.SINK), lambda: False),   # a kernel is a SINK of STOREs
  (UPat(Ops.DEFINE_GLOBAL, src=(), name="x"), lambda x: isinstance(x.dtype, PtrDType) and not x.dtype.local and isinstance(x.arg, int)),
  (UPat(Ops.VIEW, dtypes.void, src=(), name="x"), lambda x: _is_st(x.arg)),
  (UPat(Ops.VIEW, src=(UPat(),), name="x"), lambda x: _same(x) and _is_st(x.arg)),   # a view above a reduce, before the swizzler pushes it out
  (UPat(Ops.STORE, dtypes.void, src=(UPat(Ops.DEFINE_GLOBAL), UPat(Ops.VIEW), UPat()), name="x"), _store_ast_ok),
  (UPat(Ops.LOAD, src=(UPat(Ops.DEFINE_GLOBAL, name="b"), UPat(Ops.VIEW)), name="x"), lambda x, b: x.dtype == b.dtype.base),
  (UPat(Ops.CONST, src=(UPat(Ops.VIEW),), name="x"), const_ok),
  (UPat(Ops.VALID, dtypes.bool, src=(UPat(Ops.VIEW),)), lambda: True),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(),), name="x"), _reduce_axis_ok),
]) + shared_spec

# ***** stages 3 and 4: the lowered kernel and the linear program *****

ast_spec = kernel_ast_spec   # tinygrad's name

def _index_ok(x:UOp) -> bool:
  buf, idx = x.src[0], x.src[1]
  if not isinstance(buf.dtype, PtrDType) or not isinstance(x.dtype, PtrDType) or not _is_int(idx.dtype): return False
  if buf.op is Ops.DEFINE_LOCAL and not buf.dtype.local: return False
  return len(x.src) == 2 or (len(x.src) == 3 and _is_bool(x.src[2].dtype))

def _ptr(u:UOp) -> PtrDType|None:
  # a LOAD/STORE address: an INDEX, or an INDEX cast to a vector pointer
  if u.op is Ops.CAST and u.src[0].op is Ops.INDEX and isinstance(u.dtype, PtrDType): return u.dtype
  return u.dtype if u.op is Ops.INDEX and isinstance(u.dtype, PtrDType) else None

def _load_ok(x:UOp) -> bool: return (p := _ptr(x.src[0])) is not None and x.dtype.scalar() == p.base.scalar()
def _store_ok(x:UOp) -> bool:
  if (p := _ptr(x.src[0])) is None or len(x.src) < 2 or x.src[1].dtype.scalar() != p.base.scalar(): return False
  return all(_is_bool(g.dtype) or g.op is Ops.BARRIER for g in x.src[2:])

def _range_ok(x:UOp) -> bool: return _is_int(x.dtype) and x.dtype.count == 1 and len(x.src) in (1, 2) and all(s.dtype == x.dtype for s in x.src)
def _special_ok(x:UOp) -> bool:
  return _is_int(x.dtype) and isinstance(x.arg, ThreadId) and isinstance(x.arg.size, (int, UOp))
def _reduce_ok(x:UOp) -> bool:
  return x.arg in (Ops.ADD, Ops.MUL, Ops.MAX) and x.dtype == x.src[0].dtype and all(r.op is Ops.RANGE for r in x.src[1:])
def _acc_ok(x:UOp) -> bool:
  return x.src[0].op in (Ops.CONST, Ops.VCONST) and x.dtype == x.src[0].dtype and all(r.op is Ops.RANGE for r in x.src[1:])
def _vectorize_ok(x:UOp) -> bool:
  return len(x.src) > 1 and all(s.dtype == x.src[0].dtype for s in x.src) and x.dtype == x.src[0].dtype.vec(len(x.src))
def _gep_ok(x:UOp) -> bool:
  idx = x.arg
  if not isinstance(idx, tuple) or not idx or not all(isinstance(i, int) and 0 <= i < x.src[0].dtype.count for i in idx): return False
  return x.dtype == x.src[0].dtype.scalar().vec(len(idx))

program_spec = PatternMatcher([
  (UPat(Ops.DEFINE_GLOBAL, src=(), name="x"), lambda x: isinstance(x.dtype, PtrDType) and not x.dtype.local and isinstance(x.arg, int)),
  (UPat(Ops.DEFINE_LOCAL, src=(), name="x"), lambda x: isinstance(x.dtype, PtrDType) and x.dtype.local),
  (UPat(Ops.DEFINE_REG, src=(), name="x"), lambda x: isinstance(x.dtype, PtrDType)),
  (UPat(Ops.DEFINE_ACC, name="x"), lambda x: len(x.src) >= 1 and _acc_ok(x)),
  (UPat(Ops.RANGE, name="x"), _range_ok),
  (UPat(Ops.SPECIAL, src=(), name="x"), _special_ok),
  (UPat(Ops.ENDRANGE, dtypes.void, src=(UPat(Ops.RANGE),)), lambda: True),
  (UPat(Ops.IF, dtypes.void, name="x"), lambda x: len(x.src) >= 1 and _is_bool(x.src[0].dtype) and x.src[0].dtype.count == 1),
  (UPat(Ops.ENDIF, dtypes.void, src=(UPat(Ops.IF),)), lambda: True),
  (UPat(Ops.BARRIER, dtypes.void), lambda: True),
  (UPat(Ops.INDEX, src=(UPat((Ops.DEFINE_GLOBAL, Ops.DEFINE_LOCAL, Ops.DEFINE_REG)), UPat()), allow_any_len=True, name="x"), _index_ok),
  (UPat(Ops.LOAD, name="x"), lambda x: len(x.src) >= 1 and _load_ok(x)),
  (UPat(Ops.STORE, dtypes.void, name="x"), _store_ok),
  # a cache hint: an ungated address (so IGNORE_OOB=0 checks it), and maybe a bool gate
  (UPat(Ops.PREFETCH, dtypes.void, src=(UPat(Ops.INDEX, src=(UPat(Ops.DEFINE_GLOBAL), UPat())),), allow_any_len=True, name="x"),
   lambda x: x.arg in (1, 2, 3) and len(x.src) <= 2 and all(_is_bool(g.dtype) and g.dtype.count == 1 for g in x.src[1:])),
  (UPat(Ops.REDUCE, name="x"), lambda x: len(x.src) >= 1 and _reduce_ok(x)),
  (UPat(Ops.ASSIGN, src=(UPat((Ops.DEFINE_ACC, Ops.DEFINE_REG, Ops.INDEX)), UPat()), name="x"), lambda x: x.dtype == x.src[1].dtype),
  (UPat(Ops.VECTORIZE, name="x"), _vectorize_ok),
  (UPat(Ops.GEP, src=(UPat(),), name="x"), _gep_ok),
  (UPat(Ops.CAST, src=(UPat(Ops.INDEX),), name="x"), lambda x: isinstance(x.dtype, PtrDType)),   # a vector pointer for a wide load/store
  # vector plumbing and device specials that their passes check themselves
  (UPat((Ops.CAT, Ops.PTRCAT, Ops.UNROLL, Ops.CONTRACT, Ops.WMMA, Ops.CUSTOM, Ops.CUSTOMI)), lambda: True),
]) + shared_spec

# ***** checking *****

def type_verify(uops:list[UOp], *specs:PatternMatcher):
  """Raise RuntimeError naming the first UOp that no spec accepts (a spec returning False rejects it outright)."""
  use = specs if specs else (program_spec,)
  for i, u in enumerate(uops):
    rets = [s.rewrite(u) for s in use]
    if any(r is False for r in rets) or not any(r is True for r in rets):
      if len(uops) < 200: print_uops(uops)
      raise RuntimeError(f"UOp verification failed at {i} on {u.op} dtype={u.dtype} arg={u.arg!r} src={[x.op for x in u.src]}")

def verify_graph(sink:UOp, spec:PatternMatcher) -> bool:
  type_verify(list(sink.toposort()), spec)
  return True
