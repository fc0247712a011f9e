from __future__ import annotations
from dataclasses import dataclass
from enum import Enum, auto
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, resolve, sint
from tinygrad.helpers import to_function_name, colored, prod
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.renderer import Renderer

class OptOps(Enum):
  TC = auto(); UPCAST = auto(); UNROLL = auto(); LOCAL = auto(); GROUP = auto(); GROUPTOP = auto(); NOLOCALS = auto(); PADTO = auto(); SWAP = auto()
  THREAD = auto()
  def __lt__(self, x:OptOps): return self.value < x.value

@dataclass(frozen=True, order=True)
class Opt:
  op: OptOps
  axis: int|None = None
  arg: int|tuple|None = None
  def __repr__(self): return f"Opt(op={self.op}, axis={self.axis}, arg={self.arg})"

class KernelOptError(Exception): pass

class AxisType(Enum):
  THREAD = auto(); GLOBAL = auto(); LOCAL = auto(); GROUP_REDUCE = auto(); REDUCE = auto(); UNROLL = auto(); UPCAST = auto()
  def __lt__(self, x:AxisType): return self.value < x.value

REDUCE_TYPES = (AxisType.GROUP_REDUCE, AxisType.REDUCE, AxisType.UNROLL)
COLORS = {AxisType.THREAD: "BLUE", AxisType.GLOBAL: "blue", AxisType.LOCAL: "cyan", AxisType.GROUP_REDUCE: "green", AxisType.REDUCE: "red",
          AxisType.UNROLL: "magenta",
          AxisType.UPCAST: "yellow"}

@dataclass(frozen=True)
class KernelInfo:
  name: str = "test"
  axis_types: tuple[AxisType, ...] = ()
  applied_opts: tuple[Opt, ...] = ()
  @property
  def global_dims(self) -> int: return sum(1 for a in self.axis_types if a in (AxisType.GLOBAL, AxisType.THREAD))

def check(cond:bool, opt:Opt|str, reason:str):
  if not cond: raise KernelOptError(f"{opt}: {reason}")

class Kernel:
  """A kernel AST as one iteration space. Axes are ordered thread, global, local, reduce, unroll, upcast; every opt rewrites the
  views of all loads and stores together, so the kernel can be rebuilt from its list of applied opts."""
  def __init__(self, ast:UOp, opts:Renderer|None=None):
    if ast.op is not Ops.SINK: raise ValueError(f"a Kernel needs a SINK ast, got {ast.op}")
    self.ast, self.opts = ast, opts if opts is not None else Renderer()
    self.applied_opts: list[Opt] = []
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

  # *** opts ***
  def real_axis(self, opt:Opt) -> int:
    if opt.axis is None: return -1
    if opt.op is OptOps.UNROLL: ax = self.axes_of(AxisType.REDUCE)
    elif opt.op in (OptOps.GROUP, OptOps.GROUPTOP): ax = self.axes_of(AxisType.REDUCE)
    elif opt.op in (OptOps.UPCAST, OptOps.LOCAL, OptOps.THREAD): ax = self.axes_of(AxisType.GLOBAL, AxisType.LOCAL)
    else: ax = list(range(self.shape_len))
    check(0 <= opt.axis < len(ax), opt, f"axis {opt.axis} out of range, kernel has {len(ax)} axes for it ({self.colored_shape()})")
    return ax[opt.axis]

  def apply_opt(self, opt:Opt, append_opt:bool=True):
    axis = self.real_axis(opt)
    if opt.op in (OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD, OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP):
      s = self.full_shape[axis]
      check(isinstance(s, int), opt, f"can't split the symbolic axis {s}")
      amt = s if opt.arg == 0 else opt.arg
      check(isinstance(amt, int) and amt > 1, opt, f"amount must be an int > 1 (or 0 for the whole axis), got {opt.arg}")
      assert isinstance(amt, int) and isinstance(s, int)
      check(s % amt == 0, opt, f"amount {amt} doesn't divide axis {axis} of size {s}")
      if opt.op in (OptOps.UPCAST, OptOps.UNROLL):
        check(self.upcast_size * amt <= 256, opt, f"too many registers: {self.upcast_size}*{amt} > 256")
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
    else: raise KernelOptError(f"{opt}: not supported yet on {self.opts.device}")
    self._sort_axes()
    if append_opt: self.applied_opts.append(opt)

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
    new_ast = new_ast.substitute({r: UOp(Ops.REDUCE_AXIS, r.dtype, r.src, (r.arg[0], raxes)) for r in new_ast.toposort() if r.op is Ops.REDUCE_AXIS})
    return new_ast.replace(arg=KernelInfo(to_function_name(self.name()), tuple(self.axis_types), tuple(self.applied_opts)))

