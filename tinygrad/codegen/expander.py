# upcast and unroll axes live in registers: every node that depends on such an axis is copied once per lane, with the lane index
# as a constant. Hash-consing shares whatever doesn't depend on the lane. A REDUCE over an unrolled axis combines its lanes before
# accumulating. On a renderer with vector ALUs one upcast axis (the one most loads and stores walk contiguously) becomes real vectors
# instead: its loads, ALU ops, casts, accumulators and stores (float, int, bool) are single vector nodes (a contiguous group of lanes is one vector
# load or store, any other a gather), values that don't depend on it are broadcast, and the rest stays per-lane scalars.
# A tensor core reduce arrives as REDUCE(WMMA(a, b, 0)) with a scalar WMMA that stands for the sum over its K lanes: per combination of the
# other lanes it becomes one vector WMMA whose operands gather the lanes of a and b its arg names, and C's lanes are GEPs of it (of a
# vector REDUCE of it when the REDUCE loops over more of K).
from __future__ import annotations
import functools, itertools
from tinygrad.uop import Ops
from typing import Callable
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite
from tinygrad.dtype import DType
from tinygrad.renderer import VECTOR_ALU_DTYPES, VECTOR_ALU_OPS

def _combine(op:Ops, vals:list[UOp]) -> UOp:
  # a balanced tree: short dependency chains
  while len(vals) > 1: vals = [vals[i].alu(op, vals[i+1]) if i+1 < len(vals) else vals[i] for i in range(0, len(vals), 2)]
  return vals[0]

# memo: one kernel's symbolic rewrites so far (graph_rewrite's memo): the lanes' indices share most of their nodes, each simplified once
def _offset(x:UOp, base:UOp, memo:dict[UOp, UOp]) -> int|None:
  # x - base, when the symbolic rules make it a constant
  from tinygrad.uop.symbolic import sym
  return d.arg if (d := graph_rewrite(x - base, sym, memo=memo)).op is Ops.CONST else None

def _gate(index:UOp, memo:dict[UOp, UOp]) -> UOp|None:
  # an INDEX's gate, simplified: lanes whose gates differ only in conditions the loop bounds make true share one
  from tinygrad.uop.symbolic import sym
  return graph_rewrite(index.src[2], sym, memo=memo) if len(index.src) > 2 else None

def _step(idx:UOp, axis:tuple[int, int], placeholders:list[UOp], memo:dict[UOp, UOp]) -> int|None:
  # how far the index moves from lane 0 to lane 1 of the axis (other register axes at lane 0), if that is a constant
  def at(v:int) -> UOp: return idx.substitute({p: UOp.const(p.dtype, v if p.arg == axis else 0) for p in placeholders})
  return _offset(at(1), at(0), memo)

def _vector_axes(topo:list[UOp], lanes:dict[UOp, tuple[tuple[int, int], ...]], width:int, vdts:tuple[DType, ...],
                 memo:dict[UOp, UOp]) -> set[tuple[int, int]]:
  """The upcast axes that become vectors: the one most float loads and stores walk with stride 1 (a power of two <= width lanes), and
  more such axes that no node depends on together with a chosen one (a row kernel's loops over one row, one after the other)."""
  reduced = {s.arg for u in topo if u.op is Ops.REDUCE for s in u.src[1:] if s.op is Ops.UNROLL}
  if any(u.op is Ops.WMMA for u in topo): return set()
  placeholders = [u for u in topo if u.op is Ops.UNROLL]
  cands = [p.arg for p in placeholders if 2 <= p.arg[1] <= width and p.arg[1] & (p.arg[1]-1) == 0]
  score = dict.fromkeys(cands, 0)
  for u in topo:
    if u.op not in (Ops.LOAD, Ops.STORE) or (u.dtype if u.op is Ops.LOAD else u.src[1].dtype) not in vdts: continue
    idx = u.src[0].src[1]
    for a in cands:
      if a in lanes[idx] and _step(idx, a, placeholders, memo) == 1: score[a] += 1
  # an output axis first; else a reduced one (a vector accumulator whose lanes are combined after the loop). Then the most lanes moved by
  # vector loads and stores: a conv tile's 32 channel lanes (one weight load) over its 8 positions (an input load and the store)
  together = {frozenset(ls) for u, ls in lanes.items() if u.op is not Ops.SINK}   # (the SINK gathers every store's lanes)
  chosen: set[tuple[int, int]] = set()
  for a in sorted(cands, key=lambda a: (score[a] > 0, a not in reduced, score[a] * a[1], a[1]), reverse=True):
    if score[a] > 0 and not any(a in ls and ls & chosen for ls in together): chosen.add(a)
  return chosen

