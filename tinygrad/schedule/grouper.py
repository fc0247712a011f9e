# which nodes of a tensor graph become buffers: everything else fuses into the kernels that read it
from __future__ import annotations
from typing import Container
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite, resolve, ZERO_FORWARD
from tinygrad.helpers import prod, all_int, ContextVar, SPLIT_REDUCEOPS, CPU_THREADS
from tinygrad.device import Device
from tinygrad.renderer import Renderer

SPLIT_REDUCE_MIN = ContextVar("SPLIT_REDUCE_MIN", 32768)
EXPENSIVE_EXPAND = ContextVar("EXPENSIVE_EXPAND", 4)   # read this many times over through an expand, a value with transcendentals is a buffer
ROW_FUSE = ContextVar("ROW_FUSE", 16384)   # a reduce read back along its own row of at most this many elements stays in its reader (0: off)
EXPENSIVE = {Ops.EXP2, Ops.EXP, Ops.TANH, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.POW}
MAX_KERNEL_OPS = ContextVar("MAX_KERNEL_OPS", 4096)   # a kernel computes about this many ops at most (0: no limit); see limit_kernel_size

# graph cleanups before grouping: autograd markers are no-ops here. (A COPY to its own device stays: it is how clone() gets a new buffer)
def _contiguous_of_buffer(x:UOp, c:UOp) -> UOp|None:
  # CONTIGUOUS of a view that already is a whole contiguous buffer needs no kernel
  if x.base.op is Ops.BUFFER and x.st is not None and x.st.contiguous and x.size == x.base.size: return x.base.reshape(x.shape)
  return None

def _renderer_of(u:UOp) -> Renderer|None:
  # the renderer of u's device (None on several devices, or a device that can't open)
  try: return Device[u.device].renderer if isinstance(u.device, str) else None
  except Exception: return None

def _one_host_thread(u:UOp) -> bool:
  # a CPU that runs a kernel on one thread gains nothing from the split: one kernel with vector accumulators reads the input as fast
  return (rd := _renderer_of(u)) is not None and rd.has_threads and (CPU_THREADS.value or (rd.machine.cores if rd.machine else 0)) == 1

