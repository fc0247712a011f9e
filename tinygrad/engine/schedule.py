from __future__ import annotations
from dataclasses import dataclass, field
from typing import Any, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, graph_rewrite_map
from tinygrad.helpers import DEBUG, Metadata, SPLIT_REDUCEOPS, SCHEDULE_CACHE
from tinygrad.schedule.grouper import group_realizes, early_cleanup, SPLIT_REDUCE_MIN, EXPENSIVE_EXPAND
from tinygrad.schedule.kernelize import KernelBuilder

@dataclass(frozen=True)
class ScheduleItem:
  ast: UOp                        # a kernel AST (SINK) or a COPY
  bufs: tuple[Any, ...]           # Buffers, in DEFINE_GLOBAL order (the output first)
  metadata: tuple[Metadata, ...] = ()
  var_vals: dict[UOp, int] = field(default_factory=dict)

# a schedule as the scheduler makes it: (ast, buffer UOps, var_vals) per item in run order, var_vals, becomes_map, the new output buffers
_Plan = tuple[list[tuple[UOp, tuple[UOp, ...], dict[UOp, int]]], dict[UOp, int], dict[UOp, UOp], list[UOp]]
_plans: dict[tuple, _Plan] = {}

def create_schedule_with_vars(sink:UOp) -> tuple[list[ScheduleItem], dict[UOp, int], dict[UOp, UOp]]:
  """Cut the tensor graph under sink into kernels. Returns (schedule, var_vals, becomes_map): becomes_map maps the realized
  nodes of the original graph to the buffers (with views) that hold them afterwards.

  Plans are cached by the graph with its input buffers replaced by numbered stand-ins (same dtype, size and device), so rebuilding
  the same computation on the same or other buffers (a training step, repeated inference) skips the scheduler. The cache holds
  no real buffer: a hit gets fresh output buffers."""
  if not SCHEDULE_CACHE: return _instantiate(_plan(sink), {}, {})
  stand_in: dict[UOp, UOp] = {}
  norm: dict[UOp, UOp] = {}
  for u in sink.toposort():
    if u.op is Ops.BUFFER: norm[u] = stand_in[u] = UOp(Ops.BUFFER, u.dtype, (UOp(Ops.UNIQUE, arg=-1-len(stand_in)), u.src[1]), u.arg)
    else: norm[u] = u.replace(src=tuple(norm[s] for s in u.src)) if u.src else u
  key = (norm[sink], SPLIT_REDUCEOPS.value, SPLIT_REDUCE_MIN.value, EXPENSIVE_EXPAND.value)
  if (plan := _plans.get(key)) is None:
    if len(_plans) >= 512: del _plans[next(iter(_plans))]
    _plans[key] = plan = _plan(norm[sink])
  real = {**{v: k for k, v in stand_in.items()}, **{o: UOp.new_buffer(cast(str, o.device), o.arg, o.dtype) for o in plan[3]}}
  return _instantiate(plan, real, {v: k for k, v in norm.items()})

def _instantiate(plan:_Plan, real:dict[UOp, UOp], orig:dict[UOp, UOp]) -> tuple[list[ScheduleItem], dict[UOp, int], dict[UOp, UOp]]:
  # the plan on real buffers: stand-ins become the inputs, the plan's outputs fresh buffers; becomes_map keys go back to the caller's graph
  items, var_vals, becomes, _ = plan
  if DEBUG >= 3: print(f"scheduled {len(items)} items")
  schedule = [ScheduleItem(ast.substitute(real) if ast.op is Ops.COPY else ast, tuple(real.get(b, b).buffer for b in bufs), var_vals=vv)
              for ast, bufs, vv in items]
  # one substitute for every value: shared views are rebuilt once
  vals = UOp.sink(*becomes.values()).substitute(real).src if becomes else ()
  return schedule, var_vals, {orig.get(k, k): v for k, v in zip(becomes, vals)}