def expand(sink:UOp, vector_width:int=0, vops:frozenset[Ops]=VECTOR_ALU_OPS, vdts:tuple[DType, ...]=VECTOR_ALU_DTYPES) -> UOp:
  """vector_width: the most lanes of one vector (0: no vectors, every lane a scalar copy); vops/vdts: the ops and dtypes vectors take."""
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
  memo: dict[UOp, UOp] = {}
  vaxes = _vector_axes(topo, lanes, vector_width, vdts, memo) if vector_width > 1 else set()
  def vax(u:UOp) -> tuple[int, int]|None: return next((a for a in lanes[u] if a in vaxes), None)
  vmade: dict[tuple[UOp, tuple[int, ...]], UOp] = {}   # vectorized nodes: their vector per combination of the other lanes
  def vget(u:UOp, assign:dict[int, int], vaxis:tuple[int, int]) -> UOp:
    # u as a vector along vaxis (the reader's vector axis): its vector if it has one, else its lanes gathered (the same value broadcast)
    if (u, key := tuple(assign[a] for a, _ in lanes[u] if (a, _) != vaxis)) in vmade and vax(u) == vaxis: return vmade[(u, key)]
    vals = [get(u, {**assign, vaxis[0]: i}) for i in range(vaxis[1])]
    return UOp(Ops.VECTORIZE, u.dtype.vec(vaxis[1]), tuple(vals))
  def reduce_of(u:UOp, assign:dict[int, int], fetch:Callable[[UOp, dict[int, int]], UOp], keep:tuple[int, int]|None=None) -> UOp:
    # u's source for every combination of its unrolled lanes (but keep, which stays in the value), combined, then looped over its ranges
    unrolled = [s.arg for s in u.src[1:] if s.op is Ops.UNROLL and s.arg != keep]
    vals = [fetch(u.src[0], {**assign, **{a: v for (a, _), v in zip(unrolled, c)}}) for c in itertools.product(*[range(sz) for _, sz in unrolled])]
    combined = _combine(u.arg, vals)
    ranges = tuple(get(s, assign) for s in u.src[1:] if s.op is not Ops.UNROLL)
    return UOp(Ops.REDUCE, combined.dtype, (combined,)+ranges, u.arg) if ranges else combined
  def lane_base(index:UOp, assign:dict[int, int], vaxis:tuple[int, int]) -> UOp|None:
    # the vector's first INDEX when its lanes address consecutive elements under one gate (one vector load or store), else None
    ix = [get(index, {**assign, vaxis[0]: i}) for i in range(vaxis[1])]
    gate = _gate(ix[0], memo)
    return ix[0] if all(_offset(x.src[1], ix[0].src[1], memo) == i and _gate(x, memo) is gate for i, x in enumerate(ix)) else None
  def vectorize(u:UOp, assign:dict[int, int], vaxis:tuple[int, int]) -> UOp|None:
    """the vector node of u for these other lanes, or None where u stays per-lane scalars"""
    def vg(x:UOp, a:dict[int, int]) -> UOp: return vget(x, a, vaxis)
    if u.op is Ops.LOAD and u.dtype in vdts and u.src[0].op is Ops.INDEX:
      if (base := lane_base(u.src[0], assign, vaxis)) is not None: return UOp(Ops.LOAD, u.dtype.vec(vaxis[1]), (base,))
      lane_assigns = [{**assign, vaxis[0]: i} for i in range(vaxis[1])]
      return UOp(Ops.VECTORIZE, u.dtype.vec(vaxis[1]), tuple(u.replace(src=tuple(get(s, a) for s in u.src)) for a in lane_assigns))
    # a loaded value cast to a vector dtype (half stored, float computed) starts vectors too: its lanes are loaded one by one
    starts = u.op is Ops.CAST and u.src[0].op is Ops.LOAD
    if u.op in vops and u.dtype in vdts and (starts or any(s in vectorized for s in u.src)):
      return UOp(u.op, u.dtype.vec(vaxis[1]), tuple(vg(s, assign) for s in u.src), u.arg)
    if u.op is Ops.REDUCE and u.src[0] in vectorized and u.src[0].op is not Ops.WMMA: return reduce_of(u, assign, vg)
    # (a constant stored too: a padded buffer's zero border, kernelize.padded_store)
    if u.op is Ops.STORE and (u.src[1] in vectorized or u.src[1].op is Ops.CONST and u.src[1].dtype in vdts) and u.src[0].op is Ops.INDEX and \
       (base := lane_base(u.src[0], assign, vaxis)) is not None:
      return UOp(Ops.STORE, u.dtype, (base, vg(u.src[1], assign)))
    return None
  vectorized: set[UOp] = set()
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
    if (vaxis := vax(u)) is not None and u.op is not Ops.UNROLL:
      others = [ln for ln in lanes[u] if ln != vaxis]
      vnodes: dict[tuple[int, ...], UOp] = {}
      for combo in itertools.product(*[range(sz) for _, sz in others]):
        if (v := vectorize(u, {a: c for (a, _), c in zip(others, combo)}, vaxis)) is None: break
        vnodes[combo] = v
      else:
        vectorized.add(u)
        for combo, v in vnodes.items():
          vmade[(u, combo)] = v
          for i in range(vaxis[1]):
            full = {**{a: c for (a, _), c in zip(others, combo)}, vaxis[0]: i}
            made[(u, tuple(full[a] for a, _ in lanes[u]))] = v if u.op is Ops.STORE else v.gep(i)
        continue
    for combo in itertools.product(*[range(sz) for _, sz in lanes[u]]):
      assign = {a: v for (a, _), v in zip(lanes[u], combo)}
      if u.op is Ops.UNROLL: new = UOp.const(u.dtype, combo[0])
      elif u.op is Ops.WMMA: new = wmma(u, assign).gep(c_lane(u, assign))
      # one vector accumulator for all of C's lanes, each lane a GEP of it
      elif u.op is Ops.REDUCE and u.src[0].op is Ops.WMMA: new = reduce_of(u, assign, wmma).gep(c_lane(u.src[0], assign))
      elif u.op is Ops.REDUCE and (va := vax(u.src[0])) is not None and u.src[0] in vectorized and any(s.arg == va for s in u.src[1:]):
        # the vector axis is reduced: a vector accumulator, its lanes combined after the loop
        red = reduce_of(u, assign, functools.partial(vget, vaxis=va), keep=va)
        new = _combine(u.arg, [red.gep(i) for i in range(va[1])])
      elif u.op is Ops.REDUCE: new = reduce_of(u, assign, get)
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
