from __future__ import annotations
import functools
from dataclasses import dataclass, field
from typing import Sequence
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sint
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod, merge_dicts
from tinygrad.shape.view import View, _vmax, _vmin, _is0, _full, _seq

INT32_MAX = 2**31 - 1

def views_to_indexed_uops(views:tuple[View, ...], idxs:Sequence[UOp]|None=None) -> tuple[UOp, UOp]:
  # (index, valid) of a stack of views, not simplified: the last view's index is unraveled into the shape of the one below it, and so on
  idx, valid = views[-1].to_indexed_uops(idxs)
  for v in reversed(views[:-1]):
    def u(x:sint) -> UOp: return UOp.const(idx.dtype, x) if isinstance(x, int) else x.cast(idx.dtype)
    outer = next((i for i, s in enumerate(v.shape) if not (isinstance(s, int) and s == 1)), len(v.shape))
    sub: list[UOp] = []
    acc: sint = 1
    for i, s in reversed(list(enumerate(v.shape))):
      if isinstance(s, int) and s == 1:
        sub.append(u(0))
        continue
      x = idx if isinstance(acc, int) and acc == 1 else idx // u(acc)
      sub.append(x if i == outer else x % u(s))   # the outermost dim needs no modulo: the index is in range where it is valid
      acc = acc * s
    idx, valid = v.to_indexed_uops(sub[::-1], valid)
  return idx, valid

@functools.cache
def _simplified_indexed_uops(views:tuple[View, ...], idxs:tuple[UOp, ...]) -> tuple[UOp, UOp]:
  idx, valid = views_to_indexed_uops(views, idxs)
  return idx.simplify(), valid.simplify()