def _plan(sink:UOp) -> _Plan:
  cmap = graph_rewrite_map(sink, early_cleanup, ctx=set())
  clean = cmap[sink]
  realizes = group_realizes(clean)
  # a buffer for every kernel output: ASSIGN writes into its target, the rest get new buffers
  buffer_of: dict[UOp, UOp] = {}
  replacement: dict[UOp, UOp] = {}
  for r in realizes:
    if r.op is Ops.ASSIGN:
      # the target may itself be an earlier ASSIGN of this schedule: the result is the target's buffer view
      buffer_of[r], replacement[r] = r.src[0].buf_uop, r.src[0].substitute(replacement)
    else:
      # a symbolic size gets a buffer for the largest value its variables allow, viewed down to the bound size
      size = r.size
      buffer_of[r] = buf = UOp.new_buffer(r.device, size if isinstance(size, int) else int(size.vmax), r.dtype)  # type: ignore[arg-type]
      replacement[r] = (buf if isinstance(size, int) else buf.shrink(((0, size),))).reshape(r.shape)

  items: list[tuple[UOp, tuple[UOp, ...], dict[UOp, int]]] = []
  deps: list[set[int]] = []
  producer: dict[UOp, int] = {}
  var_vals: dict[UOp, int] = {}
  assign_targets: dict[int, UOp] = {}
  readers_of_buf: dict[UOp, set[int]] = {}
  for r in realizes:
    if r.size == 0:   # nothing to compute: the (empty) buffer is the result
      producer[r] = -1
      continue
    if r.op is Ops.COPY:
      src = r.src[0]
      src_buf = buffer_of[src] if src in buffer_of else src.buf_uop
      items.append((UOp(Ops.COPY, r.dtype, (src_buf, r.src[1]), r.size), (buffer_of[r], src_buf), {}))
      deps.append({producer[src]} if producer.get(src, -1) >= 0 else set())
      if src not in buffer_of: readers_of_buf.setdefault(src_buf, set()).add(len(items)-1)
    else:
      kb = KernelBuilder(r, buffer_of)
      ast = kb.build()
      var_vals.update(kb.var_vals)
      items.append((ast, tuple(kb.bufs), kb.var_vals))
      deps.append({producer[n] for n in kb.reads_nodes if producer[n] >= 0})
      for b in kb.reads_bufs: readers_of_buf.setdefault(b, set()).add(len(items)-1)
      if r.op is Ops.ASSIGN: assign_targets[len(items)-1] = buffer_of[r]
    producer[r] = len(items)-1
  # a kernel that reads a buffer's old contents runs before the ASSIGN that overwrites it; one that uses the ASSIGN's result (items come in
  # topological order, so its dependencies are known) runs after it and reads the new contents
  for ai, target in assign_targets.items():
    for reader in readers_of_buf.get(target, set()):
      if reader != ai and not _depends(deps, reader, ai): deps[ai].add(reader)
  order = _toposort_items(deps)
  becomes_map: dict[UOp, UOp] = {}
  views: list[tuple[UOp, UOp]] = []
  for orig, new in cmap.items():
    if new in replacement: becomes_map[orig] = replacement[new]
    # a view of a realized node (cleanup may have moved it under new movement ops) becomes that view of the buffer
    elif new.op in GroupOp.Movement and new.base in replacement: views.append((orig, new))
    # cleanup found it is already a buffer (CONTIGUOUS or DETACH of a realized view): point at that
    elif orig is not new and new.base.op is Ops.BUFFER: becomes_map[orig] = new
  if views:   # one substitute for all of them: per-view substitutes would be quadratic in the graph's depth
    rebuilt = UOp.sink(*[new for _, new in views]).substitute({b: replacement[b] for _, new in views if (b := new.base) in replacement})
    becomes_map.update((orig, r) for (orig, _), r in zip(views, rebuilt.src))
  return [items[i] for i in order], var_vals, becomes_map, [b for r, b in buffer_of.items() if r.op is not Ops.ASSIGN]

def _depends(deps:list[set[int]], i:int, j:int) -> bool:
  # item i needs item j, directly or through others
  stack, seen = list(deps[i]), set(deps[i])
  while stack:
    if (k := stack.pop()) == j: return True
    stack.extend(d for d in deps[k] if d not in seen and not seen.add(d))   # type: ignore[func-returns-value]
  return False

def _toposort_items(deps:list[set[int]]) -> list[int]:
  state = [0]*len(deps)   # 0 new, 1 in progress, 2 done
  order: list[int] = []
  for start in range(len(deps)):
    stack = [(start, False)]
    while stack:
      i, done = stack.pop()
      if done:
        state[i] = 2
        order.append(i)
        continue
      if state[i] == 2: continue
      if state[i] == 1: raise RuntimeError("cycle in the schedule: an ASSIGN target is read after it is written in the same realize")
      state[i] = 1
      stack.append((i, True))
      for d in sorted(deps[i], reverse=True):
        if state[d] == 1: raise RuntimeError("cycle in the schedule: an ASSIGN target is read after it is written in the same realize")
        if state[d] == 0: stack.append((d, False))
  return order
