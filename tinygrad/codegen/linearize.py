# lowered graph -> program order (docs/ir.md stage 4)
from __future__ import annotations
import heapq, itertools
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

def _ranges_of(topo:list[UOp], acc_ranges:dict[UOp, frozenset[UOp]]) -> dict[UOp, frozenset[UOp]]:
  # the loops each node must run inside: the RANGEs it depends on, where a value read after an accumulator's loops leaves those loops
  ranges_of: dict[UOp, frozenset[UOp]] = {}
  for u in topo:
    rs: set[UOp] = set()
    for s in u.src:
      if s.op is Ops.ASSIGN and u.op is not Ops.ASSIGN: rs |= ranges_of[s] - set(s.src[0].src[1:])
      # reading an accumulator is part of its update: inside its loops, even when the added value doesn't depend on them
      elif s.op is Ops.DEFINE_ACC: rs |= ranges_of[s] | set(s.src[1:])
      else: rs |= ranges_of[s]
    if u.op is Ops.RANGE: rs.add(u)
    ranges_of[u] = frozenset(acc_ranges.get(u, rs))
  return ranges_of

def linearize(sink:UOp) -> list[UOp]:
  """Program order for a graph of loops. The loops form a tree: a loop nests inside the loops of lower axis number that some node needs
  together with it, so reductions that don't depend on each other's loops (softmax's max, sum and output over one row) run one after the
  other inside their common loop. In each loop body, nodes and inner loops are ordered by their dependencies."""
  topo = list(sink.toposort())
  order = {u: i for i, u in enumerate(topo)}
  all_ranges = sorted({u for u in topo if u.op is Ops.RANGE}, key=lambda r: r.arg)
  pos = {r: i for i, r in enumerate(all_ranges)}
  accs = [u for u in topo if u.op is Ops.DEFINE_ACC]
  ranges_of = _ranges_of(topo, {a: frozenset() for a in accs})
  # a loop's parent: the innermost of the lower loops needed together with it; if that isn't a consistent tree, one nest in axis order
  below: dict[UOp, set[UOp]] = {r: set() for r in all_ranges}
  for rs in {rs for u, rs in ranges_of.items() if u.op is not Ops.SINK}:   # (the SINK gathers every store: it needs no loops together)
    for r in rs: below[r].update(q for q in rs if pos[q] < pos[r])
  parent: dict[UOp, UOp|None] = {r: max(below[r], key=pos.__getitem__, default=None) for r in all_ranges}
  def chain(r:UOp|None) -> list[UOp]:
    out: list[UOp] = []
    while r is not None: out, r = out + [r], parent[r]
    return out
  if not all(below[r] <= set(chain(r)) for r in all_ranges): parent = {r: all_ranges[i-1] if i else None for i, r in enumerate(all_ranges)}
  # an accumulator is declared in the loop around its outermost reduce loop: one per iteration of the loops it sits in
  ranges_of = _ranges_of(topo, {a: frozenset(chain(parent[min(a.src[1:], key=pos.__getitem__)])) for a in accs})
  depth = {r: len(chain(r)) for r in all_ranges}
  home: dict[UOp, UOp|None] = {}
  for u in topo:
    if u.op in (Ops.SINK, Ops.RANGE): continue
    home[u] = max(ranges_of[u], key=depth.__getitem__, default=None)
    if u.op is Ops.ASSIGN and u.src[0].op is Ops.DEFINE_ACC:   # an update runs inside all of its loops
      home[u] = max(list(ranges_of[u]) + list(u.src[0].src[1:]), key=depth.__getitem__)
    if not ranges_of[u] <= set(chain(home[u])): raise RuntimeError(f"linearize: {u.op} needs loops that are not nested")
  # a kernel that stores values and reads them back (kernelize's reuse_row_value) reads after the stores: a load waits for the stores of its
  # buffer that read nothing of it (the first pass; the stores of what was read back do, and a kernel with one store reads before it writes)
  def buf(u:UOp) -> UOp|None: return u.src[0].src[0] if u.src and u.src[0].op is Ops.INDEX else None
  stores = [u for u in topo if u.op is Ops.STORE and buf(u) is not None]
  first = [s for s in stores if len(stores) > 1 and not any(x.op is Ops.LOAD and buf(x) is buf(s) for x in s.toposort())]
  after = {u: tuple(s for s in first if buf(s) is buf(u)) for u in topo if first and u.op is Ops.LOAD}
  kids: dict[UOp|None, list[UOp]] = {}
  for r in all_ranges: kids.setdefault(parent[r], []).append(r)
  members: dict[UOp|None, list[UOp]] = {}
  for u, h in home.items(): members.setdefault(h, []).append(u)
  def item_in(h:UOp|None, loop:UOp|None) -> UOp|None:
    # the item directly inside `loop` that holds a node living in loop h (the node itself when h is loop), None if outside loop
    while h is not loop:
      if h is None: return None
      if parent[h] is loop: return h
      h = parent[h]
    return None
  out: list[UOp] = []
  def emit(loop:UOp|None):
    items = members.get(loop, []) + kids.get(loop, [])
    inside = {r: [u for u in home if item_in(home[u], loop) is r] + [q for q in all_ranges if q is not r and item_in(parent[q], loop) is r]
              for r in kids.get(loop, [])}
    deps: dict[UOp, set[UOp]] = {}
    for it in items:
      nodes = inside[it] + [it] if it.op is Ops.RANGE else [it]   # a loop needs its bound too
      ds: set[UOp] = set()
      for u in nodes:
        for s in (u.src[:1] if u.op is Ops.DEFINE_ACC else u.src + after.get(u, ())):
          if s.op in (Ops.RANGE, Ops.SINK) or s not in home: continue
          d = s if home[s] is loop else item_in(home[s], loop)
          if d is not None and d is not it: ds.add(d)
      deps[it] = ds
    users: dict[UOp, list[UOp]] = {}
    for it, ds in deps.items():
      for d in ds: users.setdefault(d, []).append(it)
    # what no inner loop needs (a conv's epilogue: the residual it adds after its reduce) comes after the loops, not held in registers
    # (or spilled) across them
    for_loops = set(kids.get(loop, []))
    stack = list(for_loops)
    while stack: stack.extend(d for d in deps[stack.pop()] if d not in for_loops and not for_loops.add(d))  # type: ignore[func-returns-value]
    prio = {it: min((order[u] for u in inside[it]), default=order[it]) if it.op is Ops.RANGE else
            order[it] + (0 if it in for_loops or not kids.get(loop) else len(topo)) for it in items}
    waiting = {it: len(ds) for it, ds in deps.items()}
    index = {it: i for i, it in enumerate(items)}
    ready = [(prio[it], i, it) for i, it in enumerate(items) if not waiting[it]]
    heapq.heapify(ready)
    done = 0
    while ready:
      _, _, it = heapq.heappop(ready)
      done += 1
      if it.op is Ops.RANGE:
        out.append(it)
        emit(it)
        out.append(UOp(Ops.ENDRANGE, dtypes.void, (it,)))
      else: out.append(it)
      for v in users.get(it, []):
        waiting[v] -= 1
        if not waiting[v]: heapq.heappush(ready, (prio[v], index[v], v))
    if done != len(items): raise RuntimeError("linearize: a dependency cycle between loops")
  emit(None)
  _check_order(out)
  return out

def _check_order(uops:list[UOp]):
  seen: set[UOp] = set()
  for u in uops:
    for s in (u.src[:1] if u.op is Ops.DEFINE_ACC else u.src):   # an accumulator names its loops, it doesn't run after them
      if s not in seen and s.op is not Ops.SINK: raise RuntimeError(f"linearize: {u.op} placed before its source {s.op}")
    seen.add(u)

