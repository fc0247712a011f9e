from __future__ import annotations
from dataclasses import dataclass
from typing import cast
from enum import Enum, auto
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, resolve, sint, AxisType, KernelInfo
from tinygrad.helpers import to_function_name, colored, prod
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.renderer import Renderer
from tinygrad.opt.tc import TensorCore

class OptOps(Enum):
  TC = auto(); UPCAST = auto(); UNROLL = auto(); LOCAL = auto(); GROUP = auto(); GROUPTOP = auto(); NOLOCALS = auto(); PADTO = auto(); SWAP = auto()
  THREAD = auto(); BLOCK = auto(); PREFETCH = auto()
  def __lt__(self, x:OptOps): return self.value < x.value

@dataclass(frozen=True, order=True)
class Opt:
  op: OptOps
  axis: int|None = None
  arg: int|tuple|None = None
  def __repr__(self): return f"Opt(op={self.op}, axis={self.axis}, arg={self.arg})"

class KernelOptError(Exception): pass

REDUCE_TYPES = (AxisType.GROUP_REDUCE, AxisType.REDUCE, AxisType.UNROLL)
COLORS = {AxisType.THREAD: "BLUE", AxisType.GLOBAL: "blue", AxisType.LOCAL: "cyan", AxisType.GROUP_REDUCE: "green", AxisType.REDUCE: "red",
          AxisType.UNROLL: "magenta",
          AxisType.UPCAST: "yellow"}

def check(cond:bool, opt:Opt|str, reason:str):
  if not cond: raise KernelOptError(f"{opt}: {reason}")

