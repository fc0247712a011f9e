# upcast and unroll axes live in registers: every node that depends on such an axis is copied once per lane, with the lane index
# as a constant. Hash-consing shares whatever doesn't depend on the lane, and the C compiler's SLP vectorizer turns the copies into
# SIMD. A REDUCE over an unrolled axis combines its lanes before accumulating.
from __future__ import annotations
import itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

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
    else:
      ls = set().union(*[lanes[s] for s in u.src]) if u.src else set()
      if u.op is Ops.REDUCE: ls -= {s.arg for s in u.src[1:] if s.op is Ops.UNROLL}
      lanes[u] = tuple(sorted(ls))
  made: dict[tuple[UOp, tuple[int, ...]], UOp] = {}
  def get(u:UOp, assign:dict[int, int]) -> UOp: return made[(u, tuple(assign[a] for a, _ in lanes[u]))]
  for u in topo:
    if u.op is Ops.SINK: continue
    for combo in itertools.product(*[range(sz) for _, sz in lanes[u]]):
      assign = {a: v for (a, _), v in zip(lanes[u], combo)}
      if u.op is Ops.UNROLL: new = UOp.const(u.dtype, combo[0])
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

