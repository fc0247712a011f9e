"""Reverse-mode autograd as local rules on UOps: every rule maps the gradient of one node to gradients of its sources, all lazy UOps.

`compute_gradient(root, root_grad, targets)` walks the graph below root in reverse topological order and returns a dict from UOp to its
gradient. A target root uses only through comparisons, bit ops, BITCAST ... gets zeros; one root doesn't use at all, or only through
DETACH, is absent from that dict.

How Tensor uses it (the lead wires this into tensor.py):
- `Tensor.gradient(*targets, gradient=None, materialize_grads=False) -> list[Tensor]`: root must be a scalar unless `gradient` (a Tensor of
  root's shape) is given, in which case it is the vector in the vector-Jacobian product; with none, it is 1.0 in root's dtype. Only float
  tensors have gradients. A target root does not depend on raises, unless materialize_grads, which gives zeros.
- `Tensor.backward(gradient=None)`: the same root gradient; every live Tensor with `requires_grad` True whose UOp is in root's graph and
  gets a gradient has it added into `t.grad` (created on the first call, accumulated by later calls, like PyTorch). A tensor reached only
  through detach keeps `grad` None, like PyTorch.
"""
from __future__ import annotations
import functools, itertools, math, operator
from typing import Callable, cast
from tinygrad.dtype import dtypes, sum_acc_dtype
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, resolve

Grads = tuple[UOp|None, ...]
LN2 = math.log(2)

def _sum(x:UOp, axes:tuple[int, ...]) -> UOp:
  # keepdim sum that accumulates half and bfloat16 in float32, so a broadcast over many elements doesn't stall at 2048
  acc = sum_acc_dtype(x.dtype) if dtypes.is_float(x.dtype) else x.dtype
  return x.cast(acc).r(Ops.ADD, axes).cast(x.dtype)

def _max_grad(ctx:UOp, x:UOp, y:UOp) -> Grads:
  # PyTorch's maximum: all to the larger input, half each on a tie (nan compares false both ways, so both get it all)
  tie = x.eq(y)
  half = tie.where(ctx * 0.5, ctx)
  return (x.lt(y).where(0, half), y.lt(x).where(0, half))

def _pow_grad(ctx:UOp, ret:UOp, x:UOp, y:UOp) -> Grads:
  # PyTorch's pow: d/dx = y * x**(y-1), 0 where y == 0 (x**(y-1) keeps x == 0 right: 0**1 = 1, 0**-1 = inf);
  # d/dy = x**y * ln(x): 0 where x == 0 and y >= 0 (inf * -inf where y < 0), nan for x < 0
  dx = y.eq(0).where(0, ctx * y * x.alu(Ops.POW, y - 1))
  dy = (x.eq(0) & y.ge(0)).where(0, ctx * ret * x.log2() * LN2)
  return (dx, dy)

def _prod_grad(ctx:UOp, ret:UOp, x:UOp) -> UOp:
  # the product of the other elements: ret/x without zeros; with one zero only that position gets the product of the rest; with more, 0
  axes = ret.axis_arg
  zero = x.eq(0)
  nzeros = _sum(zero.cast(dtypes.int32), axes).expand(x.shape)
  nonzero_prod = zero.where(1, x).r(Ops.MUL, axes).expand(x.shape)
  others = nzeros.eq(0).where(nonzero_prod / zero.where(1, x), (nzeros.eq(1) & zero).where(nonzero_prod, 0))
  return ctx.expand(x.shape) * others

def _reduce_grad(ctx:UOp, ret:UOp, x:UOp) -> Grads:
  op, axes = ret.arg
  if op is Ops.ADD: return (ctx.expand(x.shape),)
  if op is Ops.MAX:
    # like torch.amax: split equally between the positions that hold the max (torch.max(dim) picks one of them instead)
    hit = x.eq(ret.expand(x.shape))
    sizes = [x.shape[a] for a in axes]
    if all(isinstance(n, int) for n in sizes) and 0 < math.prod(sizes) <= 16:   # type: ignore[arg-type]
      # a small window (a pool's): the ties counted by adding its elements one by one, elementwise views that fuse into the gradient's
      # kernel instead of a reduce kernel of their own
      def at(pos:tuple[int, ...]) -> UOp:
        return hit.shrink(tuple((pos[axes.index(a)], pos[axes.index(a)]+1) if a in axes else (0, n) for a, n in enumerate(x.shape)))
      count = functools.reduce(operator.add, [at(pos).cast(ctx.dtype) for pos in itertools.product(*map(range, sizes))])
    else: count = _sum(hit.cast(ctx.dtype), axes)
    return (hit.where((ctx / count).expand(x.shape), 0),)
  if op is Ops.MUL: return (_prod_grad(ctx, ret, x),)
  raise NotImplementedError(f"no gradient for REDUCE_AXIS {op}")

