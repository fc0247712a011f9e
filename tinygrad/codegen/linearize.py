# lowered graph -> program order (docs/ir.md stage 4)
from __future__ import annotations
import itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat
from tinygrad.dtype import dtypes

def reduce_identity(op:Ops, dtype) -> UOp:
  if op is Ops.ADD: return UOp.const(dtype, 0)
  if op is Ops.MUL: return UOp.const(dtype, 1)
  if op is Ops.MAX: return UOp.const(dtype, dtypes.min(dtype.scalar()))
  raise ValueError(f"no identity for reduce {op}")

def reduce_to_acc(ctx:itertools.count, red:UOp) -> UOp:
  # REDUCE(x, *ranges) becomes an accumulator: declared before the loops, updated inside them, read after
  x, ranges = red.src[0], red.src[1:]
  if not ranges: return x
  acc = UOp(Ops.DEFINE_ACC, red.dtype, (reduce_identity(red.arg, red.dtype),) + ranges, (next(ctx),))
  # acc + (a + b) is folded as (acc + a) + b: with products for a and b that is two fused multiply-adds, not a mul, an fma and an add
  terms, stack = [], [x]
  while stack:
    if (t := stack.pop()).op is red.arg and t.dtype == red.dtype: stack += reversed(t.src)
    else: terms.append(t)
  # (only products: a chain of plain adds would be one long dependency, where the tree adds in parallel)
  if red.arg is not Ops.ADD or not all(t.op is Ops.MUL for t in terms): terms = [x]
  ret = acc
  for t in terms: ret = ret.alu(red.arg, t)
  return UOp(Ops.ASSIGN, red.dtype, (acc, ret))

pm_reduce_to_acc = PatternMatcher([(UPat(Ops.REDUCE, name="red"), reduce_to_acc)])

def linearize(sink:UOp) -> list[UOp]:
  """Program order for a graph of nested loops. Every node lives at a loop depth (the deepest RANGE it depends on); at each depth the
  nodes that don't need an inner loop's result run before that loop opens and the rest after it closes."""
  topo = list(sink.toposort())
  all_ranges = sorted({u for u in topo if u.op is Ops.RANGE}, key=lambda r: r.arg)
  pos = {r: i for i, r in enumerate(all_ranges)}
  ranges_of: dict[UOp, frozenset[UOp]] = {}
  after_loop: dict[UOp, bool] = {}   # depends on a reduce result, so must come after the loop that makes it
  depth: dict[UOp, int] = {}
  for u in topo:
    rs: set[UOp] = set()
    post = False
    for s in u.src:
      if s.op is Ops.ASSIGN and u.op is not Ops.ASSIGN:
        rs |= ranges_of[s] - set(s.src[0].src[1:])
        post = True
      # reading an accumulator is part of its update: inside its loops, even when the added value doesn't depend on them
      elif s.op is Ops.DEFINE_ACC: rs |= ranges_of[s] | set(s.src[1:])
      else:
        rs |= ranges_of[s]
        post |= after_loop[s]
    if u.op is Ops.RANGE: rs.add(u)
    # an accumulator lives inside every loop that is open where it is declared: one per output element
    if u.op is Ops.DEFINE_ACC: rs = set(all_ranges[:min(pos[r] for r in u.src[1:])])
    ranges_of[u] = frozenset(rs)
    after_loop[u] = post
    if u.op is Ops.DEFINE_ACC: depth[u] = min(pos[r] for r in u.src[1:])
    elif u.op is Ops.RANGE: depth[u] = pos[u]   # the RANGE itself opens its loop
    else: depth[u] = max((pos[r]+1 for r in rs), default=0)
  # an accumulator update belongs inside all of its loops even when the value doesn't depend on every one of them
  for u in topo:
    if u.op is Ops.ASSIGN and u.src[0].op is Ops.DEFINE_ACC:
      depth[u] = max(depth[u], max(pos[r]+1 for r in u.src[0].src[1:]))
  # nodes whose value is only needed inside deeper loops are still placed at their own depth; emit level by level
  order = {u: i for i, u in enumerate(topo)}
  n = len(all_ranges)
  before: list[list[UOp]] = [[] for _ in range(n+1)]
  after: list[list[UOp]] = [[] for _ in range(n+1)]
  for u in topo:
    if u.op in (Ops.SINK, Ops.RANGE): continue
    (after if after_loop[u] and u.op is not Ops.DEFINE_ACC else before)[depth[u]].append(u)
  out: list[UOp] = []
  for d in range(n+1):
    out.extend(sorted(before[d], key=order.__getitem__))
    if d < n: out.append(all_ranges[d])
  for d in range(n, -1, -1):
    if d < n: out.append(UOp(Ops.ENDRANGE, dtypes.void, (all_ranges[d],)))
    out.extend(sorted(after[d], key=order.__getitem__))
  _check_order(out)
  return out

def _check_order(uops:list[UOp]):
  seen: set[UOp] = set()
  for u in uops:
    for s in (u.src[:1] if u.op is Ops.DEFINE_ACC else u.src):   # an accumulator names its loops, it doesn't run after them
      if s not in seen and s.op is not Ops.SINK: raise RuntimeError(f"linearize: {u.op} placed before its source {s.op}")
    seen.add(u)