class Kernel:
  """A kernel AST as one iteration space. Axes are ordered thread, global, local, reduce, unroll, upcast; every opt rewrites the
  views of all loads and stores together, so the kernel can be rebuilt from its list of applied opts."""
  def __init__(self, ast:UOp, opts:Renderer|None=None):
    if ast.op is not Ops.SINK: raise ValueError(f"a Kernel needs a SINK ast, got {ast.op}")
    self.ast, self.opts = ast, opts if opts is not None else Renderer()
    self.applied_opts: list[Opt] = []
    self.tensor_core: TensorCore|None = None
    self.dont_use_locals = False   # NOLOCALS: no LOCAL/GROUP/TC splits from here on
    self.prefetch: tuple[int|tuple[int, int], ...] = ()   # PREFETCH: buffers whose next panel the reduce prefetches, (buffer, n) n ahead
    self.reduceops = [u for u in ast.toposort() if u.op is Ops.REDUCE_AXIS]
    self.view_uops = [u for u in ast.toposort() if u.op is Ops.VIEW]
    sts: list[ShapeTracker] = [v.arg for v in self.view_uops]
    # per axis the size of the loads (a store or post-reduce view has 1 on reduce axes, even where the reduce is over 0 elements)
    full_shape = tuple((0 if 0 in s else max(s)) if all(isinstance(x, int) for x in s) else next((x for x in s if not isinstance(x, int)), s[0])
                       for s in zip(*[st.shape for st in sts])) if sts else ()
    raxes = {a for r in self.reduceops for a in r.axis_arg}
    self.sts, self.full_shape = sts, full_shape
    self.axis_types: list[AxisType] = [AxisType.REDUCE if i in raxes else AxisType.GLOBAL for i in range(len(full_shape))]
    self._reorder_and_merge()

  def copy(self) -> Kernel:
    ret = Kernel.__new__(Kernel)
    ret.ast, ret.opts, ret.applied_opts, ret.reduceops, ret.view_uops = self.ast, self.opts, self.applied_opts[:], self.reduceops, self.view_uops
    ret.sts, ret.full_shape, ret.axis_types = self.sts[:], self.full_shape, self.axis_types[:]
    ret.tensor_core, ret.dont_use_locals, ret.prefetch = self.tensor_core, self.dont_use_locals, self.prefetch
    return ret

  # *** shape bookkeeping ***
  @property
  def shape_len(self) -> int: return len(self.full_shape)
  @property
  def first_reduce(self) -> int: return next((i for i, t in enumerate(self.axis_types) if t in REDUCE_TYPES), self.shape_len)
  @property
  def output_shape(self) -> tuple[sint, ...]: return tuple(s for s, t in zip(self.full_shape, self.axis_types) if t not in REDUCE_TYPES)
  def axes_of(self, *types:AxisType) -> list[int]: return [i for i, t in enumerate(self.axis_types) if t in types]
  @property
  def upcasted(self) -> int: return len(self.axes_of(AxisType.UPCAST, AxisType.UNROLL))
  @property
  def upcast_size(self) -> int: return prod(self.full_shape[i] for i in self.axes_of(AxisType.UPCAST, AxisType.UNROLL))

  def _set(self, sts:list[ShapeTracker], shape:list[sint], types:list[AxisType]):
    self.sts, self.full_shape, self.axis_types = sts, tuple(shape), types

  def _permute(self, perm:list[int]):
    self._set([st.permute(tuple(perm)) for st in self.sts], [self.full_shape[i] for i in perm], [self.axis_types[i] for i in perm])

  def _sort_axes(self):
    # stable sort by kind keeps the loop nest order: threads, globals, locals, reduces, then the register (unrolled) axes
    self._permute(sorted(range(self.shape_len), key=lambda i: (self.axis_types[i].value, i)))

  def _reorder_and_merge(self):
    self._sort_axes()
    # adjacent axes of one kind merge when every view allows it: fewer loops, simpler index maths
    i = self.shape_len - 2
    while i >= 0:
      if self.axis_types[i] == self.axis_types[i+1]:
        cand = []
        for st in self.sts:
          s = st.shape
          # a view that spans one of the two axes and not the other (a row reduce's input) can't merge them
          if (s[i], s[i+1]) != (1, 1) and (s[i], s[i+1]) != self.full_shape[i:i+2]: break
          merged = st.reshape(tuple(s[:i]) + (s[i]*s[i+1],) + tuple(s[i+2:]))
          if len(merged.views) > len(st.views): break
          cand.append(merged)
        else:
          shape = list(self.full_shape)
          self._set(cand, shape[:i] + [shape[i]*shape[i+1]] + shape[i+2:], self.axis_types[:i+1] + self.axis_types[i+2:])
      i -= 1
    # drop size-1 axes everywhere (keep at least one axis)
    keep = [j for j, s in enumerate(self.full_shape) if resolve(s != 1)] or [0][:self.shape_len]
    if len(keep) != self.shape_len:
      self._set([st.reshape(tuple(st.shape[j] for j in keep)) for st in self.sts], [self.full_shape[j] for j in keep],
                [self.axis_types[j] for j in keep])

  def _split(self, axis:int, amount:int, inner_type:AxisType|None=None, outer_type:AxisType|None=None) -> None:
    # axis of size s becomes (s//amount, amount); views that have size 1 there become (1, 1)
    s = self.full_shape[axis]
    new_sts = []
    for st in self.sts:
      sh = st.shape
      inner = (sh[axis]//amount, amount) if resolve(sh[axis] != 1) else (1, 1)
      new_sts.append(st.reshape(tuple(sh[:axis]) + inner + tuple(sh[axis+1:])))
    t = self.axis_types[axis]
    self._set(new_sts, list(self.full_shape[:axis]) + [s//amount, amount] + list(self.full_shape[axis+1:]),
              self.axis_types[:axis] + [outer_type or t, inner_type or t] + self.axis_types[axis+1:])

  def reread_axes(self) -> set[int]:
    """A kernel that stores its output row and reads it back (kernelize.reuse_row_value: softmax's exps, scaled in place) must run each row's
    passes once and in order in one thread: the global axes its first store doesn't span (the output's row) can't be cut across threads or
    loops around the passes."""
    stores = [u for u in self.ast.src if u.op is Ops.STORE]
    if len({u.src[0] for u in stores}) == len(stores): return set()
    return {a for u in stores for a, s in enumerate(self.sts[self.view_uops.index(u.src[1])].shape)
            if resolve(s == 1) and resolve(self.full_shape[a] != 1) and self.axis_types[a] is AxisType.GLOBAL}

  # *** opts ***
  def real_axis(self, opt:Opt) -> int:
    if opt.axis is None: return -1
    if opt.op is OptOps.UNROLL: ax = self.axes_of(AxisType.REDUCE)
    elif opt.op in (OptOps.GROUP, OptOps.GROUPTOP): ax = self.axes_of(AxisType.REDUCE)
    elif opt.op in (OptOps.UPCAST, OptOps.LOCAL, OptOps.THREAD): ax = self.axes_of(AxisType.GLOBAL, AxisType.LOCAL)
    elif opt.op in (OptOps.SWAP, OptOps.BLOCK): ax = self.axes_of(AxisType.GLOBAL)
    else: ax = list(range(self.shape_len))
    check(0 <= opt.axis < len(ax), opt, f"axis {opt.axis} out of range, kernel has {len(ax)} axes for it ({self.colored_shape()})")
    return ax[opt.axis]

  def apply_opt(self, opt:Opt, append_opt:bool=True):
    axis = -1 if opt.op is OptOps.TC else self.real_axis(opt)
    if self.tensor_core is not None:
      check(axis not in self.tc_axes(), opt, "that axis belongs to the tensor core")
      check(opt.op not in (OptOps.GROUP, OptOps.GROUPTOP), opt, "no group reduce with a tensor core")
    if self.dont_use_locals: check(opt.op not in (OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP, OptOps.TC), opt, "the kernel has NOLOCALS")
    if opt.op in (OptOps.THREAD, OptOps.BLOCK, OptOps.SWAP, OptOps.LOCAL):
      moved = {axis} | ({self.axes_of(AxisType.GLOBAL)[opt.arg]} if opt.op is OptOps.SWAP and isinstance(opt.arg, int) and
                        0 <= opt.arg < len(self.axes_of(AxisType.GLOBAL)) else set())
      check(not moved & self.reread_axes(), opt, "the output row is stored and read back: its axis stays one loop inside the row's passes")
    if opt.op is OptOps.TC: self._apply_tc(opt)
    elif opt.op in (OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD, OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP):
      s = self.full_shape[axis]
      check(isinstance(s, int), opt, f"can't split the symbolic axis {s}")
      amt = s if opt.arg == 0 else opt.arg
      check(isinstance(amt, int) and amt > 1, opt, f"amount must be an int > 1 (or 0 for the whole axis), got {opt.arg}")
      assert isinstance(amt, int) and isinstance(s, int)
      check(s % amt == 0, opt, f"amount {amt} doesn't divide axis {axis} of size {s}")
      if opt.op in (OptOps.UPCAST, OptOps.UNROLL):
        # vector code keeps 16 lanes in one register, so it may hold more lanes than per-lane scalars
        lim = 1024 if self.opts.vector_alu_lanes else 256
        # the lanes live together: those of the register axes some view spans along with this one (a row kernel's loops have their own)
        live = max((prod(st.shape[a] for a in self.axes_of(AxisType.UPCAST, AxisType.UNROLL)) for st in self.sts if resolve(st.shape[axis] != 1)),
                   default=self.upcast_size)
        check(live * amt <= lim, opt, f"too many registers: {live}*{amt} > {lim}")
        check(not any(isinstance(x, UOp) for x in self.full_shape), opt, "no upcasts in kernels with symbolic shapes")
        self._split(axis, amt, AxisType.UPCAST if opt.op is OptOps.UPCAST else AxisType.UNROLL)
      elif opt.op is OptOps.THREAD:
        check(self.opts.has_threads, opt, f"{self.opts.device} runs no thread pool")
        check(not self.axes_of(AxisType.THREAD), opt, "the kernel is already split across threads")
        check(axis == self.axes_of(AxisType.GLOBAL)[0], opt, "only the outermost global axis is split across threads")
        self._split(axis, s//amt, outer_type=AxisType.THREAD)
      else:
        check(self.opts.has_local, opt, f"{self.opts.device} has no local (workgroup) dimension")
        check(len(self.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE)) < 3, opt, "at most 3 local dimensions")
        local_size = prod(self.full_shape[i] for i in self.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE)) * amt
        check(self.opts.local_max is None or local_size <= max(self.opts.local_max), opt, f"workgroup of {local_size} threads is too big")
        if opt.op is OptOps.LOCAL: self._split(axis, amt, AxisType.LOCAL)
        else:
          check(self.opts.has_shared, opt, f"{self.opts.device} has no shared memory for a group reduce")
          check(not self.axes_of(AxisType.GROUP_REDUCE), opt, "one group reduce per kernel")
          check(amt <= 64, opt, f"group of {amt} > 64: the partial results are combined unrolled")
          nbytes = local_size * max(r.dtype.itemsize for r in self.reduceops)
          check(nbytes <= self.opts.shared_max, opt, f"{nbytes} bytes of shared memory > {self.opts.shared_max}")
          # GROUP: thread g of the group takes elements g, g+amt, ... (adjacent threads read adjacent memory); GROUPTOP: a contiguous chunk
          if opt.op is OptOps.GROUP: self._split(axis, amt, AxisType.GROUP_REDUCE)
          else: self._split(axis, s//amt, outer_type=AxisType.GROUP_REDUCE)
    elif opt.op is OptOps.PADTO: self._padto(opt, axis)
    elif opt.op is OptOps.SWAP:
      # the loop order of two global axes (on GPUs: which launch dimension each gets); the stable _sort_axes keeps it
      glb = self.axes_of(AxisType.GLOBAL)
      check(isinstance(opt.arg, int) and 0 <= opt.arg < len(glb), opt, f"arg {opt.arg} doesn't name a global axis (the kernel has {len(glb)})")
      assert isinstance(opt.arg, int)
      check(glb[opt.arg] != axis, opt, "can't swap an axis with itself")
      perm = list(range(self.shape_len))
      perm[axis], perm[glb[opt.arg]] = glb[opt.arg], axis
      self._permute(perm)
    elif opt.op is OptOps.BLOCK:
      # a cache block: global axis (s) becomes (s//amt, amt) and the outer part becomes the outermost global loop, so the other globals
      # run inside it over a slice of the operand this axis walks (e.g. a panel of B that stays in L2 while every row block of A uses it)
      s, amt = self.full_shape[axis], opt.arg
      check(isinstance(s, int) and isinstance(amt, int) and 1 < amt < s and s % amt == 0, opt, f"amount {amt} must split axis {axis} of size {s}")
      assert isinstance(amt, int)
      # (the outermost global loop split in two runs in the same order: another program for BEAM to compile and time, no other kernel)
      check(axis != (first := self.axes_of(AxisType.GLOBAL)[0]), opt, "a block of the outermost global loop changes no loop order")
      self._split(axis, amt)
      self._permute(list(range(first)) + [axis] + [i for i in range(first, self.shape_len) if i != axis])
    elif opt.op is OptOps.PREFETCH:
      # a hint, no change of shape: the reduce's loads of buffer arg also prefetch what they will read at the next step of the global loops
      # they walk (the next weight panel, fetched while the loops inside reuse this one); of arg (buffer, n), what they read n iterations
      # later in the innermost reduce loop (codegen/__init__.py add_prefetches)
      check(self.opts.supports_prefetch, opt, f"{self.opts.device} renders no prefetch")
      buf, ahead = opt.arg if isinstance(opt.arg, tuple) and len(opt.arg) == 2 else (opt.arg, 1)
      check(isinstance(buf, int) and buf in {u.src[0].arg for u in self.ast.toposort() if u.op is Ops.LOAD}, opt, f"the kernel loads no buffer {buf}")
      check(isinstance(ahead, int) and ahead >= 1, opt, f"prefetch distance must be an int >= 1, got {ahead}")
      check(bool(self.reduceops), opt, "only a reduce's loads prefetch")
      check(opt.arg not in self.prefetch, opt, f"buffer {buf} is already prefetched")
      self.prefetch += (cast(int|tuple[int, int], opt.arg),)
    elif opt.op is OptOps.NOLOCALS:
      # a marker: the kernel keeps every axis a global (a plain loop on the CPU), and the search skips workgroup opts after it
      check(not self.dont_use_locals, opt, "NOLOCALS is already applied")
      check(not self.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE), opt, "the kernel already has local dims")
      self.dont_use_locals = True
    else: raise KernelOptError(f"{opt}: not supported yet on {self.opts.device}")
    self._sort_axes()
    if append_opt: self.applied_opts.append(opt)

  def _padto(self, opt:Opt, axis:int) -> None:
    # round the axis up to a multiple of amt so later splits divide it: every view that isn't a broadcast (size 1) there is padded, so
    # loads and consts read 0 and stores are gated off in the padding. Only global and reduce axes pad: a LOCAL axis is a workgroup
    # size that was checked against the device, the other kinds are splits already made.
    s, amt, kind = self.full_shape[axis], opt.arg, self.axis_types[axis]
    check(isinstance(s, int), opt, f"can't pad the symbolic axis {s}")
    check(isinstance(amt, int) and amt > 1, opt, f"amount must be an int > 1, got {amt}")
    assert isinstance(s, int) and isinstance(amt, int)
    check(kind in (AxisType.GLOBAL, AxisType.REDUCE), opt, f"only global and reduce axes pad, axis {axis} is {kind.name}")
    check(self.tensor_core is None, opt, "no padding with a tensor core")
    new = -(-s // amt) * amt
    check(new != s, opt, f"axis {axis} of size {s} is already a multiple of {amt}")
    check(new <= 2 * s, opt, f"padding axis {axis} from {s} to {new} more than doubles its work")
    check(kind is AxisType.GLOBAL or self._pads_to_zero(axis), opt, f"the reduces over axis {axis} aren't sums of values that are 0 in the padding")
    pad = tuple((0, new - s if i == axis else 0) for i in range(self.shape_len))
    self._set([st if resolve(st.shape[axis] == 1) else st.pad(pad) for st in self.sts],
              [new if i == axis else x for i, x in enumerate(self.full_shape)], self.axis_types)

  def _pads_to_zero(self, axis:int) -> bool:
    # every reduce sums over every reduce axis (get_optimized_ast), so padding one adds its padding to all of them: legal when each is an
    # ADD whose source is 0 there. Padded loads, consts and VALIDs are 0 (False); ops with f(0) == 0 keep it, MUL/AND need one 0 operand,
    # WHERE/MULACC a 0 third operand and a 0 in one of the others. Broadcast views, variables, inner reduces and the rest (EXP2, CMPEQ,
    # ...) count as nonzero. Ops that turn a 0 into inf/nan (0*inf is nan) refuse outright.
    padded = {v: resolve(st.shape[axis] != 1) for v, st in zip(self.view_uops, self.sts)}
    zero: dict[UOp, bool] = {}
    for u in self.ast.toposort():
      z = [zero.get(x, False) for x in u.src]
      if u.op in (Ops.LOAD, Ops.CONST, Ops.VALID): zero[u] = any(padded.get(x, False) for x in u.src)
      elif u.op in (Ops.ADD, Ops.SUB, Ops.MAX, Ops.OR, Ops.XOR, Ops.CMPLT, Ops.CMPNE, Ops.NEG, Ops.SQRT, Ops.SIN, Ops.TRUNC, Ops.CAST):
        zero[u] = all(z)
      elif u.op in (Ops.MUL, Ops.AND): zero[u] = any(z)
      elif u.op in (Ops.WHERE, Ops.MULACC): zero[u] = (z[0] or z[1]) and z[2]
      else: zero[u] = False
    return all(r.arg[0] is Ops.ADD and zero[r.src[0]] and not any(u.op in (Ops.RECIP, Ops.FDIV, Ops.LOG2, Ops.POW) for u in r.src[0].toposort())
               for r in self.reduceops)

  # *** tensor cores (the layouts and how views use them: tinygrad/opt/tc.py) ***
  def tc_axes(self) -> list[int]:
    """The tensor core's axes: the warp (the last LOCAL axis), its K lanes (the last UNROLL axes), C's lanes (the last UPCAST axes).
    TC is the first opt and later splits only make axes that sort before these, so they stay last of their kind."""
    if (tc := self.tensor_core) is None: return []
    unroll, upcast = self.axes_of(AxisType.UNROLL), self.axes_of(AxisType.UPCAST)
    return self.axes_of(AxisType.LOCAL)[-1:] + unroll[len(unroll)-tc.reduce_bits:] + upcast[len(upcast)-tc.upcast_bits:]

  def _apply_tc(self, opt:Opt) -> None:
    from tinygrad.opt.tc import mul_factors, tc_operand
    check(isinstance(opt.arg, tuple) and len(opt.arg) == 2, opt, "the arg is (tc_select, tc_opt)")
    assert isinstance(opt.arg, tuple)
    tc_select, tc_opt = opt.arg
    check(not self.applied_opts, opt, "the tensor core must be the first opt")
    check(bool(self.opts.tensor_cores) and self.opts.has_local, opt, f"{self.opts.device} has no tensor cores")
    check(tc_opt in (0, 1), opt, f"tc_opt is 0 (the factors are loads) or 1 (any elementwise factors), got {tc_opt}; padding isn't supported")
    check(all(isinstance(s, int) for s in self.full_shape), opt, "no tensor cores for symbolic shapes")
    r = self.reduceops[0] if len(self.reduceops) == 1 else None
    facs = mul_factors(r.src[0]) if r is not None and r.arg[0] is Ops.ADD else None
    check(r is not None and facs is not None, opt, "TC on a non-matmul kernel: it needs one ADD reduce of a product")
    assert r is not None and facs is not None
    views = {v: i for i, v in enumerate(self.view_uops)}
    fviews = [[views[v] for v in f.toposort() if v.op is Ops.VIEW] for f in facs]
    # a view both factors read must read the same element for every role's layout: a broadcast constant
    shared = [self.sts[i].views for i in set(fviews[0]) & set(fviews[1])]
    check(all(len(v) == 1 and v[0].mask is None and all(resolve(st == 0) for st in v[0].strides) for v in shared), opt,
          "TC on a non-matmul kernel: both factors read one view")
    strides = [st.real_strides() for st in self.sts]
    def bcast(f:int, ax:int) -> bool: return all(strides[i][ax] == 0 for i in fviews[f])
    # A (M x K) is the first factor: broadcast along N, B (K x N) along M
    ns = [ax for ax in self.axes_of(AxisType.GLOBAL) if bcast(0, ax) and not bcast(1, ax)]
    ms = [ax for ax in self.axes_of(AxisType.GLOBAL) if bcast(1, ax) and not bcast(0, ax)]
    ks = [ax for ax in self.axes_of(AxisType.REDUCE) if not bcast(0, ax) and not bcast(1, ax)]
    choices = [(n, m, k) for n in ns for m in ms for k in ks]
    check(bool(choices), opt, f"TC on a non-matmul kernel: no N, M and K axes (candidates N {ns}, M {ms}, K {ks})")
    check(opt.axis is not None and 0 <= opt.axis < len(choices), opt, f"axis {opt.axis}: there are {len(choices)} (N, M, K) axis choices {choices}")
    assert opt.axis is not None
    tile = dict(zip("nmk", choices[opt.axis]))
    cands = list(self.opts.tensor_cores) if tc_select == -1 else self.opts.tensor_cores[tc_select:tc_select+1] if tc_select >= 0 else []
    check(bool(cands), opt, f"tc_select {tc_select}: {self.opts.device} has {len(self.opts.tensor_cores)} tensor cores")
    reasons: list[str] = []
    for tc in cands:
      ops = [tc_operand(f, tc.dtype_in) for f in facs]
      if any(o is None for o in ops) or r.dtype != tc.dtype_out:
        reasons.append(f"{tc.name} takes {tc.dtype_in.name} * {tc.dtype_in.name} -> {tc.dtype_out.name}, "
                       f"the kernel is {facs[0].dtype.name} * {facs[1].dtype.name} -> {r.dtype.name}")
      elif tc_opt == 0 and any(o is not None and o.op is not Ops.LOAD for o in ops):
        reasons.append(f"{tc.name}: with tc_opt=0 the factors must be loads, got {[o.op for o in ops if o is not None]}")
      elif (bad := [f"{d.upper()} axis {tile[d]} of size {self.full_shape[tile[d]]} is not a multiple of {tc.name}'s {d.upper()}={sz}"
                    for d, sz in zip("nmk", tc.dims) if self.full_shape[tile[d]] % sz != 0]):
        reasons.append("; ".join(bad))
      elif self.opts.local_max is not None and tc.threads > max(self.opts.local_max): reasons.append(f"a warp of {tc.threads} threads is too big")
      else:
        self._tc_transform(tc, tile, fviews)
        return
    raise KernelOptError(f"{opt}: " + " | ".join(reasons))

  def _tc_transform(self, tc:TensorCore, tile:dict[str, int], fviews:list[list[int]]) -> None:
    # every tile axis becomes (outer, bits...), then each view takes the new axes' bits from the tile bits its role's layout says
    size = dict(zip("nmk", tc.dims))
    nbits = {d: s.bit_length()-1 for d, s in size.items()}
    dim_of = {ax: d for d, ax in tile.items()}
    labels: list[tuple[str, int]] = []
    for i in range(self.shape_len): labels += [("ax", i)] + ([(dim_of[i], j) for j in reversed(range(nbits[dim_of[i]]))] if i in dim_of else [])
    pos = {lb: p for p, lb in enumerate(labels)}
    threads, nt = tc.threads, tc.threads.bit_length()-1
    kbits = [f"t{i}" for i in reversed(range(nt))] + [f"r{j}" for j in reversed(range(tc.reduce_bits))] + \
            [f"u{j}" for j in reversed(range(tc.upcast_bits))]
    perm = {op: [pos[("ax", i)] for i in range(self.shape_len)] + [pos[tc.bit_sources(op)[b]] for b in kbits] for op in "abc"}
    def split(sh:tuple[sint, ...]) -> tuple[sint, ...]:
      out: list[sint] = []
      for i, s in enumerate(sh):
        if i not in dim_of: out.append(s)
        elif resolve(s == 1): out += [1] * (1 + nbits[dim_of[i]])
        else: out += [s // size[dim_of[i]]] + [2] * nbits[dim_of[i]]
      return tuple(out)
    role = {i: op for op, vs in zip("ab", fviews) for i in vs}
    n = self.shape_len
    new_sts = []
    for i, st in enumerate(self.sts):
      st = st.reshape(split(st.shape)).permute(tuple(perm[role.get(i, "c")]))
      new_sts.append(st.reshape(st.shape[:n] + (prod(st.shape[n:n+nt]),) + st.shape[n+nt:]))
    full = split(self.full_shape)
    shape = [full[pos[("ax", i)]] for i in range(n)] + [threads] + [2] * (tc.reduce_bits + tc.upcast_bits)
    types = self.axis_types[:] + [AxisType.LOCAL] + [AxisType.UNROLL] * tc.reduce_bits + [AxisType.UPCAST] * tc.upcast_bits
    # tile axes that were exactly one tile leave outer axes of size 1
    keep = [j for j, s in enumerate(shape) if j >= n or resolve(s != 1)]
    self._set([st.reshape(tuple(st.shape[j] for j in keep)) for st in new_sts], [shape[j] for j in keep], [types[j] for j in keep])
    self.tensor_core = tc

  # *** output ***
  def name(self) -> str:
    kind = "r" if self.reduceops else "E"
    return kind + "_" + "_".join(str(s) if isinstance(s, int) else s.render() for s in self.full_shape)

  def colored_shape(self) -> str:
    return " ".join(colored(str(s) if isinstance(s, int) else s.render(), COLORS[t]) for s, t in zip(self.full_shape, self.axis_types))

  def get_optimized_ast(self) -> UOp:
    # the AST with the kernel's views and reduce axes; the axis kinds travel in the SINK's arg for the lowerer
    new_ast = self.ast.substitute({v: st.to_uop() for v, st in zip(self.view_uops, self.sts)})
    raxes = tuple(self.axes_of(*REDUCE_TYPES))
    def own_axes(r:UOp) -> tuple[int, ...]:
      # a reduce sums the reduce axes its input varies along (a kernel with a row's max and sum has one reduce axis for each); the
      # views under a nested reduce are that reduce's
      views, stack, seen = [], [r.src[0]], set()
      while stack:
        if (x := stack.pop()) in seen: continue
        seen.add(x)
        if x.op is Ops.VIEW: views.append(x.arg)
        if x.op is not Ops.REDUCE_AXIS: stack.extend(x.src)
      return tuple(a for a in raxes if any(resolve(st.shape[a] != 1) for st in views)) or raxes
    new: dict[UOp, UOp] = {}
    for u in new_ast.toposort():   # bottom up: a reduce inside another one is replaced in it too
      src = tuple(new.get(x, x) for x in u.src)
      if u.op is Ops.REDUCE_AXIS: new[u] = UOp(Ops.REDUCE_AXIS, u.dtype, src, (u.arg[0], own_axes(u) if len(self.reduceops) > 1 else raxes))
      elif src != u.src: new[u] = u.replace(src=src)
    new_ast = new.get(new_ast, new_ast)
    return new_ast.replace(arg=KernelInfo(to_function_name(self.name()), tuple(self.axis_types), tuple(self.applied_opts), self._wmma_arg(),
                                            self.prefetch))

  def _wmma_arg(self) -> tuple|None:
    if (tc := self.tensor_core) is None: return None
    axes = self.tc_axes()[1:]
    lane_axis = {f"r{j}": axes[tc.reduce_bits-1-j] for j in range(tc.reduce_bits)} | \
                {f"u{j}": axes[tc.reduce_bits+tc.upcast_bits-1-j] for j in range(tc.upcast_bits)}
    lanes = tuple(tuple((lane_axis[b], 2) for b in tc.lanes(op)) for op in "abc")
    k_lanes = tuple((lane_axis[f"r{j}"], 2) for j in range(tc.reduce_bits))
    return (tc.name, tc.dims, tc.dtype_in, tc.dtype_out, tc.device, tc.threads, lanes, k_lanes)