def _copy_grad(ctx:UOp, x:UOp) -> Grads:
  if not isinstance(dev := x.device, str): raise NotImplementedError(f"gradient of a copy from several devices {dev}")
  return (ctx.copy_to_device(dev), None)

# custom backward rules, by name: CONTIGUOUS_BACKWARD(value, *inputs) with arg (name, *params) gives the inputs the gradients
# custom_grads[name](realized ctx, node) returns, instead of differentiating value's own graph (tensor.py registers "conv")
custom_grads: dict[str, Callable[[UOp, UOp], tuple[UOp, ...]]] = {}
def _contiguous_backward_grad(ctx:UOp, ret:UOp) -> Grads:
  if ret.arg is None: return (ctx.contiguous(),)
  return (None,) + custom_grads[ret.arg[0]](ctx.contiguous(), ret)

def _argsort(x:tuple[int, ...]) -> tuple[int, ...]: return tuple(sorted(range(len(x)), key=x.__getitem__))

# every rule: (ctx=gradient of ret, ret=the node, names from the pattern) -> one gradient (or None for none) per source of ret
pm_gradient = PatternMatcher([
  # ** elementwise **
  (UPat(Ops.ADD), lambda ctx: (ctx, ctx)),
  (UPat(Ops.SUB), lambda ctx: (ctx, -ctx)),
  (UPat(Ops.MUL, src=(UPat.var("x"), UPat.var("y"))), lambda ctx, x, y: (ctx * y, ctx * x)),
  (UPat(Ops.FDIV, src=(UPat.var("x"), UPat.var("y")), name="ret"), lambda ctx, ret, x, y: (ctx / y, -ctx * ret / y)),
  (UPat(Ops.MULACC, src=(UPat.var("x"), UPat.var("y"), UPat())), lambda ctx, x, y: (ctx * y, ctx * x, ctx)),
  (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("y"))), _max_grad),
  (UPat(Ops.NEG), lambda ctx: (-ctx,)),
  (UPat(Ops.RECIP, name="ret"), lambda ctx, ret: (-ctx * ret * ret,)),
  (UPat(Ops.SQRT, name="ret"), lambda ctx, ret: (ctx / (ret * 2),)),
  (UPat(Ops.EXP2, name="ret"), lambda ctx, ret: (ctx * ret * LN2,)),
  (UPat(Ops.EXP, name="ret"), lambda ctx, ret: (ctx * ret,)),
  (UPat(Ops.TANH, name="ret"), lambda ctx, ret: (ctx * (1 - ret * ret),)),
  (UPat(Ops.LOG2, src=(UPat.var("x"),)), lambda ctx, x: (ctx / (x * LN2),)),
  # cos(x) = sin(pi/2 - x): no COS op
  (UPat(Ops.SIN, src=(UPat.var("x"),)), lambda ctx, x: (ctx * (x.const_like(math.pi / 2) - x).sin(),)),
  (UPat(Ops.POW, src=(UPat.var("x"), UPat.var("y")), name="ret"), _pow_grad),
  (UPat(Ops.WHERE, src=(UPat.var("c"), UPat(), UPat())), lambda ctx, c: (None, c.where(ctx, 0), c.where(0, ctx))),
  # like torch, an int or bool value carries no gradient: a cast to one cuts the path
  (UPat(Ops.CAST, src=(UPat.var("x"),), name="ret"), lambda ctx, ret, x: (ctx.cast(x.dtype) if dtypes.is_float(ret.dtype.scalar()) else None,)),
  # piecewise constant: zeros, like torch's ceil/floor/round/trunc (not ctx * 0), which a later product with nan or inf turns to nan
  (UPat(Ops.TRUNC, src=(UPat.var("x"),)), lambda ctx, x: (x.const_like(0),)),
  # not a number: no gradient
  (UPat(GroupOp.Comparison | {Ops.AND, Ops.OR, Ops.XOR, Ops.IDIV, Ops.MOD, Ops.SHL, Ops.SHR, Ops.THREEFRY, Ops.BITCAST, Ops.DETACH},
        name="ret"), lambda ret: (None,) * len(ret.src)),
  # ** reduce **
  (UPat(Ops.REDUCE_AXIS, src=(UPat.var("x"),), name="ret"), _reduce_grad),
  # ** movement: the inverse movement (EXPAND sums the broadcast axes back) **
  (UPat(Ops.RESHAPE, src=(UPat.var("x"),)), lambda ctx, x: (ctx.reshape(x.shape),)),
  (UPat(Ops.PERMUTE, name="ret"), lambda ctx, ret: (ctx.permute(_argsort(ret.arg)),)),
  (UPat(Ops.EXPAND, src=(UPat.var("x"),), name="ret"),
   lambda ctx, ret, x: (_sum(ctx, tuple(i for i, (s, n) in enumerate(zip(x.shape, ret.shape)) if resolve(s != n))),)),
  (UPat(Ops.PAD, src=(UPat.var("x"),), name="ret"), lambda ctx, ret, x: (ctx.shrink(tuple((b, b + s) for (b, _), s in zip(ret.arg, x.shape))),)),
  (UPat(Ops.SHRINK, src=(UPat.var("x"),), name="ret"), lambda ctx, ret, x: (ctx.pad(tuple((b, s - e) for (b, e), s in zip(ret.arg, x.shape))),)),
  (UPat(Ops.FLIP, name="ret"), lambda ctx, ret: (ctx.flip(ret.arg),)),
  # ** buffers and markers **
  (UPat((Ops.CONTIGUOUS, Ops.FUSE)), lambda ctx: (ctx,)),
  (UPat(Ops.CONTIGUOUS_BACKWARD, name="ret"), _contiguous_backward_grad),
  (UPat(Ops.COPY, src=(UPat.var("x"), UPat(Ops.DEVICE))), _copy_grad),
  # the target's old value is overwritten: only the written value gets the gradient
  (UPat(Ops.ASSIGN), lambda ctx: (None, ctx)),
])

