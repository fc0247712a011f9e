# kernel AST (views) -> index maths over loop variables (docs/ir.md stage 3)
from __future__ import annotations
import itertools
from dataclasses import dataclass, field
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite, resolve, sint, sint_to_uop, KernelInfo, AxisType, ThreadId, ThreadKind
from tinygrad.dtype import dtypes, DType, PtrDType
from tinygrad.helpers import prod
from tinygrad.renderer import Renderer
from tinygrad.codegen.linearize import reduce_identity
from tinygrad.uop.symbolic import pm_reduce_gather

@dataclass
class LowererContext:
  idxs: list[UOp]                 # one loop variable (RANGE or SPECIAL) per axis
  idx_dtype: DType
  reduce_ranges: dict[int, UOp] = field(default_factory=dict)
  wmma: tuple|None = None         # KernelInfo.tensor_core: the reduce becomes a WMMA
  # an axis cut to fit the device's limits: its index is outer*inner + inner id, with the ids (a reduce loops over them) and, where the
  # chunks run past the axis's end, the guard index < size that gates every load and store reaching memory through it
  parts: dict[int, tuple[UOp, ...]] = field(default_factory=dict)
  guards: dict[int, UOp] = field(default_factory=dict)

def _indexed(ctx:LowererContext, view:UOp) -> tuple[UOp, UOp]:
  st = view.arg
  zero = UOp.const(ctx.idx_dtype, 0)
  return st.to_indexed_uops([ctx.idxs[i] if resolve(s != 1) else zero for i, s in enumerate(st.shape)])

def _is_true(x:UOp) -> bool: return x.op is Ops.CONST and x.arg is True
def _is_false(x:UOp) -> bool: return x.op is Ops.CONST and x.arg is False

def _guarded(ctx:LowererContext, view:UOp) -> tuple[UOp, UOp]:
  idx, valid = _indexed(ctx, view)
  for a, g in ctx.guards.items():
    if resolve(view.arg.shape[a] != 1): valid = g if _is_true(valid) else valid & g
  return idx, valid

def lower_load(ctx:LowererContext, x:UOp, buf:UOp, view:UOp) -> UOp:
  idx, valid = _guarded(ctx, view)
  if _is_false(valid): return UOp.const(x.dtype, 0)
  return UOp(Ops.LOAD, x.dtype, (buf.index(idx, None if _is_true(valid) else valid),))

def lower_store(ctx:LowererContext, buf:UOp, view:UOp, val:UOp) -> UOp:
  idx, valid = _guarded(ctx, view)
  return UOp(Ops.STORE, dtypes.void, (buf.index(idx, None if _is_true(valid) else valid), val))

def lower_const(ctx:LowererContext, c:UOp, view:UOp) -> UOp:
  _, valid = _indexed(ctx, view)
  val = UOp(c.op, c.dtype, (), c.arg)
  return val if _is_true(valid) else valid.where(val, UOp.const(c.dtype, 0))

def lower_reduce(ctx:LowererContext, r:UOp) -> UOp:
  if ctx.wmma is None:
    # past a cut axis's end the reduce adds its identity
    src = r.src[0]
    for a in r.axis_arg:
      if a in ctx.guards: src = ctx.guards[a].where(src, reduce_identity(r.arg[0], src.dtype))
    return UOp(Ops.REDUCE, r.dtype, (src,) + tuple(p for a in r.axis_arg for p in ctx.parts.get(a, (ctx.idxs[a],))), r.arg[0])
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
]) + pm_reduce_gather

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