@dataclass(frozen=True, order=True)
class ShapeTracker:
  views: tuple[View, ...]
  shape: tuple[sint, ...] = field(init=False, compare=False, repr=False)   # the last view's, kept (read for every UOp built)
  def __post_init__(self): object.__setattr__(self, "shape", self.views[-1].shape)
  def __hash__(self) -> int:   # kept, like View's
    try: return self.__dict__["_hash"]
    except KeyError: self.__dict__["_hash"] = h = hash(self.views)
    return h
  def __reduce__(self): return ShapeTracker, (self.views,)

  @staticmethod
  def from_shape(shape:Sequence[sint], strides:Sequence[sint]|None=None) -> ShapeTracker: return ShapeTracker((View.create(tuple(shape), strides),))

  def size(self) -> int: return self.views[-1].size()
  @property
  def contiguous(self) -> bool: return len(self.views) == 1 and self.views[0].contiguous

  def __add__(self, st:ShapeTracker) -> ShapeTracker:
    ret = self
    for v in st.views: ret = ShapeTracker(ret.views + (v,)).simplify()
    return ret

  def simplify(self) -> ShapeTracker:
    # merge adjacent views from the top down until no pair merges
    views, i = list(self.views), len(self.views) - 2
    while i >= 0:
      if (merged := views[i+1] + views[i]) is not None:
        views[i:i+2] = [merged]
        i = min(i, len(views) - 2)
      else: i -= 1
    return ShapeTracker(tuple(views)) if len(views) != len(self.views) else self

  def invert(self, out_shape:tuple[sint, ...]) -> ShapeTracker|None:
    # an ST of out_shape that reads back the positions of self.shape; views are inverted from the top, each reshaped to the shape below it
    shapes = [v.shape for v in self.views[:-1]][::-1] + [tuple(out_shape)]
    ret: ShapeTracker|None = None
    for v, s in zip(reversed(self.views), shapes):
      if (inv := v._invert_raw()) is None or not _seq(prod(inv.shape), prod(s)): return None
      nxt = ShapeTracker((inv,)).reshape(s)
      ret = nxt if ret is None else ret + nxt
    return ret

  # ***** movement ops, all on the last view *****

  def reshape(self, new_shape:tuple[sint, ...]) -> ShapeTracker:
    if (nv := self.views[-1].reshape(tuple(new_shape))) is not None: return ShapeTracker(self.views[:-1] + (nv,))
    return ShapeTracker(self.views + (View.create(tuple(new_shape)),))
  def permute(self, axis:tuple[int, ...]) -> ShapeTracker: return ShapeTracker(self.views[:-1] + (self.views[-1].permute(axis),))
  def expand(self, new_shape:tuple[sint, ...]) -> ShapeTracker: return ShapeTracker(self.views[:-1] + (self.views[-1].expand(new_shape),))
  def pad(self, arg:tuple[tuple[sint, sint], ...]) -> ShapeTracker: return ShapeTracker(self.views[:-1] + (self.views[-1].pad(arg),))
  def shrink(self, arg:tuple[tuple[sint, sint], ...]) -> ShapeTracker: return ShapeTracker(self.views[:-1] + (self.views[-1].shrink(arg),))
  def flip(self, arg:tuple[bool, ...]) -> ShapeTracker: return ShapeTracker(self.views[:-1] + (self.views[-1].flip(arg),))
  def reduce(self, axis:tuple[int, ...]) -> tuple[sint, ...]: return tuple([1 if i in axis else s for i, s in enumerate(self.shape)])

  # ***** lowering *****

  def to_uop(self) -> UOp: return UOp(Ops.VIEW, dtypes.void, (), self)

  def to_indexed_uops(self, _idxs:Sequence[UOp]|None=None) -> tuple[UOp, UOp]:
    # default loop variables are int64 when some index may not fit in int32
    if _idxs is None: _idxs = [UOp.range(dtypes.int64 if self.needs_int64() else dtypes.int, s, i) for i, s in enumerate(self.shape)]
    return _simplified_indexed_uops(self.views, tuple(_idxs))

  def real_size(self) -> int:
    # 1 + the largest buffer index over the valid region of the first view (the views above can only read less)
    v = self.views[0]
    if 0 in self.shape or 0 in v.shape or v.fully_masked(): return 0
    ret: sint = v.offset
    for s, st, (b, e) in zip(v.shape, v.strides, v.mask if v.mask is not None else [(0, s) for s in v.shape]):
      if _is0(st): continue
      ret = ret + (st*(e-1) if _vmin(st) >= 0 else st*b)
    return max(0, _vmax(ret) + 1)

  def needs_int64(self) -> bool:
    for v in self.views:
      if prod([_vmax(s) for s in v.shape]) > INT32_MAX: return True
      if 0 in v.shape: continue
      lo, hi = _vmin(v.offset), _vmax(v.offset)
      for s, st in zip(v.shape, v.strides):
        ends = [_vmin(st)*(_vmax(s)-1), _vmax(st)*(_vmax(s)-1), 0]
        lo, hi = lo + min(ends), hi + max(ends)
      if max(-lo, hi) > INT32_MAX: return True
    return False

  def real_strides(self, ignore_valid:bool=False) -> tuple[sint|None, ...]:
    # the stride of each dim when the index is affine in it (None when not, or when the dim is masked unless ignore_valid)
    if len(self.views) == 1:
      v = self.views[0]
      if v.mask is None or ignore_valid: return v.strides
      return tuple(st if _full(m, s) else None for st, m, s in zip(v.strides, v.mask, v.shape))
    idx, valid = self.to_indexed_uops([UOp.range(dtypes.int, s, i) for i, s in enumerate(self.shape)])
    ret: list[sint|None] = [0]*len(self.shape)
    seen: dict[int, int] = {}
    for term in idx.split_uop(Ops.ADD):
      for r in {x.arg for x in term.toposort() if x.op is Ops.RANGE}: seen[r] = seen.get(r, 0) + 1
      if term.op is Ops.RANGE: ret[term.arg] = 1
      elif term.op is Ops.MUL and (rs := [s for s in term.src if s.op is Ops.RANGE]):
        other = term.src[1] if term.src[0] is rs[0] else term.src[0]
        if Ops.RANGE not in {x.op for x in other.toposort()}: ret[rs[0].arg] = other.arg if other.op is Ops.CONST else other
        else: ret[rs[0].arg] = None
      else:
        for r in {x.arg for x in term.toposort() if x.op is Ops.RANGE}: ret[r] = None
    for r, cnt in seen.items():
      if cnt > 1: ret[r] = None   # a range in two terms of the sum is not affine on its own
    if not ignore_valid:
      for x in valid.toposort():
        if x.op is Ops.RANGE: ret[x.arg] = None
    return tuple(ret)

  def unit_stride_axes(self, ignore_valid:bool=False) -> list[int]:
    return [i for i, st in enumerate(self.real_strides(ignore_valid)) if isinstance(st, int) and st == 1]

  def axis_is_masked(self, axis:int) -> bool:
    if len(self.views) == 1:
      m = self.views[0].mask
      return m is not None and not _full(m[axis], self.shape[axis])
    _, valid = self.to_indexed_uops([UOp.range(dtypes.int, s, i) for i, s in enumerate(self.shape)])
    return any(x.op is Ops.RANGE and x.arg == axis for x in valid.toposort())

  # ***** symbolic variables *****

  def vars(self) -> set[UOp]: return set().union(*[v.vars() for v in self.views])
  def unbind(self) -> tuple[ShapeTracker, dict[UOp, int]]:
    unbound = [v.unbind() for v in self.views]
    return ShapeTracker(tuple(v for v, _ in unbound)), merge_dicts([d for _, d in unbound])
  @property
  def var_vals(self) -> dict[UOp, int]: return self.unbind()[1]
