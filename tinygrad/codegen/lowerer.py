# kernel AST (views) -> index maths over loop variables (docs/ir.md stage 3)
from __future__ import annotations
import itertools
from dataclasses import dataclass, field
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite, resolve, sint, KernelInfo, AxisType, ThreadId, ThreadKind
from tinygrad.dtype import dtypes, DType, PtrDType
from tinygrad.helpers import prod
from tinygrad.renderer import Renderer

@dataclass
class LowererContext:
  idxs: list[UOp]                 # one loop variable (RANGE or SPECIAL) per axis
  idx_dtype: DType
  reduce_ranges: dict[int, UOp] = field(default_factory=dict)
  wmma: tuple|None = None         # KernelInfo.tensor_core: the reduce becomes a WMMA

def _indexed(ctx:LowererContext, view:UOp) -> tuple[UOp, UOp]:
  st = view.arg
  zero = UOp.const(ctx.idx_dtype, 0)
  return st.to_indexed_uops([ctx.idxs[i] if resolve(s != 1) else zero for i, s in enumerate(st.shape)])

def _is_true(x:UOp) -> bool: return x.op is Ops.CONST and x.arg is True
def _is_false(x:UOp) -> bool: return x.op is Ops.CONST and x.arg is False

def lower_load(ctx:LowererContext, x:UOp, buf:UOp, view:UOp) -> UOp:
  idx, valid = _indexed(ctx, view)
  if _is_false(valid): return UOp.const(x.dtype, 0)
  return UOp(Ops.LOAD, x.dtype, (buf.index(idx, None if _is_true(valid) else valid),))

def lower_store(ctx:LowererContext, buf:UOp, view:UOp, val:UOp) -> UOp:
  idx, valid = _indexed(ctx, view)
  return UOp(Ops.STORE, dtypes.void, (buf.index(idx, None if _is_true(valid) else valid), val))

def lower_const(ctx:LowererContext, c:UOp, view:UOp) -> UOp:
  _, valid = _indexed(ctx, view)
  val = UOp(c.op, c.dtype, (), c.arg)
  return val if _is_true(valid) else valid.where(val, UOp.const(c.dtype, 0))

def lower_reduce(ctx:LowererContext, r:UOp) -> UOp:
  if ctx.wmma is None: return UOp(Ops.REDUCE, r.dtype, (r.src[0],) + tuple(ctx.idxs[a] for a in r.axis_arg), r.arg[0])
  # a tensor core reduce: a scalar WMMA stands for the product summed over the K lanes (the expander builds the real one from every lane);
  # the REDUCE is left with the loop over the rest of K
  from tinygrad.renderer.tc import mul_factors, tc_operand
  facs, dtype_in, k_lanes = mul_factors(r.src[0]), ctx.wmma[2], {a for a, _ in ctx.wmma[7]}
  ops = [tc_operand(f, dtype_in) for f in facs] if facs is not None else []
  if len(ops) != 2 or ops[0] is None or ops[1] is None: raise RuntimeError(f"a tensor core reduce needs a product of {dtype_in}, got {r.src[0]}")
  wmma = UOp(Ops.WMMA, r.dtype, (ops[0], ops[1], UOp.const(r.dtype, 0)), ctx.wmma)
  return UOp(Ops.REDUCE, r.dtype, (wmma,) + tuple(ctx.idxs[a] for a in r.axis_arg if a not in k_lanes), Ops.ADD)

pm_lowerer = PatternMatcher([
  (UPat(Ops.LOAD, src=(UPat(Ops.DEFINE_GLOBAL, name="buf"), UPat(Ops.VIEW, name="view")), name="x"), lower_load),
  (UPat(Ops.STORE, src=(UPat(Ops.DEFINE_GLOBAL, name="buf"), UPat(Ops.VIEW, name="view"), UPat.var("val"))), lower_store),
  (UPat((Ops.CONST, Ops.VCONST), src=(UPat(Ops.VIEW, name="view"),), name="c"), lower_const),
  (UPat(Ops.VALID, src=(UPat(Ops.VIEW, name="view"),)), lambda ctx, view: _indexed(ctx, view)[1]),
  (UPat(Ops.REDUCE_AXIS, name="r"), lower_reduce),
])

def needs_int64(ast:UOp, full_shape:tuple[sint, ...]) -> bool:
  limit = 2**31 - 1
  # the loops multiply up to the largest view's size (a row kernel's loops over one row side by side don't multiply)
  views = [u.arg for u in ast.toposort() if u.op is Ops.VIEW]
  if any(isinstance(p := prod(st.shape), int) and p > limit for st in views) or not views and isinstance(p := prod(full_shape), int) and p > limit:
    return True
  for u in ast.toposort():
    if u.op is Ops.DEFINE_GLOBAL and isinstance(u.dtype, PtrDType) and u.dtype.size > limit: return True
    if u.op is Ops.VIEW and u.arg.needs_int64(): return True
  return False

