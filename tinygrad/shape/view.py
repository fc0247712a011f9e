from __future__ import annotations
import functools, operator
from dataclasses import dataclass
from typing import Sequence, cast
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sint, resolve, smax, smin, ssimplify, sym_infer, sint_to_uop
from tinygrad.dtype import dtypes, DType
from tinygrad.helpers import prod, all_int

# ***** helpers on symbolic ints *****

def _is0(x:sint) -> bool: return isinstance(x, int) and x == 0
def _seq(a:sint, b:sint) -> bool:
  # True only when a and b are provably equal
  if a is b: return True
  if isinstance(a, int) and isinstance(b, int): return a == b
  return _is0(ssimplify(a - b))
def _order(a:sint, b:sint) -> int|None:
  # -1 when a <= b always, 1 when a >= b always, None when the bounds can't tell
  if isinstance(a, int) and isinstance(b, int): return -1 if a <= b else 1
  if isinstance(d := ssimplify(a - b), int): return -1 if d <= 0 else 1
  return -1 if d.vmax <= 0 else 1 if d.vmin >= 0 else None
def _max(a:sint, b:sint) -> sint: return smax(a, b) if (o := _order(a, b)) is None else (b if o < 0 else a)
def _min(a:sint, b:sint) -> sint: return smin(a, b) if (o := _order(a, b)) is None else (a if o < 0 else b)
def _simp(x:sint) -> sint: return ssimplify(x) if isinstance(x, UOp) else x
def _vmax(x:sint) -> int: return x if isinstance(x, int) else int(x.vmax)
def _vmin(x:sint) -> int: return x if isinstance(x, int) else int(x.vmin)
def _ceildiv(a:int, b:int) -> int: return -(-a // b)
def _unravel(shape:tuple[int, ...], idx:int) -> list[int]:
  ret: list[int] = []
  for s in reversed(shape):
    ret.append(idx % s)
    idx //= s
  return ret[::-1]
def _at_max(x:sint) -> int:
  # a concrete value of x with every variable at its maximum: only used to order products, never trusted for equality
  return x if isinstance(x, int) else int(sym_infer(x, {v: v.arg[2] for v in x.variables()}))

@functools.cache
def _canonicalize_strides(shape:tuple[sint, ...], strides:tuple[sint, ...]) -> tuple[sint, ...]:
  return tuple(0 if isinstance(s, int) and s == 1 else st for s, st in zip(shape, strides))
def canonicalize_strides(shape:Sequence[sint], strides:Sequence[sint]) -> tuple[sint, ...]: return _canonicalize_strides(tuple(shape), tuple(strides))

@functools.cache
def merge_dims(shape:tuple[int, ...], strides:tuple[int, ...], mask:tuple[tuple[int, int], ...]|None=None) -> tuple[tuple[int, int, int], ...]:
  """tinygrad's helper: runs of dims that address memory as one, each as (size, stride, size counting only non-zero strides).
  Size-1 dims vanish into the run before them; a dim of size 1 (or masked to one element) merges with the next."""
  ret: list[tuple[int, int, int]] = []
  merge_next = False
  for i, (s, st) in enumerate(zip(shape, strides)):
    if ret and s == 1: continue
    if ret and (merge_next or ret[-1][1] == s * st): ret[-1] = (ret[-1][0] * s, st, (s if merge_next else ret[-1][2] * s) if st != 0 else 0)
    else: ret.append((s, st, s if st != 0 else 0))
    merge_next = (mask[i][1] - mask[i][0] == 1) if mask is not None else s == 1
  return tuple(ret)

def _strides_for_shape(shape:tuple[sint, ...]) -> tuple[sint, ...]:
  ret: list[sint] = []
  acc: sint = 1
  for s in reversed(shape):
    ret.append(acc)
    acc = _simp(acc * s)   # simplified like the strides View.create keeps, so symbolic contiguity is seen
  return _canonicalize_strides(shape, tuple(ret[::-1]))
def strides_for_shape(shape:Sequence[sint]) -> tuple[sint, ...]: return _strides_for_shape(tuple(shape))

def _full(m:tuple[sint, sint], s:sint) -> bool: return _is0(m[0]) and _seq(m[1], s)
def _empty(m:tuple[sint, sint]) -> bool: return not resolve(m[0] < m[1], True)

# a merged run of old dims for reshape: (size, stride, mask begin, mask end, full), plus an offset correction
_Dim = tuple[sint, sint, sint, sint, bool]

def _merge_group(dims:list[_Dim]) -> tuple[_Dim, sint]|None:
  # fold the dims (outer first) into one; None when the result is not one affine, box-masked dim
  s, st, b, e, full = dims[-1]
  extra: sint = 0
  for sa, sta, ba, ea, fa in reversed(dims[:-1]):
    if not fa and isinstance(ba, int) and isinstance(ea, int) and ea - ba == 1:
      # only one index of the outer dim is valid, so its stride only moves the offset
      extra, b, e, full = extra + ba*(sta - s*st), ba*s + b, ba*s + e, False
    elif _seq(sta, st*s):
      if not full: return None   # a partial inner range repeated over the outer dim is not one interval
      b, e, full = ba*s, ea*s, fa
    else: return None
    s = sa*s
  return (s, st, b, e, full), extra

def _split_mask(b:int, e:int, sizes:list[int]) -> list[tuple[int, int]]|None:
  # the flat range [b, e) over dims `sizes` as a box, or None when it is not a box
  q, t = 1, len(sizes)
  while t > 0 and b % (q*sizes[t-1]) == 0 and e % (q*sizes[t-1]) == 0: q, t = q*sizes[t-1], t-1
  if t == 0: return [(0, s) for s in sizes]
  bq, eq = b // q, e // q
  if bq // sizes[t-1] != (eq-1) // sizes[t-1]: return None
  fixed = _unravel(tuple(sizes[:t-1]), bq // sizes[t-1]) if t > 1 else []
  return [(c, c+1) for c in fixed] + [(bq % sizes[t-1], (eq-1) % sizes[t-1] + 1)] + [(0, s) for s in sizes[t:]]

@dataclass(frozen=True)
class View:
  shape: tuple[sint, ...]
  strides: tuple[sint, ...]
  offset: sint
  mask: tuple[tuple[sint, sint], ...]|None
  contiguous: bool
  # the hash is kept (Views key the movement caches of every graph built) and never pickled: a symbolic size in it hashes by identity
  def __hash__(self) -> int:
    try: return self.__dict__["_hash"]
    except KeyError: self.__dict__["_hash"] = h = hash((self.shape, self.strides, self.offset, self.mask, self.contiguous))
    return h
  def __reduce__(self): return View, (self.shape, self.strides, self.offset, self.mask, self.contiguous)

  @staticmethod
  def create(shape:Sequence[sint], strides:Sequence[sint]|None=None, offset:sint=0, mask:Sequence[tuple[sint, sint]]|None=None) -> View:
    return _create(tuple(shape), None if strides is None else tuple(strides), offset, None if mask is None else tuple(tuple(m) for m in mask))

  def size(self) -> int: return prod([_vmax(s) for s in self.shape])
  @property
  def ndim(self) -> int: return len(self.shape)
  def fully_masked(self) -> bool: return self.mask is not None and any(_empty(m) for m in self.mask)

  # ***** lowering *****

  def to_indexed_uops(self, idxs:Sequence[UOp]|None=None, vexpr:UOp=UOp.const(dtypes.bool, True)) -> tuple[UOp, UOp]:
    if idxs is None: idxs = [UOp.range(dtypes.int, s, i) for i, s in enumerate(self.shape)]
    if len(idxs) != len(self.shape): raise ValueError(f"to_indexed_uops needs {len(self.shape)} indices for shape {self.shape}, got {len(idxs)}")
    dt: DType = idxs[0].dtype if len(idxs) else dtypes.int
    def u(x:sint) -> UOp: return UOp.const(dt, x) if isinstance(x, int) else x.cast(dt)
    terms = [] if _is0(self.offset) else [u(self.offset)]
    conds: list[UOp] = []
    for idx, s, st, m in zip(idxs, self.shape, self.strides, self.mask if self.mask is not None else [None]*len(self.shape)):
      if not _is0(st) and not (isinstance(s, int) and s == 1): terms.append(idx if isinstance(st, int) and st == 1 else idx*u(st))
      if m is not None:
        if not _is0(m[0]): conds.append(idx >= u(m[0]))
        if not _seq(m[1], s): conds.append(idx < u(m[1]))
    iexpr = functools.reduce(operator.add, terms) if terms else u(0)
    if self.fully_masked(): conds = [UOp.const(dtypes.bool, False)]
    if vexpr.op is Ops.CONST and vexpr.arg is True and conds: vexpr, conds = conds[0], conds[1:]
    return iexpr, functools.reduce(operator.and_, conds, vexpr)

  # ***** symbolic variables *****

  def _uops(self) -> list[UOp]:
    flat = [*self.shape, *self.strides, self.offset, *([x for m in self.mask for x in m] if self.mask is not None else [])]
    return [x for x in flat if isinstance(x, UOp)]
  def vars(self) -> set[UOp]:
    # bound variables as their BIND, unbound ones as their DEFINE_VAR
    nodes = {n for x in self._uops() for n in x.toposort() if n.op in (Ops.BIND, Ops.DEFINE_VAR)}
    bound = {n.src[0] for n in nodes if n.op is Ops.BIND}
    return {n for n in nodes if n not in bound}
  def substitute(self, dvars:dict[UOp, UOp]) -> View:
    def sub(x:sint) -> sint:
      if isinstance(x, int): return x
      ret = x.substitute(dvars)
      return ret.arg if ret.op is Ops.CONST else ret
    mask = tuple((sub(b), sub(e)) for b, e in self.mask) if self.mask is not None else None
    return View.create(tuple(sub(s) for s in self.shape), tuple(sub(s) for s in self.strides), sub(self.offset), mask)
  def unbind(self) -> tuple[View, dict[UOp, int]]:
    binds = [v for v in self.vars() if v.op is Ops.BIND]
    return self.substitute({b: b.src[0] for b in binds}), {b.src[0]: b.src[1].arg for b in binds}

  # ***** movement ops *****

  def _resize(self, arg:tuple[tuple[sint, sint], ...], pad_mask:tuple[tuple[sint, sint], ...]|None=None) -> View:
    # a window [b, e) per dim in the current coordinates, which may reach outside [0, s) where pad_mask marks the real data
    offset = self.offset
    for (b, _), st in zip(arg, self.strides):
      if not _is0(b) and not _is0(st): offset = offset + b*st
    new_shape = tuple(e - b for b, e in arg)
    mask = None
    if self.mask is not None or pad_mask is not None:
      old = self.mask if self.mask is not None else tuple((0, s) for s in self.shape)
      mask = tuple((_max(0, mb - b), _min(ns, me - b)) for (mb, me), (b, _), ns in zip(old, arg, new_shape))
      if pad_mask is not None: mask = tuple((_max(mb, pb), _min(me, pe)) for (mb, me), (pb, pe) in zip(mask, pad_mask))
    return View.create(new_shape, self.strides, offset, mask)

  def pad(self, arg:tuple[tuple[sint, sint], ...]) -> View:
    arg = tuple(tuple(x) for x in arg)  # type: ignore[misc]
    if len(arg) != len(self.shape): raise ValueError(f"pad {arg} needs one (before, after) pair per dim of shape {self.shape}")
    for (b, e), s in zip(arg, self.shape):
      if not resolve(s + b + e >= 0): raise ValueError(f"pad {arg} on shape {self.shape} leaves a negative size")
    if all(_is0(b) and _is0(e) for b, e in arg): return self
    return self._resize(tuple((-b, s+e) for (b, e), s in zip(arg, self.shape)), tuple((b, s+b) for (b, _), s in zip(arg, self.shape)))

  def shrink(self, arg:tuple[tuple[sint, sint], ...]) -> View:
    arg = tuple(tuple(x) for x in arg)  # type: ignore[misc]
    if len(arg) != len(self.shape): raise ValueError(f"shrink {arg} needs one (start, end) pair per dim of shape {self.shape}")
    for (b, e), s in zip(arg, self.shape):
      if not (resolve(0 <= b) and resolve(b <= e) and resolve(e <= s)): raise ValueError(f"shrink {arg} out of range for shape {self.shape}")
    if all(_is0(b) and _seq(e, s) for (b, e), s in zip(arg, self.shape)): return self
    return self._resize(arg)

  def expand(self, new_shape:tuple[sint, ...]) -> View:
    new_shape = tuple(new_shape)
    if len(new_shape) != len(self.shape): raise ValueError(f"expand from {self.shape} to {new_shape}: the number of dims differs")
    for s, ns in zip(self.shape, new_shape):
      if not (_seq(s, ns) or (isinstance(s, int) and s == 1)):
        raise ValueError(f"expand from {self.shape} to {new_shape}: only size-1 dims can expand")
      if isinstance(ns, int) and ns < 0: raise ValueError(f"expand from {self.shape} to {new_shape}: negative dimension")
    if self.shape == new_shape: return self
    if 0 in self.shape: return View.create(new_shape)
    mask = None
    if self.mask is not None:
      # an expanded dim had size 1: its mask was full, or empty when the whole view is masked
      mask = tuple(m if _seq(s, ns) else ((0, 0) if _empty(m) else (0, ns)) for m, s, ns in zip(self.mask, self.shape, new_shape))
    return View.create(new_shape, tuple(st if _seq(s, ns) else 0 for st, s, ns in zip(self.strides, self.shape, new_shape)), self.offset, mask)

  def permute(self, axis:tuple[int, ...]) -> View:
    axis = tuple(axis)
    if not all(isinstance(a, int) for a in axis) or sorted(axis) != list(range(len(self.shape))):
      raise ValueError(f"permute {axis} is not a permutation of the {len(self.shape)} axes of shape {self.shape}")
    return View.create(tuple(self.shape[a] for a in axis), tuple(self.strides[a] for a in axis), self.offset,
                       tuple(self.mask[a] for a in axis) if self.mask is not None else None)

  def flip(self, arg:tuple[bool, ...]) -> View:
    if len(arg) != len(self.shape): raise ValueError(f"flip {arg} needs one flag per dim of shape {self.shape}")
    offset = self.offset
    for f, s, st in zip(arg, self.shape, self.strides):
      if f and not _is0(st): offset = offset + (s-1)*st
    strides = tuple(-st if f else st for f, st in zip(arg, self.strides))
    mask = tuple((s-e, s-b) if f else (b, e) for f, (b, e), s in zip(arg, self.mask, self.shape)) if self.mask is not None else None
    return View.create(self.shape, strides, offset, mask)

  def reshape(self, new_shape:tuple[sint, ...]) -> View|None: return _reshape(self, tuple(new_shape))
  def _reshape(self, new_shape:tuple[sint, ...]) -> View|None:
    if self.shape == new_shape: return self
    if any(not resolve(s >= 0) for s in new_shape): raise ValueError(f"reshape from {self.shape} to {new_shape}: negative dimension")
    old_sz, new_sz = prod(self.shape), prod(new_shape)
    if isinstance(old_sz, int) and isinstance(new_sz, int):
      if old_sz != new_sz: raise ValueError(f"reshape from {self.shape} to {new_shape}: sizes {old_sz} and {new_sz} differ")
    elif resolve(sint_to_uop(old_sz).ne(new_sz), False):
      raise ValueError(f"reshape from {self.shape} to {new_shape}: sizes {old_sz} and {new_sz} differ")
    if 0 in self.shape or self.contiguous: return View.create(new_shape)
    if self.fully_masked(): return View.create(new_shape, mask=((0, 0),)*len(new_shape)) if new_shape else None
    # size-1 dims carry nothing (stride 0, full mask): match the other dims in groups of equal product, merge each group then split it
    mask = self.mask if self.mask is not None else tuple((0, s) for s in self.shape)
    old: list[_Dim] = [(s, st, b, e, _full((b, e), s)) for s, st, (b, e) in zip(self.shape, self.strides, mask) if not _seq(s, 1)]
    new = [i for i, s in enumerate(new_shape) if not _seq(s, 1)]
    new_strides: list[sint] = [0]*len(new_shape)
    new_mask: list[tuple[sint, sint]] = [(0, s) for s in new_shape]
    offset, i, j = self.offset, 0, 0
    while i < len(old) or j < len(new):
      if i == len(old) or j == len(new): return None
      gi, gj, po, pn = i+1, j+1, old[i][0], new_shape[new[j]]
      while not _seq(po, pn):
        if _at_max(po) < _at_max(pn) and gi < len(old): po, gi = po*old[gi][0], gi+1
        elif _at_max(pn) < _at_max(po) and gj < len(new): pn, gj = pn*new_shape[new[gj]], gj+1
        else: return None
      if (merged := _merge_group(old[i:gi])) is None: return None
      (_, st, b, e, full), extra = merged
      offset = offset + extra if not _is0(extra) else offset
      sizes = [new_shape[k] for k in new[j:gj]]
      acc: sint = st
      for k in reversed(new[j:gj]):
        new_strides[k] = acc
        acc = acc*new_shape[k]
      if not full and gj - j == 1: new_mask[new[j]] = (b, e)
      elif not full:
        if not (isinstance(b, int) and isinstance(e, int) and all_int(sizes)): return None
        if (box := _split_mask(b, e, list(sizes))) is None: return None
        for k, m in zip(new[j:gj], box): new_mask[k] = m
      i, j = gi, gj
    return View.create(new_shape, tuple(new_strides), offset, tuple(new_mask))

  # ***** merging, inverting, minifying *****

  def __add__(self, vm1:View) -> View|None: return _add(self, vm1)
  def _add(self, vm1:View) -> View|None:
    # self applied on top of vm1: self's (flat) index addresses the positions of vm1.shape
    top, low = self, vm1
    if low.contiguous: return top
    if 0 in top.shape: return View.create(top.shape)
    if 0 in low.shape or low.fully_masked(): return View.create(top.shape, mask=((0, 0),)*len(top.shape)) if top.shape else None
    if top.contiguous and _seq(prod(top.shape), prod(low.shape)): return low.reshape(top.shape)
    if top.mask is not None:
      if top.fully_masked(): return top
      # merge only the part top can read, then pad it back
      if (merged := top.shrink(top.mask) + low) is None: return None
      return merged.pad(tuple((b, s-e) for (b, e), s in zip(top.mask, top.shape)))
    return _merge_unmasked(top, low)

  def _invert_raw(self) -> View|None:
    # the inverse of a bijective view, in the order of the buffer's dims (sizes of the masked region, sorted by stride)
    if not all_int(self.strides) or not isinstance(self.offset, int): return None
    ret, region = View.create(self.shape), self
    if self.mask is not None:
      if self.fully_masked(): return None
      ret, region = ret.shrink(self.mask), self.shrink(self.mask)
    ret = ret.flip(tuple(st < 0 for st in region.strides))
    region = region.flip(tuple(st < 0 for st in region.strides))
    order = sorted(range(len(region.shape)), key=lambda a: -cast(int, region.strides[a]))
    region = region.permute(tuple(order))
    if not region.contiguous: return None
    return ret.permute(tuple(order))

  def invert(self, out_shape:tuple[sint, ...]) -> View|None:
    # a view of out_shape (the shape below this view) that maps back to the positions of self.shape, when self is a bijection
    if (ret := self._invert_raw()) is None or not _seq(prod(ret.shape), prod(out_shape)): return None
    return ret.reshape(tuple(out_shape))

  def minify(self) -> View:
    ret, i = self, 0
    while i < len(ret.shape) - 1:
      if (nv := ret.reshape(ret.shape[:i] + (ret.shape[i]*ret.shape[i+1],) + ret.shape[i+2:])) is not None: ret = nv
      else: i += 1
    return ret

# views are immutable, so their slow methods are cached (errors are raised again each time)
@functools.cache
def _reshape(v:View, new_shape:tuple[sint, ...]) -> View|None: return v._reshape(new_shape)
@functools.cache
def _add(top:View, low:View) -> View|None: return top._add(low)

@functools.cache
def _create(shape:tuple[sint, ...], strides:tuple[sint, ...]|None, offset:sint, mask:tuple[tuple[sint, sint], ...]|None) -> View:
  # symbolic fields in their simplest form, so equal views compare equal
  shape, offset = tuple(_simp(s) for s in shape), _simp(offset)
  if strides is not None: strides = tuple(_simp(s) for s in strides)
  if mask is not None: mask = tuple((_simp(b), _simp(e)) for b, e in mask)
  if any(isinstance(s, int) and s < 0 for s in shape): raise ValueError(f"view shape {shape} has a negative dimension")
  if strides is not None and len(strides) != len(shape): raise ValueError(f"view shape {shape} and strides {strides} differ in length")
  if mask is not None and len(mask) != len(shape): raise ValueError(f"view shape {shape} and mask {mask} differ in length")
  strides = canonicalize_strides(shape, strides) if strides is not None else strides_for_shape(shape)
  if mask is not None:
    if any(_empty(m) for m in mask): strides, offset, mask = (0,)*len(shape), 0, ((0, 0),)*len(shape)
    elif all(_full(m, s) for m, s in zip(mask, shape)): mask = None
    else:
      # a dim with one valid index needs no stride: fold it into the offset
      new_strides = list(strides)
      for k, ((b, e), st) in enumerate(zip(mask, strides)):
        if isinstance(b, int) and isinstance(e, int) and e - b == 1 and not _is0(st): offset, new_strides[k] = offset + b*st, 0
      strides = tuple(new_strides)
  contiguous = _is0(offset) and mask is None and strides == strides_for_shape(shape)
  return View(shape, strides, offset, mask, contiguous)

def _merge_unmasked(top:View, low:View) -> View|None:
  # project top's offset and strides onto low's dims; valid when every projected coordinate stays inside its dim
  if not (all_int(low.shape) and all_int(top.shape) and all_int(top.strides) and isinstance(top.offset, int)): return None
  lshape, tshape, tstrides, lsize = low.shape, top.shape, top.strides, prod(low.shape)
  if not 0 <= top.offset < lsize: return None
  origin = _unravel(lshape, top.offset)
  terms: list[list[tuple[int, int]]] = [[] for _ in lshape]   # per low dim: (top dim, coordinate step)
  for k, (s, st) in enumerate(zip(tshape, tstrides)):
    if st == 0: continue
    if not 0 <= top.offset + st*(s-1) < lsize: return None
    for d, (o, n) in enumerate(zip(origin, _unravel(lshape, top.offset + st))):
      if n != o: terms[d].append((k, n - o))
  def span(coefs:list[tuple[int, int]], base:int) -> tuple[int, int]:
    return base + sum(min(0, c*(tshape[k]-1)) for k, c in coefs), base + sum(max(0, c*(tshape[k]-1)) for k, c in coefs)
  # group low's dims from the innermost so each group's part of the flat index stays inside the group; coarser groups need a reshape of low
  groups: list[int] = []
  gsize, gbase, gcoef = 1, 0, dict[int, int]()
  for d in reversed(range(len(lshape))):
    gbase += origin[d]*gsize
    for k, c in terms[d]: gcoef[k] = gcoef.get(k, 0) + c*gsize
    gsize *= lshape[d]
    lo, hi = span(list(gcoef.items()), gbase)
    if 0 <= lo and hi < gsize: groups, gsize, gbase, gcoef = groups + [gsize], 1, 0, {}
  if gsize != 1: return None
  if len(groups) != len(lshape): return None if (rlow := low.reshape(tuple(groups[::-1]))) is None else top + rlow
  if low.mask is not None:
    # low's mask becomes a mask on top where a low dim follows exactly one top dim
    new_mask = [(0, s) for s in tshape]
    for d, (b, e) in enumerate(low.mask):
      lo, hi = span(terms[d], origin[d])
      if resolve(b <= lo, False) and resolve(hi < e, False): continue
      if not all_int((b, e)) or len(terms[d]) > 1: return None
      if not terms[d]: return View.create(tshape, mask=((0, 0),)*len(tshape)) if tshape else None
      (k, c), o = terms[d][0], origin[d]
      lo_i, hi_i = (_ceildiv(b - o, c), (e - 1 - o) // c) if c > 0 else (_ceildiv(e - 1 - o, c), (b - o) // c)
      new_mask[k] = (max(new_mask[k][0], lo_i), min(new_mask[k][1], hi_i + 1))
    if any(b >= e for b, e in new_mask): return View.create(tshape, mask=((0, 0),)*len(tshape))
    if any(m != (0, s) for m, s in zip(new_mask, tshape)): return View.create(tshape, tstrides, top.offset, tuple(new_mask)) + low
  strides: list[sint] = [0]*len(tshape)
  offset: sint = low.offset
  for d, (o, lst) in enumerate(zip(origin, low.strides)):
    if _is0(lst): continue
    if o != 0: offset = offset + o*lst
    for k, c in terms[d]: strides[k] = strides[k] + c*lst
  return View.create(tshape, tuple(strides), offset)