def _reaches(root:UOp, targets:set[UOp]) -> tuple[list[UOp], set[UOp]]:
  # the nodes below root in topological order (sources first), and those on a differentiable path to a target
  topo = list(root.toposort())
  reach: set[UOp] = set()
  for u in topo:
    if u in targets or (u.op is not Ops.DETACH and any(s in reach for s in u.src)): reach.add(u)
  return topo, reach

def compute_gradient(root:UOp, root_grad:UOp, targets:set[UOp]) -> dict[UOp, UOp]:
  """The gradient of root (seeded with root_grad, of root's shape) with respect to every target root depends on, as lazy UOps.

  The dict also holds the gradient of every intermediate node on the way. A target root uses gets zeros where no rule passes it a
  gradient; one root doesn't use (or only through DETACH) is missing from it."""
  if root_grad.shape != root.shape: raise ValueError(f"root gradient has shape {root_grad.shape}, expected root's shape {root.shape}")
  topo, reach = _reaches(root, targets)
  grads: dict[UOp, UOp] = {root: root_grad.cast(root.dtype)} if root in reach else {}
  # reverse topological order: a node's gradient is complete (every user has added its part) before it is passed on
  for u in reversed(topo):
    if (g := grads.get(u)) is None or not any(s in reach for s in u.src): continue
    if (lgrads := cast(Grads|None, pm_gradient.rewrite(u, ctx=g))) is None: raise NotImplementedError(f"no gradient rule for {u.op}")
    if len(lgrads) != len(u.src): raise RuntimeError(f"gradient rule for {u.op} gave {len(lgrads)} gradients for {len(u.src)} sources")
    for s, sg in zip(u.src, lgrads):
      if sg is None or s not in reach: continue
      if sg.shape != s.shape: raise RuntimeError(f"gradient rule for {u.op} gave shape {sg.shape} for a source of shape {s.shape}")
      grads[s] = sg if (prev := grads.get(s)) is None else prev + sg
  # like tinygrad: a target used by root (on a path not through DETACH) gets a gradient, zeros where no rule passed one (sign, round,
  # comparisons ...)
  used = {root} & reach
  for u in reversed(topo):
    if u in used and u.op is not Ops.DETACH: used.update(s for s in u.src if s in reach)
  for t in targets & used: grads.setdefault(t, t.const_like(0))
  return grads