def get_index(ast:UOp, opts:Renderer) -> LowererContext:
  full_shape = ast.full_shape
  info = ast.arg if isinstance(ast.arg, KernelInfo) and len(ast.arg.axis_types) == len(full_shape) else None
  axis_types = info.axis_types if info is not None else tuple(AxisType.GLOBAL for _ in full_shape)
  idx_dtype = dtypes.int64 if needs_int64(ast, full_shape) else dtypes.int32
  idxs: list[UOp] = []
  global_axes = [i for i, t in enumerate(axis_types) if t is AxisType.GLOBAL]
  local_axes = [i for i, t in enumerate(axis_types) if t in (AxisType.LOCAL, AxisType.GROUP_REDUCE)]
  # on devices with threads the last (up to three) global axes are workgroup ids, gidx0 the innermost; the rest stay loops
  # an axis over the device's global_max for its dim stays a loop in every thread: the launch fits, and the kernel does the same work
  gmax = opts.global_max or ()
  def fits(a:int, d:int) -> bool: return d >= len(gmax) or (s if isinstance(s := full_shape[a], int) else s.vmax) <= gmax[d]
  special = {a: (ThreadKind.GLOBAL, d) for j, a in enumerate(global_axes)
             if opts.has_local and j >= len(global_axes)-3 and fits(a, d := len(global_axes)-1-j)}
  special.update({a: (ThreadKind.LOCAL, len(local_axes)-1-j) for j, a in enumerate(local_axes) if j >= len(local_axes)-3})
  for i, (s, t) in enumerate(zip(full_shape, axis_types)):
    if t is AxisType.THREAD: idxs.append(UOp(Ops.SPECIAL, idx_dtype, (), ThreadId.make(ThreadKind.CORE, 0, s)))
    elif i in special: idxs.append(UOp(Ops.SPECIAL, idx_dtype, (), ThreadId.make(*special[i], s)))
    # register axes: a placeholder per lane, expanded into copies of the graph by the expander
    elif t in (AxisType.UPCAST, AxisType.UNROLL): idxs.append(UOp(Ops.UNROLL, idx_dtype, (), (i, s)))
    else: idxs.append(UOp.range(idx_dtype, s, i))
  return LowererContext(idxs, idx_dtype, wmma=info.tensor_core if info is not None else None)

def lower(ast:UOp, opts:Renderer) -> UOp:
  ctx = get_index(ast, opts)
  return graph_rewrite(ast, pm_lowerer, ctx)

# ***** group reduce: the threads of a workgroup each reduce a part, then combine the parts through shared memory *****

@dataclass
class GroupContext:
  local_ids: list[UOp]      # every lidx SPECIAL of the kernel, lidx0 first: a thread's slot in shared memory
  count: int = 0

def group_reduce(ctx:GroupContext, red:UOp) -> UOp|None:
  group = [s for s in red.src[1:] if s.op is Ops.SPECIAL]
  if not group: return None
  ranges = [s for s in red.src[1:] if s.op is not Ops.SPECIAL]
  partial = UOp(Ops.REDUCE, red.dtype, (red.src[0], *ranges), red.arg) if ranges else red.src[0]
  slot, stride = UOp.const(ctx.local_ids[0].dtype, 0), 1
  for lid in ctx.local_ids:
    slot, stride = slot + lid * stride, stride * lid.arg[1]
  lbuf = UOp(Ops.DEFINE_LOCAL, red.dtype.ptr(stride, local=True), (), f"temp{ctx.count}")
  ctx.count += 1
  barrier = UOp(Ops.BARRIER, dtypes.void, (lbuf.index(slot).store(partial),))
  # every thread combines the group's parts (unrolled: groups are small), so every thread holds the result
  parts = []
  for combo in itertools.product(*[range(g.arg[1]) for g in group]):
    other = slot.substitute({g: UOp.const(g.dtype, v) for g, v in zip(group, combo)})
    parts.append(UOp(Ops.LOAD, red.dtype, (lbuf.index(other), barrier)))
  ret = parts[0]
  for p in parts[1:]: ret = ret.alu(red.arg, p)
  return ret

pm_group_reduce = PatternMatcher([(UPat(Ops.REDUCE, name="red"), group_reduce)])

def lower_group_reduces(sink:UOp) -> UOp:
  local_ids = sorted([u for u in sink.toposort() if u.op is Ops.SPECIAL and u.arg.kind is ThreadKind.LOCAL], key=lambda u: u.arg.dim)
  if not local_ids: return sink
  return graph_rewrite(sink, pm_group_reduce, GroupContext(local_ids))