def split_reduceop(ctx:set[UOp]|None, r:UOp) -> UOp|None:
  # a big reduce with few outputs becomes two: the first has enough outputs to use every core and unroll, the second is small
  x = r.src[0]
  if not SPLIT_REDUCEOPS or ctx is None or r in ctx or not all_int(x.shape) or prod(r.shape) > 1024: return None
  if prod(x.shape) // max(prod(r.shape), 1) < SPLIT_REDUCE_MIN.value or _one_host_thread(r): return None
  for a in r.axis_arg:
    if (split := next((s for s in (256, 128, 64, 32, 16) if x.shape[a] % s == 0 and x.shape[a] // s >= 256), None)) is None: continue
    xs = x.reshape(x.shape[:a] + (split, x.shape[a]//split) + x.shape[a+1:])
    first = xs.r(r.arg[0], tuple(ax+1 if ax >= a else ax for ax in r.axis_arg))   # the split axis keeps its outer part
    second = first.r(r.arg[0], (a,))
    ctx.update((first, second))   # split once: the new reduces are not split again
    return second.reshape(r.shape)
  return None

early_cleanup = PatternMatcher([
  (UPat(Ops.REDUCE_AXIS, name="r"), split_reduceop),
  # a gradient carrier (Tensor._with_grad) adds nothing going forward: the value alone is computed
  (UPat.var("v") + UPat(Ops.FUSE, arg=ZERO_FORWARD), lambda v: v),
  (UPat((Ops.DETACH, Ops.CONTIGUOUS_BACKWARD, Ops.FUSE), name="x"), lambda x: x.src[0] if x.arg != ZERO_FORWARD else None),
  (UPat(Ops.CONTIGUOUS, src=(UPat.var("x"),), name="c"), _contiguous_of_buffer),
])

def is_leaf(u:UOp) -> bool:
  # nodes a kernel reads without computing: buffers, consts, symbolic values
  return u.op in (Ops.BUFFER, Ops.CONST, Ops.VCONST, Ops.DEFINE_VAR, Ops.BIND, Ops.DEVICE, Ops.UNIQUE)

def _rows_are_loops(u:UOp) -> bool:
  # on devices whose global axes are loops in one thread (CPUs), a kernel can walk a row once per reduce and once more for the output;
  # a GPU would give every output element a thread that redoes the whole row
  return (rd := _renderer_of(u)) is not None and not rd.has_local

def row_reduce(r:UOp, children:dict[UOp, list[UOp]], realizes:Container[UOp]) -> bool:
  """r (softmax's max and sum, layernorm's mean) is read back only along its own row: expanded straight to its input's shape and then
  used by elementwise ops and by reduces over the same row. Such a reduce stays in the kernel that reads it, which loops over the row
  (in cache) once for each reduce and once for the output instead of reading the input from memory once per kernel."""
  x = r.src[0]
  if not ROW_FUSE.value or not all_int(x.shape) or prod(x.shape[a] for a in r.axis_arg) > ROW_FUSE.value or not _rows_are_loops(r): return False
  # the row is the innermost axes: the loops over the kept axes come first, so a row's reduces run once per row (softmax over axis 0 would
  # rerun its column's reduces for every output row)
  if any(s != 1 and i not in r.axis_arg and i > min(r.axis_arg) for i, s in enumerate(x.shape)): return False
  stack, seen, expanded = [(r, False)], set(), False
  while stack:
    u, past = stack.pop()
    for c in children.get(u, []):
      if c in realizes and c.op not in GroupOp.Movement: continue   # a kernel's output: r is computed in that kernel
      if (c, past) in seen: continue
      seen.add((c, past))
      if c.op is Ops.EXPAND and not past and c.shape == x.shape: stack.append((c, expanded := True))
      elif c.op in GroupOp.ALU or c.op in (Ops.CAST, Ops.BITCAST): stack.append((c, past))
      elif not (past and c.op is Ops.REDUCE_AXIS and c.axis_arg == r.axis_arg and c.src[0].shape == x.shape): return False
  return expanded

def limit_buffers(topo:list[UOp], realizes:dict[UOp, None]) -> None:
  """A kernel takes at most its device's max_bufs buffers (ctypes calls take 1024 arguments, WebGPU binds a few dozen): where an op's
  sources read more together (a sum of 5000 tensors), the sources become kernels of their own."""
  reads: dict[UOp, set[UOp]] = {}
  for u in topo:
    if is_leaf(u) or u.op is Ops.SINK: continue
    reads[u] = set().union(*({s} if s in realizes or s.op is Ops.BUFFER else reads.get(s, set()) for s in u.src))
    # (one buffer kept for the output)
    if len(u.src) < 2 or len(reads[u]) < 3 or (rd := _renderer_of(u)) is None or (lim := rd.max_bufs) is None or len(reads[u]) < lim: continue
    for s in u.src:
      if s in realizes or is_leaf(s.base): continue
      realizes[s.base] = None
    reads[u] = {s if s in realizes or s.op is Ops.BUFFER else s.base for s in u.src}
  # (a node in realizes is its own kernel's output: its readers count it as one buffer)

def limit_kernel_size(topo:list[UOp], realizes:dict[UOp, None]) -> None:
  """A kernel whose expression passes MAX_KERNEL_OPS ops (a transcendental counts 128: about what it lowers to) reads its sources from
  buffers instead: one long elementwise chain becomes a row of kernels of bounded size. Compilers take superlinear time in one function's
  size (a chain of 4000 ops with sines: minutes per kernel in clang), and each kernel's rewrites stay small. The count sums the sources'
  counts, so a subexpression read twice counts twice: the cut comes early, never late."""
  if not (limit := MAX_KERNEL_OPS.value): return
  ops: dict[UOp, int] = {}
  def inner(s:UOp) -> int: return 0 if s in realizes or s.base in realizes else ops.get(s, 0)
  for u in topo:
    if is_leaf(u) or u.op is Ops.SINK: continue
    own = 128 if u.op in EXPENSIVE else 1 if u.op in GroupOp.ALU else 0
    if (n := own + sum(inner(s) for s in dict.fromkeys(u.src))) > limit and own:
      for s in u.src:
        if inner(s) and (s.base.op in GroupOp.ALU or s.base.op in (Ops.CAST, Ops.BITCAST, Ops.REDUCE_AXIS)): realizes[s.base] = None
      n = own + sum(inner(s) for s in dict.fromkeys(u.src))
    ops[u] = n

def epilogue_end(r:UOp, children:dict[UOp, list[UOp]], realizes:Container[UOp], order:dict[UOp, int]) -> UOp:
  """The node to store for a reduce that is read through views: the last of the elementwise ops that alone read it (a conv's bias, residual
  add and relu), so the reduce's kernel computes them once as its epilogue instead of every reader again from the stored sums. It is
  the one node of that region read from outside it; the region takes a node once its sources that depend on r are all in it."""
  def independent(s:UOp) -> bool:   # s doesn't read r (a node before r in topological order can't)
    stack, seen = [s], set()
    while stack:
      if (x := stack.pop()) is r or x in region: return False
      if x not in seen and order.get(x, -1) > order[r]: stack.extend(x.src)
      seen.add(x)
    return True
  def fuses(c:UOp, u:UOp) -> bool:   # elementwise (not a widening cast, stored bigger) or a reshape, not a kernel output already
    return c not in realizes and (c.op in GroupOp.ALU or c.op is Ops.RESHAPE or c.op is Ops.CAST and c.dtype.itemsize <= u.dtype.itemsize)
  region, end, grew = {r}, r, True
  while grew:
    grew = False
    for u in list(region):
      for c in children.get(u, []):
        if c in region: continue
        if not fuses(c, u): return end
        if all(s in region or independent(s) for s in c.src): region, grew = region | {c}, True
    pending = [u for u in region if any(c not in region for c in children.get(u, []))]
    if len(pending) == 1 and pending[0].op is not Ops.RESHAPE: end = pending[0]
  return end

def _stored_padded(e:UOp, r:UOp, children:dict[UOp, list[UOp]]) -> bool:
  # e's one reader is a CONTIGUOUS of e zero-padded: the reduce's kernel stores e straight into it, border included (kernelize.padded_store).
  # (A sum's: a conv's many taps hide the border's stores; a max pool's few don't, and its padded store cost ResNet-18 more than the copy)
  if r.arg[0] is not Ops.ADD: return False
  u = e
  while len(cs := children.get(u, [])) == 1 and cs[0].op in (Ops.RESHAPE, Ops.PERMUTE, Ops.PAD): u = cs[0]
  if len(cs) != 1 or cs[0].op is not Ops.CONTIGUOUS or [n for n in e.shape if n != 1] != [n for n in r.shape if n != 1]: return False
  from tinygrad.schedule.kernelize import padded_store
  return (ps := padded_store(cs[0])) is not None and ps[0] is e

def needs_kernel(u:UOp) -> bool: return not is_leaf(u.base) and u.base.op not in (Ops.SINK,)

def group_realizes(sink:UOp) -> dict[UOp, None]:
  """The nodes of the tensor graph under sink that become buffers (kernel outputs), in topological order."""
  realizes: dict[UOp, None] = {}
  topo = list(sink.toposort())
  order = {u: i for i, u in enumerate(topo)}
  children: dict[UOp, list[UOp]] = {}
  for u in topo:
    for s in u.src: children.setdefault(s, []).append(u)
  # what must be a buffer: the outputs asked for, CONTIGUOUS, COPY and its source, ASSIGN
  for t in sink.src:
    # a view smaller than what it views (a shrink of a computation) is computed on its own: arange(2**31)[-3:] is 3 elements
    if needs_kernel(t): realizes[t if t.op in GroupOp.Movement and t.base not in realizes and resolve(t.size < t.base.size, False) else t.base] = None
  for u in topo:
    if u.op in (Ops.CONTIGUOUS, Ops.ASSIGN): realizes[u] = None
    if u.op is Ops.COPY:
      realizes[u] = None
      src = u.src[0]
      if not (src.base.op is Ops.BUFFER and src.st.contiguous and src.size == src.base.size): realizes[src] = None
  # an ASSIGN whose value reads its own target through another view would read elements it already overwrote: compute the value first
  for u in topo:
    if u.op is not Ops.ASSIGN or u.src[1] in realizes: continue
    target, body = u.src[0], kernel_body(u.src[1], realizes)
    tbuf = target.buf_uop
    # only the outermost view of a movement chain is what the kernel reads; an earlier ASSIGN into the same buffer counts as the buffer
    inner = {s for p in body if p.op in GroupOp.Movement for s in p.src}
    for x in body + [s for p in body for s in p.src if s.op is Ops.ASSIGN and s in realizes]:
      if not (x.op in GroupOp.Movement or x.op in (Ops.BUFFER, Ops.ASSIGN)) or x in inner: continue
      if not (x.base is tbuf or x.base.op is Ops.ASSIGN and x.base.buf_uop is tbuf): continue
      # (the view of a node over an ASSIGN is its view of the ASSIGN's buffer)
      if x.st.simplify() != target.st.simplify():
        realizes[u.src[1]] = None
        break
  # a reduce feeds other kernels only through reshapes, and never into another reduce of the same kernel, unless it is a row reduce
  limit_buffers(topo, realizes)
  limit_kernel_size(topo, realizes)
  row_reduces: set[UOp] = set()
  for r in topo:
    if r.op is not Ops.REDUCE_AXIS or r in realizes: continue
    if row_reduce(r, children, realizes):
      row_reduces.add(r)
      continue
    stack, seen = [r], set()
    while stack:
      x = stack.pop()
      for c in children.get(x, []):
        if c in seen: continue
        seen.add(c)
        if c.op in GroupOp.Movement and c.op is not Ops.RESHAPE or c.op is Ops.REDUCE_AXIS:
          if not _stored_padded(e := epilogue_end(r, children, realizes, order), r, children): realizes[e] = None
          stack.clear()
          break
        if c.op in GroupOp.Movement or c.op in GroupOp.ALU or c.op in (Ops.CAST, Ops.BITCAST):
          if c not in realizes: stack.append(c)
  # an elementwise value with transcendentals (gelu, softmax's exp) read through an expand would be recomputed for every copy (each
  # output column of a matmul): computed once into its own buffer, it costs a kernel and a read per copy. Values under 1024 elements
  # (per-channel statistics) are cheap to recompute, and the compiler hoists them out of the loops
  for e in topo:
    if not EXPENSIVE_EXPAND or e.op is not Ops.EXPAND or (b := e.src[0].base) in realizes: continue
    if not (b.op in GroupOp.ALU or b.op is Ops.CAST) or not all_int(e.shape) or not all_int(b.shape) or prod(b.shape) < 1024: continue
    if prod(e.shape) < EXPENSIVE_EXPAND.value * prod(e.src[0].shape): continue
    body = kernel_body(b, realizes)
    # a value of row reduces (layernorm's 1/sqrt(var)) is computed once per row, after the row's loops
    if any(x in row_reduces for x in body) and all(x.op is not Ops.REDUCE_AXIS or x in row_reduces for x in body): continue
    if any(x.op in EXPENSIVE for x in body): realizes[b] = None
  # each kernel holds reduces of one shape only, and a reduce read by two kernels is computed once
  while True:
    reduce_owner: dict[UOp, UOp] = {}
    changed = False
    for root in list(realizes):
      found: list[UOp] = []
      start = root.src[1] if root.op is Ops.ASSIGN else root.src[0] if root.op in (Ops.CONTIGUOUS, Ops.COPY) else root
      if root.op is Ops.COPY: continue
      for x in kernel_body(start, realizes):
        if x.op is Ops.REDUCE_AXIS: found.append(x)
      for x in found:
        if reduce_owner.setdefault(x, root) is not root or (found[0].src[0].shape, found[0].arg[1]) != (x.src[0].shape, x.arg[1]):
          if x not in realizes:
            realizes[x] = None
            changed = True
    if not changed: break
  return dict.fromkeys(sorted(realizes, key=lambda u: order.get(u, -1)))

def kernel_body(start:UOp, realizes:Container[UOp]) -> list[UOp]:
  # the nodes a kernel computing `start` contains: everything under it down to buffers and other kernels' outputs
  out: list[UOp] = []
  seen: set[UOp] = set()
  stack = [start]
  while stack:
    x = stack.pop()
    if x in seen: continue
    seen.add(x)
    out.append(x)
    if is_leaf(x): continue
    stack.extend(s for s in x.src if s not in realizes and s.op is not Ops.DEVICE)
  return out

def cleanup(sink:UOp) -> UOp: return graph_rewrite(sink, early_cleanup)

def old_reads_after_assign(realizes:dict[UOp, None]) -> dict[UOp, UOp]:
  """A kernel that reads a buffer's old value and must also run after an ASSIGN into that buffer (it reads the ASSIGN's result, maybe
  through other kernels: `old = y*1; y *= w; old + y`, or a gradient of y*w) can't be ordered: its readers of the old value are mapped
  to themselves reading a copy, made before the ASSIGN runs."""
  if not any(r.op is Ops.ASSIGN for r in realizes): return {}
  after: dict[UOp, set[UOp]] = {}   # each kernel: the ASSIGNs it runs after
  fix: dict[UOp, UOp] = {}
  for root in realizes:
    start = root.src[1] if root.op is Ops.ASSIGN else root.src[0] if root.op in (Ops.CONTIGUOUS, Ops.COPY) else root
    body = kernel_body(start, realizes)
    ins = {s for x in body for s in x.src if s in realizes}
    if root.op is Ops.ASSIGN and (t := root.src[0].base) in realizes: ins.add(t)
    done_assigns = {a for s in ins for a in after.get(s, ())} | {s for s in ins if s.op is Ops.ASSIGN}
    after[root] = done_assigns | ({root} if root.op is Ops.ASSIGN else set())
    if not done_assigns: continue
    done = {a.buf_uop for a in done_assigns}
    inner = {s for p in body if p.op in GroupOp.Movement for s in p.src}
    stale = {x for x in body if (x.op is Ops.BUFFER or x.op in GroupOp.Movement) and x not in inner and x.base in done}
    # (the result of an ASSIGN that a later one into the same buffer, also run before this kernel, overwrote: `y *= x; y.assign(y*y)`
    # and a gradient reading both)
    stale |= {s for s in ins if s.op is Ops.ASSIGN and any(a is not s and a.buf_uop is s.buf_uop and s in a.toposort() for a in done_assigns)}
    for p in body:
      if p not in stale and any(s in stale for s in p.src):
        # (a view bigger than its buffer, an expand, copies the buffer and views the copy)
        fix[p] = p.replace(src=tuple((s.contiguous() if s.size <= s.base.size else s.substitute({s.base: s.base.contiguous()})) if s in stale
                                     else s for s in p.src))
  return fix