def _cdiv(a:sint, b:int) -> sint: return -(-a // b) if isinstance(a, int) else (a + (b - 1)) // b
def _vmax(s:sint) -> int: return s if isinstance(s, int) else int(s.vmax)

def loop_cost(global_loops:list[int], reduce_loops:list[int], nreduce:int) -> int:
  """Loop iterations one thread runs, each loop's exit test counted: the global loops nest, each reduce runs its loops inside them."""
  def nest(sizes:list[int]) -> tuple[int, int]:
    cost, outer = 0, 1
    for s in sizes: cost, outer = cost + outer * (s + 1), outer * s
    return cost, outer
  (gcost, gtrips), (rcost, _) = nest(global_loops), nest(reduce_loops)
  return gcost + gtrips * nreduce * rcost

def _cut(s:sint, limit:int) -> tuple[int, sint]:
  """(chunks, chunk size) for an axis of size s over limit: chunks of at most limit, an exact split when a few more chunks make one."""
  c = _cdiv(_vmax(s), limit)
  assert isinstance(c, int)
  if isinstance(s, int): c = next((x for x in range(c, 2 * c) if s % x == 0), c)
  return c, _cdiv(s, c)

def get_index(ast:UOp, opts:Renderer) -> LowererContext:
  full_shape = ast.full_shape
  info = ast.arg if isinstance(ast.arg, KernelInfo) and len(ast.arg.axis_types) == len(full_shape) else None
  axis_types = info.axis_types if info is not None else tuple(AxisType.GLOBAL for _ in full_shape)
  idx_dtype = dtypes.int64 if needs_int64(ast, full_shape) else dtypes.int32
  ctx = LowererContext([], idx_dtype, wmma=info.tensor_core if info is not None else None)
  def special(kind:ThreadKind, dim:int, size:sint) -> UOp: return UOp(Ops.SPECIAL, idx_dtype, (), ThreadId.make(kind, dim, size))
  def as_idx(x:sint) -> UOp: return x.cast(idx_dtype) if isinstance(x, UOp) and x.dtype != idx_dtype else sint_to_uop(x, idx_dtype)
  def cut(a:int, inner_id:UOp, outer_id:UOp, chunks:int, inner:sint) -> UOp:
    ctx.parts[a] = (outer_id, inner_id)
    idx = outer_id * as_idx(inner) + inner_id
    if not (isinstance(inner, int) and isinstance(size := full_shape[a], int) and chunks * inner == size): ctx.guards[a] = idx < as_idx(full_shape[a])
    return idx
  idxs: dict[int, UOp] = {}
  global_axes = [i for i, t in enumerate(axis_types) if t is AxisType.GLOBAL]
  local_axes = [i for i, t in enumerate(axis_types) if t in (AxisType.LOCAL, AxisType.GROUP_REDUCE)]
  # on devices with workgroups the innermost global axes get the launch dims, gidx0 the innermost, the rest stay loops. An axis over the
  # device's global_max for its dim is cut into chunks that fit: the chunk number takes the next dim when one is left, else a loop
  gmax, dim = (opts.global_max or (2**62,) * 3) if opts.has_local else (), 0
  for a in reversed(global_axes):
    if dim >= len(gmax): break
    if _vmax(s := full_shape[a]) <= gmax[dim]:
      idxs[a], dim = special(ThreadKind.GLOBAL, dim, s), dim + 1
      continue
    chunks, inner = _cut(s, gmax[dim])
    outer = special(ThreadKind.GLOBAL, dim + 1, chunks) if dim + 1 < len(gmax) and chunks <= gmax[dim + 1] else UOp.range(idx_dtype, chunks, a)
    idxs[a], dim = cut(a, special(ThreadKind.GLOBAL, dim, inner), outer, chunks, inner), dim + (2 if outer.op is Ops.SPECIAL else 1)
  for j, a in enumerate(local_axes):
    if j >= len(local_axes) - 3: idxs[a] = special(ThreadKind.LOCAL, len(local_axes) - 1 - j, full_shape[a])
  # a thread that would loop more than the device allows (loop_max) shares its longest reduce with a workgroup: thread g adds elements
  # g, g+n, ... (its index guarded past the end) and the parts meet in shared memory
  reduce_axes = [a for a, t in enumerate(axis_types) if t is AxisType.REDUCE]
  nreduce = sum(1 for u in ast.toposort() if u.op is Ops.REDUCE_AXIS)
  glob_loops = [_vmax(full_shape[a]) for a in global_axes if a not in idxs] + [_vmax(o.src[0]) for o, _ in ctx.parts.values() if o.op is Ops.RANGE]
  def cost(a:int, n:int) -> int: return loop_cost(glob_loops, [_vmax(_cdiv(full_shape[r], n if r == a else 1)) for r in reduce_axes], nreduce)
  if opts.loop_max is not None and reduce_axes and opts.has_local and opts.has_shared and len(local_axes) < 3 and ctx.wmma is None and \
     cost(-1, 1) > opts.loop_max:
    a = max(reduce_axes, key=lambda r: _vmax(full_shape[r]))
    threads = prod(_vmax(full_shape[x]) for x in local_axes)
    lmax = opts.local_max or (2**31,) * 3
    itemsize = max(u.dtype.itemsize for u in ast.toposort() if u.op is Ops.REDUCE_AXIS)
    if (n := next((n for n in (2**i for i in range(1, 11)) if n <= lmax[len(local_axes)] and n * threads <= max(lmax) and
                   n * threads * itemsize <= opts.shared_max and cost(a, n) <= opts.loop_max), None)) is not None:
      loop = UOp.range(idx_dtype, _cdiv(full_shape[a], n), a)
      idxs[a] = cut(a, special(ThreadKind.LOCAL, len(local_axes), n), loop, _vmax(loop.src[0]), n)
  for i, (s, t) in enumerate(zip(full_shape, axis_types)):
    if i in idxs: ctx.idxs.append(idxs[i])
    elif t is AxisType.THREAD: ctx.idxs.append(special(ThreadKind.CORE, 0, s))
    # register axes: a placeholder per lane, expanded into copies of the graph by the expander
    elif t in (AxisType.UPCAST, AxisType.UNROLL): ctx.idxs.append(UOp(Ops.UNROLL, idx_dtype, (), (i, s)))
    else: ctx.idxs.append(UOp.range(idx_dtype, s, i))
  return ctx

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
