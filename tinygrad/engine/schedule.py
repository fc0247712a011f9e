from __future__ import annotations
from dataclasses import dataclass, field
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, graph_rewrite_map, _argkey, _PLAIN_ARG, _unique_counter, buffers, _compute_st, _compute_device
from tinygrad.device import Buffer
from tinygrad.helpers import DEBUG, Metadata, SPLIT_REDUCEOPS, SCHEDULE_CACHE, PACKED_DOT_MIN, PACKED_CONV_MIN, CPU_THREADS
from tinygrad.schedule.grouper import group_realizes, old_reads_after_assign, early_cleanup, SPLIT_REDUCE_MIN, EXPENSIVE_EXPAND, ROW_FUSE
from tinygrad.schedule.kernelize import KernelBuilder
from tinygrad.schedule.packing import pack_operands, relayout_only_copies, merge_relayout_copies, read_padded_copies, replace_readers

@dataclass(frozen=True)
class ScheduleItem:
  ast: UOp                        # a kernel AST (SINK) or a COPY
  bufs: tuple[Any, ...]           # Buffers, in DEFINE_GLOBAL order (the output first)
  metadata: tuple[Metadata, ...] = ()
  var_vals: dict[UOp, int] = field(default_factory=dict)
  pack: bool = False              # a relayout copy of an input into a buffer only this schedule reads: run_schedule may reuse an earlier one

_new = object.__new__
def schedule_item(ast:UOp, bufs:tuple, metadata:tuple, var_vals:dict[UOp, int], pack:bool) -> ScheduleItem:
  """ScheduleItem(...) without the frozen dataclass's __init__ (a Python call that sets each field through object.__setattr__): the items of
  every realize are made here"""
  si = _new(ScheduleItem)
  si.__dict__.update(ast=ast, bufs=bufs, metadata=metadata, var_vals=var_vals, pack=pack)
  return si

@dataclass
class _Plan:
  """A schedule as the scheduler makes it, on stand-ins for the graph's input buffers and on output buffers that hold no memory."""
  items: list[tuple[UOp, tuple[UOp, ...], dict[UOp, int]]]   # (ast, buffer UOps, var_vals) per item, in run order
  var_vals: dict[UOp, int]
  becomes: list[tuple[int, UOp]]   # (position of a realized node in the graph walk of _structure, the buffer view that holds it)
  outputs: list[UOp]               # the new buffers: each use of the plan gets fresh ones
  stand_ins: list[UOp] = field(default_factory=list)
  # the nodes of the becomes values that hang off a stand-in or an output, in topological order: rebuilt on the real buffers on each use
  rebuild: list[UOp] = field(default_factory=list)
  # each item's Buffers as places in [the inputs' Buffers] + [the outputs' Buffers]; which outputs the becomes values name (those get a
  # BUFFER UOp on each use, the others, buffers between kernels, only a Buffer)
  item_slots: list[tuple[int, ...]] = field(default_factory=list)
  named_outputs: list[bool] = field(default_factory=list)
  packs: list[bool] = field(default_factory=list)

_plans: dict[tuple, _Plan] = {}
plan_stats = {"hits": 0, "misses": 0}   # tests count these: a repeated graph must not reach the scheduler

def _stand_in(i:int, b:UOp) -> UOp: return UOp(Ops.BUFFER, b.dtype, (UOp(Ops.UNIQUE, arg=-1-i), b.src[1]), b.arg)

