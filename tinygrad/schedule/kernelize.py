# turn one group of the tensor graph into a kernel AST: SINK(STORE(DEFINE_GLOBAL, VIEW, value)) (docs/ir.md stage 2)
from __future__ import annotations
import functools, itertools
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sint
from tinygrad.helpers import argsort, all_int
from tinygrad.dtype import dtypes
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.shape.view import View, strides_for_shape
from tinygrad.schedule.grouper import kernel_body, EXPENSIVE

@functools.lru_cache(maxsize=8192)
def _unbound_view(st:ShapeTracker) -> tuple[UOp, dict[UOp, int]]:
  # the VIEW of an AST: simplified, with bound variables replaced by their DEFINE_VARs (values returned). Cached: kernels repeat views
  ust, var_vals = st.simplify().unbind()
  return ust.to_uop(), var_vals

@functools.lru_cache(maxsize=16384)
def _moved(op:Ops, arg, src_shape:tuple, st:ShapeTracker) -> ShapeTracker:
  # the view of a movement op's source, seen through st. Cached: a training step's kernels walk the same views many times
  return getattr(ShapeTracker.from_shape(src_shape), op.name.lower())(arg) + st

def _masked(st:ShapeTracker) -> bool: return any(v.mask is not None for v in st.views)

def padded_store(root:UOp) -> tuple[UOp, ShapeTracker, list[ShapeTracker]]|None:
  """root, a CONTIGUOUS of a value zero-padded once (through reshapes and permutes: a conv's padded input, pack_conv), computed by a kernel
  that iterates the unpadded value u: u, the view of root's buffer its elements go to and the views (over u's shape, gated to the border)
  that cover root's zero border, stored by the same kernel. None if root isn't one."""
  chain: list[UOp] = []
  u = root.src[0]
  while u.op in (Ops.RESHAPE, Ops.PERMUTE, Ops.PAD): chain, u = chain + [u], u.src[0]
  if u.op in GroupOp.Movement or [m.op for m in chain].count(Ops.PAD) != 1 or not all_int(root.shape): return None
  st, border = ShapeTracker.from_shape(root.shape), list[ShapeTracker]()
  for m in chain:
    if m.op is Ops.RESHAPE: st, border = st.reshape(m.src[0].shape), [b.reshape(m.src[0].shape) for b in border]
    elif m.op is Ops.PERMUTE: st, border = st.permute(tuple(argsort(m.arg))), [b.permute(tuple(argsort(m.arg))) for b in border]
    else:
      q, n, padded = m.shape, m.src[0].shape, [d for d, (b, a) in enumerate(m.arg) if b or a]
      if any(b < 0 or a < 0 or b + a > n[d] for d, (b, a) in enumerate(m.arg)): return None
      # a slab of the border per padded axis and side, as wide as u on the others: two of them side by side cover a padded axis whole
      for d in padded:
        for lo, w in ((0, m.arg[d][0]), (q[d] - m.arg[d][1], m.arg[d][1])):
          for offs in itertools.product(*[(0, q[e] - n[e]) if e != d else (lo,) for e in padded]):
            box = [(0, q[i]) for i in range(len(q))]
            for e, o in zip(padded, offs): box[e] = (o, o + (w if e == d else n[e]))
            if w: border.append(st.shrink(tuple(box)).pad(tuple((0, n[d] - w) if i == d else (0, 0) for i in range(len(q)))))
      st = st.shrink(tuple((b, s - a) for (b, a), s in zip(m.arg, q)))
  return u, st, border

