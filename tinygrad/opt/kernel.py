from __future__ import annotations
from dataclasses import dataclass
from enum import Enum, auto
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, resolve, sint
from tinygrad.helpers import to_function_name, colored
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.renderer import Renderer

class OptOps(Enum):
  TC = auto(); UPCAST = auto(); UNROLL = auto(); LOCAL = auto(); GROUP = auto(); GROUPTOP = auto(); NOLOCALS = auto(); PADTO = auto(); SWAP = auto()
  def __lt__(self, x:OptOps): return self.value < x.value

@dataclass(frozen=True, order=True)
class Opt:
  op: OptOps
  axis: int|None = None
  arg: int|tuple|None = None
  def __repr__(self): return f"Opt(op={self.op}, axis={self.axis}, arg={self.arg})"

class KernelOptError(Exception): pass

@dataclass(frozen=True)
class KernelInfo:
  name: str = "test"
  global_dims: int = 0        # the first global_dims axes are global (threads or parallel loops)
  local_dims: int = 0
  upcasted: int = 0           # the last `upcasted` axes are unrolled into registers
  dont_use_locals: bool = False
  applied_opts: tuple = ()
  opts_to_apply: tuple|None = None

def _views(ast:UOp) -> list[UOp]: return [u for u in ast.toposort() if u.op is Ops.VIEW]

class Kernel:
  """A kernel AST seen as one iteration space: axes are global (output) first, then reduce; views are rewritten together."""
  def __init__(self, ast:UOp, opts:Renderer|None=None):
    if ast.op is not Ops.SINK: raise ValueError(f"a Kernel needs a SINK ast, got {ast.op}")
    self.ast, self.opts = ast, opts if opts is not None else Renderer()
    self.applied_opts: list[Opt] = []
    self.reduceops = [u for u in ast.toposort() if u.op is Ops.REDUCE_AXIS]
    self.view_uops = _views(ast)
    self.sts: list[ShapeTracker] = [v.arg for v in self.view_uops]
    self.full_shape: tuple[sint, ...] = tuple(max(s) if all(isinstance(x, int) for x in s) else s[0] for s in zip(*[st.shape for st in self.sts])) \
      if self.sts else ()
    self.reduce_axes = tuple(sorted({a for r in self.reduceops for a in r.axis_arg}))
    self._reorder_and_merge()

  @property
  def shape_len(self) -> int: return len(self.full_shape)
  @property
  def first_reduce(self) -> int: return self.shape_len - len(self.reduce_axes)
  @property
  def output_shape(self) -> tuple[sint, ...]: return self.full_shape[:self.first_reduce]

  def _reorder_and_merge(self):
    # reduce axes go last, then adjacent axes of one kind merge when every view allows it (fewer loops, simpler index maths)
    n = len(self.full_shape)
    perm = tuple([i for i in range(n) if i not in self.reduce_axes] + list(self.reduce_axes))
    sts = [st.permute(perm) for st in self.sts]
    shape = [self.full_shape[i] for i in perm]
    is_reduce = [i in self.reduce_axes for i in perm]
    i = len(shape) - 2
    while i >= 0:
      if is_reduce[i] == is_reduce[i+1]:
        new_shape = tuple(shape[:i]) + (shape[i]*shape[i+1],) + tuple(shape[i+2:])
        cand = []
        for st in sts:
          st_shape = st.shape
          merged = st.reshape(tuple(st_shape[:i]) + (st_shape[i]*st_shape[i+1],) + tuple(st_shape[i+2:]))
          if len(merged.views) > len(st.views): break
          cand.append(merged)
        else:
          sts, shape, is_reduce = cand, list(new_shape), is_reduce[:i+1] + is_reduce[i+2:]
      i -= 1
    # drop size-1 axes everywhere (keep at least one axis)
    keep = [j for j, s in enumerate(shape) if resolve(s != 1)] or [0]
    if len(keep) != len(shape):
      sts = [st.reshape(tuple(st.shape[j] for j in keep)) for st in sts]
      shape, is_reduce = [shape[j] for j in keep], [is_reduce[j] for j in keep]
    self.sts, self.full_shape = sts, tuple(shape)
    self.reduce_axes = tuple(j for j, r in enumerate(is_reduce) if r)

  def name(self) -> str:
    kind = "r" if self.reduceops else "E"
    return kind + "_" + "_".join(str(s) if isinstance(s, int) else s.render() for s in self.full_shape)

  def colored_shape(self) -> str:
    return " ".join(colored(str(s) if isinstance(s, int) else s.render(), "blue" if i < self.first_reduce else "red") for i, s in enumerate(self.full_shape))

  def get_optimized_ast(self) -> UOp:
    # rebuild the AST with the reordered/merged views and reduce axes, and record the axis kinds for the lowerer
    vmap = {v: ShapeTracker.to_uop(st) for v, st in zip(self.view_uops, self.sts)}
    new_ast = self.ast.substitute(vmap)
    raxes = tuple(range(self.first_reduce, self.shape_len))
    rmap = {r: UOp(Ops.REDUCE_AXIS, r.dtype, r.src, (r.arg[0], raxes)) for r in new_ast.toposort() if r.op is Ops.REDUCE_AXIS}
    new_ast = new_ast.substitute(rmap)
    info = KernelInfo(to_function_name(self.name()), global_dims=self.first_reduce, applied_opts=tuple(self.applied_opts))
    return new_ast.replace(arg=info)