def _structure(sink:UOp) -> tuple[list[UOp], list[UOp], tuple]:
  """One walk of the graph: its nodes in topological order, its input BUFFERs in the order met, and a key equal for graphs that differ only in
  which buffers (of the same dtype, size and device) they read. A subgraph without buffers is its own key: hash-consing makes equal ones
  the same object."""
  # pos: a node's place in entries, as ~place (negative) for a node that reads no buffer
  pos: dict[UOp, int] = {}
  entries: list[Any] = []
  inputs: list[UOp] = []
  plain_arg, BUFFER, get = _PLAIN_ARG, Ops.BUFFER, pos.get
  # (a recursive walk: this runs on every realize, and a call costs less than the bookkeeping of an explicit stack)
  def visit(u:UOp) -> int:
    if (p := get(u)) is not None: return p
    if (op := u.op) is BUFFER:
      pos[u] = p = len(entries)
      entries.append((BUFFER, u.dtype._key, u.arg, u.src[1].arg, len(inputs)))   # (dtypes by their fields, as in the UOp cache)
      inputs.append(u)
    elif not (src := u.src): pos[u] = p = ~len(entries); entries.append(u)
    else:
      if len(src) == 1:
        # (a known source, or a realized tensor's buffer under its view, is entered here without a call: every input is one)
        if (p := get(s := src[0])) is None:
          if s.op is BUFFER:
            pos[s] = p = len(entries)
            entries.append((BUFFER, s.dtype._key, s.arg, s.src[1].arg, len(inputs)))
            inputs.append(s)
          else: p = visit(s)
        reads_buf = p >= 0
        src_pos: tuple[int, ...] = (p,)
      else: reads_buf = max(src_pos := tuple(map(visit, src))) >= 0
      if reads_buf:
        # (only constants carry floats, whose -0.0 and 0.0 _argkey keeps apart; movement and reduce args have none)
        pos[u] = p = len(entries)
        entries.append((op, u.dtype._key, arg if (arg := u.arg) is None or type(arg) is int or op in plain_arg else _argkey(arg), src_pos))
      else: pos[u] = p = ~len(entries); entries.append(u)
    return p
  try: visit(sink)
  except RecursionError:
    # a deep graph: its nodes in the same order (depth first, sources in order, a BUFFER's own not entered) by an explicit stack, then
    # visited bottom up, so that each visit finds its sources done
    pos.clear()
    entries.clear()
    inputs.clear()
    order: list[UOp] = []
    seen: set[UOp] = set()
    stack: list[tuple[UOp, bool]] = [(sink, False)]
    while stack:
      u, done = stack.pop()
      if done: order.append(u)
      elif u not in seen:
        seen.add(u)
        stack.append((u, True))
        if u.op is not BUFFER: stack.extend((x, False) for x in reversed(u.src) if x not in seen)
    for u in order: visit(u)
  # (visit's closure holds visit: a cycle that would keep this graph alive until the garbage collector runs)
  finally: visit = None   # type: ignore[assignment]
  return list(pos), inputs, tuple(entries)

def create_schedule_with_vars(sink:UOp) -> tuple[list[ScheduleItem], dict[UOp, int], dict[UOp, UOp]]:
  """Cut the tensor graph under sink into kernels. Returns (schedule, var_vals, becomes_map): becomes_map maps the realized
  nodes of the original graph to the buffers (with views) that hold them afterwards.

  Plans are cached by the graph's structure with its input buffers as numbered stand-ins (same dtype, size and device), so rebuilding
  the same computation on the same or other buffers (a training step, repeated inference) skips the scheduler. The cache holds
  no real buffer: a hit gets fresh output buffers."""
  nodes, inputs, structure = _structure(sink)
  key = (structure, SPLIT_REDUCEOPS.value, SPLIT_REDUCE_MIN.value, PACKED_DOT_MIN.value, PACKED_CONV_MIN.value, EXPENSIVE_EXPAND.value,
         ROW_FUSE.value, CPU_THREADS.value)
  if not SCHEDULE_CACHE.value or (plan := _plans.get(key)) is None:
    plan_stats["misses"] += 1
    # the scheduler runs on the graph with stand-ins for its inputs (nodes come in topological order)
    stand_ins = {b: _stand_in(i, b) for i, b in enumerate(inputs)}
    norm: dict[UOp, UOp] = {}
    for u in nodes: norm[u] = stand_ins[u] if u.op is Ops.BUFFER else u.replace(src=tuple(norm[s] for s in u.src)) if u.src else u
    plan = _plan(norm[sink], {n: i for i, n in enumerate(norm.values())})
    plan.stand_ins = list(stand_ins.values())
    swapped = set(plan.stand_ins + plan.outputs)
    values = UOp(Ops.SINK, dtypes.void, tuple(v for _, v in plan.becomes)).toposort()
    for u in values:
      if u not in swapped and any(s in swapped for s in u.src): swapped.add(u)
    plan.rebuild = [u for u in values if u in swapped and u.src and u.op is not Ops.SINK]
    # shapes and devices of what a hit makes anew are the plan's: worked out once here, copied onto the new nodes
    for u in plan.outputs + plan.rebuild: u._cached("_st", _compute_st), u._cached("_device", _compute_device)
    slot = {b: i for i, b in enumerate(plan.stand_ins + plan.outputs)}
    plan.item_slots = [tuple(slot[b] for b in bufs) for _, bufs, _ in plan.items]
    names = {s for u in plan.rebuild for s in u.src} | {v for _, v in plan.becomes} | {ast.src[0] for ast, _, _ in plan.items if ast.op is Ops.COPY}
    plan.named_outputs = [o in names for o in plan.outputs]
    # (the packed operands of schedule/packing.py: one load of an input, stored to an output no one outside the schedule sees)
    nin = len(plan.stand_ins)
    plan.packs = [ast.op is Ops.SINK and len(ix) == 2 and not vv and ix[1] < nin <= ix[0] and not plan.named_outputs[ix[0]-nin] and
                  len(ast.src) == 1 and ast.src[0].op is Ops.STORE and ast.src[0].src[-1].op is Ops.LOAD
                  for (ast, _, vv), ix in zip(plan.items, plan.item_slots)]
    if SCHEDULE_CACHE:
      if len(_plans) >= 512: del _plans[next(iter(_plans))]
      _plans[key] = plan
  else: plan_stats["hits"] += 1
  # the plan on real buffers: stand-ins become the inputs, the plan's outputs fresh buffers; becomes_map keys go back to the caller's graph
  real = dict(zip(plan.stand_ins, inputs))
  slots = [u.__dict__.get("_buffer") or u.buffer for u in inputs]
  for o, is_named in zip(plan.outputs, plan.named_outputs):
    slots.append(b := Buffer(dev, o.arg, o.dtype) if isinstance(dev := o.src[1].arg, str) else None)   # (no Buffer on several devices)
    if is_named or b is None:
      real[o] = u = UOp(Ops.BUFFER, o.dtype, (UOp(Ops.UNIQUE, arg=next(_unique_counter)), o.src[1]), o.arg)
      (d := u.__dict__)["_st"], d["_device"] = (od := o.__dict__)["_st"], od["_device"]
      if b is not None: buffers[u] = b
  if DEBUG.value >= 3: print(f"scheduled {len(plan.items)} items")
  get = slots.__getitem__
  schedule = [schedule_item(ast if ast.op is not Ops.COPY else ast.substitute(real), tuple(map(get, ix)), (), vv, pk)
              for (ast, _, vv), ix, pk in zip(plan.items, plan.item_slots, plan.packs)]
  for u in plan.rebuild:
    if u not in real:
      real[u] = n = UOp(u.op, u.dtype, tuple(map(real.get, u.src, u.src)), u.arg)
      (d := n.__dict__)["_st"], d["_device"] = (ud := u.__dict__)["_st"], ud["_device"]
  return schedule, plan.var_vals, {nodes[i]: real.get(v, v) for i, v in plan.becomes}

