# upcast and unroll axes live in registers: every node that depends on such an axis is copied once per lane, with the lane index
# as a constant. Hash-consing shares whatever doesn't depend on the lane, and the C compiler's SLP vectorizer turns the copies into
# SIMD. A REDUCE over an unrolled axis combines its lanes before accumulating.
# A tensor core reduce arrives as REDUCE(WMMA(a, b, 0)) with a scalar WMMA that stands for the sum over its K lanes: per combination of the
# other lanes it becomes one vector WMMA whose operands gather the lanes of a and b its arg names, and C's lanes are GEPs of it (of a
# vector REDUCE of it when the REDUCE loops over more of K).
from __future__ import annotations
import itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat

def _combine(op:Ops, vals:list[UOp]) -> UOp:
  # a balanced tree: short dependency chains
  while len(vals) > 1: vals = [vals[i].alu(op, vals[i+1]) if i+1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
  return vals[0]

def expand(sink:UOp) -> UOp:
  topo = list(sink.toposort())
  if not any(u.op is Ops.UNROLL for u in topo): return sink
  lanes: dict[UOp, tuple[tuple[int, int], ...]] = {}   # the (axis, size) lanes a node's value depends on
  for u in topo:
    if u.op is Ops.UNROLL: lanes[u] = (u.arg,)
    elif u.op is Ops.WMMA:
      # C's lanes come out, the other lanes of the tensor core go in
      tc_lanes = {ln for ls_ in u.arg[6] for ln in ls_} | set(u.arg[7])
      lanes[u] = tuple(sorted((set(lanes[u.src[0]]) | set(lanes[u.src[1]])) - tc_lanes | set(u.arg[6][2])))
    else:
      ls = set().union(*[lanes[s] for s in u.src]) if u.src else set()
      if u.op is Ops.REDUCE: ls -= {s.arg for s in u.src[1:] if s.op is Ops.UNROLL}
      lanes[u] = tuple(sorted(ls))
  made: dict[tuple[UOp, tuple[int, ...]], UOp] = {}
  def get(u:UOp, assign:dict[int, int]) -> UOp: return made[(u, tuple(assign[a] for a, _ in lanes[u]))]
  def wmma(u:UOp, assign:dict[int, int]) -> UOp:
    # the vector WMMA of a scalar one: operand lanes e of A and B are the factors where the arg's lane axes spell e in binary
    base = {**assign, **{a: 0 for ls_ in u.arg[6] for a, _ in ls_}, **{a: 0 for a, _ in u.arg[7]}}
    def frag(x:UOp, axes:tuple[tuple[int, int], ...]) -> UOp:
      vals = [get(x, {**base, **{a: (e >> j) & 1 for j, (a, _) in enumerate(axes)}}) for e in range(1 << len(axes))]
      return vals[0] if len(vals) == 1 else UOp(Ops.VECTORIZE, x.dtype.vec(len(vals)), tuple(vals))
    out = u.dtype.vec(1 << len(u.arg[6][2]))
    return UOp(Ops.WMMA, out, (frag(u.src[0], u.arg[6][0]), frag(u.src[1], u.arg[6][1]), UOp.const(out, 0)), u.arg)
  def c_lane(u:UOp, assign:dict[int, int]) -> int: return sum(assign[a] << j for j, (a, _) in enumerate(u.arg[6][2]))
  for u in topo:
    if u.op is Ops.SINK: continue
    for combo in itertools.product(*[range(sz) for _, sz in lanes[u]]):
      assign = {a: v for (a, _), v in zip(lanes[u], combo)}
      if u.op is Ops.UNROLL: new = UOp.const(u.dtype, combo[0])
      elif u.op is Ops.WMMA: new = wmma(u, assign).gep(c_lane(u, assign))
      elif u.op is Ops.REDUCE and u.src[0].op is Ops.WMMA:
        # one vector accumulator for all of C's lanes, each lane a GEP of it
        w = u.src[0]
        unrolled = [s.arg for s in u.src[1:] if s.op is Ops.UNROLL]
        vecs = [wmma(w, {**assign, **{a: v for (a, _), v in zip(unrolled, c)}}) for c in itertools.product(*[range(sz) for _, sz in unrolled])]
        ranges = tuple(get(s, assign) for s in u.src[1:] if s.op is not Ops.UNROLL)
        vec = _combine(u.arg, vecs)
        new = (UOp(Ops.REDUCE, vec.dtype, (vec,)+ranges, u.arg) if ranges else vec).gep(c_lane(w, assign))
      elif u.op is Ops.REDUCE:
        unrolled = [s.arg for s in u.src[1:] if s.op is Ops.UNROLL]
        vals = [get(u.src[0], {**assign, **{a: v for (a, _), v in zip(unrolled, c)}}) for c in itertools.product(*[range(sz) for _, sz in unrolled])]
        combined = _combine(u.arg, vals)
        ranges = tuple(get(s, assign) for s in u.src[1:] if s.op is not Ops.UNROLL)
        new = UOp(Ops.REDUCE, u.dtype, (combined,)+ranges, u.arg) if ranges else combined
      else: new = u.replace(src=tuple(get(s, assign) for s in u.src)) if u.src else u
      made[(u, combo)] = new
  stores = [made[(s, c)] for s in sink.src for c in itertools.product(*[range(sz) for _, sz in lanes[s]])]
  return sink.replace(src=tuple(dict.fromkeys(stores)))

def _is_zero(x:UOp) -> bool: return (x.op is Ops.CONST and x.arg == 0) or (x.op is Ops.VCONST and all(v == 0 for v in x.arg))

# x + WMMA(a, b, c) -> WMMA(a, b, c + x): the tensor core accumulates for free, so an accumulator (or another WMMA) feeds its C
pm_wmma_acc = PatternMatcher([
  (UPat(Ops.ADD, src=[UPat(Ops.WMMA, name="w"), UPat.var("x")]),
   lambda w, x: w.replace(src=(w.src[0], w.src[1], x if _is_zero(w.src[2]) else w.src[2] + x))),
])