class KernelBuilder:
  """Builds the AST of the kernel that computes `root`. Views are pushed down to the loads: a node is always built together with
  the ShapeTracker that maps the kernel's index space onto that node's elements, so movement ops cost no kernel."""
  def __init__(self, root:UOp, buffer_of:dict[UOp, UOp]):
    self.root, self.buffer_of = root, buffer_of
    self.bufs: list[UOp] = []                 # BUFFER uops in DEFINE_GLOBAL order, the output first
    self.globals: dict[UOp, UOp] = {}
    self.var_vals: dict[UOp, int] = {}
    self.reads_nodes: set[UOp] = set()        # realized nodes read (kernels this one depends on)
    self.reads_bufs: set[UOp] = set()         # BUFFERs read directly, not through a kernel of this schedule

  def define_global(self, buf:UOp) -> UOp:
    if buf not in self.globals:
      self.globals[buf] = UOp(Ops.DEFINE_GLOBAL, buf.dtype.ptr(buf.size), (), len(self.bufs))
      self.bufs.append(buf)
    return self.globals[buf]

  def view(self, st:ShapeTracker) -> UOp:
    vu, var_vals = _unbound_view(st)
    if var_vals: self.var_vals.update(var_vals)
    return vu

  def build(self) -> UOp:
    root = self.root
    value = root.src[1] if root.op is Ops.ASSIGN else root.src[0] if root.op is Ops.CONTIGUOUS else root
    out_buf = self.buffer_of[root]
    out_st = root.src[0].st if root.op is Ops.ASSIGN else ShapeTracker.from_shape(root.shape)
    # a fused reduce sets the kernel's index space: its output shape, which the output's shape reshapes into
    body = kernel_body(value, self.buffer_of)   # root is only the start, never a child
    # a reduce read through an expand (a row reduce, see grouper.row_reduce) loops over axes of its own, added after the kernel's
    inner = list(dict.fromkeys(r for e in body if e.op is Ops.EXPAND for r in kernel_body(e.src[0], self.buffer_of) if r.op is Ops.REDUCE_AXIS))
    reduces = [x for x in body if x.op is Ops.REDUCE_AXIS and x not in inner]
    kshape = reduces[0].shape if reduces else root.shape
    self.own_axes: dict[UOp, tuple[int, ...]] = {}
    for r in inner: self.own_axes[r] = tuple(range(len(kshape) + sum(map(len, self.own_axes.values())), len(kshape) + len(r.axis_arg) +
                                                   sum(map(len, self.own_axes.values()))))
    self.pad = (1,) * sum(map(len, self.own_axes.values()))
    dg = self.define_global(out_buf)
    # a padded copy of a reduce's value (its epilogue) computed by the reduce's own kernel: the value goes inside the padding, the border is 0
    # (its shape may be the reduce's with the reduced axes' 1s dropped)
    if reduces and not inner and root.op is Ops.CONTIGUOUS and (ps := padded_store(root)) is not None and \
       [n for n in ps[0].shape if n != 1] == [n for n in kshape if n != 1]:
      zero = UOp(Ops.CONST, root.dtype, (self.view(ShapeTracker.from_shape(kshape)),), dtypes.as_const(0, root.dtype))
      val = self.build_value(ps[0], ShapeTracker.from_shape(ps[0].shape).reshape(kshape))
      stores = [UOp(Ops.STORE, dtypes.void, (dg, self.view(st.reshape(kshape)), v)) for st, v in [(ps[1], val)] + [(b, zero) for b in ps[2]]]
      return UOp(Ops.SINK, dtypes.void, tuple(stores))
    top_st = ShapeTracker.from_shape(root.shape)
    if kshape + self.pad != root.shape: out_st, top_st = out_st.reshape(kshape + self.pad), top_st.reshape(kshape + self.pad)
    val = self.build_value(value, top_st)
    return UOp(Ops.SINK, dtypes.void, self.reuse_row_value(UOp(Ops.STORE, dtypes.void, (dg, self.view(out_st), val)), out_st))

  def reuse_row_value(self, store:UOp, out_st:ShapeTracker) -> tuple[UOp, ...]:
    """A row sum of f whose output also uses f at its own element (softmax: exp(x - max) * 1/sum(exp(x - max))) computes f once: the sum's
    loop also stores f into the output row, and the output's loop reads it back and scales it in place (the row is still in cache).
    f at the output element is the sum's f with the sum's axis and the output's axis swapped in every view."""
    dg, vo, val = store.src
    if not self.own_axes or len(v := out_st.simplify().views) != 1 or v[0].mask is not None: return (store,)
    # (not where the kernel reads its output's old contents, or writes an element twice)
    if any(st == 0 and s != 1 for s, st in zip(v[0].shape, v[0].strides)) or any(u.op is Ops.LOAD and u.src[0] is dg for u in val.toposort()):
      return (store,)
    nodes = set(val.toposort(lambda u: u.op is not Ops.REDUCE_AXIS))   # the output's own values, not a reduce's
    own = set(self.own_axes.values())
    for r in val.toposort():
      if r.op is not Ops.REDUCE_AXIS or r.arg[0] is not Ops.ADD or r.arg[1] not in own or len(r.arg[1]) != 1: continue
      f, ra = r.src[0], r.arg[1][0]
      if f.dtype != dg.dtype.base or not any(u.op in EXPENSIVE for u in f.toposort()): continue
      n = max(u.arg.shape[ra] for u in f.toposort() if u.op is Ops.VIEW)
      for ga in (a for a, s in enumerate(v[0].shape) if s != 1 and s == n):
        perm = tuple(ra if a == ga else ga if a == ra else a for a in range(len(v[0].shape)))
        fo = f.substitute({u: self.view(u.arg.permute(perm)) for u in f.toposort() if u.op is Ops.VIEW})
        if fo in nodes:
          return (dg.store(vo, val.substitute({fo: UOp(Ops.LOAD, f.dtype, (dg, vo))})), dg.store(self.view(out_st.permute(perm)), f))
    return (store,)

  def leaf(self, x:UOp, st:ShapeTracker) -> UOp|None:
    if x in self.buffer_of and x is not self.root:
      self.reads_nodes.add(x)
      if x.op is Ops.ASSIGN: st = x.src[0].st + st   # an ASSIGN into a view of its buffer is read through that view
      return UOp(Ops.LOAD, x.dtype, (self.define_global(self.buffer_of[x]), self.view(st)))
    if x.op is Ops.BUFFER:
      self.reads_bufs.add(x)
      return UOp(Ops.LOAD, x.dtype, (self.define_global(x), self.view(st)))
    if x.op in (Ops.CONST, Ops.VCONST): return UOp(x.op, x.dtype, (self.view(st),), x.arg)
    if x.op is Ops.BIND:
      var, val = x.unbind()
      self.var_vals[var] = val
      return var
    if x.op is Ops.DEFINE_VAR: return x
    return None

  def children(self, x:UOp, st:ShapeTracker) -> list[tuple[UOp, ShapeTracker]]:
    if x.op in GroupOp.Movement: return [(x.src[0], _moved(x.op, x.arg, x.src[0].shape, st))]
    if x.op is Ops.REDUCE_AXIS:
      if x in self.own_axes: return [(x.src[0], self.row_view(x, st))]
      if not (sst := st.simplify()).contiguous or sst.shape != x.shape + self.pad:
        raise RuntimeError(f"internal: reduce {x.shape} reached through a view {st}; the grouper should have realized it")
      return [(x.src[0], ShapeTracker.from_shape(x.src[0].shape + self.pad))]
    if x.op in GroupOp.ALU or x.op in (Ops.CAST, Ops.BITCAST): return [(s, st) for s in x.src]
    raise RuntimeError(f"can't put {x.op} in a kernel")

  def row_view(self, r:UOp, st:ShapeTracker) -> ShapeTracker:
    # the view of a row reduce's input: each kernel axis that indexes one of r's kept axes indexes it in the input too, r's reduced axes
    # come from its own kernel axes, and the axes r's value doesn't depend on are 1 (so every reader builds the same reduce)
    v = st.simplify().views
    xshape, own = r.src[0].shape, self.own_axes[r]
    rstrides, xstrides = strides_for_shape(r.shape), strides_for_shape(xshape)
    if len(v) != 1 or v[0].mask is not None or v[0].offset != 0: raise RuntimeError(f"internal: row reduce {r.shape} reached through {st}")
    shape: list[sint] = []
    strides: list[sint] = []
    used: list[int] = []
    for d, (sh, sd) in enumerate(zip(v[0].shape, v[0].strides)):
      if d in own: sh, sd = xshape[a := r.axis_arg[own.index(d)]], xstrides[a]
      elif sd != 0 and sh != 1:
        kept = [a for a in range(len(r.shape)) if rstrides[a] == sd and r.shape[a] == sh and a not in used]
        if not kept: raise RuntimeError(f"internal: row reduce {r.shape} reached through {st}")
        used.append(kept[0])
        sd = xstrides[kept[0]]
      else: sh, sd = 1, 0
      shape.append(sh)
      strides.append(sd)
    if sorted(used) != [a for a, s in enumerate(r.shape) if s != 1]: raise RuntimeError(f"internal: row reduce {r.shape} reached through {st}")
    return ShapeTracker((View.create(tuple(shape), tuple(strides)),))

  def build_value(self, start:UOp, start_st:ShapeTracker) -> UOp:
    # iterative post-order over (node, view) pairs, so a 10,000-op chain needs no recursion
    memo: dict[tuple[UOp, ShapeTracker], UOp] = {}
    # an entry carries its children once they are known: working out their views twice would double the ShapeTracker work
    stack: list[tuple[UOp, ShapeTracker, list[tuple[UOp, ShapeTracker]]|None]] = [(start, start_st, None)]
    while stack:
      x, st, kids = stack.pop()
      if (x, st) in memo: continue
      if kids is None:
        if (lf := self.leaf(x, st)) is not None:
          memo[(x, st)] = lf
          continue
        kids = self.children(x, st)
        stack.append((x, st, kids))
        stack.extend((k, kst, None) for k, kst in reversed(kids) if (k, kst) not in memo)
        continue
      srcs = [memo[k] for k in kids]
      if x.op in GroupOp.Movement:
        (src, sst), ret = kids[0], srcs[0]
        # padding a computed value: where the view is masked the result is 0, whatever the op gives on the padding
        if _masked(sst) and src.op not in (Ops.BUFFER, Ops.CONST, Ops.VCONST) and src.op not in GroupOp.Movement and src not in self.buffer_of:
          zero = UOp(Ops.CONST, x.dtype, (self.view(ShapeTracker.from_shape(sst.shape)),), dtypes.as_const(0, x.dtype))
          ret = UOp(Ops.WHERE, x.dtype, (UOp(Ops.VALID, dtypes.bool, (self.view(sst),)), ret, zero))
        memo[(x, st)] = ret
      else: memo[(x, st)] = UOp(x.op, x.dtype, tuple(srcs), (x.arg[0], self.own_axes[x]) if x in self.own_axes else x.arg)
    return memo[(start, start_st)]