def _plan(sink:UOp, pos:dict[UOp, int]) -> _Plan:
  cmap = graph_rewrite_map(sink, pack_operands + early_cleanup, ctx=set())
  # (the layout copies just made may copy a value realized only for them: they compute it themselves)
  if (copies := relayout_only_copies(cmap[sink])):
    merged = graph_rewrite_map(cmap[sink], merge_relayout_copies, ctx=copies)
    cmap = {k: merged.get(v, v) for k, v in cmap.items()}
  # (a value also read padded is read from its padded copy: computed straight into it)
  # (a round at a time: a reader replaced may be the value of another padded copy, whose readers the next round finds)
  for _ in range(64):
    if not (readers := read_padded_copies(cmap[sink])): break
    moved = graph_rewrite_map(cmap[sink], replace_readers, ctx=readers)
    cmap = {k: moved.get(v, v) for k, v in cmap.items()}
  clean = cmap[sink]
  realizes = group_realizes(clean)
  # (a kernel that needs a buffer's old value and an ASSIGN's new one reads a copy of the old, made first; a round at a time as above)
  for _ in range(64):
    if not (stale_readers := old_reads_after_assign(realizes)): break
    moved = graph_rewrite_map(clean, replace_readers, ctx=stale_readers, bottom_up=True)
    cmap = {k: moved.get(v, v) for k, v in cmap.items()}
    clean = moved[clean]
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
      if src not in buffer_of or src.op is Ops.ASSIGN: readers_of_buf.setdefault(src_buf, set()).add(len(items)-1)
    else:
      kb = KernelBuilder(r, buffer_of)
      ast = kb.build()
      var_vals.update(kb.var_vals)
      items.append((ast, tuple(kb.bufs), kb.var_vals))
      deps.append({producer[n] for n in kb.reads_nodes if producer[n] >= 0})
      for b in kb.reads_bufs: readers_of_buf.setdefault(b, set()).add(len(items)-1)
      # (an earlier ASSIGN's result is its buffer's contents until a later ASSIGN into it runs)
      for n in kb.reads_nodes:
        if n.op is Ops.ASSIGN: readers_of_buf.setdefault(buffer_of[n], set()).add(len(items)-1)
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
  return _Plan([items[i] for i in order], var_vals, [(pos[k], v) for k, v in becomes_map.items() if k in pos],
               [b for r, b in buffer_of.items() if r.op is not Ops.ASSIGN])

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
