# the user-facing Tensor: a lazy wrapper around one UOp. Every method builds new UOps; nothing runs until data is asked for
from __future__ import annotations
import builtins, contextlib, math, string, struct, weakref, functools, itertools
from typing import Any, Callable, ClassVar, Iterator, Sequence, TypeVar, cast
from tinygrad.dtype import DType, DTypeLike, ConstType, dtypes, to_dtype, least_upper_dtype, least_upper_float, sum_acc_dtype, truncate
from tinygrad.dtype import float_to_fp8, fp8_to_float, _to_np_dtype, _from_np_dtype
from tinygrad.helpers import _METADATA  # noqa: F401  # tinygrad's scripts import it from here
from tinygrad.helpers import prod, argfix, all_int, fully_flatten, WINO
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.mathtraits import MathTrait
from tinygrad.uop.ops import UOp, sint, resolve, sint_to_uop, _unique_counter, ZERO_FORWARD
from tinygrad.device import Device
from tinygrad.gradient import custom_grads
from tinygrad.schedule.packing import conv_weight_panels, matmul_weight_panels
from tinygrad.engine.schedule import create_schedule_with_vars
from tinygrad.engine.realize import run_schedule, capturing, capturing_inputs, JitError

DeviceLike = str|tuple[str, ...]|None  # one device, several (a sharded tensor), or None for Device.DEFAULT

# PyTorch raises RuntimeError for a bad shape, argument or dtype. Every ValueError and TypeError raised in this file is also a RuntimeError,
# so code that catches PyTorch's class and code that catches Python's both work (names shadowed on purpose: new raises get it too).
class ValueError(RuntimeError, builtins.ValueError): pass  # noqa: A001
class TypeError(RuntimeError, builtins.TypeError): pass  # noqa: A001
class NotSupportedError(NotImplementedError, builtins.TypeError, builtins.ValueError): pass  # a dtype or mode the op lacks (torch's class)
class EmptyReduceError(builtins.IndexError, ValueError): pass  # torch: IndexError naming a dim, RuntimeError without one
class IntZeroDivisionError(RuntimeError, ZeroDivisionError): pass  # torch's class (RuntimeError "ZeroDivisionError"), and Python's

# every live Tensor (weak: the registry never keeps a Tensor alive), and those of them whose UOp is a graph still to compute (not a buffer
# or a view of one): a realize visits only these, not a model's weights
all_tensors: dict[weakref.ref[Tensor], None] = {}
_lazy_tensors: dict[weakref.ref[Tensor], None] = {}
# the live tensors that were made requiring grad (a realize and backward look for leaves and params here, not among every live tensor)
_grad_tensors: dict[weakref.ref[Tensor], None] = {}
_MOVEMENT = GroupOp.Movement
def _drop_tensor(ref:weakref.ref[Tensor]) -> None:
  all_tensors.pop(ref, None)
  _lazy_tensors.pop(ref, None)
  _grad_tensors.pop(ref, None)
def _storage(u:UOp) -> UOp:
  # what a tensor's elements live in: below its movement ops and DETACHes (x.detach() and its views share x's buffer, as in torch)
  while (u := u.base).op is Ops.DETACH: u = u.src[0]
  return u
def _undetach(u:UOp) -> UOp:
  # a view without the DETACHes in it: what an update made through a detached alias writes into
  x = u
  while (op := x.op) in _MOVEMENT: x = x.src[0]
  if op is not Ops.DETACH: return u   # (the usual case: no DETACH in the chain)
  # (a loop, not recursion: a chain of thousands of views stays under Python's recursion limit)
  chain, x = [], u
  while x.op in _MOVEMENT or x.op is Ops.DETACH: chain.append(x); x = x.src[0]
  for c in reversed(chain):
    if c.op is not Ops.DETACH: x = c if c.src[0] is x else c.replace(src=(x,) + c.src[1:])
  return x
def _unview(u:UOp, *vals:UOp) -> tuple[UOp, ...]|None:
  # vals (of u's shape) put where the view u addresses its base (or the view below it that has a gradient origin: the realized tensor it
  # views), zeros elsewhere, that base last; None for a view that no single write inverts (expand)
  while u.op in _MOVEMENT and u not in _grad_origin:
    s, a = u.src[0], u.arg
    if u.op is Ops.SHRINK: vals = tuple(v.pad(tuple((b, n - e) for (b, e), n in zip(a, s.shape))) for v in vals)
    elif u.op is Ops.RESHAPE: vals = tuple(v.reshape(s.shape) for v in vals)
    elif u.op is Ops.PERMUTE: vals = tuple(v.permute(tuple(a.index(i) for i in range(len(a)))) for v in vals)
    elif u.op is Ops.FLIP: vals = tuple(v.flip(a) for v in vals)
    elif u.op is Ops.PAD: vals = tuple(v.shrink(tuple((b, b + n) for (b, _), n in zip(a, s.shape))) for v in vals)   # (a step's padding)
    else: return None
    u = s
  return vals + (u,)
def _strided(u:UOp) -> bool:
  # a view that addresses its buffer with one set of non-negative strides, as torch's views do (slices, steps, permutes, expands, diagonal,
  # unfold); flip, pad, repeat and a reshape of a transpose make copies in torch: they are values computed from the buffer, not views of it
  if (ret := u.__dict__.get("_strided")) is not None: return ret
  st = _undetach(u).st
  if len(st.views) > 1: st = st.simplify()
  ret = u.__dict__["_strided"] = len(st.views) == 1 and (v := st.views[0]).mask is None and all(not isinstance(x, int) or x >= 0 for x in v.strides)
  return ret
def _track(ref:weakref.ref[Tensor], u:UOp) -> None:
  # (_storage inlined for the usual view without a DETACH: every realize tracks its outputs here)
  if (op := u.op) is not Ops.BUFFER and (op not in _MOVEMENT and op is not Ops.DETACH or
                                         (b := c if (c := u.base).op is not Ops.DETACH else _storage(c)).op is not Ops.BUFFER):
    _lazy_tensors[ref] = None
  else:
    _lazy_tensors.pop(ref, None)
    # the tensors that view a buffer (weakly, on its UOp; dead ones pruned as the dict doubles): an in-place update finds its aliases there
    if op is Ops.BUFFER: b = u
    if (n := len(views := b.__dict__.setdefault("_views", {}))) >= 16 and not n & (n - 1):
      views = b.__dict__["_views"] = {r: None for r in views if r() is not None}
    views[ref] = None

# UOps of tensors that require grad (weak: a graph that dies drops out), and UOps known to reach none of them
_K = TypeVar("_K")
_V = TypeVar("_V")
class _WeakKeys(weakref.WeakKeyDictionary[_K, _V]):
  data: dict   # (typeshed leaves it out) `not x.data` tests emptiness without WeakKeyDictionary.__len__, which is Python code
_grad_uops: _WeakKeys[UOp, None] = _WeakKeys()
_no_grad_uops: _WeakKeys[UOp, None] = _WeakKeys()
_no_path_uops: _WeakKeys[UOp, None] = _WeakKeys()   # the same for paths of any dtype
# buffers with a pending ASSIGN of a value that requires grad: the realize that runs it copies the old contents first, for the gradient
_grad_assign_targets: _WeakKeys[UOp, None] = _WeakKeys()
# buffers with a pending ASSIGN (the latest, weakly): only a realize that runs one looks for lazy tensors still reading the old contents
_assign_targets: _WeakKeys[UOp, weakref.ref[UOp]] = _WeakKeys()

# UOps a backward walked through (its root and the realized nodes whose origins it used): like PyTorch, which frees that graph, a backward
# through one after an in-place update overwrote what its graph reads raises instead of keeping a copy of the old contents for it (a loss
# read after the optimizer step is computed before the step, but no copy of every weight is made for a second backward of it)
_consumed: _WeakKeys[UOp, None] = _WeakKeys()
_modified: _WeakKeys[UOp, None] = _WeakKeys()   # realized nodes whose gradient graph reads a buffer overwritten since

def _reads(roots:list[UOp], targets:set[UOp], skip:set[UOp]) -> set[UOp]:
  """The nodes under roots that read one of targets (targets included), not looking into targets or skip. (A loop without a call per node:
  a realize that runs an ASSIGN walks every live lazy graph with it.)"""
  old: set[UOp] = set()
  seen: set[UOp] = set()
  stack = [(r, False) for r in roots]
  while stack:
    u, done = stack.pop()
    if done:
      if not old.isdisjoint(u.src): old.add(u)
    elif u not in seen:
      seen.add(u)
      if u in targets: old.add(u)
      elif u not in skip:
        stack.append((u, True))
        for s in u.src:
          if s not in seen: stack.append((s, False))
  return old

def _old_readers(roots:list[UOp]) -> tuple[set[UOp], list[Tensor], set[UOp], list[Tensor], list[UOp]]:
  """The ASSIGNs a realize of roots runs; the other live lazy tensors whose graphs read the old contents of a buffer one overwrites (like
  PyTorch's eager ops they keep the value from before the update: `keep = y*1; y += 1` leaves keep as it was), which the same schedule
  realizes, before the ASSIGN; the buffers whose old contents a gradient still needs (copied before the ASSIGN runs); and the gradient
  readers and origins that read others but were consumed by a backward (marked modified instead)."""
  assigns: set[UOp] = set()
  seen, stack = set(roots), list(roots)
  while stack:
    if (u := stack.pop()).op is Ops.ASSIGN: assigns.add(u)
    for s in u.src:
      if s not in seen: seen.add(s); stack.append(s)
  in_roots, readers, snap_bufs = set(roots), [], set()
  consumed: list[tuple[Tensor|UOp, set[UOp]]] = []
  while assigns:
    # an ASSIGN this realize runs is its buffer's new value afterwards (not looked into); one that a later ASSIGN into the same buffer
    # overwrites in this realize is not, and is read like the buffer's old contents
    targets = {a.buf_uop for a in assigns} | {b for a in assigns if (b := a.src[0].base).op is Ops.ASSIGN}
    lazy = [t for ref in list(_lazy_tensors) if (t := ref()) is not None and t._uop not in in_roots]
    old = _reads([t._uop for t in lazy], targets, assigns)
    if not (new := [t for t in lazy if t._uop in old]): break
    readers += new
    in_roots.update(t._uop for t in new)
    for t in new:
      if not t._requires_grad: continue
      bufs = _reads([t._uop], targets, assigns) & targets
      if t._uop in _consumed: consumed.append((t, bufs))
      else: snap_bufs |= bufs
    # a reader's own pending ASSIGNs run too: their buffers' old readers are looked for in another round
    if not (more := {u for t in new for u in t._uop.toposort() if u.op is Ops.ASSIGN} - assigns): break
    assigns |= more
  if assigns and _grad_origin.data:
    targets = {a.buf_uop for a in assigns}
    for k, o in list(_grad_origin.items()):
      if not (bufs := _reads([o], targets, assigns) & targets): continue
      if k in _consumed: consumed.append((k, bufs))
      else: snap_bufs |= bufs
  stale = [x for x, bufs in consumed if not bufs <= snap_bufs]
  return assigns, readers, snap_bufs, [t for t in stale if isinstance(t, Tensor)], [k for k in stale if isinstance(k, UOp)]

def _reaches_grad(u:UOp, floats_only:bool=True) -> bool:
  """Like PyTorch, a result requires grad when a float path not cut by DETACH reaches a tensor that requires grad (breadth first: the
  nearest tensors are usually the ones that decide). Backward looks further: through ints and bools too (x.sign() gets zeros)."""
  if not _grad_uops.data: return False   # (this runs for every Tensor made)
  known_not = _no_grad_uops if floats_only else _no_path_uops
  queue, seen, i = [u], {u}, 0
  while i < len(queue):
    x, i = queue[i], i+1
    if x in _grad_uops or (not floats_only and x in _grad_origin): return True
    if x.op is Ops.DETACH or x in known_not or (floats_only and not dtypes.is_float(x.dtype.scalar())): continue
    for s in x.src:
      if s not in seen: seen.add(s); queue.append(s)
  known_not[u] = None
  return False

def _kernelless_view(uop:UOp, dtype:DType|None=None) -> UOp|None:
  """A device that runs no kernels (DISK) still slices, reshapes and bitcasts: a contiguous range of its buffer becomes a sub-buffer
  (a new BUFFER UOp over a Buffer view), which copies out like any buffer. None on devices that run kernels."""
  if uop.base.op is not Ops.BUFFER or not isinstance(dev := uop.device, str) or Device[dev].runtime is not None: return None
  from tinygrad.uop.ops import buffers
  from tinygrad.shape.view import strides_for_shape
  v, dt = uop.st.views[-1], dtype or uop.dtype
  if len(uop.st.views) != 1 or v.mask is not None or not all_int(v.shape) or not isinstance(v.offset, int) or \
     any(st != cs for st, cs, n in zip(v.strides, strides_for_shape(v.shape), v.shape) if n != 1):
    raise RuntimeError(f"{dev} runs no kernels: only a contiguous range of its buffer can be viewed, got shape {v.shape} strides {v.strides}")
  nbytes = prod(v.shape) * uop.dtype.itemsize
  shape = v.shape if dt.itemsize == uop.dtype.itemsize else v.shape[:-1] + (v.shape[-1] * uop.dtype.itemsize // dt.itemsize,)
  new = UOp.new_buffer(dev, nbytes // dt.itemsize, dt)
  buffers[new] = uop.base.buffer.view(nbytes // dt.itemsize, dt, v.offset * uop.dtype.itemsize).ensure_allocated()
  return new.reshape(shape)

class _TensorMeta(type):
  # Tensor.no_grad is tinygrad's class flag (`Tensor.no_grad = True`) and also torch's context manager (`with Tensor.no_grad():`)
  _no_grad = False
  @property
  def no_grad(cls) -> _NoGrad: return _NoGrad(_TensorMeta._no_grad)
  @no_grad.setter
  def no_grad(cls, value:bool) -> None: _TensorMeta._no_grad = bool(value)

class _NoGrad(contextlib.ContextDecorator):
  """`with Tensor.no_grad():` or @Tensor.no_grad(): results made in the block don't require grad; bool(Tensor.no_grad) is the flag."""
  def __init__(self, state:bool, mode:bool=True): self.state, self.mode, self.prev = state, mode, False
  def __bool__(self) -> bool: return self.state
  def __call__(self, fn:Any=None) -> Any: return _NoGrad(self.state) if fn is None else super().__call__(fn)
  def __enter__(self): self.prev, _TensorMeta._no_grad = _TensorMeta._no_grad, self.mode
  def __exit__(self, *exc:Any): _TensorMeta._no_grad = self.prev

# a realized node computed from tensors that require grad keeps the graph it came from (like PyTorch's grad_fn): forward reads the
# buffer, backward follows the graph (weak: it goes when no graph uses the buffer)
_grad_origin: _WeakKeys[UOp, UOp] = _WeakKeys()

def _self_marker(v:UOp) -> UOp:
  # what an origin holds for its own node's current value: v itself there would keep v (and its buffer) alive in the weak dict forever
  return UOp(Ops.BUFFER, v.dtype, (UOp(Ops.UNIQUE, arg=-(1 << 62)), UOp(Ops.DEVICE, arg=v.device)), prod(v.shape)).reshape(v.shape)
def _origin_of(u:UOp) -> UOp|None:
  return None if (o := _grad_origin.get(u)) is None else o.substitute({_self_marker(u): u.detach()})

def _with_grad_origins(root:UOp) -> UOp:
  """root as backward sees it: every realized node that has a gradient origin put back as that graph, at any depth."""
  if not _grad_origin.data: return root
  new: dict[UOp, UOp] = {}
  in_progress: set[UOp] = set()
  stack: list[tuple[UOp, bool]] = [(root, False)]
  while stack:
    u, children_done = stack.pop()
    if u in new: continue
    if (origin := _origin_of(u)) is not None:
      if u in _modified: raise RuntimeError("one of the variables needed for gradient computation has been modified by an inplace operation: "
                                            f"a realized {u.shape} value was computed from a buffer overwritten since a backward went through it")
      _consumed[u] = None
    # (a DETACH passes no gradient: it reads what it reads now, and an origin below it may name its own buffer's old value)
    if u.op is Ops.DETACH: new[u] = u
    elif not children_done:
      # everything above u's own entry on the stack is below u in the graph: meeting u there again is a cycle
      if u in in_progress: raise RuntimeError(f"gradient origins form a cycle at {u.op} {u.shape}")
      in_progress.add(u)
      stack.append((u, True))
      stack.extend((s, False) for s in ((origin,) if origin is not None else u.src) if s not in new)
    elif origin is not None: new[u] = new[origin]
    elif not u.src or (srcs := tuple(new[s] for s in u.src)) == u.src: new[u] = u
    # (an ASSIGN is its value going backward: one rebuilt on an origin would be a second write, maybe into no buffer at all)
    elif u.op is Ops.ASSIGN: new[u] = srcs[1]
    else: new[u] = u.replace(src=srcs)
  return new[root]

def _assigns_as_values(u:UOp, buf:UOp) -> UOp:
  # u with each ASSIGN into buf as the value it wrote: an earlier update in a chain that one realize ran, whose target is the old contents
  topo = u.toposort()
  if not any(x.op is Ops.ASSIGN for x in topo): return u
  new: dict[UOp, UOp] = {}
  for x in topo:
    srcs = tuple(new[s] for s in x.src)
    new[x] = srcs[1] if x.op is Ops.ASSIGN and x.buf_uop is buf else x.replace(src=srcs) if srcs != x.src else x
  return new[u]

def _apply_map_to_tensors(becomes_map:dict[UOp, UOp], first_new_buffer:int=0, snapshots:dict[UOp, UOp]|None=None) -> None:
  if not becomes_map: return
  new_origins: dict[UOp, UOp] = {}
  if _grad_uops.data:
    leaves = {t._uop for ref in list(_grad_tensors) if (t := ref()) is not None and t.is_leaf and t._requires_grad}
    cut, floats, fresh = [], [], []
    leaf_bufs = {becomes_map.get(k, k).base for k in leaves}
    for k, v in becomes_map.items():
      if k in leaves: continue
      if not _reaches_grad(k, floats_only=False): cut.append(k)
      # (a leaf's buffer and its views are the leaf: x.contiguous() of a realized leaf x, the ASSIGN that filled a leaf (Tensor.zeros(
      # requires_grad=True)) and views of it give them no origin)
      elif v.base not in leaf_bufs:
        # a buffer this realize wrote fresh holds k; an older one (ASSIGN target, CONTIGUOUS of a buffer) is in k, meaning its old value
        old = v.base.op is Ops.BUFFER and v.base.src[0].arg < first_new_buffer
        # (the old value is overwritten: the origin's value is the buffer's, its gradient k's with the buffer's value for its old one)
        k2 = _assigns_as_values(k.src[1] if k.op is Ops.ASSIGN and k.src[1].shape == v.shape else k, v.base)
        k2 = k2.substitute({v: o if (o := _origin_of(v)) is not None else v.detach()})
        # (its derivatives read the old contents: the copy this realize made before the ASSIGN ran, where there is one)
        if old and snapshots and (snap := snapshots.get(v.base)) is not None: k2 = k2.substitute({v.base: snap})
        new_origins[v] = (v.detach() + (k2 - k2.detach())).substitute({v: _self_marker(v)}) if old else k
        if not old: fresh.append(v)
        if _reaches_grad(k): floats.append(v)
    # a realize must not open a gradient path: x.detach() of a realized x stays a DETACH, not x's own buffer
    for k in cut:
      if _reaches_grad(v := becomes_map[k], floats_only=False) or any(u in new_origins for u in v.toposort()): becomes_map[k] = v.detach()
    # an ASSIGN this realize ran is its buffer now (whose origin, if any, has its gradient), and a buffer it overwrote is the copy of its old
    # contents where there is one: a graph kept for backward never writes again nor reads the new contents for the old
    if fresh and (fix := {k: v for k, v in becomes_map.items() if k.op is Ops.ASSIGN} | (snapshots or {})):
      # (a value read before its buffer was overwritten has the gradient of that value: the old origin, where it has one)
      fix |= {v: o for k, v in becomes_map.items() if k.op is Ops.ASSIGN and (o := _origin_of(v)) is not None}
      for v, o in zip(fresh, UOp.sink(*[new_origins[v] for v in fresh]).substitute(fix).src): new_origins[v] = o
  # the gradient origins see realized leaves and values that need no gradient as their buffers; the rest stays the graph it was
  if _grad_origin.data and (plain := {k: v for k, v in becomes_map.items() if v not in new_origins or k.op is Ops.ASSIGN} | (snapshots or {})):
    origins = list(_grad_origin.items())
    for (k, _), o in zip(origins, UOp.sink(*[o for _, o in origins]).substitute(plain).src): _grad_origin[k] = o
  if new_origins:
    _grad_origin.update(new_origins)
    _grad_uops.update((v, None) for v in floats)   # results of float ops on them require grad (int ones only lead backward to zeros)
    _no_grad_uops.clear(); _no_path_uops.clear()
  # one substitute over the sink of every graph still to compute: shared subgraphs are rewritten once, untouched graphs come back as the
  # same UOps; a tensor that is a realized node itself (the usual case: the one realize() was called on) needs no walk
  lazy = []
  for ref in list(_lazy_tensors):
    if (t := ref()) is None: continue
    if (realized := becomes_map.get(t._uop)) is not None:
      # (the uop setter inlined: a realized node is a buffer or a view of one, no longer lazy)
      t._uop = realized
      _track(ref, realized)
      if t._requires_grad: _grad_uops[realized] = None
    else: lazy.append(t)
  if not lazy: return
  old_sink = UOp.sink(*[t.uop for t in lazy])
  new_sink = old_sink.substitute(becomes_map)
  if new_sink is old_sink: return
  for t, new_uop in zip(lazy, new_sink.src):
    if new_uop is not t.uop: t.uop = new_uop

# ***** numpy and python value conversion (numpy is imported only by the functions that take or return numpy arrays) *****

def _is_numpy(x:Any) -> bool: return type(x).__module__ == "numpy"

def _bf16_bits(x:Any) -> int: return struct.unpack("=I", struct.pack("=f", truncate[dtypes.bfloat16](x)))[0] >> 16
def _bf16_value(bits:int) -> float: return struct.unpack("=f", struct.pack("=I", bits << 16))[0]

def _pack(values:list, dtype:DType) -> bytes:
  # values are truncated into the dtype first, as a cast would do (struct refuses out-of-range ints)
  if dtype == dtypes.bfloat16: return struct.pack(f"={len(values)}H", *[_bf16_bits(v) for v in values])
  if dtype in dtypes.fp8s: return bytes(float_to_fp8(float(v), dtype) for v in values)
  conv = truncate[dtype]
  return struct.pack(f"={len(values)}{dtype.fmt}", *[conv(v) for v in values])

def _unpack(raw:memoryview, dtype:DType, count:int) -> list:
  if dtype == dtypes.bfloat16: return [_bf16_value(b) for b in struct.unpack(f"={count}H", raw)]
  if dtype in dtypes.fp8s: return [fp8_to_float(b, dtype) for b in bytes(raw)]
  return list(struct.unpack(f"={count}{dtype.fmt}", raw))

def _nested_shape(data:Any) -> tuple[int, ...]:
  if _is_numpy(data): return tuple(data.shape)
  if not isinstance(data, (list, tuple, range)): return ()
  if len(data) == 0: return (0,)
  shapes = [_nested_shape(x) for x in data]
  if any(s != shapes[0] for s in shapes):
    raise ValueError(f"ragged nested list: the elements of one level have different shapes {sorted(set(shapes))}; a Tensor needs a rectangular list")
  return (len(data),) + shapes[0]

def _nest(flat:list, shape:tuple[int, ...]) -> Any:
  if len(shape) == 0: return flat[0]
  if len(shape) == 1: return list(flat)
  step = prod(shape[1:])
  return [_nest(flat[i*step:(i+1)*step], shape[1:]) for i in range(shape[0])]

def _const(value:ConstType, dtype:DType, device:str, shape:tuple[sint, ...]=()) -> UOp:
  # a scalar of shape () (or broadcast to shape) on device, wrapped into the dtype's range like a cast (ops rely on this: -1 as uint32 is 0xffffffff)
  return UOp.const(dtype, truncate.get(dtype, lambda x: x)(dtypes.as_const(value, dtype)), device, shape)

def _check_int_range(values:list, dtype:DType) -> None:
  # data written by the user never wraps silently, like numpy 2 and torch
  if not dtypes.is_int(dtype) or not values: return
  finite = [v for v in values if not (isinstance(v, float) and not math.isfinite(v))]
  if len(finite) != len(values): raise ValueError(f"nan or inf can't be stored in {dtype}")
  lo, hi = min(finite), max(finite)
  # floats are cut toward zero on the way in, so 255.5 still fits uint8
  if math.trunc(lo) < dtypes.min(dtype) or math.trunc(hi) > dtypes.max(dtype):
    raise ValueError(f"values in [{lo}, {hi}] are out of range for {dtype}, which holds [{dtypes.min(dtype)}, {dtypes.max(dtype)}]")

def _buffer_uop(raw:bytes|memoryview, shape:tuple[int, ...], dtype:DType, device:str) -> UOp:
  # data given by the user lives in a BUFFER right away: later graphs read it like any realized tensor
  buf = UOp.new_buffer(device, prod(shape), dtype)
  buf.buffer.allocate().copyin(memoryview(raw))
  return buf.reshape(shape)

def _from_numpy(data:Any, dtype:DType|None, device:str) -> UOp:
  import numpy as np
  arr = np.asarray(data)
  if dtype is None: dtype = _from_np_dtype(arr.dtype)
  if dtype.fmt is None: return _buffer_uop(_pack(arr.reshape(-1).tolist(), dtype), arr.shape, dtype, device)
  if getattr(Device[device].allocator, "wraps_host_memory", False) and arr.ndim and arr.flags.c_contiguous and arr.dtype == _to_np_dtype(dtype):
    # a device over host memory (NPY) uses the array's memory in place; the memoryview keeps the array alive
    (buf := UOp.new_buffer(device, arr.size, dtype)).buffer.allocate(opaque=memoryview(cast(Any, arr)).cast("B"))
    return buf.reshape(arr.shape)
  # tobytes is row-major whatever the strides (ascontiguousarray would turn a 0-d array into 1-d)
  return _buffer_uop(arr.astype(_to_np_dtype(dtype), copy=False).tobytes(), arr.shape, dtype, device)

_FnT = TypeVar("_FnT", bound=Callable[..., Any])
def _dim_alias(fn:_FnT) -> _FnT:
  # torch names the reduced dims `dim`, tinygrad `axis`: a reduction takes either
  @functools.wraps(fn)
  def wrapper(self, *args, dim=None, **kwargs):
    if dim is not None:
      if args or "axis" in kwargs: raise TypeError(f"{fn.__name__}: give the dims as axis or as dim, not both")
      kwargs["axis"] = dim
    return fn(self, *args, **kwargs)
  return cast(_FnT, wrapper)

def _sym_lt(a:sint, b:sint) -> bool:
  # a < b for sizes, True when it can't be decided; symbolic sides are compared by their simplified difference ((v+1) - v is 1)
  if isinstance(a, int) and isinstance(b, int): return a < b
  return resolve((sint_to_uop(a) - b).simplify() < 0)
def _sym_ne(a:sint, b:sint) -> bool:
  # a != b for sizes, True when it can't be decided (1*v*4 and v*4 are equal)
  if isinstance(a, int) and isinstance(b, int): return a != b
  return resolve((sint_to_uop(a) - b).simplify().ne(0))

# dot's graph per (ShapeTrackers, dtype keys) of its inputs (the ShapeTrackers of its views follow from theirs): per node (op, dtype, its
# sources as places in [x, w, the nodes before], arg, ShapeTracker)
_dot_plans: dict[tuple, list[tuple]] = {}

def _uop_broadcast(u:UOp, shape:tuple[sint, ...]) -> UOp:
  # u (its shape broadcastable to shape, numpy's rules) expanded to shape: Tensor._broadcast_to without its checks
  return u if (us := u.shape) == shape else u.reshape((1,)*(len(shape)-len(us)) + us).expand(shape)

def _broadcast_shape(what:str, *shapes:tuple[sint, ...]) -> tuple[sint, ...]:
  # numpy rules: align on the right, every dim equal or 1
  if shapes.count(shapes[0]) == len(shapes): return tuple(shapes[0])
  if len(shapes) == 2 and (not shapes[0] or not shapes[1]): return tuple(shapes[0] or shapes[1])   # a scalar meets a tensor
  ndim = max(len(s) for s in shapes)
  padded = [(1,)*(ndim-len(s)) + tuple(s) for s in shapes]
  out: list[sint] = []
  for dims in zip(*padded):
    size: sint = 1   # the one size other than 1 in dims (ints equal by value, symbolic sizes by identity), else 1
    for d in dims:
      if (d == 1 if isinstance(d, int) else not resolve(d != 1)) or d is size: continue
      if isinstance(size, int) and size == 1: size = d
      elif not (isinstance(d, int) and isinstance(size, int) and d == size):
        raise ValueError(f"{what}: shapes {' and '.join(str(tuple(s)) for s in shapes)} can't be broadcast together")
    out.append(size)
  return tuple(out)

def _flat_to_pairs(padding:Sequence[int], ndim:int) -> tuple[tuple[int, int], ...]:
  # torch style: (left, right) of the last dim first, then the dim before it ...
  if len(padding) % 2 != 0 or len(padding) // 2 > ndim:
    raise ValueError(f"flat padding {tuple(padding)} must have an even length of at most 2*ndim={2*ndim}")
  pairs = [(padding[i], padding[i+1]) for i in range(0, len(padding), 2)]
  return ((0, 0),)*(ndim - len(pairs)) + tuple(reversed(pairs))

# names of the ops as the user wrote them, for error messages
_OP_NAMES = {Ops.ADD: "add", Ops.MUL: "mul", Ops.MAX: "maximum", Ops.CMPLT: "comparison", Ops.CMPNE: "comparison", Ops.CMPEQ: "comparison",
             Ops.AND: "bitwise_and", Ops.OR: "bitwise_or", Ops.XOR: "bitwise_xor", Ops.SHL: "lshift", Ops.SHR: "rshift"}

class Tensor(MathTrait, metaclass=_TensorMeta):
  """A lazy, multi-dimensional array. Operations build a UOp graph; `realize()`, `numpy()`, `tolist()` ... run it."""
  __slots__ = ("_uop", "_ref", "_requires_grad", "is_leaf", "grad", "__weakref__")
  training: ClassVar[bool] = False
  # numpy defers to our reflected operators (np.float32(2) * t) instead of turning the Tensor into an object array
  __array_ufunc__ = None

  def __init__(self, data:Any, device:DeviceLike=None, dtype:DTypeLike|None=None, requires_grad:bool|None=None):
    dt = to_dtype(dtype) if dtype is not None else None
    if isinstance(data, UOp):
      if dt is not None and dt != data.dtype: raise ValueError(f"Tensor of a UOp of dtype {data.dtype} can't take dtype {dt}; cast it instead")
      if device is not None and _canonical(device) != data.device:
        raise ValueError(f"Tensor of a UOp on {data.device} can't be put on {device}; use .to()")
      # (only a movement of a buffer or of a view of one may be kernelless: a graph's movements are not)
      uop = view if data.op in GroupOp.Movement and ((s := data.src[0].op) is Ops.BUFFER or s in GroupOp.Movement) and \
        (view := _kernelless_view(data)) is not None else data
    elif isinstance(data, Tensor):
      uop = data.uop.cast(dt) if dt is not None else data.uop
      if device is not None and (dev := _canonical(device)) != uop.device:
        if not isinstance(dev, str): raise NotImplementedError(f"moving a tensor to several devices {dev}")
        uop = uop.copy_to_device(dev)
    else:
      dev = _one_device(device)
      if data is None: uop = UOp.new_buffer(dev, 0, dt or dtypes.default_float).reshape((0,))
      elif _is_numpy(data): uop = _from_numpy(data, dt, dev)
      elif isinstance(data, (bool, int, float)):
        dt = dt or dtypes.from_py(data)
        _check_int_range([data], dt)
        uop = _const(data, dt, dev)
      elif isinstance(data, (bytes, bytearray, memoryview)):
        dt, raw = dt or dtypes.uint8, bytes(data)
        if len(raw) % dt.itemsize != 0: raise ValueError(f"{len(raw)} bytes are not a whole number of {dt} elements ({dt.itemsize} bytes each)")
        uop = _buffer_uop(raw, (len(raw) // dt.itemsize,), dt, dev)
      elif isinstance(data, (list, tuple, range)):
        shape, flat = _nested_shape(data), fully_flatten(data)
        dt = dt or dtypes.from_py(flat)
        flat = [x.item() if _is_numpy(x) else x for x in flat]   # numpy scalars and arrays in a list, as torch takes them
        _check_int_range(flat, dt)
        uop = _buffer_uop(_pack(flat, dt), shape, dt, dev)
      else:
        raise TypeError(f"can't make a Tensor from {type(data).__name__}: expected a UOp, Python scalar, nested list, bytes, numpy array or None")
    # a result of ops on tensors that require grad requires grad too (a non-leaf); under no_grad it is cut from their graph
    self._requires_grad, self.is_leaf = requires_grad, True
    if requires_grad is None and _grad_uops.data and isinstance(data, UOp) and _reaches_grad(uop):
      if _TensorMeta._no_grad: uop = uop.detach()
      else: self._requires_grad, self.is_leaf = True, False
    self._uop = uop
    self._ref = ref = weakref.ref(self, _drop_tensor)
    all_tensors[ref] = None
    _track(ref, uop)
    if requires_grad: self.requires_grad = True
    elif self._requires_grad:
      _grad_uops[uop] = None
      _grad_tensors[ref] = None
    self.grad: Tensor|None = None  # autograd fills this in

  # ***** properties *****

  @property
  def uop(self) -> UOp: return self._uop
  @uop.setter
  def uop(self, uop:UOp) -> None:
    self._uop = uop
    _track(self._ref, uop)
    if self._requires_grad: _grad_uops[uop] = None
  @property
  def requires_grad(self) -> bool|None: return self._requires_grad
  @requires_grad.setter
  def requires_grad(self, value:bool|None) -> None:
    # set by the user, the tensor is a leaf again (backward fills its .grad)
    self._requires_grad, self.is_leaf = value, True
    if value:
      _grad_tensors[self._ref] = None
      # a leaf needs an identity of its own: a graph (Tensor.zeros, uniform ...) is hash-consed with every equal one, which would then look
      # like it requires grad too, and a realize that reads it rewrites it (a gradient origin made there would hold the graph it was). So
      # it is written into a new buffer of its own (lazily, at the first realize)
      if isinstance(dev := self.device, str) and all_int(self.shape) and self._ref in _lazy_tensors and self._uop.base.op is not Ops.ASSIGN:
        self._uop = UOp.new_buffer(dev, prod(self.shape), self.dtype).reshape(self.shape).assign(self._uop)  # type: ignore[arg-type]
        _track(self._ref, self._uop)
      _grad_uops[self._uop] = None
      _no_grad_uops.clear()
      _no_path_uops.clear()

  @property
  def lazydata(self) -> UOp: return self.uop
  @lazydata.setter
  def lazydata(self, uop:UOp) -> None: self.uop = uop
  @property
  def device(self) -> str|tuple[str, ...]: return self._uop.device
  @property
  def shape(self) -> tuple[sint, ...]: return self._uop.shape
  @property
  def dtype(self) -> DType: return self._uop.dtype
  @property
  def ndim(self) -> int: return len(self.shape)
  def numel(self) -> sint: return prod(self.shape)
  def size(self, dim:int|None=None) -> sint|tuple[sint, ...]: return self.shape if dim is None else self.shape[self._resolve_dim(dim)]
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> sint: return self.numel() * self.element_size()
  def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]  # type: ignore[return-value]
  __hash__ = object.__hash__   # __eq__ is elementwise, so identity is the only sound hash (and object's costs no Python call)
  def __repr__(self) -> str:
    u = self.uop
    state = "realized " if u.is_realized else ""
    grad = "None" if self.grad is None else f"<Tensor {self.grad.shape}>"
    return f"<Tensor <UOp {state}{u.op} {u.shape} {u.dtype}> on {self.device} with grad {grad}>"
  def __bool__(self) -> bool:
    if self.numel() != 1: raise ValueError(f"the truth value of a Tensor of shape {self.shape} is ambiguous; use .any() or .all()")
    return bool(self.item())
  def __iter__(self) -> Iterator[Tensor]:
    if not self.shape: raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))  # type: ignore[arg-type]

  # ***** realization *****

  def schedule_with_vars(self, *lst:Tensor) -> tuple[list, dict[UOp, int]]:
    """Create the schedule that realizes these tensors, and point every live Tensor at the buffers it will fill."""
    first_new_buffer = next(_unique_counter)
    # tensors computed apart that hash-consing made one graph (a = x*2; b = x*2, two .clone()s) are two tensors in torch: the realize
    # would give them one buffer, which an in-place update of one would change for both. The first root keeps it, the others copy it
    if (mine := {t._uop: t for t in reversed((self,) + lst) if t._ref in _lazy_tensors and t._uop.op is not Ops.ASSIGN}):
      for ref in list(_lazy_tensors):
        if (t := ref()) is not None and mine.get(u := t._uop, t) is not t and isinstance(dev := t.device, str): t.uop = u.copy_to_device(dev)
    roots, copies = [self._uop] + [t._uop for t in lst], []
    stale_readers: list[Tensor] = []
    # (an ASSIGN dropped unrealized leaves its entry: gone, it keeps no realize looking)
    # (the dicts under the weak ones, keyed by weak references: WeakKeyDictionary's own methods are Python calls, a few per ASSIGN)
    targets = _assign_targets.data
    for r in [r for r, latest in targets.items() if latest() is None] if targets else (): del targets[r]
    if targets:
      assigns, readers, snap_bufs, stale_readers, stale_origins = _old_readers(roots)
      # (a reader that is a copy-making view (flip, pad) would be a view to the scheduler: it is copied out)
      for t in readers:
        if ((o := t._uop.op) in _MOVEMENT or o is Ops.DETACH) and _storage(t._uop).op in (Ops.BUFFER, Ops.ASSIGN): t.uop = t._uop.contiguous()
      if readers: roots += [t._uop for t in readers]
      if stale_origins: _modified.update((k, None) for k in stale_origins)
      for a in assigns:
        r = weakref.ref(b := a.buf_uop)
        # a buffer whose old contents a gradient needs is copied before its ASSIGN runs
        if r in _grad_assign_targets.data: snap_bufs.add(b)
        # (a later ASSIGN into the same buffer, still pending, keeps it registered)
        if (latest := targets.get(r)) is None or (last := latest()) is None or last is a:
          targets.pop(r, None)
          _grad_assign_targets.data.pop(r, None)
      if snap_bufs: copies = [b.copy_to_device(b.device) for b in snap_bufs]  # type: ignore[arg-type]
    schedule, var_vals, becomes_map = create_schedule_with_vars(UOp(Ops.SINK, dtypes.void, tuple(roots+copies)))
    snapshots = {c.src[0]: becomes_map.pop(c).base for c in copies if c in becomes_map}
    _apply_map_to_tensors(becomes_map, first_new_buffer, snapshots)
    if stale_readers: _modified.update((t._uop, None) for t in stale_readers)
    return schedule, var_vals
  def schedule(self, *lst:Tensor) -> list:
    schedule, var_vals = self.schedule_with_vars(*lst)
    if var_vals: raise ValueError(f"schedule() has variables {var_vals}; use schedule_with_vars()")
    return schedule
  def realize(self, *lst:Tensor, do_update_stats:bool=True) -> Tensor:
    """Run every kernel these tensors need; afterwards they are backed by buffers."""
    schedule, var_vals = self.schedule_with_vars(*lst)
    if do_update_stats: run_schedule(schedule, var_vals)
    else: run_schedule(schedule, var_vals, do_update_stats=False)
    return self
  def replace(self, x:Tensor) -> Tensor:
    if x.shape != self.shape: raise ValueError(f"replace needs the same shape, got {x.shape} for a tensor of shape {self.shape}")
    self.uop = x.uop
    return self
  def assign(self, x:Any) -> Tensor:
    """Write x into this tensor: into its buffer when it is realized, else this tensor simply becomes x."""
    if self._assign(x):
      del x   # (a value made for this call dies here: the realize doesn't compute it apart as a reader of the old contents)
      self._run_update()
    return self
  def _run_update(self) -> None:
    self.realize()
    # (a detached alias (d = x.detach(); d += 1) wrote into x's buffer: it stays detached)
    if not self._requires_grad and self._uop.op is not Ops.DETACH and _reaches_grad(self._uop): self.uop = self._uop.detach()
  def _assign(self, x:Any, part:bool=False) -> bool:
    # True: another live tensor views the buffer (x[1:3] or x.T made before): as in PyTorch, a read through it after the update sees the
    # update, so the caller runs it now (as setitem does); lazy values read before it keep the old contents (they are computed first)
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.shape != self.shape: raise ValueError(f"assign needs the same shape, got {x.shape} for a tensor of shape {self.shape}")
    if x.dtype != self.dtype: raise TypeError(f"assign needs the same dtype, got {x.dtype} for a tensor of dtype {self.dtype}; cast it first")
    if x.device != self.device: raise ValueError(f"assign needs the same device, got {x.device} for a tensor on {self.device}")
    # a pending ASSIGN counts as realized: it writes into a buffer. An update through a detached alias of one (d = x.detach()) writes x's
    # buffer (as in torch) and runs now, so that d, then detached again, reads it (one adding a value that requires grad just becomes it)
    # a device that runs no kernels (DISK) gets the value copied straight into this tensor's range of its file, now (x.to(DISK) of it would
    # be a new buffer there, which maps the file's first bytes: t[8:16].assign(x.to(t.device)) wrote over t[0:8], then failed)
    if isinstance(dev := self.device, str) and Device[dev].runtime is None and (buf := self._plain_buffer()) is not None:
      buf.buffer.copyin((Tensor(x.uop.src[0]) if x.uop.op is Ops.COPY else x)._host_bytes())
      return False
    # a graph still to compute that another live tensor views (v = x[1:] or x.detach() of a lazy x): as torch, which computed x, it is
    # put in a buffer first (by a tensor of exactly that graph: a twin computed apart gets a copy), then updated there
    if (k := _storage(u := self.uop)).op not in (Ops.BUFFER, Ops.ASSIGN, Ops.CONST) and x.uop is not u and isinstance(self.device, str):
      share = [t for r in [*_lazy_tensors] if (t := r()) is not None and t is not self and (t._uop is k or (o := t._uop.op) in _MOVEMENT or
                                                                                        o is Ops.DETACH) and _storage(t._uop) is k]
      if any(t._uop is not k for t in share) or (share and u is not k):
        owner = self if u is k else next((t for t in share if t._uop is k), None)
        (owner if owner is not None else Tensor(k)).realize()
    u, detached = self.uop, False
    if (plain := _undetach(u)) is not u and not x.requires_grad and (plain.is_realized or plain.base.op is Ops.ASSIGN): u, detached = plain, True
    # (a copy-making view (x.flip(0)) is a value of its own, unless it is the part of a view that setitem writes (t[::-1] = v))
    if not (u.is_realized or u.base.op is Ops.ASSIGN) or x.uop is self.uop or not (part or _strided(u)):
      self.replace(x)
      return False
    # (torch: a write through an expanded view would write some elements more than once)
    if u.op in _MOVEMENT and 0 in (v := _undetach(u).st.simplify().views[-1]).strides and \
       any(st == 0 and n != 1 for st, n in zip(v.strides, v.shape)):
      raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single memory location (an "
                         "expanded view); clone() it first")
    # (a lazy view of a pending update aliases the buffer too: the pending update runs first (alone: a realize of the view would copy it
    # out), the view then reads the buffer)
    if (pend := u.base).op is Ops.ASSIGN and any((t := r()) is not None and t is not self and _storage(t._uop) is pend for r in [*_lazy_tensors]):
      Tensor(pend).realize()
      u = _undetach(self.uop) if detached else self.uop
    # an update through a view of a buffer autograd tracks (v = y[1:]; v += p): the whole buffer is assigned a blend (whose gradient passes
    # the old contents where the view doesn't write), now, so every alias of it reads the update and backward follows it
    if u.op in _MOVEMENT and (b := u.base).op is Ops.BUFFER and b.is_realized and (self._requires_grad or x._requires_grad) and \
       not (u.op is Ops.RESHAPE and u.src[0] is b) and isinstance(dev := self.device, str) and \
       (full := _unview(u, x.uop, _const(True, dtypes.bool, dev, u.shape))) is not None and full[2] is not u:
      base = Tensor(full[2])
      base._assign(Tensor(full[1]).where(Tensor(full[0]), base))
      base._run_update()
      del base
      self.uop = u
      return False
    self.uop = u.assign(x.uop)
    # (the buffer under a chain of pending ASSIGNs; a sharded tensor's is per device, not tracked)
    target = self.uop
    while target.op is Ops.ASSIGN: target = target.src[0].base
    if target.op is Ops.BUFFER:
      _assign_targets[target] = weakref.ref(self.uop)
      if x.requires_grad: _grad_assign_targets[target] = None
      # (where autograd tracks the buffer, only an update of the whole of it: one made through a view has its gradient in setitem's blend)
      whole = (u := self.uop.src[0]).op is Ops.BUFFER or u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER
      views = [t for r in list(target.__dict__.get("_views", ())) if (t := r()) is not None and t is not self and _storage(t._uop) is target]
      # (a copy-making view (x.flip(0), x.pad(..)) keeps the old contents, as torch's copy does: a lazy copy, computed before the update)
      for t in views:
        if not _strided(t._uop): t.uop = t._uop.contiguous()
      return detached or (whole or not (self._requires_grad or x._requires_grad)) and any(_strided(t._uop) for t in views)
    return False
  def detach(self) -> Tensor: return Tensor(self.uop.detach(), requires_grad=False)
  def contiguous(self) -> Tensor: return Tensor(self.uop.contiguous())
  def clone(self) -> Tensor:
    # a COPY always lands in a new buffer (a CONTIGUOUS of a realized buffer may be the buffer itself)
    if not isinstance(dev := self.uop.device, str): raise NotImplementedError(f"clone of a tensor on several devices {dev}")
    return Tensor(self.uop.copy_to_device(dev), requires_grad=self.requires_grad)
  def to(self, device:DeviceLike) -> Tensor:
    if not isinstance(device := _canonical(device), str): raise NotImplementedError(f"moving a tensor to several devices {device}")
    if device == self.device: return self
    ret = Tensor(self.uop.copy_to_device(device), requires_grad=self.requires_grad)
    if self.grad is not None: ret.grad = self.grad.to(device)
    return ret
  def to_(self, device:DeviceLike) -> Tensor:
    moved = self.to(device)
    if self.grad is not None: self.grad = self.grad.to(device)
    self.uop = moved.uop
    return self

  # ***** data access *****

  def _host_bytes(self, out:memoryview|None=None) -> memoryview:
    """The elements in row-major order, read back from a realized contiguous buffer (realizing one first if needed), into out if given."""
    if capturing and self.numel() != 0 and not self._same_in_every_replay():  # a value read while TinyJit captures would be stale in every replay
      raise JitError("TinyJit: tensor data (.numpy(), .item(), .tolist()) read inside a jitted function; return the Tensor and read it outside")
    if (buf := self._plain_buffer()) is None:
      if self.numel() == 0: return memoryview(b"")
      u = self._uop
      while u.op is Ops.RESHAPE: u = u.src[0]
      # a computed value (not a view of one) is realized in place, as realize() would (one that needs a gradient keeps its graph as its
      # origin): its buffer then holds exactly these elements, a later read runs no kernel, and no other live graph is rewritten for a copy
      if u.op not in GroupOp.Movement and u.op is not Ops.BUFFER: buf = self.realize()._plain_buffer()
      if buf is None: buf = (self if self.uop.op is Ops.CONTIGUOUS else self.contiguous()).realize()._plain_buffer()
      if buf is None and u.op is Ops.BUFFER and not u.buffer.is_allocated():
        raise RuntimeError("this tensor's buffer was never filled: its .schedule() was made but not run; run it (run_schedule) or use .realize()")
      if buf is None: raise RuntimeError(f"realize left {self.uop.op} over {self.uop.base.op}, expected a BUFFER with only RESHAPEs on top")
    return buf.buffer.as_buffer() if out is None else buf.buffer.copyout(out)
  def _same_in_every_replay(self) -> bool:
    # realized data that no kernel of the capture touches and no input of the jit holds (a constant, a weight read for its shape)
    if (plain := self._plain_buffer()) is None: return False
    buf = plain.buffer.base
    return all(b is None or b.base is not buf for ei in capturing[-1] for b in ei.bufs) and all(b.base is not buf for b in capturing_inputs[-1])
  def _plain_buffer(self) -> UOp|None:
    # the realized buffer holding exactly this tensor's elements in order (under RESHAPEs, and DETACHes a realize may keep), else None
    u = self._uop
    while u.op is Ops.RESHAPE or u.op is Ops.DETACH: u = u.src[0]
    if u.op is not Ops.BUFFER or (buf := u.__dict__.get("_buffer")) is None or not hasattr(buf, "_buf"): return None
    return u if u.arg == prod(self._uop.shape) else None
  def data(self) -> memoryview:
    """A memoryview of the elements, cast to the dtype's format and the tensor's shape."""
    fmt = self.dtype.fmt
    if fmt is None or fmt == "e": raise TypeError(f"memoryview has no format for {self.dtype}; use .tolist() or .numpy()")
    # a memoryview can't hold a 0 in a shape of more than one dim: an empty tensor gives a flat empty one, as tinygrad's does
    if 0 in self.shape: return memoryview(b"").cast(fmt)  # type: ignore[call-overload]
    return self._host_bytes().cast(fmt, self.shape)  # type: ignore[call-overload]
  def tolist(self) -> Any:
    if self.dtype.fmt is None and self.dtype not in (dtypes.bfloat16, *dtypes.fp8s): raise TypeError(f"no Python values for {self.dtype}")
    if not all_int(self.shape): raise ValueError(f"tolist needs a concrete shape, got {self.shape}")
    return _nest(_unpack(self._host_bytes(), self.dtype, self.numel()), self.shape)  # type: ignore[arg-type]
  def item(self) -> ConstType:
    if self.numel() != 1: raise ValueError(f"item() needs a tensor with exactly one element, got shape {self.shape} ({self.numel()} elements)")
    return _unpack(self._host_bytes(), self.dtype, 1)[0]
  def numpy(self) -> Any:
    """A numpy array with this tensor's dtype (bfloat16 and fp8 come back as float32)."""
    import numpy as np
    if (np_dtype := _to_np_dtype(self.dtype)) is None: return self.cast(dtypes.float32).numpy()
    if not all_int(shape := self._uop.shape): raise ValueError(f"numpy needs a concrete shape, got {shape}")
    if 0 in shape: return np.zeros(shape, dtype=np_dtype)
    # copied straight into the array's memory: no zero-filled staging buffer, one pass over the data
    self._host_bytes(memoryview(cast(Any, ret := np.empty(shape, dtype=np_dtype))))
    return ret
  def __float__(self) -> float: return float(self.item())
  def __int__(self) -> int: return int(self.item())

  # ***** creation *****

  @staticmethod
  def empty(*shape, device:DeviceLike=None, dtype:DTypeLike|None=None, **kwargs) -> Tensor:
    """A tensor whose buffer is allocated when it is first used and holds whatever was in memory."""
    shp, dt = argfix(*shape), to_dtype(dtype) if dtype is not None else dtypes.default_float
    _check_shape(shp)
    if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"an empty tensor on several devices {dev}")
    return Tensor(UOp.new_buffer(dev, prod(shp), dt).reshape(shp), **kwargs)
  @staticmethod
  def full(shape:tuple[sint, ...]|int, fill_value:ConstType, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    shp = (shape,) if isinstance(shape, int) else tuple(shape)
    _check_shape(shp)
    return Tensor(Tensor(fill_value, device, dtype)._broadcast_to(shp).uop, **kwargs)
  @staticmethod
  def zeros(*shape, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    return Tensor.full(argfix(*shape), 0.0, dtype or dtypes.default_float, device, **kwargs)
  @staticmethod
  def ones(*shape, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    return Tensor.full(argfix(*shape), 1.0, dtype or dtypes.default_float, device, **kwargs)
  def full_like(self, fill_value:ConstType, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    dev = device if device is not None else self.device
    return Tensor.full(self.shape, fill_value, dtype or self.dtype, dev, **kwargs)
  def zeros_like(self, **kwargs) -> Tensor: return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs) -> Tensor: return self.full_like(1, **kwargs)
  def empty_like(self, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    dev = device if device is not None else self.device
    return Tensor.empty(self.shape, dtype=dtype or self.dtype, device=dev, **kwargs)
  def const_like(self, b:Any) -> Tensor: return self.full_like(b)

  @staticmethod
  @functools.lru_cache(maxsize=256)
  def _index_range(n:int, device:str) -> UOp:
    # 0..n-1 without a reduce: the binary digits of the index, each a padded constant expanded over a (2,)*k grid, summed. int32, or
    # int64 when n-1 doesn't fit. Built from UOps (no Tensor per step) and kept per (n, device): UOps are immutable, so it is shared
    dt = dtypes.int32 if n <= 2**31 else dtypes.int64
    if n == 0: return _const(0, dt, device, (0,))
    k = max(1, (n-1).bit_length())
    digits = [_const(1 << (k-1-d), dt, device).reshape((1,)).pad(((1, 0),)).reshape((1,)*d + (2,) + (1,)*(k-1-d)).expand((2,)*k)
              for d in range(k)]
    return functools.reduce(UOp.add, digits).reshape((1 << k,)).shrink(((0, n),))
  @staticmethod
  def arange(start:int|float|UOp, stop:int|float|UOp|None=None, step:int|float=1, dtype:DTypeLike|None=None, device:DeviceLike=None,
             **kwargs) -> Tensor:
    """Values from start (inclusive) to stop (exclusive) by step; ints when all arguments are ints, like torch."""
    if stop is None: start, stop = 0, start
    if step == 0: raise ValueError("arange step must be nonzero")
    if not all(math.isfinite(x) for x in (start, stop, step) if not isinstance(x, UOp)):
      raise ValueError(f"arange of an unsupported range: {start} -> {stop} by {step}")
    if isinstance(start, UOp) or isinstance(stop, UOp):
      # bound Variables: a symbolic length stop-start (step 1), one kernel for every value; the values are the view's index plus start
      if step != 1: raise NotImplementedError(f"arange with symbolic bounds needs step 1, got {step}")
      dt = to_dtype(dtype) if dtype is not None else dtypes.default_int
      n_sym = cast(UOp, stop - start)
      sym_idx = Tensor(Tensor._index_range(int(n_sym.vmax), _one_device(device))).shrink(((0, n_sym),))
      return Tensor((sym_idx + start).cast(dt).uop, **kwargs)
    all_ints = all(isinstance(x, int) for x in (start, stop, step))
    n = int(max(0, -((start - stop) // step) if all_ints else math.ceil((stop - start) / step)))
    # ints past int32's range (2**31 elements and more) are int64, as torch's arange always is
    wide = all_ints and not all(dtypes.min(dtypes.int32) <= v <= dtypes.max(dtypes.int32) for v in (start, start + (n-1)*step))
    dt = to_dtype(dtype) if dtype is not None else ((dtypes.int64 if wide else dtypes.default_int) if all_ints else dtypes.default_float)
    idx = Tensor._index_range(n, _one_device(device))
    # ints stay exact in int32 (int64 past it); anything else is computed in the float dtype (or float32) and cast at the end
    if wide or not (all_ints and dtypes.is_int(dt)): idx = idx.cast(dtypes.int64 if wide and dtypes.is_int(dt) else least_upper_float(dt))
    return Tensor((idx * idx.const_like(step) + idx.const_like(start)).cast(dt), **kwargs)
  @staticmethod
  def eye(n:int, m:int|None=None, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    """The n x m identity matrix, built from views only: a column of ones padded to k+1 columns reads back diagonal as (k, k)."""
    m = n if m is None else m
    if n < 0 or m < 0: raise ValueError(f"eye needs non-negative sizes, got n={n}, m={m}")
    k = max(n, m)
    diag = Tensor.ones((k, 1), dtype=dtypes.bool, device=device).pad(((0, 0), (0, k))).flatten().shrink(((0, k*k),)).reshape(k, k)
    return Tensor(diag.shrink(((0, n), (0, m))).cast(dtype or dtypes.default_float).uop, **kwargs)

  # ***** elementwise: dtype promotion and broadcasting *****

  def ufix(self, x:Any) -> Tensor:
    """x as a Tensor: a Python scalar takes this tensor's dtype, unless it is a float meeting ints/bools or an int meeting bools."""
    if isinstance(x, Tensor): return x
    # a bound Variable (or symbolic int maths on one) is an int scalar the kernel reads as an argument
    if isinstance(x, UOp): return Tensor.from_uop(x, device=self.device).cast(dtypes.default_int if self.dtype == dtypes.bool else self.dtype)
    return Tensor(self._scalar_uop(x))
  def _scalar_uop(self, x:Any, shape:tuple[sint, ...]=()) -> UOp:
    # a Python scalar as a CONST of shape (broadcast), in this tensor's dtype unless it is a float meeting ints/bools or an int meeting bools
    if _is_numpy(x) and getattr(x, "shape", None) == (): x = x.item()
    if not isinstance(x, (bool, int, float)): raise TypeError(f"expected a Tensor or a Python scalar, got {type(x).__name__}")
    own = dtypes.is_float(dt := self.dtype) or (dtypes.is_int(dt) and not isinstance(x, float)) or isinstance(x, bool)
    if not isinstance(dev := self.device, str): raise NotImplementedError(f"scalars with tensors on several devices {dev}")
    return _const(x, dt if own else dtypes.from_py(x), dev, shape)
  def _broadcast_to(self, new_shape:tuple[sint, ...]) -> Tensor:
    if self.shape == tuple(new_shape): return self
    if self.ndim > len(new_shape) or any(resolve(s != 1) and resolve(s != ns) for s, ns in zip(self.shape[::-1], new_shape[::-1])):
      raise ValueError(f"can't broadcast shape {self.shape} to {tuple(new_shape)}")
    return Tensor(self.uop.reshape((1,)*(len(new_shape)-self.ndim) + self.shape).expand(tuple(new_shape)))
  def _broadcasted_uops(self, y:Any, reverse:bool=False, what:str="elementwise op") -> tuple[UOp, UOp]:
    # the two operands of an elementwise op as UOps of one dtype and shape (no Tensor is made for the casts and expands on the way)
    xu = self._uop
    # a Python scalar becomes a CONST already of this tensor's shape (the usual x*2, x+1): no Tensor and no broadcast for it
    if isinstance(y, Tensor): yu = y._uop
    elif isinstance(y, UOp) or not all_int(xs := xu.shape): yu = self.ufix(y)._uop
    else: yu = self._scalar_uop(y, xs)
    if reverse: xu, yu = yu, xu
    if (xd := xu.device) != (yd := yu.device): raise ValueError(f"{what}: tensors are on different devices, {xd} and {yd}")
    if (dt := xu.dtype) != yu.dtype:
      dt = least_upper_dtype(dt, yu.dtype)
      xu, yu = xu.cast(dt), yu.cast(dt)
    if (xs := xu.shape) == (ys := yu.shape): return xu, yu
    out_shape = _broadcast_shape(what, xs, ys)
    return _uop_broadcast(xu, out_shape), _uop_broadcast(yu, out_shape)
  def _broadcasted(self, y:Any, reverse:bool=False, what:str="elementwise op") -> tuple[Tensor, Tensor]:
    xu, yu = self._broadcasted_uops(yt := self.ufix(y), reverse, what)
    a, b = (yt, self) if reverse else (self, yt)
    return (a if xu is a._uop else Tensor(xu)), (b if yu is b._uop else Tensor(yu))
  def _binop(self, op:Ops, x:Any, reverse:bool) -> Tensor:
    # the operators (x*2, a+b, 2*x ...) come here straight: a Python scalar becomes a CONST of this tensor's shape, no Tensor is made for it
    xu, yu = self._broadcasted_uops(x, reverse, what=(name := _OP_NAMES.get(op) or op.name.lower()))   # (op.name is Python code)
    if op in (Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR) and dtypes.is_float(xu.dtype):
      raise NotSupportedError(f"{name} needs int or bool tensors, got {xu.dtype}")
    return Tensor(xu.alu(op, yu))
  def alu(self, op:Ops, *src:Any) -> Tensor:
    if not src: return Tensor(self._uop.alu(op))
    if len(src) == 1: return self._binop(op, src[0], False)
    if op is not Ops.WHERE or len(src) != 2: raise ValueError(f"unexpected {op} with {len(src)+1} operands")
    x, y = src[0]._broadcasted_uops(src[1], what="where") if isinstance(src[0], Tensor) else \
      self.ufix(src[1])._broadcasted_uops(src[0], True, "where")
    shape = _broadcast_shape("where", self.shape, x.shape)
    cond, x, y = _uop_broadcast(self._uop.cast(dtypes.bool), shape), _uop_broadcast(x, shape), _uop_broadcast(y, shape)
    if cond.device != x.device: raise ValueError(f"where: tensors are on different devices, {cond.device} and {x.device}")
    return Tensor(cond.alu(Ops.WHERE, x, y))
  def where(self, x:Any, y:Any) -> Tensor:
    """Elementwise `x if self else y`; self is cast to bool."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
      x = Tensor(x, self.device)
      y = x.ufix(y)
    return self.alu(Ops.WHERE, x, y)
  def _float_op(self, op:Ops) -> Tensor:
    # transcendental ops compute in a float dtype, ints go to the default float like torch
    x = self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
    return Tensor(x.uop.alu(op))

  def cast(self, dtype:DTypeLike) -> Tensor:
    dt = to_dtype(dtype)
    return self if (u := self._uop).dtype is dt or u.dtype == dt else Tensor(u.cast(dt))
  def bitcast(self, dtype:DTypeLike) -> Tensor:
    """Reinterpret the bits. A dtype of another size changes the last dim, like numpy's view."""
    dt = to_dtype(dtype)
    if self.dtype == dt: return self
    if (view := _kernelless_view(self.uop, dt)) is not None: return Tensor(view)
    if (new_size := dt.itemsize) == (old_size := self.dtype.itemsize): return Tensor(self.uop.bitcast(dt))
    if self.dtype == dtypes.bool or dt == dtypes.bool: raise TypeError(f"can't bitcast {self.dtype} to {dt}: bool has no bit layout")
    if not self.shape or (new_size > old_size and self.shape[-1] * old_size % new_size != 0):
      raise ValueError(f"can't bitcast shape {self.shape} from {self.dtype} to {dt}: the last dim times {old_size} must be a multiple of {new_size}")
    new_uint, old_uint = to_dtype(f"uint{8*new_size}"), to_dtype(f"uint{8*old_size}")
    bits = self.bitcast(old_uint)
    if new_size > old_size:
      k = new_size // old_size
      parts = bits.unflatten(-1, (-1, k)).cast(new_uint)
      return functools.reduce(Tensor.bitwise_or, [parts[..., i] << (8*old_size*i) for i in range(k)]).bitcast(dt)
    k = old_size // new_size
    return Tensor.stack(*[(bits >> (8*new_size*i)).cast(new_uint) for i in range(k)], dim=-1).flatten(-2).bitcast(dt)

  # ***** arithmetic *****

  def _fdiv(self, b:Tensor) -> Tensor: return Tensor(self.uop.alu(Ops.FDIV, b.uop))   # correctly rounded a / b, same dtype and shape
  @staticmethod
  def _with_grads(value:Tensor, *pairs:tuple[Tensor, Tensor]) -> Tensor:
    # value (no gradient of its own) with d/dx = deriv for every (x, deriv) pair: see _with_grad
    for x, d in pairs: value = x._with_grad(value, d)
    return value
  def sub(self, x:Any, reverse:bool=False) -> Tensor:
    a, b = self._broadcasted(x, reverse, "sub")
    if a.dtype == dtypes.bool: raise TypeError("subtraction of bool tensors; use logical_xor or ~ instead")
    return a + (-b)
  def div(self, x:Any, reverse:bool=False, rounding_mode:str|None=None) -> Tensor:
    """True division, correctly rounded (ints give the default float); rounding_mode "trunc" or "floor" rounds the quotient."""
    if rounding_mode == "floor": return self.floordiv(x, reverse)
    if rounding_mode not in (None, "trunc"): raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    a, b = self._broadcasted(x, reverse, "div")
    if rounding_mode == "trunc":
      if dtypes.is_float(a.dtype): return a._fdiv(b).trunc()
      if a.dtype == dtypes.bool: raise NotSupportedError("div with rounding_mode='trunc' of bool tensors; cast them to an int dtype first")
      return b.eq(0).where(0, a._int_div(b))
    dt = least_upper_float(a.dtype)
    return a.cast(dt)._fdiv(b.cast(dt))
  def _int_div(self, b:Tensor) -> Tensor:
    # C truncating division. A divisor known to be zero when the graph is built (t // 0, t % zeros(n)) raises as PyTorch's integer division
    # does; one known only when it runs (a zero in a buffer) is replaced by 1 here (a hardware division by zero would kill the process) and
    # callers zero those elements at the end, like numpy (PyTorch reads the data and raises: that would wait for every kernel before it)
    if (c := b.uop.base).op is Ops.CONST and c.arg == 0 and self.numel() != 0: raise IntZeroDivisionError("ZeroDivisionError")
    return Tensor(self.uop.alu(Ops.IDIV, b.eq(0).where(1, b).uop))
  def _fmod_f(self, b:Tensor) -> Tensor:
    # C fmod on floats: exact. A zero divisor gives nan here, not on every device (PYTHON's MOD gives 0), so it is spelled out
    return b.eq(0).where(math.nan, Tensor(self.uop.alu(Ops.MOD, b.uop)))
  def floordiv(self, x:Any, reverse:bool=False) -> Tensor:
    """Python/torch `//`: the quotient rounded toward -inf; floats take torch's (and numpy's) fmod-based steps, bit for bit."""
    a, b = self._broadcasted(x, reverse, "floordiv")
    if a.dtype == dtypes.bool: raise NotSupportedError("floor division of bool tensors; cast them to an int dtype first")
    if dtypes.is_float(a.dtype):
      a0, b0, a, b = a, b, a.detach(), b.detach()
      mod = a._fmod_f(b)
      div = (a - mod)._fdiv(b)
      div = (mod.ne(0) & b.lt(0).ne(mod.lt(0))).where(div - 1, div)
      fl = div.floor()
      fl = (div - fl).gt(0.5).where(fl + 1, fl)
      # a0 < a0 is never true: it keeps a0 and b0 in the graph, so their gradient is zeros (piecewise constant), not missing
      return b0.lt(b0).where(b0, a0.lt(a0).where(a0, b.eq(0).where(a._fdiv(b), div.ne(0).where(fl, a._fdiv(b)._signed_zero()))))
    q = a._int_div(b)
    # truncation rounds toward zero: one less where the exact quotient is negative and not whole
    if not dtypes.is_unsigned(a.dtype): q = q - ((q * b).ne(a) & a.lt(0).ne(b.lt(0))).cast(a.dtype)
    return b.eq(0).where(0, q)
  def floor_divide(self, x:Any) -> Tensor: return self.floordiv(x)
  def mod(self, x:Any, reverse:bool=False) -> Tensor:
    """Python/torch `%` (remainder): the sign of the divisor. Floats: fmod plus the divisor where the signs differ, like torch."""
    a, b = self._broadcasted(x, reverse, "mod")
    if a.dtype == dtypes.bool: raise NotSupportedError("mod of bool tensors; cast them to an int dtype first")
    if dtypes.is_float(a.dtype):
      m = a.detach()._fmod_f(b.detach())
      m = (m.ne(0) & m.lt(0).ne(b.detach().lt(0))).where(m + b.detach(), m)
      return Tensor._with_grads(m, (a, a.full_like(1.0)), (b, -a.detach().floordiv(b.detach())))
    r = a - b * a._int_div(b)
    if not dtypes.is_unsigned(a.dtype): r = (r.ne(0) & r.lt(0).ne(b.lt(0))).where(r + b, r)
    return b.eq(0).where(0, r)
  def remainder(self, x:Any) -> Tensor: return self.mod(x)
  def fmod(self, x:Any) -> Tensor:
    """C fmod: the remainder with the sign of the dividend"""
    a, b = self._broadcasted(x, what="fmod")
    if a.dtype == dtypes.bool: raise NotSupportedError("fmod of bool tensors; cast them to an int dtype first")
    if dtypes.is_float(a.dtype):
      return Tensor._with_grads(a.detach()._fmod_f(b.detach()), (a, a.full_like(1.0)), (b, -a.detach()._fdiv(b.detach()).trunc()))
    return b.eq(0).where(0, a - b * a._int_div(b))
  def idiv(self, x:Any, reverse:bool=False) -> Tensor: return self.div(x, reverse, rounding_mode="trunc")
  def true_divide(self, x:Any) -> Tensor: return self.div(x)
  def multiply(self, x:Any) -> Tensor: return self.mul(x)
  def subtract(self, x:Any) -> Tensor: return self.sub(x)
  def __floordiv__(self, x:Any) -> Tensor: return self.floordiv(x)
  def __rfloordiv__(self, x:Any) -> Tensor: return self.floordiv(x, True)
  def __pos__(self) -> Tensor: return self

  def pow(self, x:Any, reverse:bool=False) -> Tensor:
    """self ** x. Int ** int stays int (exact, wrapping like torch); floats use C's pow, with torch's exact special cases for the
    exponents 0, 1, 2, 3, -1, -2, 0.5 and -0.5. Negative bases need a whole exponent (else nan)."""
    if not reverse and isinstance(x, (int, float)) and not isinstance(x, bool):
      base = self if dtypes.is_float(self.dtype) or isinstance(x, int) else self._to_float()
      if base.dtype == dtypes.bool: base = base.cast(dtypes.default_int)
      if dtypes.is_float(base.dtype):
        # x**0 is 1 (nan too) through POW, which keeps x in the graph with a zero gradient
        special = {1: lambda: base, 2: lambda: base * base, 3: lambda: base * base * base,
                   -1: lambda: base.reciprocal(), 0.5: lambda: base.sqrt(), -0.5: lambda: base.rsqrt(),
                   -2: lambda: base._with_grad((base * base).reciprocal().detach(), -2 / (base * base * base).detach())}   # +-inf at +-0
        if x in special: return special[x]()
      elif x >= 0: return base._square_multiply(int(x))
    a, b = self._broadcasted(x, reverse, "pow")
    if not dtypes.is_float(a.dtype):
      if a.dtype == dtypes.bool: a, b = a.cast(dtypes.default_int), b.cast(dtypes.default_int)
      return a._int_pow(b)
    return Tensor(a.uop.alu(Ops.POW, b.uop))
  def _square_multiply(self, n:int) -> Tensor:
    # exact integer powers by repeated squaring, built at graph time
    ret: Tensor|None = None
    sq = self
    while n:
      if n & 1: ret = sq if ret is None else ret * sq
      n >>= 1
      if n: sq = sq * sq
    return ret if ret is not None else self.full_like(1)
  def _int_pow(self, b:Tensor) -> Tensor:
    # square-and-multiply over the bits of the exponent, in the unsigned dtype of the same size where overflow wraps instead of being UB;
    # a negative exponent truncates to 0 unless |base| is 1
    udt = to_dtype(f"uint{8*self.dtype.itemsize}")
    e, sq, ret = b.abs(), self.cast(udt), self.full_like(1, dtype=udt)
    for i in range(8*b.dtype.itemsize - 1):
      ret = ((e >> i) & 1).ne(0).where(ret * sq, ret)
      sq = sq * sq
    return (b.lt(0) & self.abs().ne(1)).where(0, ret.cast(self.dtype))
  def __pow__(self, x:Any) -> Tensor: return self.pow(x)
  def __rpow__(self, x:Any) -> Tensor: return self.pow(x, True)
  def __matmul__(self, x:Tensor) -> Tensor: return self.dot(x)   # (matmul(x) without its call: the op a training step calls most)
  def __rmatmul__(self, x:Tensor) -> Tensor: return self.matmul(x, True)
  def __eq__(self, x:Any) -> Tensor: return self.eq(x)  # type: ignore[override]
  def __ne__(self, x:Any) -> Tensor: return self.ne(x)  # type: ignore[override]
  def __invert__(self) -> Tensor: return self.bitwise_not()
  def __abs__(self) -> Tensor: return self.abs()

  # in place: into the buffer when realized, else the tensor just becomes the result
  def _check_inplace(self) -> None:
    # like PyTorch: a leaf that requires grad is changed in place only under no_grad (an optimizer's step), its gradient would be lost
    if self.is_leaf and self._requires_grad and not _TensorMeta._no_grad:
      raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation; use no_grad() or assign()")
  def _inplace(self, x:Tensor) -> Tensor:
    self._check_inplace()
    if self._assign(x):
      del x
      self._run_update()
    return self
  def __iadd__(self, x:Any) -> Tensor: return self._inplace(self.add(x))
  def __isub__(self, x:Any) -> Tensor: return self._inplace(self.sub(x))
  def __imul__(self, x:Any) -> Tensor: return self._inplace(self.mul(x))
  def __itruediv__(self, x:Any) -> Tensor: return self._inplace(self.div(x))
  def __ifloordiv__(self, x:Any) -> Tensor: return self._inplace(self.floordiv(x))
  def __imod__(self, x:Any) -> Tensor: return self._inplace(self.mod(x))
  def __ipow__(self, x:Any) -> Tensor: return self._inplace(self.pow(x))
  def __iand__(self, x:Any) -> Tensor: return self._inplace(self.bitwise_and(x))
  def __ior__(self, x:Any) -> Tensor: return self._inplace(self.bitwise_or(x))
  def __ixor__(self, x:Any) -> Tensor: return self._inplace(self.bitwise_xor(x))
  def __ilshift__(self, x:Any) -> Tensor: return self._inplace(self.lshift(x))
  def __irshift__(self, x:Any) -> Tensor: return self._inplace(self.rshift(x))
  def __imatmul__(self, x:Tensor) -> Tensor: return self._inplace(self.matmul(x))
  # torch's in-place methods (x.add_(y), x[1:].clamp_(0, 1), x.zero_()): the op's result written into this tensor (or its view), as += is
  def fill_(self, value:Any) -> Tensor: return self._inplace(self.full_like(value))
  def zero_(self) -> Tensor: return self.fill_(0)
  def copy_(self, src:Any) -> Tensor:
    return self._inplace((src if isinstance(src, Tensor) else Tensor(src, self.device)).to(self.device).cast(self.dtype)._broadcast_to(self.shape))

  def _shift(self, x:Any, reverse:bool, left:bool) -> Tensor:
    # torch's shifts: a count outside [0, bits) gives 0 (and -1 for a negative value shifted right); a left shift runs unsigned, where
    # C has no undefined overflow
    name = "lshift" if left else "rshift"
    a, b = self._broadcasted(x, reverse, name)
    if not dtypes.is_int(a.dtype): raise NotSupportedError(f"{name} needs int tensors, got {a.dtype}")
    bits, signed = 8*a.dtype.itemsize, not dtypes.is_unsigned(a.dtype)
    fixed = isinstance(x, int) and not reverse and 0 <= x < bits
    ok = (b.ge(0) & b.lt(bits)) if signed else b.lt(bits)
    cnt = b if fixed else ok.where(b, 0)
    if left:
      ut = to_dtype(f"uint{bits}")
      shifted = Tensor(a.cast(ut).uop.alu(Ops.SHL, cnt.cast(ut).uop)).cast(a.dtype)
    else: shifted = Tensor(a.uop.alu(Ops.SHR, cnt.uop))
    if fixed: return shifted
    return ok.where(shifted, a.lt(0).where(a.full_like(-1), 0) if signed and not left else 0)
  def lshift(self, x:Any, reverse:bool=False) -> Tensor: return self._shift(x, reverse, True)
  def rshift(self, x:Any, reverse:bool=False) -> Tensor: return self._shift(x, reverse, False)
  def bitwise_left_shift(self, x:Any) -> Tensor: return self.lshift(x)
  def bitwise_right_shift(self, x:Any) -> Tensor: return self.rshift(x)

  def maximum(self, x:Any) -> Tensor:
    """Elementwise max; nan wins, like torch. A tie sends half the gradient to each side."""
    a, b = self._broadcasted(x, what="maximum")
    ret = Tensor(a.uop.alu(Ops.MAX, b.uop))
    return (a.ne(a) | b.ne(b)).where(a + b, ret) if dtypes.is_float(a.dtype) else ret
  def minimum(self, x:Any) -> Tensor:
    a, b = self._broadcasted(x, what="minimum")
    # -max(-a, -b) would wrap for unsigned ints and INT_MIN, so only floats use it (it keeps max's nan handling)
    return -((-a).maximum(-b)) if dtypes.is_float(a.dtype) else a.lt(b).where(a, b)
  def clamp(self, min_:Any=None, max_:Any=None, *, min:Any=None, max:Any=None) -> Tensor:
    """torch.clamp: max(x, min) then min(.., max) (so max wins where min > max); nan stays; gradient 1 on [min, max] inclusive"""
    lo, hi = min_ if min_ is not None else min, max_ if max_ is not None else max
    if lo is None and hi is None: raise ValueError("clamp needs at least one of min and max")
    ret = self if lo is None else self.lt(lo).where(lo, self)
    ret = ret if hi is None else ret.gt(hi).where(hi, ret)
    return self.isnan().where(self.detach(), ret) if dtypes.is_float(self.dtype) else ret   # nan is outside [min, max]: gradient 0
  def clip(self, min_:Any=None, max_:Any=None, *, min:Any=None, max:Any=None) -> Tensor:
    return self.clamp(min_, max_, min=min, max=max)

  # float a == b is one CMPEQ (devices without it get not(a != b)); float a <= b as not(b < a) would be true for nan, so it is (a < b) | (a == b),
  # both compares on the same two operands (one constant made for a scalar). Ints keep not(a != b) and not(b < a): the forms the index rules
  # read (a one-hot gather collapses to a load, masks fold)
  def eq(self, x:Any) -> Tensor:
    a, b = self._broadcasted_uops(x, what="comparison")
    return Tensor(a.alu(Ops.CMPEQ, b) if dtypes.is_float(a.dtype) else a.ne(b).logical_not())
  def le(self, x:Any) -> Tensor:
    a, b = self._broadcasted_uops(x, what="comparison")
    return Tensor(a.alu(Ops.CMPLT, b).alu(Ops.OR, a.alu(Ops.CMPEQ, b)) if dtypes.is_float(a.dtype) else b.alu(Ops.CMPLT, a).logical_not())
  def ge(self, x:Any) -> Tensor:
    a, b = self._broadcasted_uops(x, what="comparison")
    return Tensor(b.alu(Ops.CMPLT, a).alu(Ops.OR, a.alu(Ops.CMPEQ, b)) if dtypes.is_float(a.dtype) else a.alu(Ops.CMPLT, b).logical_not())
  def logical_not(self) -> Tensor: return self.cast(dtypes.bool).ne(True)
  def logical_and(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_and(self.ufix(x).cast(dtypes.bool))
  def logical_or(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_or(self.ufix(x).cast(dtypes.bool))
  def logical_xor(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_xor(self.ufix(x).cast(dtypes.bool))
  def bitwise_not(self) -> Tensor:
    if self.dtype == dtypes.bool: return self.logical_not()
    if not dtypes.is_int(self.dtype): raise TypeError(f"bitwise_not needs an int or bool tensor, got {self.dtype}")
    return self.bitwise_xor(dtypes.max(self.dtype) if dtypes.is_unsigned(self.dtype) else -1)

  # ***** unary math *****
  # Composite functions of floats run in float32 or float64: half, bfloat16 and fp8 go through float32 and round once at the end, like
  # torch on the CPU; ints give the default float. The transcendental ones hold a few ulp over the whole range and take their gradient
  # from the derivative torch uses (_smooth), so a where() branch that isn't taken can't leak 0*inf = nan into the backward pass.

  def _float_cast(self) -> tuple[Tensor, DType]:
    """self in the dtype composite maths runs in (float32 or float64), and the dtype of the result"""
    out = least_upper_float(self.dtype)
    return self.cast(out if out in (dtypes.float32, dtypes.float64) else dtypes.float32), out
  def _smooth(self, value:Callable[[Tensor], Tensor], deriv:Callable[[Tensor, Tensor], Tensor], select:bool=False) -> Tensor:
    """value(x) built on a detached x, with d/dx = deriv(x, value(x)): a hand-written backward without a Function class. The backward is
    upstream * deriv (torch's chain rule: inf or nan meeting a 0 derivative is nan); select: torch's backward selects instead, so where deriv
    is 0 nothing passes"""
    x, out = self._float_cast()
    if not _reaches_grad(x.uop): return value(x).cast(out)   # no gradient can flow: building deriv and its carrier is only Python time
    y = value(xd := x.detach()).detach()
    return x._with_grad(y, deriv(xd, y), select).cast(out)
  def _with_grad(self, value:Tensor, deriv:Tensor, select:bool=False) -> Tensor:
    # (x - x.detach()) is exactly 0 going forward and passes upstream * deriv to x going backward: torch's chain rule, so an infinite or nan
    # upstream gradient meeting a 0 derivative is nan, as in torch. The carrier is dropped going forward (ZERO_FORWARD): the value, -0.0 and
    # infinities included, is exactly value's (x - x.detach() is nan at an infinite x, but only its gradient, 1, is used)
    carrier = (self - self.detach()) * (d := deriv.detach())
    if select: carrier = d.eq(0).where(0.0, carrier)
    return value + Tensor(UOp(Ops.FUSE, carrier.dtype, (carrier.uop,), ZERO_FORWARD))
  @staticmethod
  def _split_const(name:str, dt:DType, bits:int) -> tuple[float, float]:
    """(hi, lo) with hi + lo = the constant to about 2x dt's precision, and hi * k exact for every whole |k| < 2**bits"""
    from fractions import Fraction
    from tinygrad.uop.transcendental import _frac, _ln2_fixed, _pi_fixed
    v: Fraction = _frac(_ln2_fixed() if name == "ln2" else _pi_fixed())
    keep = dtypes.finfo(dt)[1] + 1 - bits
    e = math.frexp(float(v))[1]
    hi = math.ldexp(round(math.ldexp(float(v), keep - e)), e - keep)
    return hi, truncate[dt](float(v - Fraction(hi)))
  def _absw(self) -> Tensor: return self.lt(0).where(-self, self)   # |x| with gradient 1 at 0, for use inside compositions
  def _poly(self, coeffs:Sequence[float]) -> Tensor:
    # Horner, highest degree first: one MULACC a term (half the graph building of a mul and an add)
    x = self.uop
    acc = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]: acc = acc.alu(Ops.MULACC, x, x.const_like(c))
    return Tensor(acc)

  def exp2(self) -> Tensor: return self._float_op(Ops.EXP2)
  def log2(self) -> Tensor: return self._float_op(Ops.LOG2)
  def sqrt(self) -> Tensor: return self._float_op(Ops.SQRT)
  # d/dx by _trig's cos: the chain rule's sin(pi/2 - x) rounds a big x away
  def sin(self) -> Tensor: return self._smooth(lambda x: x._float_op(Ops.SIN), lambda x, y: x._trig()[1])
  def reciprocal(self) -> Tensor: return self._float_op(Ops.RECIP)
  def rsqrt(self) -> Tensor:
    x, out = self._float_cast()
    return x.sqrt().reciprocal().cast(out)
  def _exp_reduce(self) -> tuple[Tensor, Tensor]:
    """(k, r) with self = k*ln2 + r: k = trunc(self/ln2) whole, k*ln2 taken off exactly (Cody-Waite), so |r| < ln2. k is kept to the
    exponents of finite nonzero results (2**k is exact); past them r grows and its clip to just above ln2 makes e**r * 2**k overflow to inf
    or round to 0, as it should. The clips are max/min selects, one vector instruction each; a nan goes on through r."""
    f64 = self.dtype == dtypes.float64
    hi, lo = Tensor._split_const("ln2", self.dtype, 12 if f64 else 9)
    t = self * (1/math.log(2))
    kmin, kmax = (-1074.0, 1023.0) if f64 else (-149.0, 127.0)
    k = t.gt(kmin).where(t, kmin)
    k = k.lt(kmax).where(k, kmax).trunc()
    r = (self - k * hi) - k * lo
    r = r.lt(-0.71).where(-0.71, r)
    return k, r.gt(0.71).where(0.71, r)
  @staticmethod
  def _exp_coeffs(dt:DType, low:int) -> list[float]:
    # 1/n! from n = low on, highest first: Taylor terms until the first left out is below 2**-29 (float32) / 2**-60 (float64) of e**-0.71
    return [1 / math.factorial(n) for n in range(17 if dt == dtypes.float64 else 10, low - 1, -1)]
  def exp(self) -> Tensor:
    """e**x, one op: devices without it get uop/transcendental.py's xexp (the reduction of _exp_reduce, in the kernel)"""
    x, out = self._float_cast()
    if out == x.dtype: return x._float_op(Ops.EXP)
    # half and bfloat16: the derivative is the rounded result, as torch's grad * result, so an overflow to inf meets a 0 gradient as nan
    return self._smooth(lambda x: x._float_op(Ops.EXP), lambda x, y: y.cast(out).cast(x.dtype))
  def log(self) -> Tensor:
    x, out = self._float_cast()
    return (x.log2() * math.log(2)).cast(out)
  def _expm1_v(self) -> Tensor:
    # e**x - 1 = 2**k * (e**r - 1) + (2**k - 1) (see _exp_reduce): with k = 0 (|x| < ln2) it is the series of e**r - 1 alone, so small x
    # keep their digits; elsewhere the two parts have the same sign and 2**k - 1 is exact, so nothing cancels
    k, r = self._exp_reduce()
    q = r + r * (r * r._poly(Tensor._exp_coeffs(self.dtype, 2)))
    s = k.exp2()
    return self.eq(0).where(self, s * q + (s - 1))   # -0.0 stays
  def _log1p_v(self) -> Tensor:
    # log(1+y) = log(u) * y/(u-1) with u = 1+y rounded: the ratio cancels the rounding of u (Kahan)
    u = self + 1
    one = u.eq(1)
    r = one.where(self, u.log() * (self / one.where(1.0, u - 1)))
    return self.eq(math.inf).where(math.inf, r)
  def expm1(self) -> Tensor: return self._smooth(Tensor._expm1_v, lambda x, y: y + 1)
  def log1p(self) -> Tensor: return self._smooth(Tensor._log1p_v, lambda x, y: 1 / (x + 1))

  def _trig(self) -> tuple[Tensor, Tensor, Tensor]:
    """(sin, cos, tan) for float32/64. cos x = sin 2x / (2 sin x) keeps every bit of a big x (sin(pi/2 - x) would round x away first);
    tiny x gives (x, 1, x), and x so big that 2x overflows falls back to cos x = 1 - 2 sin(x/2)**2."""
    f64 = self.dtype == dtypes.float64
    a = self._absw()
    tiny, huge = a.lt(2.0**-27 if f64 else 2.0**-13), a.ge(2.0**1023 if f64 else 2.0**127)
    s1 = tiny.where(1.0, self).sin()
    s2 = ((tiny | huge).where(1.0, self) * 2).sin()
    h = (huge.where(self, 1.0) * 0.5).sin()
    cos_huge = 1 - 2 * h * h
    sin = tiny.where(self, s1)
    cos = tiny.where(1.0, huge.where(cos_huge, s2 / (s1 * 2)))
    tan = tiny.where(self, huge.where(s1 / cos_huge, s1 * s1 * 2 / s2))
    return sin, cos, tan
  def cos(self) -> Tensor: return self._smooth(lambda x: x._trig()[1], lambda x, y: -x._trig()[0])
  def tan(self) -> Tensor: return self._smooth(lambda x: x._trig()[2], lambda x, y: 1 + y * y)

  def _atan_v(self) -> Tensor:
    # |x| is brought to |t| <= tan(pi/8) by atan(a) = pi/4 + atan((a-1)/(a+1)) or pi/2 + atan(-1/a), then the Taylor series in t
    f64 = self.dtype == dtypes.float64
    a = self._absw()
    lo_, hi_ = a.le(math.tan(math.pi/8)), a.gt(math.tan(3*math.pi/8))
    t = lo_.where(a, hi_.where(-1.0, a - 1)) / lo_.where(1.0, hi_.where(a, a + 1))
    n = 20 if f64 else 9
    t2 = t * t
    poly = t + t * t2 * t2._poly([(-1)**k / (2*k + 1) for k in range(n - 1, 0, -1)])
    p4_hi, p4_lo = Tensor._split_const("pi", self.dtype, 2)
    p4_hi, p4_lo = p4_hi / 4, p4_lo / 4
    r = lo_.where(poly, hi_.where(p4_hi * 2 + (poly + p4_lo * 2), p4_hi + (poly + p4_lo)))
    return self.lt(0).where(-r, r)
  def atan(self) -> Tensor: return self._smooth(Tensor._atan_v, lambda x, y: 1 / (x * x + 1))
  def asin(self) -> Tensor:
    """asin x = atan(x / sqrt((1-x)(1+x))): 1-x is exact near 1, where 1-x*x would cancel"""
    return self._smooth(lambda x: (x / ((1 - x) * (1 + x)).sqrt())._atan_v(), lambda x, y: ((1 - x) * (1 + x)).rsqrt())
  def acos(self) -> Tensor:
    """acos x = 2 atan(sqrt((1-x)/(1+x))), exact differences near both ends (pi/2 - asin x would cancel near 1)"""
    return self._smooth(lambda x: ((1 - x) / (1 + x)).sqrt()._atan_v() * 2, lambda x, y: -((1 - x) * (1 + x)).rsqrt())

  def _half_exp(self) -> Tensor:
    # e**x / 2 for x >= 0, also where e**x overflows and e**x / 2 doesn't
    big = self.gt(700.0 if self.dtype == dtypes.float64 else 80.0)
    h = (big.where(self, 0.0) * 0.5).exp()
    return big.where((h * 0.5) * h, big.where(0.0, self).exp() * 0.5)
  def _sinh_v(self) -> Tensor:
    a = self._absw()
    small = a.lt(1.0)
    em = small.where(a, 0.0)._expm1_v()
    he = small.where(1.0, a)._half_exp()
    r = small.where((em + em / (em + 1)) * 0.5, he - 0.25 / he)   # sinh = (e**a - 1 + 1 - e**-a)/2: no cancellation near 0
    return self.lt(0).where(-r, r)
  def _cosh_v(self) -> Tensor:
    he = self._absw()._half_exp()
    return he + 0.25 / he
  def sinh(self) -> Tensor: return self._smooth(Tensor._sinh_v, lambda x, y: x._cosh_v())
  def cosh(self) -> Tensor: return self._smooth(Tensor._cosh_v, lambda x, y: x._sinh_v())
  def tanh(self) -> Tensor:
    """one op: devices without it get uop/transcendental.py's xtanh"""
    x, out = self._float_cast()
    return x._float_op(Ops.TANH).cast(out)
  def _big_arg(self) -> Tensor: return self.gt(2.0**28 if self.dtype == dtypes.float64 else 2.0**13)   # where x*x + 1 == x*x
  def asinh(self) -> Tensor:
    """asinh a = log1p(a + a*a / (1 + sqrt(1 + a*a))) (accurate near 0); log(a) + ln2 once a*a swamps the 1 (and before it overflows)"""
    def value(x:Tensor) -> Tensor:
      a = x._absw()
      big = a._big_arg()
      am = big.where(1.0, a)
      r = big.where(big.where(a, 1.0).log() + math.log(2), (am + am * am / (1 + (1 + am * am).sqrt()))._log1p_v())
      return x.lt(0).where(-r, r)
    return self._smooth(value, lambda x, y: (x * x + 1).rsqrt())
  def acosh(self) -> Tensor:
    """acosh x = log1p(t + sqrt(t*(t+2))) with t = x-1 exact near 1; log(x) + ln2 for big x"""
    def value(x:Tensor) -> Tensor:
      big = x._big_arg()
      t = big.where(1.0, x) - 1
      r = big.where(big.where(x, 1.0).log() + math.log(2), (t + (t * (t + 2)).sqrt())._log1p_v())
      return x.lt(1).where(math.nan, r)   # t*(t+2) overflows to +inf for a very negative x
    return self._smooth(value, lambda x, y: (x * x - 1).rsqrt())   # torch's form: +inf at -1, nan on (-1, 1)
  def atanh(self) -> Tensor:
    """atanh x = log1p(2a/(1-a))/2 on a = |x| (1-a is exact near 1)"""
    def value(x:Tensor) -> Tensor:
      a = x._absw()
      r = (a * 2 / (1 - a))._log1p_v() * 0.5
      return x.lt(0).where(-r, r)
    return self._smooth(value, lambda x, y: 1 / ((1 - x) * (1 + x)))
  def _erf_v(self) -> Tensor:
    # Maclaurin series up to |x| = T, then 1 - erfc with erfc from its continued fraction (Laplace), evaluated from the tail
    f64 = self.dtype == dtypes.float64
    T, nterms, depth = (1.5, 26, 90) if f64 else (1.25, 14, 30)
    a = self._absw()
    small = a.lt(T)
    xs = small.where(self, 0.0)
    c = [2 / math.sqrt(math.pi) * (-1)**n / (math.factorial(n) * (2*n + 1)) for n in range(nterms - 1, -1, -1)]
    poly = xs * (xs * xs)._poly(c)
    ab = small.where(T, a)
    t = ab
    for k in range(depth, 0, -1): t = ab + (k / 2) / t
    big = 1 - (-ab * ab).exp() * (1 / math.sqrt(math.pi)) / t
    return small.where(poly, self.lt(0).where(-big, big))
  def erf(self) -> Tensor: return self._smooth(Tensor._erf_v, lambda x, y: (-x * x).exp() * (2 / math.sqrt(math.pi)))

  def square(self) -> Tensor: return self * self
  def abs(self) -> Tensor:
    """|x| with gradient sign(x), so 0 at 0 like torch; abs(-0.0) is 0.0"""
    if dtypes.is_unsigned(self.dtype) or self.dtype == dtypes.bool: return self
    if not dtypes.is_float(self.dtype): return self.lt(0).where(-self, self)
    if self.dtype == dtypes.float32 and not _reaches_grad(self.uop):   # the sign bit cleared: one constant, one AND
      x, mask = self.bitcast(dtypes.uint32)._broadcasted_uops(0x7fffffff, what="abs")
      return Tensor(x.alu(Ops.AND, mask).bitcast(dtypes.float32))
    return self.lt(0).where(-self, self.gt(0).where(self, self - self))   # x - x: +0 for -0, nan for nan, and no gradient
  def sign(self) -> Tensor:
    """-1, 0 or 1 (0 for nan, like torch)"""
    if self.dtype == dtypes.bool: return self
    ret = self.gt(0).cast(self.dtype) - self.lt(0).cast(self.dtype)
    if not dtypes.is_float(self.dtype) or not _reaches_grad(self.uop): return ret
    # torch's derivative: zeros (TRUNC's), which a product with nan or inf further back turns to nan; the carrier is dropped going forward
    return ret + Tensor(UOp(Ops.FUSE, self.dtype, (self.trunc().uop,), ZERO_FORWARD))
  def _to_float(self) -> Tensor: return self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
  def trunc(self) -> Tensor: return Tensor(self.uop.alu(Ops.TRUNC)) if dtypes.is_float(self.dtype) else self
  def floor(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return t - self.lt(t).cast(self.dtype)
  def ceil(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return self.gt(t).where(t + 1, t)   # ceil(-0.3) is -0.0, like torch (t + 0 would be +0.0)
  def round(self, decimals:int=0) -> Tensor:
    """Round half to even, like numpy and torch; decimals scales by 10**decimals first, as torch does."""
    if not dtypes.is_float(self.dtype): return self
    if decimals > 0: return (self * 10**decimals).round() / 10**decimals
    if decimals < 0: return (self / 10**-decimals).round() * 10**-decimals
    f = self.floor()
    frac = self - f  # exact: floor(x) is within one unit of x
    f_is_odd = (f * 0.5).floor().mul(2).ne(f)
    ret = frac.gt(0.5).where(f + 1, frac.lt(0.5).where(f, f_is_odd.where(f + 1, f)))
    return ret.eq(0).where(self._signed_zero(), ret)   # round(-0.3) is -0.0
  def isnan(self) -> Tensor: return self.ne(self) if dtypes.is_float(self.dtype) else self.full_like(False, dtype=dtypes.bool)
  def isinf(self, detect_positive:bool=True, detect_negative:bool=True) -> Tensor:
    if not dtypes.is_float(self.dtype): return self.full_like(False, dtype=dtypes.bool)
    return (self.eq(math.inf) & detect_positive) | (self.eq(-math.inf) & detect_negative)
  def isfinite(self) -> Tensor: return (self.isinf() | self.isnan()).logical_not()
  def lerp(self, end:Any, weight:Any) -> Tensor:
    """self + weight * (end - self), in torch's two-sided form (exact at weight 0 and 1)"""
    s, e = self._broadcasted(end, what="lerp")
    w = weight if isinstance(weight, Tensor) else s.ufix(weight)
    if not dtypes.is_float(s.dtype) or not dtypes.is_float(w.dtype): raise TypeError(f"lerp needs float tensors, got {s.dtype} and weight {w.dtype}")
    shape = _broadcast_shape("lerp", s.shape, w.shape)
    s, e, w = s._broadcast_to(shape), e._broadcast_to(shape), w.cast(s.dtype)._broadcast_to(shape)
    diff = e - s
    return w.lt(0.5).where(s + w * diff, e - diff * (1 - w))
  def _signed_zero(self) -> Tensor:
    # 0 with self's sign bit, no gradient (copysign's gradient trick adds a +0, which turns -0 into +0)
    ut = to_dtype(f"uint{8*self.dtype.itemsize}")
    return (self.detach().bitcast(ut) & (1 << (8*self.dtype.itemsize - 1))).bitcast(self.dtype)
  def copysign(self, other:Any) -> Tensor:
    """|self| with the sign bit of other (-0.0 and nan signs too); ints give floats, like torch"""
    a, b = self._broadcasted(other, what="copysign")
    dt = least_upper_float(a.dtype)
    a, b = a.cast(dt), b.cast(dt)
    ut, sbit = to_dtype(f"uint{8*dt.itemsize}"), 1 << (8*dt.itemsize - 1)
    value = ((a.detach().bitcast(ut) & (sbit - 1)) | (b.bitcast(ut) & sbit)).bitcast(dt)   # b used, so its gradient is zeros
    return a._with_grad(value, a.sign() * value.sign())

  # ***** activations *****

  def relu(self) -> Tensor:
    """max(x, 0) like torch: nan and -0.0 kept, gradient 0 at 0. One compare and one select on one constant; the gradient picks x only
    above 0 (or at nan)"""
    x, zero = self._broadcasted_uops(0, what="relu")
    ret = Tensor(x.alu(Ops.CMPLT, zero).alu(Ops.WHERE, zero, x))
    return self.le(0).where(ret.detach(), self) if _reaches_grad(x) else ret
  def relu6(self) -> Tensor: return self.hardtanh(0, 6)   # torch's relu6 is hardtanh(0, 6): gradient 0 at both edges
  def hardtanh(self, min_val:float=-1.0, max_val:float=1.0) -> Tensor:
    """clamp to [min_val, max_val] with gradient 0 on the edges, like torch's hardtanh"""
    return self.le(min_val).where(min_val, self.ge(max_val).where(max_val, self))
  def leaky_relu(self, neg_slope:float=0.01, *, negative_slope:float|None=None) -> Tensor:
    slope = neg_slope if negative_slope is None else negative_slope
    return self.gt(0).where(self, self * slope)
  def _sigmoid_v(self) -> Tensor:
    # 1/(1 + e**-|x|), times e**-|x| for negative x: e**-|x| never overflows and tiny results keep their digits. -0.0 and nan take the
    # x >= 0 side. Built on UOps of one shape: three constants and eight ops (Python time each call, not only kernel time)
    x = self.uop
    zero, one, minus_one = x.const_like(0), x.const_like(1), x.const_like(-1)   # made from x: its device is known, no graph walk
    neg = x.alu(Ops.CMPLT, zero)
    e = neg.alu(Ops.WHERE, x, x * minus_one).alu(Ops.EXP)
    p = one.alu(Ops.FDIV, one + e)
    return Tensor(neg.alu(Ops.WHERE, e * p, p))
  def sigmoid(self) -> Tensor: return self._smooth(Tensor._sigmoid_v, lambda x, y: y * (1 - y))
  def logsigmoid(self) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log1p(e**-|x|): no overflow, and no log(0) for very negative x"""
    return self._smooth(lambda x: x.minimum(0) - (-x._absw()).exp()._log1p_v(), lambda x, y: (-x)._sigmoid_v())
  def softplus(self, beta:float=1.0, threshold:float=20.0) -> Tensor:
    """log(1 + e**(beta*x)) / beta, as max(bx, 0) + log1p(e**-|bx|) (no overflow); x itself above threshold, like torch"""
    def value(x:Tensor) -> Tensor:
      xb = x * beta
      return xb.gt(threshold).where(x, (xb.maximum(0) + (-xb._absw()).exp()._log1p_v()) / beta)
    return self._smooth(value, lambda x, y: (xb := x * beta).gt(threshold).where(1.0, xb._sigmoid_v()))
  def softsign(self) -> Tensor: return self / (1 + self.abs())
  def hardsigmoid(self) -> Tensor:
    x, out = self._float_cast()
    return x.le(-3).where(0.0, x.ge(3).where(1.0, x.isnan().where(x.detach(), (x + 3) / 6))).cast(out)   # torch: gradient 0 at nan
  def hardswish(self) -> Tensor:
    """x * relu6(x + 3) / 6 as torch computes it (-inf gives nan), with torch's gradient: 0 up to -3, 1 from 3, x/3 + 1/2 between"""
    return self._smooth(lambda x: x * (x + 3).clamp(0, 6) / 6, lambda x, y: x.le(-3).where(0.0, x.lt(3).where(x / 3 + 0.5, 1.0)), select=True)
  def elu(self, alpha:float=1.0) -> Tensor:
    x, out = self._float_cast()
    pos = x.le(0).logical_not()   # nan takes the linear branch, like torch (gradient 1 there)
    return pos.where(x, pos.where(0.0, x).expm1() * alpha).cast(out)
  def celu(self, alpha:float=1.0) -> Tensor:
    x, out = self._float_cast()
    pos = x.le(0).logical_not()   # nan takes the linear branch, like torch (gradient 1 there)
    return pos.where(x, (pos.where(0.0, x) / alpha).expm1() * alpha).cast(out)
  def selu(self) -> Tensor:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    x, out = self._float_cast()
    pos = x.le(0).logical_not()   # nan takes the linear branch, like torch (gradient 1 there)
    return (pos.where(x, pos.where(0.0, x).expm1() * alpha) * scale).cast(out)
  # silu, gelu and mish: torch's backward formulas (an infinite x or upstream gradient gives torch's nan or inf, not the chain rule's)
  def silu(self) -> Tensor: return self._smooth(lambda x: x * x._sigmoid_v(), lambda x, y: (s := x._sigmoid_v()) * (1 + x * (1 - s)))
  def swish(self) -> Tensor: return self.silu()
  def quick_gelu(self) -> Tensor:
    x, out = self._float_cast()
    return (x * (x * 1.702).sigmoid()).cast(out)
  def gelu(self, approximate:str="tanh") -> Tensor:
    """x * Phi(x). As in tinygrad, the default is the tanh approximation (torch's approximate="tanh"), not torch's default:
    pass approximate="none" for the exact erf form."""
    x, out = self._float_cast()
    if approximate == "none": return (0.5 * x * (1 + (x * (1 / math.sqrt(2))).erf())).cast(out)
    if approximate == "tanh":
      def deriv(x:Tensor, y:Tensor) -> Tensor:
        t = (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh()
        return 0.5 * (1 + t) + 0.5 * x * ((1 - t * t) * math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x))
      return x._smooth(Tensor._gelu_tanh_v, deriv).cast(out)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
  def _gelu_tanh_v(self) -> Tensor:
    # 0.5 * x * (1 + tanh(z)) = x * sigmoid(2z) = x / (1 + e**-2z), z = sqrt(2/pi) * (x + 0.044715 x**3): one exp and one divide, no
    # cancellation in 1 + tanh(z) for negative x, e**-2z = inf gives the signed zero. Three constants and seven ops on UOps
    x, c = self.uop, -2 * math.sqrt(2 / math.pi)
    one, c1, c3 = x.const_like(1), x.const_like(c), x.const_like(c * 0.044715)   # made from x: its device is known, no graph walk
    return Tensor(x.alu(Ops.FDIV, one + (x * (x * x * c3 + c1)).alu(Ops.EXP)))
  def mish(self) -> Tensor:
    return self._smooth(lambda x: x * x.softplus().tanh(), lambda x, y: (t := x.softplus().tanh()) + x * x._sigmoid_v() * (1 - t * t))

  # ***** movement *****

  def _resolve_dim(self, dim:int, extra:bool=False) -> int:
    n = self.ndim + int(extra)
    bound = max(n, 1)
    if not isinstance(dim, int): raise TypeError(f"dim must be an int, got {dim!r}")
    if not -bound <= dim < bound:
      raise IndexError(f"dimension {dim} is out of range for a tensor of {self.ndim} dims (expected in [{-bound}, {bound-1}])")
    return dim % bound if n else 0
  def reshape(self, shape:Any, *args:Any) -> Tensor:
    """New shape with the same number of elements; one dim may be -1 (inferred), None keeps that dim."""
    new_shape = tuple(self.shape[i] if s is None else s for i, s in enumerate(argfix(shape, *args)))
    if not all(isinstance(s, (int, UOp)) and not isinstance(s, bool) for s in new_shape): raise TypeError(f"reshape sizes must be ints: {new_shape}")
    if (infer := sum(1 for s in new_shape if isinstance(s, int) and s == -1)) > 1:
      raise ValueError(f"only one dim of a reshape may be -1, got {new_shape}")
    if infer:
      known = prod(s for s in new_shape if not (isinstance(s, int) and s == -1))
      if resolve(known == 0) or self.numel() % known != 0: raise ValueError(f"can't reshape {self.shape} to {new_shape}")
      new_shape = tuple(self.numel() // known if isinstance(s, int) and s == -1 else s for s in new_shape)
    if any(isinstance(s, int) and s < 0 for s in new_shape): raise ValueError(f"reshape to a negative size {new_shape}")
    if _sym_ne(prod(new_shape), self.numel()):
      raise ValueError(f"can't reshape {self.shape} ({self.numel()} elements) to {new_shape} ({prod(new_shape)} elements)")
    return self if new_shape == self.shape else Tensor(self.uop.reshape(new_shape))
  def view(self, shape:Any, *args:Any) -> Tensor:
    """reshape, or with a dtype, a bitcast like torch's view(dtype)."""
    return self.bitcast(shape) if isinstance(shape, DType) and not args else self.reshape(shape, *args)
  def permute(self, order:Any, *args:Any) -> Tensor:
    if len(argfix(order, *args)) != self.ndim: raise ValueError(f"permute order {argfix(order, *args)} must name each of the {self.ndim} dims once")
    perm = tuple(self._resolve_dim(d) for d in argfix(order, *args))
    if sorted(perm) != list(range(self.ndim)): raise ValueError(f"permute order {argfix(order, *args)} is not a permutation of {self.ndim} dims")
    return self if perm == tuple(range(self.ndim)) else Tensor(self.uop.permute(perm))
  def expand(self, shape:Any, *args:Any) -> Tensor:
    """Broadcast to a bigger shape; -1 (or None) keeps a dim, new dims may be added in front."""
    new_shape = tuple(argfix(shape, *args))
    if len(new_shape) < self.ndim: raise ValueError(f"can't expand shape {self.shape} to fewer dims {new_shape}")
    old = (1,)*(len(new_shape) - self.ndim) + self.shape
    if any(n is None or (isinstance(n, int) and n == -1) for n in new_shape[:len(new_shape) - self.ndim]):
      raise ValueError(f"expand to {new_shape}: -1 can't size a new leading dim")
    return self._broadcast_to(tuple(o if n is None or (isinstance(n, int) and n == -1) else n for o, n in zip(old, new_shape)))
  def shrink(self, arg:Sequence[tuple[sint, sint]|None]) -> Tensor:
    """Keep [start, end) of each dim (None keeps the whole dim)."""
    if len(arg) != self.ndim: raise ValueError(f"shrink needs one (start, end) per dim ({self.ndim}), got {tuple(arg)}")
    bounds = tuple((0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape))
    for (b, e), s in zip(bounds, self.shape):
      if _sym_lt(b, 0) or _sym_lt(e, b) or _sym_lt(s, e): raise ValueError(f"shrink {tuple(arg)} is out of bounds for shape {self.shape}")
    return self if all(b == 0 and e == s for (b, e), s in zip(bounds, self.shape)) else Tensor(self.uop.shrink(bounds))  # type: ignore[arg-type]
  def pad(self, padding:Sequence, mode:str="constant", value:ConstType=0.0) -> Tensor:
    """Pad with value: padding is ((before, after) or None) per dim, or a flat torch-style tuple (last dim first). Negative pads cut."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
      raise NotSupportedError(f"pad mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if all(isinstance(p, int) for p in padding): pairs = _flat_to_pairs(padding, self.ndim)
    else:
      if len(padding) != self.ndim: raise ValueError(f"padding {tuple(padding)} needs one (before, after) per dim ({self.ndim})")
      pairs = tuple((0, 0) if p is None else tuple(p) for p in padding)
    if mode != "constant": return self._pad_mode(pairs, mode)
    grow = tuple((max(b, 0), max(e, 0)) for b, e in pairs)
    ret = self if all(p == (0, 0) for p in grow) else Tensor(self.uop.pad(grow))
    if value != 0 and any(p != (0, 0) for p in grow):
      # the padded area reads 0; a mask of the original area picks value everywhere else
      mask = Tensor(True, self.device, dtypes.bool)._broadcast_to(self.shape).pad(grow)
      ret = mask.where(ret, Tensor(value, self.device, self.dtype))
    if any(b < 0 or e < 0 for b, e in pairs):
      ret = ret.shrink(tuple((-min(b, 0), s - (-min(e, 0))) for (b, e), s in zip(pairs, ret.shape)))
    return ret
  def flip(self, axis:Any, *args:Any) -> Tensor:
    axes = {self._resolve_dim(a) for a in argfix(axis, *args)}
    if len(axes) != len(argfix(axis, *args)): raise ValueError(f"flip: dims {argfix(axis, *args)} name a dim more than once")
    return self if not axes else Tensor(self.uop.flip(tuple(i in axes for i in range(self.ndim))))
  def transpose(self, dim0:int=-2, dim1:int=-1) -> Tensor:
    order = list(range(self.ndim))
    d0, d1 = self._resolve_dim(dim0), self._resolve_dim(dim1)
    order[d0], order[d1] = order[d1], order[d0]
    return self.permute(order)
  @property
  def T(self) -> Tensor: return self if self.ndim < 2 else self.transpose()
  # torch's other names for views: swapaxes/swapdims, mT, t(), movedim/moveaxis, narrow, unbind, and the *_as forms
  def swapaxes(self, dim0:int, dim1:int) -> Tensor: return self.transpose(dim0, dim1)
  swapdims = swapaxes
  @property
  def mT(self) -> Tensor:
    if self.ndim < 2: raise ValueError(f"mT needs a tensor of at least 2 dims, got shape {self.shape}")
    return self.transpose(-2, -1)
  def t(self) -> Tensor:
    if self.ndim > 2: raise ValueError(f"t() expects a tensor with <= 2 dims, got shape {self.shape}; use transpose(dim0, dim1)")
    return self.T
  def movedim(self, source:int|Sequence[int], destination:int|Sequence[int]) -> Tensor:
    src = [self._resolve_dim(d) for d in ([source] if isinstance(source, int) else source)]
    dst = [self._resolve_dim(d) for d in ([destination] if isinstance(destination, int) else destination)]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
      raise ValueError(f"movedim: source {source} and destination {destination} must be distinct dims, as many of each")
    rest = iter(d for d in range(self.ndim) if d not in src)
    return self.permute([src[dst.index(i)] if i in dst else next(rest) for i in range(self.ndim)])
  moveaxis = movedim
  def narrow(self, dim:int, start:int, length:int) -> Tensor:
    d = self._resolve_dim(dim)
    if start < 0: start += cast(int, self.shape[d])
    if start < 0 or length < 0 or start + length > self.shape[d]:
      raise IndexError(f"narrow: [{start}, {start}+{length}) is outside dim {dim} of {self.shape}")
    return self.shrink(tuple((start, start + length) if i == d else None for i in range(self.ndim)))
  def unbind(self, dim:int=0) -> tuple[Tensor, ...]:
    d = self._resolve_dim(dim)
    return tuple(self[(slice(None),) * d + (i,)] for i in range(cast(int, self.shape[d])))
  def type_as(self, other:Tensor) -> Tensor: return self.cast(other.dtype)
  def view_as(self, other:Tensor) -> Tensor: return self.reshape(other.shape)
  reshape_as = view_as
  def expand_as(self, other:Tensor) -> Tensor: return self.expand(other.shape)
  def flatten(self, start_dim:int=0, end_dim:int=-1) -> Tensor:
    if self.ndim == 0: return self.reshape(1)
    s, e = self._resolve_dim(start_dim), self._resolve_dim(end_dim)
    if s > e: raise ValueError(f"flatten start_dim {start_dim} comes after end_dim {end_dim}")
    return self.reshape(self.shape[:s] + (prod(self.shape[s:e+1]),) + self.shape[e+1:])
  def unflatten(self, dim:int, sizes:tuple[int, ...]) -> Tensor:
    d = self._resolve_dim(dim)
    return self.reshape(self.shape[:d] + _unflatten_sizes(tuple(sizes), self.shape[d]) + self.shape[d+1:])
  def squeeze(self, dim:int|Sequence[int]|None=None) -> Tensor:
    """Drop dims of size 1 (all of them, or those named; a named dim that isn't 1 stays, like torch)."""
    if dim is None: return self.reshape(tuple(s for s in self.shape if resolve(s != 1)))
    dims = {self._resolve_dim(d) for d in ((dim,) if isinstance(dim, int) else dim)}
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in dims or resolve(s != 1)))
  def unsqueeze(self, dim:int) -> Tensor:
    d = self._resolve_dim(dim, extra=True)
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

  def __getitem__(self, indices:Any) -> Tensor:
    """Indexing like torch: ints (negative too), slices (any step), None, one Ellipsis, and advanced indices: int Tensors, lists, numpy
    arrays and bool masks. Advanced indices broadcast together; their dims go where the first one was when they are adjacent, else first.
    A Tensor index out of range reads 0 (it is not checked: that would need its values); list indices are checked."""
    idx, advanced = self._index_entries(indices)
    x = self._basic_index(idx)[0]
    return x._advanced_gather(advanced) if advanced else x
  def _index_entries(self, indices:Any) -> tuple[tuple, list[tuple[int, Tensor]]]:
    # -> the index with the Ellipsis expanded and each advanced index replaced by a full slice, and the advanced indices as
    # (dim of the basic result they index, int Tensor)
    # like torch, a short list holding a Tensor, sequence, slice, None or ... is read as a tuple of indices
    as_tuple = isinstance(indices, list) and len(indices) < 32 and \
      any(isinstance(i, (Tensor, list, tuple, slice)) or i is None or i is Ellipsis or _is_numpy(i) for i in indices)
    idx = list(indices) if isinstance(indices, tuple) or as_tuple else [indices]
    def plain(v:Any) -> Any:  # 0-d Tensors and arrays inside a list index become their values
      return v.tolist() if isinstance(v, Tensor) or _is_numpy(v) else [plain(w) for w in v] if isinstance(v, (list, tuple)) else v
    for n, i in enumerate(idx):
      if isinstance(i, (list, tuple)) or (_is_numpy(i) and getattr(i, "shape", ()) != ()):
        # lists and arrays become Tensors; their values are known, so they are kept to be checked against the dim's size
        values = plain(i)
        idx[n] = i = (Tensor(values, self.device) if len(values) else Tensor.empty(0, dtype=dtypes.int32, device=self.device), values)
      elif _is_numpy(i): idx[n] = i = i.item()
      if isinstance(t := i[0] if isinstance(i, tuple) else i, Tensor):
        if not (dtypes.is_int(t.dtype) or t.dtype == dtypes.bool):
          raise IndexError(f"tensors used as indices must be int or bool tensors, got a {t.dtype} tensor")
        if t.device != self.device: raise ValueError(f"index tensor is on {t.device}, the indexed tensor on {self.device}")
      elif not (i is None or i is Ellipsis or isinstance(i, (int, slice))):
        raise (IndexError if isinstance(i, float) else TypeError)(f"invalid index {i!r} of type {type(i).__name__}: expected an int, slice, "
                                                                  "None, ..., bool, list or int/bool Tensor")
    def tensor_of(i:Any) -> Tensor|None: return i[0] if isinstance(i, tuple) else i if isinstance(i, Tensor) else None
    def dims_used(i:Any) -> int:
      if (t := tensor_of(i)) is not None: return t.ndim if t.dtype == dtypes.bool else 1
      return 0 if i is None or i is Ellipsis or isinstance(i, bool) else 1
    if (n_ellipsis := sum(1 for i in idx if i is Ellipsis)) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    if (n_real := sum(dims_used(i) for i in idx)) > self.ndim: raise IndexError(f"too many indices for a tensor of {self.ndim} dims: {n_real} given")
    fill = [slice(None)] * (self.ndim - n_real)
    idx = [x for i in idx for x in (fill if i is Ellipsis else [i])] + ([] if n_ellipsis else fill)
    out: list = []
    advanced: list[tuple[int, Tensor]] = []
    dim, res_dim = 0, 0
    for i in idx:
      if (t := tensor_of(i)) is None:
        out.append(i)
        dim, res_dim = dim + dims_used(i), res_dim + (0 if isinstance(i, int) and not isinstance(i, bool) else 1)
        continue
      if t.dtype == dtypes.bool:
        # a mask stands for the int indices of its True elements, one index tensor per dim it covers (this reads the mask)
        mshape, sizes = (t.shape or (1,)), self.shape[dim:dim+max(t.ndim, 1)]
        if t.ndim and mshape != sizes: raise IndexError(f"the mask of shape {t.shape} does not match the indexed dims {sizes} at dim {dim}")
        flat = t.flatten().tolist()
        hits = [n for n, m in enumerate(flat) if m]
        if t.ndim == 0: out.append(None)  # a 0-d mask adds a dim of size 1 or 0, like numpy
        cols = [[h // prod(mshape[k+1:]) % mshape[k] for h in hits] for k in range(len(mshape))] if t.ndim else [[0] * len(hits)]
        for col in cols:
          if t.ndim: out.append(slice(None))
          advanced.append((res_dim, Tensor(col, self.device, dtypes.int32) if col else Tensor.empty(0, dtype=dtypes.int32, device=self.device)))
          res_dim += 1
        dim += t.ndim
        continue
      if isinstance(i, tuple):
        size = self.shape[dim]
        if (bad := next((v for v in fully_flatten(i[1]) if not -size <= v < size), None)) is not None:
          raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
      out.append(slice(None))
      advanced.append((res_dim, t))
      dim, res_dim = dim + 1, res_dim + 1
    return tuple(out), advanced
  def _basic_index(self, idx:tuple) -> tuple[Tensor, tuple]:
    # ints, slices, None and bools (no Ellipsis: _index_entries expanded it) as movement ops; the plan lets _basic_place invert them
    bounds: list[tuple[int, int]] = []
    flips: list[bool] = []
    strides: list[int] = []
    counts: list[int] = []
    out_shape: list[int] = []
    empty_dims: list[int] = []
    dim = 0
    for i in idx:
      if i is None or isinstance(i, bool):
        if i is False: empty_dims.append(len(out_shape))
        out_shape.append(1)
        continue
      size = self.shape[dim]
      if not isinstance(size, int): raise NotImplementedError(f"indexing a symbolic dim {size}")
      if isinstance(i, int):
        if not -size <= i < size: raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
        i = i % size
        bounds.append((i, i+1)); flips.append(False); strides.append(1); counts.append(1)
      elif isinstance(i.start, UOp) or isinstance(i.stop, UOp):
        # a bound Variable as a bound: a symbolic length, step 1, not clamped (as shrink takes it)
        if i.step not in (None, 1): raise NotImplementedError(f"a slice with a symbolic bound needs step 1, got {i.step}")
        ends = (0 if i.start is None else i.start, size if i.stop is None else i.stop)
        start, stop = (size + b if isinstance(b, int) and b < 0 else b for b in ends)
        bounds.append((start, stop)); flips.append(False); strides.append(1); counts.append(stop - start); out_shape.append(stop - start)
      else:
        start, stop, step = i.indices(size)
        count = len(range(start, stop, step))
        if step < 0: start, step = size - 1 - start, -step
        flips.append(i.step is not None and i.step < 0)
        bounds.append((start, start + (count-1)*step + 1) if count else (0, 0))
        strides.append(step); counts.append(count)
        out_shape.append(count)
      dim += 1
    x = self.flip([d for d, f in enumerate(flips) if f]) if any(flips) else self
    x = x.shrink(bounds)
    if any(s > 1 for s in strides):
      # take every step-th element: pad each dim to count*step, split it into (count, step), keep column 0
      x = x.pad(tuple((0, c*s - (e-b)) if c else (0, 0) for (b, e), s, c in zip(bounds, strides, counts)))
      x = x.reshape(tuple(d for c, s in zip(counts, strides) for d in (c, s if c else 1)))
      x = x.shrink(tuple(p for c in counts for p in ((0, c), (0, 1)))).reshape(tuple(counts))
    x = x.reshape(tuple(out_shape))
    if empty_dims: x = x.shrink(tuple((0, 0) if d in empty_dims else None for d in range(x.ndim)))
    return x, (tuple(flips), tuple(bounds), tuple(strides), tuple(counts))
  def _basic_place(self, plan:tuple, v:Tensor) -> tuple[Tensor, Tensor]:
    # the inverse of _basic_index: v (of the basic result's shape, ignoring its dims of size 1) placed into self's shape, and the mask of
    # the places it covers; both are views, so a blend with them fuses into one kernel
    flips, bounds, strides, counts = plan
    def place(t:Tensor) -> Tensor:
      t = t.reshape(counts)
      if any(s > 1 for s in strides):
        t = t.reshape(tuple(d for c in counts for d in (c, 1))).pad(tuple(p for s in strides for p in ((0, 0), (0, s-1))))
        t = t.reshape(tuple(c*s for c, s in zip(counts, strides))).shrink(tuple((0, e-b) for b, e in bounds))
      t = t.pad(tuple((b, size-e) for (b, e), size in zip(bounds, self.shape)))
      return t.flip([d for d, f in enumerate(flips) if f]) if any(flips) else t
    return place(v), place(Tensor(True, self.device, dtypes.bool)._broadcast_to(counts))
  def _advanced_layout(self, advanced:list[tuple[int, Tensor]]) -> tuple[list[int], tuple[sint, ...], Tensor, bool]:
    # -> (indexed dims, broadcast shape of the indices, the flat index into those dims (negatives wrapped), whether the dims are adjacent)
    dims = [d for d, _ in advanced]
    try: bshape = _broadcast_shape("index", *[t.shape for _, t in advanced])
    except ValueError as e: raise IndexError(str(e)) from None
    sizes = [self.shape[d] for d in dims]
    idx_dt = dtypes.int64 if prod(sizes) > 2**31 - 1 else dtypes.int32
    flat: Tensor|None = None
    for (d, t), size, stride in zip(advanced, sizes, [prod(sizes[k+1:]) for k in range(len(sizes))]):
      ti = t.cast(idx_dt)
      ti = (ti < 0).where(ti + size, ti)._broadcast_to(bshape) * stride
      flat = ti if flat is None else flat + ti
    assert flat is not None
    return dims, bshape, flat, dims == list(range(dims[0], dims[0] + len(dims)))
  def _advanced_gather(self, advanced:list[tuple[int, Tensor]]) -> Tensor:
    # the indexed dims are flattened to P and go last; each result element sums x where its flat index equals arange(P) (codegen makes
    # that one load). The other dims sit where the result has them (adjacent indices where the first indexed dim was, else first), so
    # the sum comes out in the result's layout
    dims, bshape, flat, adjacent = self._advanced_layout(advanced)
    others = [d for d in range(self.ndim) if d not in dims]
    n_idx, n_pre = prod(self.shape[d] for d in dims), sum(1 for d in others if d < dims[0]) if adjacent else 0
    pre, post = tuple(self.shape[d] for d in others[:n_pre]), tuple(self.shape[d] for d in others[n_pre:])
    x = self.permute(others + dims).reshape(pre + (1,)*len(bshape) + post + (n_idx,))
    at = flat.reshape((1,)*len(pre) + tuple(bshape) + (1,)*len(post) + (1,))
    hit = at == Tensor.arange(_as_int(n_idx, "index"), device=self.device, dtype=flat.dtype)
    return hit.where(x, Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -1)
  def _advanced_put(self, advanced:list[tuple[int, Tensor]], v:Tensor) -> Tensor:
    # self with the elements the advanced indices pick replaced by v (of the indexing result's shape); where an index repeats, the
    # last one wins, as torch does on CPU
    dims, bshape, flat, adjacent = self._advanced_layout(advanced)
    others = [d for d in range(self.ndim) if d not in dims]
    oshape = tuple(self.shape[d] for d in others)
    n_pre, nb, n_idx, n_b = sum(1 for d in others if d < dims[0]), len(bshape), prod(self.shape[d] for d in dims), prod(bshape)
    if not adjacent: n_pre = 0
    v = v.permute(list(range(n_pre)) + list(range(n_pre + nb, v.ndim)) + list(range(n_pre, n_pre + nb)))
    v = v.reshape(oshape + (n_b, 1))
    positions = Tensor.arange(_as_int(n_idx, "setitem"), device=self.device, dtype=flat.dtype)
    order = Tensor.arange(1, n_b + 1, device=self.device, dtype=dtypes.int32).reshape(n_b, 1)
    # for each position: 1 + the last index that writes it, 0 where none does
    last = (flat.reshape(n_b, 1) == positions).where(order, 0).max(0)
    picked = (order == last).where(v, Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -2).reshape(oshape + (n_idx,))
    x = self.permute(others + dims).reshape(oshape + (n_idx,))
    ret = (last > 0).where(picked, x).reshape(oshape + tuple(self.shape[d] for d in dims))
    return ret.permute([(others + dims).index(d) for d in range(self.ndim)])
  def __setitem__(self, indices:Any, v:Any) -> None:
    """Write v (broadcast to the shape self[indices] has, cast to self's dtype) into the indexed elements. A realized self (or a view
    of a buffer) is written right away by an ASSIGN of a masked blend, so every view of the buffer sees it; a lazy self becomes the blend."""
    self._check_inplace()
    idx, advanced = self._index_entries(indices)
    x, plan = self._basic_index(idx)
    target_shape = x._advanced_gather(advanced).shape if advanced else x.shape
    # a Python scalar takes self's dtype (an int64 value beyond int32 fits), anything else makes a Tensor of its own
    vt = (v if isinstance(v, Tensor) else self.ufix(v) if isinstance(v, (bool, int, float)) else Tensor(v, self.device)).cast(self.dtype)
    if vt.device != self.device: raise ValueError(f"setitem: the value is on {vt.device}, the tensor on {self.device}")
    try: vt = vt._broadcast_to(target_shape)
    except ValueError: raise ValueError(f"setitem: a value of shape {vt.shape} can't be broadcast to the indexed shape {target_shape}") from None
    if prod(target_shape) == 0: return
    new_x, value_requires_grad = x._advanced_put(advanced, vt) if advanced else vt, vt.requires_grad
    # (lazy values of this function left alive would read the buffer's old contents: the realize below would compute them too)
    del vt
    in_buffer = ((u := _undetach(self.uop)).is_realized or u.base.op is Ops.ASSIGN) and _strided(u)
    if in_buffer and not (self.requires_grad or value_requires_grad):
      # a buffer is written in place, only in the view the basic indices select (t[3:5] = 1 touches 2 elements, like torch)
      x._assign(new_x, part=True)
      del new_x
      x.realize()
      if self.uop.base.op is Ops.ASSIGN: self.realize()
      return
    # a lazy self becomes the blend; a buffer that autograd tracks is assigned the blend, whose graph its gradient follows. The basic
    # result with empty dims (bool False) and size-1 dims dropped lines up with the plan's counts
    placed, mask = self._basic_place(plan, new_x)
    del new_x
    self._assign(mask.where(placed, self))
    del placed, mask
    if self.uop.base.op is Ops.ASSIGN: self.realize()

  def cat(self, *args:Tensor, dim:int=0) -> Tensor:
    """Join tensors along an existing dim; all other dims must match."""
    d = self._resolve_dim(dim)
    tensors = (self,) + args
    for t in args:
      if t.ndim != self.ndim or any(resolve(a != b) for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != d):
        raise ValueError(f"cat along dim {dim}: shapes {self.shape} and {t.shape} differ outside that dim")
    offsets = list(itertools.accumulate([t.shape[d] for t in tensors], initial=0))
    # each piece is padded with zeros to the full length at its offset; the sum of the pieces is the concatenation
    padded = [t.pad(tuple((offsets[i], offsets[-1] - offsets[i+1]) if j == d else (0, 0) for j in range(t.ndim))) for i, t in enumerate(tensors)]
    return functools.reduce(Tensor.add, padded)
  def stack(self, *args:Tensor, dim:int=0) -> Tensor:
    d = self._resolve_dim(dim, extra=True)
    for t in args:
      if t.shape != self.shape: raise ValueError(f"stack needs tensors of one shape, got {self.shape} and {t.shape}")
    return self.unsqueeze(d).cat(*[t.unsqueeze(d) for t in args], dim=d)

  # ***** reductions *****

  def _reduce_axes(self, axis:int|Sequence[int]|None, name:str="reduce") -> tuple[int, ...]:
    if axis is None: return tuple(range(len(self._uop.shape)))
    try: axes = [self._resolve_dim(a) for a in ((axis,) if isinstance(axis, int) else axis)]
    except IndexError as e: raise IndexError(f"{name}: axis {axis}: {e}") from None
    if len(set(axes)) != len(axes): raise ValueError(f"{name}: axis {axis} names a dim more than once")
    return tuple(sorted(axes)) if self.ndim else ()
  def _reduce(self, op:Ops, axis:int|Sequence[int]|None=None, keepdim:bool=False, name:str="reduce") -> Tensor:
    axes = self._reduce_axes(axis, name)
    ret = (u := self._uop).r(op, axes)
    if keepdim: return Tensor(ret)
    # (a reduce over every dim, x.sum() and the like, is a scalar: no walk over the shape)
    return Tensor(ret.reshape(() if len(axes) == len(shape := u.shape) else tuple([s for i, s in enumerate(shape) if i not in axes])))
  def _check_nonempty(self, name:str, axis:int|Sequence[int]|None) -> None:
    if any(resolve(self.shape[a] == 0) for a in self._reduce_axes(axis, name)):
      raise EmptyReduceError(f"{name} of a tensor of shape {self.shape} over axis {axis}: a dim of size 0 has no {name}")
  @_dim_alias
  def sum(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, dtype:DTypeLike|None=None) -> Tensor:
    """Sum over axis. Small ints accumulate (and return) int32/uint32; half and bfloat16 accumulate in float32 and cast back."""
    dt = self._uop.dtype
    acc = sum_acc_dtype(dt) if dtype is None else to_dtype(dtype)
    ret = (self if acc is dt else self.cast(acc))._reduce(Ops.ADD, axis, keepdim, "sum")
    return ret if acc is dt or dtype is not None or not dtypes.is_float(dt) else ret.cast(dt)
  @_dim_alias
  def prod(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, dtype:DTypeLike|None=None) -> Tensor:
    acc = sum_acc_dtype(self.dtype) if dtype is None else to_dtype(dtype)
    ret = self.cast(acc)._reduce(Ops.MUL, axis, keepdim, "prod")
    return ret.cast(self.dtype) if dtype is None and dtypes.is_float(self.dtype) else ret
  @_dim_alias
  def max(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    """The largest value; ties share the gradient, like torch.amax. A nan gives nan (the sum of the nan positions carries it: one more
    reduce, in the max's kernel), and so does every gradient of its row, as torch.amax's grad * (x == max) / count is 0/0 there."""
    return self._max_nan(axis, keepdim, spread=True)
  def _max_nan(self, axis:int|Sequence[int]|None, keepdim:bool, spread:bool) -> Tensor:
    # spread=False: the gradient of a nan row goes to its nans (each gets all of it), as max_pool2d's goes to its argmax
    ret = self._max_skip_nan(axis, keepdim)
    if not dtypes.is_float(self.dtype): return ret
    nans = self.isnan().where(self, 0).sum(axis, keepdim)
    out = nans.isnan().where(nans, ret)
    if not spread or not _reaches_grad(self.uop): return out
    # torch.amax's backward is grad * (x == max) / count: the other positions get grad * 0 (nan for an infinite grad), a row holding nan
    # 0/0 = nan everywhere. A carrier, dropped going forward, adds that: d/dx of where(x == max, 0, x * (0, or nan in a nan row))
    axes = self._reduce_axes(axis, "max")
    full = tuple(1 if i in axes else n for i, n in enumerate(self.shape))
    carrier = self.detach().eq(out.detach().reshape(full)).where(0.0, self * nans.detach().reshape(full)).sum(axis, keepdim)
    return out + Tensor(UOp(Ops.FUSE, self.dtype, (carrier.uop,), ZERO_FORWARD))
  def _max_skip_nan(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    self._check_nonempty("max", axis)
    return self._reduce(Ops.MAX, axis, keepdim, "max")
  def _inverse(self) -> Tensor:
    # an order-reversing map that never overflows: ~x for ints (and bools), -x for floats
    return -self if dtypes.is_float(self.dtype) else self.bitwise_not()
  @_dim_alias
  def min(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    self._check_nonempty("min", axis)
    return self._inverse().max(axis, keepdim)._inverse()
  @_dim_alias
  def mean(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    """The average; ints and bools give the default float, an empty reduction gives nan."""
    out_dt = least_upper_float(self.dtype)
    n = prod(self.shape[a] for a in self._reduce_axes(axis, "mean"))
    total = self.cast(sum_acc_dtype(out_dt))._reduce(Ops.ADD, axis, keepdim)
    if isinstance(n, UOp): return (total / total.ufix(n)).cast(out_dt)  # a symbolic count is a kernel argument: one kernel for all values
    return (total / n if n else total * math.nan).cast(out_dt)   # divided like torch: the mean of equal values is that value
  @_dim_alias
  def var(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int|float=1) -> Tensor:
    """Variance with torch's correction (1: unbiased); no degrees of freedom left gives inf (or nan for 0/0), like torch."""
    axes = self._reduce_axes(axis, "var")
    n = prod(self.shape[a] for a in axes)
    x = self._to_float()
    # shifted by the first element (detached: the variance doesn't depend on it), so equal values give exactly 0 and a large mean
    # cancels before the squares (an infinite first element isn't: inf - inf would turn the gradient of the finite ones from +-inf to nan)
    if n and all_int(self.shape):
      first = x.shrink(tuple((0, 1) if i in axes else None for i in range(x.ndim))).detach()
      x = x - first.isinf().where(0, first)
    # the mean is detached: the gradient is torch's 2 * (x - mean) / (n - correction), not that minus the mean of it (which is 0, or nan
    # at an infinity, where torch gives the finite elements -inf or inf)
    sq = (x - x.mean(axis, keepdim=True).detach()).square().sum(axis, keepdim)
    return sq / max(0, n - correction)
  @_dim_alias
  def std(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int|float=1) -> Tensor:
    """sqrt(var); like torch, its gradient is 0 where it is 0 (sqrt's own derivative there is inf)"""
    var = self.var(axis, keepdim, correction)
    return var.eq(0).where(0.0, var.eq(0).where(1.0, var).sqrt())
  @_dim_alias
  def var_mean(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int|float=1) -> tuple[Tensor, Tensor]:
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  @_dim_alias
  def std_mean(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int|float=1) -> tuple[Tensor, Tensor]:
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  @_dim_alias
  def any(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    return self.cast(dtypes.bool)._reduce(Ops.MAX, axis, keepdim, "any")
  @_dim_alias
  def all(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    self._reduce_axes(axis, "all")
    return self.logical_not().any(axis, keepdim).logical_not()
  @_dim_alias
  def argmax(self, axis:int|None=None, keepdim:bool=False) -> Tensor:
    """The index of the first maximum (int32; a nan counts as the maximum, like torch); over the flattened tensor when axis is None."""
    if axis is None: return self.flatten().argmax(0, keepdim=False).reshape(tuple(1 for _ in self.shape) if keepdim else ())
    ax = self._reduce_axes(axis, "argmax")[0] if self.ndim else self._resolve_dim(axis)
    if self.ndim == 0: return Tensor(0, self.device, dtypes.int32)
    self._check_nonempty("argmax", ax)
    if not isinstance(n := self.shape[ax], int): raise NotImplementedError(f"argmax over a symbolic dim {n}")
    # the first maximum gets the biggest weight n-i, so one max reduce finds it
    weights = Tensor.arange(n, 0, -1, device=self.device).reshape((n,) + (1,)*(self.ndim-ax-1))
    key = self.eq(self._max_skip_nan(ax, keepdim=True)) * weights
    if not dtypes.is_float(self.dtype): return (n - key.max(ax, keepdim)).cast(dtypes.int32)
    # a nan counts as the max, like torch: nan keys (n, 2n] outrank the others [1, n]
    k = self.isnan().where(weights + n, key).max(ax, keepdim)
    return k.gt(n).where(2*n - k, n - k).cast(dtypes.int32)
  @_dim_alias
  def argmin(self, axis:int|None=None, keepdim:bool=False) -> Tensor: return self._inverse().argmax(axis, keepdim)

  def _softmax_parts(self, axis:int, dtype:DTypeLike|None) -> tuple[Tensor, Tensor, DType]:
    # (x - max, sum of exp) in float32/64 (half input rounds once at the end, like torch); the max is only a shift, so it's detached
    x = self.cast(dtype) if dtype is not None else self
    x, out = x._float_cast()
    m = x - x._reduce(Ops.MAX, axis, True, "softmax").detach()
    return m, m.exp().sum(axis, keepdim=True), out
  @_dim_alias
  def softmax(self, axis:int=-1, dtype:DTypeLike|None=None) -> Tensor:
    """exp(x) / sum(exp(x)) along axis, shifted by the max so nothing overflows (max, sum and divide: one kernel on CPUs, see ROW_FUSE, which
    stores each exp once and scales it in place)."""
    m, s, out = self._softmax_parts(axis, dtype)
    return (m.exp() * s.reciprocal()).cast(out)   # one reciprocal per row, like torch, not a division per element
  @_dim_alias
  def log_softmax(self, axis:int=-1, dtype:DTypeLike|None=None) -> Tensor:
    m, s, out = self._softmax_parts(axis, dtype)
    return (m - s.log()).cast(out)
  @_dim_alias
  def logsumexp(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    """log(sum(exp(x))) shifted by the max; an infinite max shifts by 0 (all -inf gives -inf, any inf gives inf), like torch."""
    x, out = self._float_cast()
    m = x._reduce(Ops.MAX, axis, True, "logsumexp").detach()
    m = m.isinf().where(0.0, m)
    ret = (x - m).exp().sum(axis, keepdim=True).log() + m
    return (ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in self._reduce_axes(axis)))).cast(out)
  def isclose(self, other:Any, rtol:float=1e-05, atol:float=1e-08, equal_nan:bool=False) -> Tensor:
    """|self - other| <= atol + rtol * |other| (or equal, which covers infinities), like torch."""
    a, b = self._broadcasted(other, what="isclose")
    close = a.eq(b)
    if equal_nan and dtypes.is_float(a.dtype): close = close | (a.isnan() & b.isnan())
    if rtol == 0 and atol == 0: return close
    af, bf = a._to_float(), b._to_float()
    err = (af - bf).abs()
    return close | (err.isfinite() & err.le(atol + (bf * rtol).abs()))

  # cumulative ops see the axis through an (n, n) window view: row r holds the n values ending at r (fill before the start). One kernel,
  # O(n**2) work: fine for the sizes a cumulative op meets in practice.
  def _cum_windows(self, axis:int, fill:ConstType) -> tuple[Tensor, int]:
    ax = self._reduce_axes(axis, "cumulative op")[0]
    x = self.transpose(ax, -1)
    if not isinstance(n := x.shape[-1], int): raise NotImplementedError(f"cumulative op over a symbolic dim {n}")
    lead = ((0, 0),) * (x.ndim - 1)
    padded = x.pad(lead + ((n-1, 0),), value=fill)
    tiled = padded.unsqueeze(-2).expand(padded.shape[:-1] + (n, 2*n-1)).flatten(-2)
    return tiled.pad(lead + ((0, n),)).unflatten(-1, (n, 2*n)).shrink(tuple((0, s) for s in x.shape[:-1]) + ((0, n), (0, n))), ax
  def _cum_reduce(self, axis:int, name:str, identity:int, reduce:Callable[[Tensor], Tensor]) -> Tensor:
    # small ints accumulate and return int32/uint32, like sum; floats come back in their own dtype
    axes = self._reduce_axes(axis, name)   # checks the axis of a 0-d tensor too (only -1 and 0), like torch
    if self.ndim == 0 or self.shape[axes[0]] == 0: return self.cast(self.sum().dtype)
    win, ax = self.cast(sum_acc_dtype(self.dtype))._cum_windows(axis, identity)
    ret = reduce(win).transpose(ax, -1)
    return ret.cast(self.dtype) if dtypes.is_float(self.dtype) else ret
  @_dim_alias
  def cumsum(self, axis:int=0) -> Tensor:
    """Running sum along axis (small ints accumulate and return int32/uint32, like sum)"""
    return self._cum_reduce(axis, "cumsum", 0, lambda w: w.sum(-1))
  @_dim_alias
  def cumprod(self, axis:int=0) -> Tensor: return self._cum_reduce(axis, "cumprod", 1, lambda w: w.prod(-1))
  def _cum_extreme(self, axis:int) -> tuple[Tensor, Tensor]:
    # running max and the index (int32) of the last element equal to it; once a nan shows up it is the max, and its index is the last nan's
    axes = self._reduce_axes(axis, "cummax")   # checks the axis of a 0-d tensor too (only -1 and 0), like torch
    if self.ndim == 0: return self, Tensor(0, self.device, dtypes.int32)
    if not isinstance(n := self.shape[ax := axes[0]], int): raise NotImplementedError(f"cummax over a symbolic dim {n}")
    if n == 0: return self, self.cast(dtypes.int32)
    fill = -math.inf if dtypes.is_float(self.dtype) else dtypes.min(self.dtype)
    win, _ = self._cum_windows(ax, fill)
    vals = win.max(-1, keepdim=True)
    hit = win.eq(vals) | (win.isnan() & vals.isnan()) if dtypes.is_float(self.dtype) else win.eq(vals)
    pos = Tensor.arange(n, device=self.device).reshape(n, 1) + Tensor.arange(n, device=self.device) - (n - 1)   # window slot -> index
    idx = hit.where(pos, -1).max(-1).transpose(ax, -1).cast(dtypes.int32)
    return self.gather(ax, idx), idx   # the value read at its index: the gradient goes to that element only, like torch
  @_dim_alias
  def cummax(self, axis:int=0) -> tuple[Tensor, Tensor]:
    """(running max, index of it) along axis, like torch.cummax: ties give the later index, nan sticks"""
    return self._cum_extreme(axis)
  @_dim_alias
  def cummin(self, axis:int=0) -> tuple[Tensor, Tensor]:
    vals, idx = self._inverse()._cum_extreme(axis)
    return vals._inverse(), idx
  @_dim_alias
  def logcumsumexp(self, axis:int=0) -> Tensor:
    """log(cumsum(exp(x))) with every prefix shifted by its own max, so a big dynamic range neither overflows nor underflows"""
    x, out = self._float_cast()
    if x.ndim == 0 or x.shape[x._reduce_axes(axis, "logcumsumexp")[0]] == 0: return x.cast(out)
    win, ax = x._cum_windows(axis, -math.inf)
    c = win._reduce(Ops.MAX, -1, keepdim=True).detach()
    c = c.isinf().where(0.0, c)
    return ((win - c).exp().sum(-1, keepdim=True).log() + c).squeeze(-1).transpose(ax, -1).cast(out)

  @staticmethod
  def einsum(formula:str, *operands:Tensor|Sequence[Tensor]) -> Tensor:
    """Einstein summation, torch's rules: `->` optional (then the output is the letters seen once, sorted), `...` for broadcast dims,
    a letter repeated in one operand takes its diagonal. Every operand is lined up on one set of axes, multiplied and summed."""
    xs = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
    if not all(isinstance(x, Tensor) for x in xs): raise TypeError(f"einsum operands must be Tensors, got {[type(x).__name__ for x in xs]}")
    tensors = cast(list[Tensor], xs)
    f = formula.replace(" ", "")
    lhs, rhs = f.split("->") if "->" in f else (f, None)
    subs = lhs.split(",")
    if len(subs) != len(tensors): raise ValueError(f"einsum {formula!r} names {len(subs)} operands, got {len(tensors)}")
    if any(c not in string.ascii_letters + ".," for c in lhs + (rhs or "")):
      raise ValueError(f"einsum {formula!r}: subscripts must be letters, '...' and ','")
    # '...' stands for the leading broadcast dims: give them letters not used anywhere else
    spare = [c for c in string.ascii_letters if c not in f]
    n_ell = max([t.ndim - (len(s) - 3) for s, t in zip(subs, tensors) if "..." in s], default=0)
    ell = spare[:n_ell]
    letters: list[list[str]] = []
    for s, t in zip(subs, tensors):
      if "..." in s: s = s.replace("...", "".join(ell[n_ell - (t.ndim - (len(s) - 3)):]) if t.ndim - (len(s) - 3) > 0 else "")
      if "." in s or len(s) != t.ndim:
        raise ValueError(f"einsum {formula!r}: subscript {s!r} doesn't fit an operand of shape {t.shape}")
      letters.append(list(s))
    if rhs is None: out = ell + sorted(c for c in set(lhs) - {"."} if sum(ls.count(c) for ls in letters) == 1)
    else:
      if rhs.count("...") > 1 or "." in rhs.replace("...", ""): raise ValueError(f"einsum {formula!r}: bad output subscript {rhs!r}")
      out = list(rhs.replace("...", "".join(ell)))
    seen = {c for ls in letters for c in ls}
    if len(set(out)) != len(out) or any(c not in seen for c in out): raise ValueError(f"einsum {formula!r}: output {''.join(out)!r} is invalid")
    order = out + sorted(seen - set(out))
    lined: list[Tensor] = []
    for ls, t in zip(letters, tensors):
      while (dup := next((c for c in ls if ls.count(c) > 1), None)) is not None:   # diagonal of the two dims named dup
        i, j = [k for k, c in enumerate(ls) if c == dup][:2]
        t = t.permute([k for k in range(t.ndim) if k not in (i, j)] + [i, j])._diagonal_last()
        ls = [c for k, c in enumerate(ls) if k not in (i, j)] + [dup]
      perm = sorted(range(len(ls)), key=lambda k: order.index(ls[k]))
      t = t.permute(perm)
      shape, it = [], iter(t.shape)
      for c in order: shape.append(next(it) if c in ls else 1)
      lined.append(t.reshape(tuple(shape)))
    ret = functools.reduce(Tensor.mul, lined)
    return ret.sum(tuple(range(len(out), len(order)))) if len(order) > len(out) else ret
  def _diagonal_last(self) -> Tensor:
    # the diagonal of the last two dims (n, n) as one dim: flattened, a row of n+1 reads the next diagonal element first
    if not isinstance(n := self.shape[-1], int) or self.shape[-2] != n:
      raise ValueError(f"einsum: a repeated subscript needs equal concrete dims, got {self.shape[-2]} and {n}")
    flat = self.flatten(-2).pad(((0, 0),) * (self.ndim - 2) + ((0, n),))
    return flat.unflatten(-1, (n, n + 1)).shrink(tuple((0, s) for s in self.shape[:-2]) + ((0, n), (0, 1))).squeeze(-1)

  # ***** hashing: Keccak-f[1600] on uint64 lanes *****

  @staticmethod
  def _keccak_consts() -> tuple[list[int], list[int]]:
    """(rotation per lane x+5y, round constants), both from the Keccak reference definitions: the (x, y) -> (y, 2x+3y) walk and the
    degree-8 LFSR"""
    rot = [0] * 25
    x, y = 1, 0
    for t in range(24):
      rot[x + 5*y] = ((t + 1) * (t + 2) // 2) % 64
      x, y = y, (2*x + 3*y) % 5
    def rc_bit(t:int) -> int:
      r = 1
      for _ in range(t % 255):
        r <<= 1
        if r & 0x100: r ^= 0x171
      return r & 1
    rcs = [sum(rc_bit(j + 7*i) << ((1 << j) - 1) for j in range(7)) for i in range(24)]
    return rot, rcs
  @staticmethod
  def _keccak_round(a:Tensor, rc:Tensor) -> Tensor:
    """one round on (bs, 25) uint64 lanes (lane x+5y): theta and rho elementwise, pi as a 25x25 selection summed (one reduce, so the
    round is one kernel and no lane expression is copied 25 times), chi and iota elementwise. rc: (1, 25) with the round constant at 0."""
    rot, _ = Tensor._keccak_consts()
    bs = a.shape[0]
    def roll5(t:Tensor, k:int) -> Tensor: return t[..., (-k) % 5:].cat(t[..., :(-k) % 5], dim=-1) if k % 5 else t   # out[x] = t[x-k]
    g = a.reshape(bs, 5, 5)
    c = g[:, 0] ^ g[:, 1] ^ g[:, 2] ^ g[:, 3] ^ g[:, 4]
    c1 = roll5(c, -1)
    d = roll5(c, 1) ^ ((c1 << 1) | (c1 >> 63))
    a = (g ^ d.unsqueeze(1)).reshape(bs, 25)
    # a shift by 64 gives 0, so lane 0 (rotation 0) stays. (64 - r is a constant here: symbolic folding of unsigned 64 - r < 64 is wrong)
    a = (a << Tensor(rot, a.device, dtypes.uint64)) | (a >> Tensor([64 - k for k in rot], a.device, dtypes.uint64))
    # pi: lane x+5y moves to y+5*((2x+3y)%5)
    sel = [[(k == (j // 5) + 5*((2*(j % 5) + 3*(j // 5)) % 5)) for k in range(25)] for j in range(25)]
    b = Tensor(sel, a.device, dtypes.bool).where(a.unsqueeze(2), 0).sum(1).reshape(bs, 5, 5)
    return (b ^ (~roll5(b, -1) & roll5(b, -2))).reshape(bs, 25) ^ rc
  @staticmethod
  def _keccak_f(state:Tensor) -> Tensor:
    # the 24 rounds; the round constant comes from a table row picked by a bound variable, so all rounds are one compiled program
    _, rcs = Tensor._keccak_consts()
    table = Tensor([[rc] + [0]*24 for rc in rcs], state.device, dtypes.uint64)
    for i in range(24):
      v = UOp.variable("keccak_round", 0, 23).bind(i)
      # two small kernels a round (the pi reduce, then chi and iota): far cheaper to schedule than chi fused into the next theta
      state = Tensor._keccak_round(state, table.shrink(((v, v + 1), (0, 25)))).contiguous()
    return state
  def keccak(self, cfg:str|tuple[int, int]="sha3_256") -> Tensor:
    """Keccak of the bytes of the last dim (any dtype, read as little-endian bytes), batched over the other dims: "sha3_224/256/384/512",
    "shake_128/256" (16/32-byte digests, as tinygrad) or (rate, domain byte). Returns uint8 of shape (..., digest bytes)."""
    presets = {"sha3_224": (144, 6), "sha3_256": (136, 6), "sha3_384": (104, 6), "sha3_512": (72, 6), "shake_128": (168, 31), "shake_256": (136, 31)}
    if isinstance(cfg, str) and cfg not in presets: raise ValueError(f"keccak: unknown cfg {cfg!r}, expected one of {list(presets)} or (rate, ds)")
    rate, dsbyte = presets[cfg] if isinstance(cfg, str) else cfg
    if rate % 8 != 0 or not 0 < rate < 200: raise ValueError(f"keccak: rate must be a multiple of 8 in (0, 200), got {rate}")
    if self.ndim == 0: raise ValueError("keccak needs at least one dim: it hashes the last one")
    data = self if self.dtype == dtypes.uint8 else self.bitcast(dtypes.uint8)
    lead, n = data.shape[:-1], data.shape[-1]
    if not all_int(data.shape): raise NotImplementedError(f"keccak of a symbolic shape {data.shape}")
    bs = prod(lead)
    nblocks = n // rate + 1
    # pad10*1 with the domain byte: the first padding byte gets dsbyte, the last one 0x80 (both in one byte when only one is free)
    pad = [0] * (nblocks * rate - n)
    pad[0] |= dsbyte
    pad[-1] |= 0x80
    msg = data.reshape(bs, n).cat(Tensor(pad, self.device, dtypes.uint8).reshape(1, -1).expand(bs, len(pad)), dim=1)
    words = msg.reshape(bs, nblocks, rate).bitcast(dtypes.uint64)
    words = words.pad(((0, 0), (0, 0), (0, 25 - rate // 8)))
    state = Tensor.zeros(bs, 25, dtype=dtypes.uint64, device=self.device)
    for i in range(nblocks):
      # the block index is a bound variable too: every block's absorb and permutation reuse the same programs
      v = UOp.variable("keccak_block", 0, nblocks - 1).bind(i)
      state = Tensor._keccak_f(state ^ words.shrink(((0, bs), (v, v + 1), (0, 25))).reshape(bs, 25))
      # realized per block: the scheduler's cost grows with the square of the graph's depth (see the report), not the size of the data
      if i < nblocks - 1: state = state.realize()
    outlen = (200 - rate) // 2   # the capacity's half: 16 bytes for shake_128, as tinygrad
    return state.bitcast(dtypes.uint8)[:, :outlen].reshape(lead + (outlen,))
  def hash(self) -> Tensor:
    """tinygrad's 16-byte tensor digest: the bytes, zero-padded to whole MiB; every MiB is hashed as shake_128 of the shake_128 digests
    of its 4096-byte blocks; digests of several MiB are hashed again the same way until one MiB is left."""
    return self._tree_hash(1 << 20, 4096)
  def _tree_hash(self, chunk:int, block:int) -> Tensor:
    data = self.flatten().bitcast(dtypes.uint8) if self.dtype != dtypes.uint8 else self.flatten()
    if not isinstance(n := data.shape[0], int): raise NotImplementedError(f"hash of a symbolic shape {self.shape}")
    def hash_chunks(d:Tensor) -> Tensor: return d.reshape(-1, block).keccak("shake_128").reshape(d.shape[0], -1).keccak("shake_128")
    chunks = max(1, -(-n // chunk))
    while chunks > 1:
      data = hash_chunks(data.pad(((0, chunks * chunk - data.shape[0]),)).reshape(chunks, chunk)).flatten()
      chunks = -(-data.shape[0] // chunk)
    return hash_chunks(data.pad(((0, chunk - data.shape[0]),)).reshape(1, chunk)).flatten()[:16]

  # ***** creation and randomness (2) *****

  _seed: ClassVar[int] = 67280421310721                # torch's default seed: unseeded runs are reproducible too
  _rng_state: ClassVar[dict[str, Tensor]] = {}         # per device: a uint64 buffer [seed, number of random calls so far]

  @staticmethod
  def from_blob(ptr:int, shape:tuple[int, ...]|int, dtype:DTypeLike, device:DeviceLike=None, **kwargs) -> Tensor:
    """Wrap host memory at address ptr (it must outlive the tensor): no copy, and writes into the tensor land in that memory."""
    from tinygrad.uop.ops import buffers
    from tinygrad.device import Buffer
    shp, dt = ((shape,) if isinstance(shape, int) else tuple(shape)), to_dtype(dtype)
    _check_shape(shp)
    if not isinstance(ptr, int) or ptr <= 0: raise ValueError(f"from_blob: ptr must be a positive int address, got {ptr!r}")
    if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"from_blob on several devices {dev}")
    buf_uop = UOp.new_buffer(dev, prod(shp), dt)
    buffers[buf_uop] = Buffer(dev, prod(shp), dt).allocate(external_ptr=ptr)
    return Tensor(buf_uop.reshape(shp), **kwargs)
  @staticmethod
  def from_uop(y:UOp, **kwargs) -> Tensor:
    """A Tensor of a UOp: tensor-level UOps directly, symbolic values (a bound Variable, consts and ALU ops on them) as 0-d tensors."""
    if y.op in (Ops.BIND, Ops.DEFINE_VAR):
      # a symbolic value has no shape of its own: adding it to a 0-d zero gives it one; kernels read it as a kernel argument
      dev = _canonical(kwargs.pop("device", None))
      if not isinstance(dev, str): raise NotImplementedError(f"from_uop on several devices {dev}")
      return Tensor(_const(0, y.dtype, dev).alu(Ops.ADD, y), **kwargs)
    if y.op is Ops.CONST and not y.src: return Tensor(y.arg, dtype=y.dtype, **kwargs)
    if y.op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.IDIV, Ops.MOD) and not any(u.op is Ops.DEVICE for u in y.toposort()):
      return functools.reduce(lambda a, b: a.alu(y.op, b), [Tensor.from_uop(s, **kwargs) for s in y.src])
    return Tensor(y, **kwargs)
  @staticmethod
  def linspace(start:int|float, end:int|float, steps:int, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    """steps values from start to end, both included (like torch: the second half counts back from end, so end is exact)."""
    if not isinstance(steps, int) or isinstance(steps, bool): raise TypeError(f"linspace: steps must be an int, got {steps!r}")
    if steps < 0: raise ValueError(f"linspace: steps must be >= 0, got {steps}")
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    # an int dtype takes the endpoints as ints first, like torch
    if dtypes.is_int(dt): start, end = int(start), int(end)
    if steps <= 1: return Tensor([start][:steps], device, dt, **kwargs) if steps else Tensor.empty(0, dtype=dt, device=device, **kwargs)
    step = (end - start) / (steps - 1)
    fdt = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
    idx = Tensor.arange(steps, device=device).cast(fdt)
    ret = (idx < steps // 2).where(idx * step + start, end - (steps - 1 - idx) * step)
    return Tensor(ret.cast(dt).uop, **kwargs)

  @staticmethod
  def manual_seed(seed:int=0) -> None:
    """Seed the generator: after the same seed the same calls give the same numbers, on every device."""
    if not isinstance(seed, int) or isinstance(seed, bool): raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    Tensor._seed, Tensor._rng_state = seed % 2**64, {}
  @staticmethod
  def _rng_snapshot(device:str) -> Tensor:
    # count this call on the device by a kernel (an ASSIGN), so a TinyJit replay counts too, and keep a copy of [seed, call number]
    # that later writes to the counter can't change: the random kernels of this call read the copy whenever they run
    if (state := Tensor._rng_state.get(device)) is None:
      state = Tensor._rng_state[device] = Tensor([Tensor._seed, 0], device, dtypes.uint64).realize()
    snap = state + Tensor(1, device, dtypes.uint64).reshape(1).pad(((1, 0),))
    state.assign(snap)
    Tensor.realize(snap, state)
    return snap
  @staticmethod
  def _random_bits(n:int, device:DeviceLike) -> Tensor:
    """n random uint32 words: Threefry-2x32 keyed by the seed on the counters (call number << 32) | i; each counter gives two words."""
    if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"random numbers on several devices {dev}")
    snap = Tensor._rng_snapshot(dev)
    if n == 0: return Tensor.empty(0, dtype=dtypes.uint32, device=dev)
    half = (n + 1) // 2
    key, call = snap.shrink(((0, 1),)).expand(half), snap.shrink(((1, 2),)).expand(half)
    counters = (call << 32) | Tensor.arange(half, device=dev).cast(dtypes.uint64)
    bits = Tensor(counters.uop.alu(Ops.THREEFRY, key.uop))
    return (bits & 0xffffffff).cast(dtypes.uint32).cat((bits >> 32).cast(dtypes.uint32)).shrink(((0, n),))
  @staticmethod
  def _bits_to_unit(bits:Tensor, dtype:DType) -> Tensor:
    # the mantissa trick: random mantissa bits under the exponent of 1.0 give a float uniform in [1, 2); minus 1 is exact, so [0, 1)
    exp_bits, man_bits = dtypes.finfo(dtype)
    udt = to_dtype(f"uint{8*dtype.itemsize}")
    one = ((1 << (exp_bits - 1)) - 1) << man_bits
    word = (bits >> (32 - man_bits)).cast(udt) if man_bits <= 32 else bits.cast(udt) << (man_bits - 32)
    return (word | one).bitcast(dtype) - 1
  @staticmethod
  def _random_args(name:str, shape:tuple, dtype:DTypeLike|None, device:DeviceLike, float_only:bool=True) -> tuple[tuple[int, ...], DType, str]:
    shp, dt = argfix(*shape), to_dtype(dtype) if dtype is not None else dtypes.default_float
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in shp): raise TypeError(f"{name}: shape must be ints, got {shp}")
    _check_shape(shp)
    if float_only and not dtypes.is_float(dt): raise TypeError(f"{name}: dtype must be a float dtype, got {dt}")
    if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"{name} on several devices {dev}")
    return shp, dt, dev
  @staticmethod
  def rand(*shape, device:DeviceLike=None, dtype:DTypeLike|None=None, contiguous:bool=True, **kwargs) -> Tensor:
    """Uniform in [0, 1), computed on the device by Threefry-2x32: the same numbers on every device for the same seed and calls.
    contiguous (as in tinygrad): the numbers are made once into a buffer, not again inside every kernel that reads them (a lazy weight
    read by a matmul would otherwise run the generator once per output row)."""
    shp, dt, dev = Tensor._random_args("rand", shape, dtype, device)
    out = Tensor._bits_to_unit(Tensor._random_bits(prod(shp), dev), dt).reshape(shp)
    return Tensor((out.contiguous() if contiguous else out).uop, **kwargs)
  @staticmethod
  def randn(*shape, device:DeviceLike=None, dtype:DTypeLike|None=None, **kwargs) -> Tensor:
    """Standard normal, by Box-Muller on two uniforms (computed in float32, or float64 for float64)."""
    shp, dt, dev = Tensor._random_args("randn", shape, dtype, device)
    fdt = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
    u = Tensor.rand(2, *shp, device=dev, dtype=fdt, contiguous=False)
    u1, u2 = u.shrink(((0, 1),) + tuple((0, s) for s in shp)).reshape(shp), u.shrink(((1, 2),) + tuple((0, s) for s in shp)).reshape(shp)
    # 1 - u2 is in (0, 1], so the log is finite
    return Tensor(((u1 * (2 * math.pi)).cos() * ((1 - u2).log() * -2).sqrt()).cast(dt).uop, **kwargs)
  @staticmethod
  def randint(*args, low:int|None=None, high:int|None=None, size:tuple[int, ...]|None=None, dtype:DTypeLike|None=None,
              device:DeviceLike=None, **kwargs) -> Tensor:
    """Ints uniform in [low, high). torch style `randint(high, size)` / `randint(low, high, size)`, or tinygrad style
    `randint(*shape, low=0, high=10)`. The default dtype is int32."""
    if size is not None or (args and isinstance(args[-1], (tuple, list))):
      shape, bounds = (size, args) if size is not None else (args[-1], args[:-1])
      if len(bounds) > 2: raise TypeError(f"randint: expected (high, size) or (low, high, size), got {args}")
      if len(bounds) == 2: low, high = bounds
      elif len(bounds) == 1: high = bounds[0]
    else: shape = args
    low, high = 0 if low is None else low, 10 if high is None else high
    shp, dt, dev = Tensor._random_args("randint", tuple(shape), dtype if dtype is not None else dtypes.default_int, device, float_only=False)
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"randint: low and high must be ints, got {low!r} and {high!r}")
    if high <= low: raise ValueError(f"randint: high must be greater than low, got low={low}, high={high}")
    if dt == dtypes.bool or low < dtypes.min(dt) or high - 1 > dtypes.max(dt):
      raise ValueError(f"randint: [{low}, {high}) doesn't fit {dt}, which holds [{dtypes.min(dt)}, {dtypes.max(dt)}]")
    n, span = prod(shp), high - low
    if span <= 2**32:
      # multiply-shift maps a 32-bit word onto [0, span) without a division
      offset = (Tensor._random_bits(n, dev).cast(dtypes.uint64) * span) >> 32
    else: offset = (Tensor.rand(n, device=dev, dtype=dtypes.float64) * span).floor().cast(dtypes.uint64).minimum(span - 1)
    return Tensor((offset.cast(dtypes.int64) + low).cast(dt).reshape(shp).uop, **kwargs)
  @staticmethod
  def normal(*shape, mean:float=0.0, std:float=1.0, size:tuple[int, ...]|None=None, dtype:DTypeLike|None=None, device:DeviceLike=None,
             **kwargs) -> Tensor:
    """Normal with mean and std: `normal(*shape, mean=, std=)`, or torch style `normal(mean, std, size)`."""
    if size is None and len(shape) == 3 and isinstance(shape[2], (tuple, list)): mean, std, size = shape
    elif size is not None and len(shape) == 2: mean, std = shape
    if std < 0: raise ValueError(f"normal: std must be >= 0, got {std}")
    return Tensor((std * Tensor.randn(*(shape if size is None else size), dtype=dtype, device=device) + mean).uop, **kwargs)
  @staticmethod
  def uniform(*shape, low:float=0.0, high:float=1.0, dtype:DTypeLike|None=None, device:DeviceLike=None, **kwargs) -> Tensor:
    """Uniform in [low, high)."""
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    return Tensor(((high - low) * Tensor.rand(*shape, device=device, dtype=dt) + low).cast(dt).uop, **kwargs)
  @staticmethod
  def scaled_uniform(*shape, **kwargs) -> Tensor:
    """Uniform in [-1, 1) scaled by 1/sqrt(number of elements)."""
    return Tensor.uniform(*shape, low=-1.0, high=1.0, **kwargs).mul(prod(argfix(*shape)) ** -0.5)
  @staticmethod
  def glorot_uniform(*shape, **kwargs) -> Tensor:
    """Xavier/Glorot uniform: bound sqrt(6 / (fan_in + fan_out)) with fan_out = shape[0], fan_in = the product of the rest."""
    shp = argfix(*shape)
    return Tensor.uniform(*shp, low=-1.0, high=1.0, **kwargs).mul((6 / (shp[0] + prod(shp[1:]))) ** 0.5)
  @staticmethod
  def kaiming_uniform(*shape, a:float=0.01, **kwargs) -> Tensor:
    """He uniform for a leaky relu of slope a: bound sqrt(3) * gain / sqrt(fan_in), fan_in = the product of shape[1:]."""
    shp = argfix(*shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shp[1:]))
    return Tensor.uniform(*shp, low=-bound, high=bound, **kwargs)
  @staticmethod
  def kaiming_normal(*shape, a:float=0.01, **kwargs) -> Tensor:
    """He normal for a leaky relu of slope a: std gain / sqrt(fan_in), fan_in = the product of shape[1:]."""
    shp = argfix(*shape)
    return Tensor.normal(*shp, mean=0.0, std=math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(prod(shp[1:])), **kwargs)
  @staticmethod
  def randperm(n:int, device:DeviceLike=None, dtype:DTypeLike|None=None, **kwargs) -> Tensor:
    """A random permutation of 0..n-1 (int32 by default): the order that sorts n random words."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0: raise ValueError(f"randperm: n must be an int >= 0, got {n!r}")
    keys = Tensor._random_bits(n, device).cast(dtypes.int64)
    return Tensor(keys.argsort().cast(dtype if dtype is not None else dtypes.default_int).uop, **kwargs)
  def multinomial(self, num_samples:int=1, replacement:bool=False) -> Tensor:
    """Sample category indices (int32) from rows of non-negative weights, 1-D (num_samples,) or 2-D (rows, num_samples)."""
    if self.ndim not in (1, 2): raise ValueError(f"multinomial: weights must be 1-D or 2-D, got shape {self.shape}")
    if not isinstance(num_samples, int) or num_samples <= 0: raise ValueError(f"multinomial: num_samples must be an int > 0, got {num_samples!r}")
    w = self._to_float().reshape(-1, self.shape[-1])
    rows, n = w.shape
    if not replacement and num_samples > n:
      raise ValueError(f"multinomial: can't take {num_samples} samples without replacement from {n} categories")
    if replacement:
      # a sample is the number of cumulative weights (all but the last, which is the total) at or below a uniform times the total
      cdf = w.cumsum(1)
      u = Tensor.rand(rows, num_samples, 1, device=self.device, dtype=w.dtype) * cdf[:, -1:].unsqueeze(1)
      ret = (cdf[:, :-1].unsqueeze(1) <= u).sum(-1)
    else:
      # exponential race: the first num_samples to arrive, arrival time Exp(1) / weight, are a draw without replacement
      arrival = -(1 - Tensor.rand(rows, n, device=self.device, dtype=w.dtype)).log() / w
      ret = arrival.topk(num_samples, dim=1, largest=False)[1]
    ret = ret.cast(dtypes.int32)
    return ret.reshape(num_samples) if self.ndim == 1 else ret
  def rand_like(self, **kwargs) -> Tensor:
    kwargs.setdefault("dtype", self.dtype)
    return Tensor.rand(*self.shape, device=kwargs.pop("device", self.device), **kwargs)
  def randn_like(self, **kwargs) -> Tensor:
    kwargs.setdefault("dtype", self.dtype)
    return Tensor.randn(*self.shape, device=kwargs.pop("device", self.device), **kwargs)

  # ***** movement and indexing (2) *****

  def _pad_mode(self, pairs:tuple[tuple[int, int], ...], mode:str) -> Tensor:
    # reflect, replicate and circular: each padded side is a (flipped) slice joined on with cat. Negative pads cut, like torch: before a
    # circular pad (it wraps within what is left), after the others (they reflect or repeat the original edges)
    cuts = tuple((min(b, 0), min(e, 0)) for b, e in pairs) if any(b < 0 or e < 0 for b, e in pairs) else None
    x = self.pad(cuts) if cuts is not None and mode == "circular" else self
    for d, (before, after) in enumerate(pairs):
      b, a, n = max(before, 0), max(after, 0), x.shape[d]
      if b == 0 and a == 0: continue
      if not isinstance(n, int): raise NotImplementedError(f"pad mode {mode!r} on a symbolic dim {n}")
      limit = n - 1 if mode == "reflect" else n if mode == "circular" else math.inf
      if n == 0 or max(b, a) > limit:
        raise ValueError(f"pad mode {mode!r}: padding ({before}, {after}) of dim {d} must be at most {limit if n else 'nothing'} for its size {n}")
      def part(start:int, end:int, flip:bool=False, xx:Tensor=x, dd:int=d) -> Tensor:
        p = xx.shrink(tuple((start, end) if i == dd else None for i in range(xx.ndim)))
        return p.flip(dd) if flip else p
      if mode == "reflect": left, right = part(1, b+1, True), part(n-1-a, n-1, True)
      elif mode == "circular": left, right = part(n-b, n), part(0, a)
      else:
        left = part(0, 1).expand(tuple(b if i == d else s for i, s in enumerate(x.shape)))
        right = part(n-1, n).expand(tuple(a if i == d else s for i, s in enumerate(x.shape)))
      x = left.cat(x, right, dim=d)
    return x.pad(cuts) if cuts is not None and mode != "circular" else x
  def repeat(self, repeats:Any, *args:Any) -> Tensor:
    """Tile self: repeats[i] copies along dim i; more repeats than dims add dims in front (torch's repeat, numpy's tile)."""
    reps = argfix(repeats, *args)
    if len(reps) < self.ndim: raise ValueError(f"repeat: {len(reps)} repeats given for a tensor of {self.ndim} dims; at least {self.ndim} needed")
    if any(not isinstance(r, int) or r < 0 for r in reps): raise ValueError(f"repeat: repeats must be ints >= 0, got {reps}")
    base = self.reshape((1,) * (len(reps) - self.ndim) + self.shape)
    tiled = base.reshape(tuple(d for s in base.shape for d in (1, s))).expand(tuple(d for r, s in zip(reps, base.shape) for d in (r, s)))
    return tiled.reshape(tuple(r * s for r, s in zip(reps, base.shape)))
  def repeat_interleave(self, repeats:int|Sequence[int]|Tensor, dim:int|None=None) -> Tensor:
    """Repeat each element: repeats times, or repeats[i] times for element i, along dim (over the flattened tensor when dim is None)."""
    x, d = (self.flatten(), 0) if dim is None else (self, self._resolve_dim(dim))
    if isinstance(repeats, int):
      if repeats < 0: raise ValueError(f"repeat_interleave: repeats must be >= 0, got {repeats}")
      return x.unsqueeze(d+1).expand(x.shape[:d+1] + (repeats,) + x.shape[d+1:]).flatten(d, d+1)
    counts = repeats.tolist() if isinstance(repeats, Tensor) else list(repeats)
    if isinstance(counts, int): return x.repeat_interleave(counts, d)
    if len(counts) == 1: return x.repeat_interleave(int(counts[0]), d)
    if len(counts) != x.shape[d] or any(c < 0 for c in counts):
      raise ValueError(f"repeat_interleave: repeats must be {x.shape[d]} ints >= 0 for dim {d} of size {x.shape[d]}, got {counts}")
    picks = [i for i, c in enumerate(counts) for _ in range(c)]
    return x[(slice(None),) * d + (Tensor(picks, x.device, dtypes.int32) if picks else Tensor.empty(0, dtype=dtypes.int32, device=x.device),)]
  def split(self, split_size:int|Sequence[int], dim:int=0) -> tuple[Tensor, ...]:
    """Pieces of split_size along dim (the last may be smaller), or pieces of the sizes listed (they must add up to the dim)."""
    d = self._resolve_dim(dim)
    n = self.shape[d]
    if not isinstance(n, int): raise NotImplementedError(f"split of a symbolic dim {n}")
    if isinstance(split_size, int):
      if split_size <= 0 and n > 0: raise ValueError(f"split: split_size must be > 0, got {split_size}")
      sizes = [min(split_size, n - s) for s in range(0, n, split_size)] if n else [0]
    else:
      sizes = list(split_size)
      if sum(sizes) != n or any(s < 0 for s in sizes): raise ValueError(f"split: sizes {sizes} must be >= 0 and add up to dim {d}'s size {n}")
    starts = list(itertools.accumulate(sizes, initial=0))
    return tuple(self.shrink(tuple((starts[i], starts[i+1]) if j == d else None for j in range(self.ndim))) for i in range(len(sizes)))
  def chunk(self, chunks:int, dim:int=0) -> tuple[Tensor, ...]:
    """At most chunks pieces of ceil(size / chunks) along dim, like torch (fewer when the size doesn't allow more)."""
    if not isinstance(chunks, int) or chunks <= 0: raise ValueError(f"chunk: chunks must be an int > 0, got {chunks!r}")
    n = self.shape[self._resolve_dim(dim)]
    if not isinstance(n, int): raise NotImplementedError(f"chunk of a symbolic dim {n}")
    return self.split(max(1, -(-n // chunks)), dim)
  def unfold(self, dimension:int, size:int, step:int) -> Tensor:
    """Windows of size elements every step along dimension: that dim becomes the window count, a last dim of size is added."""
    d = self._resolve_dim(dimension)
    n = self.shape[d] if self.ndim else 1
    if not isinstance(n, int): raise NotImplementedError(f"unfold of a symbolic dim {n}")
    if not 0 <= size <= n: raise ValueError(f"unfold: size {size} must be in [0, {n}] for dim {dimension} of size {n}")
    if step <= 0: raise ValueError(f"unfold: step must be > 0, got {step}")
    if self.ndim == 0: return self.reshape(1)
    return self.transpose(d, -1)._pool((size,), step).transpose(d, -2)
  def meshgrid(self, *args:Tensor, indexing:str="ij") -> tuple[Tensor, ...]:
    """Coordinate grids of 1-D tensors: indexing 'ij' gives shape (len0, len1, ...), 'xy' swaps the first two (Cartesian)."""
    if indexing not in ("ij", "xy"): raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = [t.reshape(-1) if t.ndim == 0 else t for t in (self,) + args]
    if any(t.ndim != 1 for t in tensors): raise ValueError(f"meshgrid: tensors must be 0-D or 1-D, got shapes {[t.shape for t in tensors]}")
    shape = [t.shape[0] for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2: shape[0], shape[1], axes[0], axes[1] = shape[1], shape[0], 1, 0
    return tuple(t.reshape(tuple(-1 if i == ax else 1 for i in range(len(shape)))).expand(tuple(shape)) for t, ax in zip(tensors, axes))
  def diag(self, diagonal:int=0) -> Tensor:
    """1-D: a square matrix with self on the given diagonal; 2-D: that diagonal of self (torch.diag)."""
    if self.ndim == 2: return self.diagonal(diagonal)
    if self.ndim != 1: raise ValueError(f"diag: expected a 1-D or 2-D tensor, got shape {self.shape}")
    n = self.shape[0]
    # a column padded to n+1 columns, read back as (n, n), puts each element on the diagonal
    square = self.reshape(n, 1).pad(((0, 0), (0, n))).flatten().shrink(((0, n*n),)).reshape(n, n)
    k = abs(diagonal)
    return square.pad(((0, k), (k, 0)) if diagonal >= 0 else ((k, 0), (0, k)))
  def diagonal(self, offset:int=0, dim1:int=0, dim2:int=1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as a last dim (torch.diagonal)."""
    d1, d2 = self._resolve_dim(dim1), self._resolve_dim(dim2)
    if d1 == d2: raise ValueError(f"diagonal: dim1 and dim2 must be different dims, both are {d1}")
    x = self.permute([d for d in range(self.ndim) if d not in (d1, d2)] + [d1, d2])
    rows, cols = x.shape[-2], x.shape[-1]
    if not isinstance(rows, int) or not isinstance(cols, int): raise NotImplementedError("diagonal of symbolic dims")
    r0, c0 = max(-offset, 0), max(offset, 0)
    m = max(0, min(rows - r0, cols - c0))
    x = x.shrink(tuple(None for _ in x.shape[:-2]) + ((min(r0, rows), min(r0, rows) + m), (min(c0, cols), min(c0, cols) + m)))
    # (m, m) read as (m, m+1) after padding m: the diagonal is column 0
    flat = x.flatten(-2).pad(tuple((0, 0) for _ in x.shape[:-2]) + ((0, m),))
    return flat.unflatten(-1, (m, m+1)).shrink(tuple(None for _ in x.shape[:-2]) + ((0, m), (0, 1))).flatten(-2) if m else x.flatten(-2)
  def roll(self, shifts:int|Sequence[int], dims:int|Sequence[int]|None=None) -> Tensor:
    """Shift elements along dims, wrapping around (over the flattened tensor when dims is None)."""
    if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
    shift_l, dim_l = ([shifts] if isinstance(shifts, int) else list(shifts)), ([dims] if isinstance(dims, int) else list(dims))
    if len(shift_l) != len(dim_l): raise ValueError(f"roll: {len(shift_l)} shifts for {len(dim_l)} dims; give one shift per dim")
    x = self
    for s, d in zip(shift_l, dim_l):
      d = self._resolve_dim(d)
      n = x.shape[d]
      if not isinstance(n, int): raise NotImplementedError(f"roll of a symbolic dim {n}")
      if n == 0 or s % n == 0: continue
      a, b = x.split([n - s % n, s % n], d)
      x = b.cat(a, dim=d)
    return x
  def rearrange(self, formula:str, **sizes:int) -> Tensor:
    """einops' rearrange: "b c (h w) -> b h w c" with h= or w= given; names, (groups), () and 1 on either side, ... (or …) for the
    remaining dims, which a group on the right may merge: "b ... -> b (...)"."""
    def parse(side:str) -> list[list[str]]:
      groups: list[list[str]] = []
      cur: list[str]|None = None
      for tok in side.replace("(", " ( ").replace(")", " ) ").split():
        if tok == "(":
          if cur is not None: raise ValueError(f"rearrange: nested parentheses in {formula!r}")
          cur = []
        elif tok == ")":
          if cur is None: raise ValueError(f"rearrange: unbalanced ')' in {formula!r}")
          groups.append(cur)
          cur = None
        elif cur is not None: cur.append("(...)" if tok == "..." else tok)   # (...) on the right merges the dims ... stands for
        else: groups.append([tok])
      if cur is not None: raise ValueError(f"rearrange: unbalanced '(' in {formula!r}")
      for name in (n for g in groups for n in g):
        if name not in ("...", "(...)", "1") and not name.isidentifier(): raise ValueError(f"rearrange: bad axis name {name!r} in {formula!r}")
      return groups
    if not isinstance(formula, str): raise TypeError(f"rearrange: the formula must be a str, got {type(formula).__name__}")
    if formula.count("->") != 1: raise ValueError(f"rearrange: the formula must have one '->', got {formula!r}")
    lhs, rhs = (parse(side) for side in formula.replace("\u2026", "...").split("->"))
    lnames, rnames = [[n for g in side for n in g if n not in ("1", "...", "(...)")] for side in (lhs, rhs)]
    if sorted(lnames) != sorted(rnames) or len(set(lnames)) != len(lnames):
      raise ValueError(f"rearrange: both sides must name the same axes once each, got {lnames} -> {rnames}")
    if [sum(g.count("...") + g.count("(...)") for g in side) for side in (lhs, rhs)] not in ([0, 0], [1, 1]):
      raise ValueError(f"rearrange: '...' must be once on both sides or on neither, got {formula!r}")
    if unknown := set(sizes) - set(lnames): raise ValueError(f"rearrange: sizes given for axes {sorted(unknown)} that the formula doesn't name")
    if any("(...)" in g for g in lhs): raise ValueError(f"rearrange: '...' can't be inside parentheses on the left in {formula!r}")
    has_ell = ["..."] in lhs
    n_ell = self.ndim - (len(lhs) - 1) if has_ell else 0
    if n_ell < 0 or (not has_ell and len(lhs) != self.ndim):
      raise ValueError(f"rearrange: the left side {formula.split('->')[0].strip()!r} has {len(lhs)} axes, the tensor has {self.ndim} dims")
    ell = [f"...{i}" for i in range(n_ell)]
    def expand_ell(groups:list[list[str]]) -> list[list[str]]:  # a bare ... is one axis per dim, in a group they merge
      return [x for g in groups for x in ([[e] for e in ell] if g == ["..."] else [[m for n in g for m in (ell if n == "(...)" else [n])]])]
    lhs, rhs = expand_ell(lhs), expand_ell(rhs)
    known: dict[str, int] = dict(sizes)
    for g, size in zip(lhs, self.shape):
      if not isinstance(size, int): raise NotImplementedError(f"rearrange of a symbolic dim {size}")
      names = [n for n in g if n != "1"]
      missing = [n for n in names if n not in known]
      if len(missing) > 1: raise ValueError(f"rearrange: can't infer the sizes of {missing} in group {g}; give all but one")
      rest = prod(known[n] for n in names if n in known)
      if missing:
        if rest == 0 or size % rest: raise ValueError(f"rearrange: group {g} of size {size} doesn't split by {rest}")
        known[missing[0]] = size // rest
      elif rest != size: raise ValueError(f"rearrange: group {g} has size {size}, but its axes give {rest}")
    flat_l = [n for g in lhs for n in g if n != "1"]
    flat_r = [n for g in rhs for n in g if n != "1"]
    x = self.reshape(tuple(known[n] for n in flat_l)).permute([flat_l.index(n) for n in flat_r])
    return x.reshape(tuple(prod(known[n] for n in g if n != "1") for g in rhs))
  def masked_select(self, mask:Tensor) -> Tensor:
    """The elements where mask (broadcast to self) is True, as 1-D. The size depends on the mask's values, so this reads the mask."""
    if mask.dtype != dtypes.bool: raise TypeError(f"masked_select: mask must be a bool tensor, got {mask.dtype}")
    shape = _broadcast_shape("masked_select", self.shape, mask.shape)
    return self._broadcast_to(shape).flatten()[mask._broadcast_to(shape).flatten()]
  def masked_fill(self, mask:Tensor, value:Any) -> Tensor:
    """value where mask (broadcast) is True, self elsewhere; keeps self's dtype."""
    if mask.dtype != dtypes.bool: raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    if isinstance(value, Tensor) and value.ndim != 0: raise ValueError(f"masked_fill: value must be a scalar or 0-d tensor, got shape {value.shape}")
    fill = value.cast(self.dtype) if isinstance(value, Tensor) else self.ufix(value).cast(self.dtype)
    return mask.where(fill, self)
  def one_hot(self, num_classes:int=-1) -> Tensor:
    """int32 one-hot of an int tensor along a new last dim; num_classes=-1 takes max + 1 (this reads the tensor)."""
    if not dtypes.is_int(self.dtype): raise TypeError(f"one_hot: expected an int tensor, got {self.dtype}")
    if num_classes == -1: num_classes = int(self.max().item()) + 1 if self.numel() else 0
    if not isinstance(num_classes, int) or num_classes < 0: raise ValueError(f"one_hot: num_classes must be an int >= 0 or -1, got {num_classes!r}")
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device, dtype=self.dtype)).cast(dtypes.default_int)
  def _check_index_arg(self, name:str, dim:int, index:Tensor, src:Tensor|None=None) -> int:
    d = self._resolve_dim(dim)
    if not isinstance(index, Tensor) or not dtypes.is_int(index.dtype):
      raise TypeError(f"{name}: index must be an int tensor, got {index.dtype if isinstance(index, Tensor) else type(index).__name__}")
    if index.ndim != self.ndim: raise ValueError(f"{name}: index has {index.ndim} dims, self has {self.ndim}; they must match")
    if any(resolve(i > s) for k, (i, s) in enumerate(zip(index.shape, self.shape)) if k != d):
      raise ValueError(f"{name}: index of shape {index.shape} is bigger than self {self.shape} outside dim {d}")
    if src is not None and (src.ndim != self.ndim or any(resolve(i > s) for i, s in zip(index.shape, src.shape))):
      raise ValueError(f"{name}: index of shape {index.shape} is bigger than src {src.shape}")
    return d
  def gather(self, dim:int, index:Tensor) -> Tensor:
    """out[i][j] = self[index[i][j]][j] (for dim 0): picks along dim, index's shape is the result's. Compare-and-sum, fused."""
    d = self._check_index_arg("gather", dim, index)
    n = self.shape[d]
    x = self.shrink(tuple(None if k == d else (0, s) for k, s in enumerate(index.shape))).unsqueeze(-1).transpose(d, -1)
    hit = index.unsqueeze(-1) == Tensor.arange(_as_int(n, "gather"), device=self.device, dtype=index.dtype)
    return hit.where(x, Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -1)
  def _scatter_hits(self, d:int, index:Tensor, src:Tensor) -> tuple[Tensor, Tensor]:
    # (hit, values), both (index's shape with dim d -> its own last axis, and self's size at d): hit[..., j] says src element j of that
    # row goes to position k of dim d; values is src broadcast to match. Reducing the last axis gives one value per target position
    n = self.shape[d]
    src = src.shrink(tuple((0, s) for s in index.shape))
    hit = (index.unsqueeze(-1) == Tensor.arange(_as_int(n, "scatter"), device=self.device, dtype=index.dtype)).transpose(d, -1)
    return hit, src.unsqueeze(-1).transpose(d, -1)
  def _scatter_place(self, d:int, index:Tensor, reduced:Tensor, count:Tensor) -> tuple[Tensor, Tensor]:
    # the reduced values (index's shape with self's size at d) padded out to self's shape, and whether any src element landed there
    pads = tuple((0, s - i) if k != d else (0, 0) for k, (i, s) in enumerate(zip(index.shape, self.shape)))
    return reduced.pad(pads), (count > 0).pad(pads)
  def scatter(self, dim:int, index:Tensor, src:Tensor|ConstType, reduce:str|None=None) -> Tensor:
    """out = self with out[index[i][j]][j] = src[i][j] (for dim 0); reduce 'add' or 'multiply' combines instead. Where an index
    repeats without a reduce, one of the values wins (torch leaves it undefined)."""
    if reduce not in (None, "add", "multiply"): raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    if reduce is not None: return self.scatter_reduce(dim, index, src, {"add": "sum", "multiply": "prod"}[reduce])
    srct = src if isinstance(src, Tensor) else Tensor(src, self.device, self.dtype)._broadcast_to(index.shape)
    d = self._check_index_arg("scatter", dim, index, srct)
    hit, vals = self._scatter_hits(d, index, srct.cast(self.dtype))
    # where an index repeats, the last src element along dim wins, like torch on CPU: 1 + its position, 0 where nothing lands
    order = Tensor.arange(1, index.shape[d] + 1, device=self.device, dtype=dtypes.int32)  # type: ignore[operator]
    last = hit.where(order, 0)._reduce(Ops.MAX, -1)
    picked = (order == last.unsqueeze(-1)).where(vals, Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -1)
    placed, landed = self._scatter_place(d, index, picked, last)
    return landed.where(placed, self)
  def scatter_reduce(self, dim:int, index:Tensor, src:Tensor|ConstType, reduce:str, include_self:bool=True) -> Tensor:
    """Combine src into self at the indexed positions with reduce 'sum', 'prod', 'mean', 'amax' or 'amin'; include_self=False leaves
    self's own value out where something lands (positions nothing lands on keep self). Ints take the mean rounding down, like torch."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
      raise ValueError(f"scatter_reduce: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got {reduce!r}")
    srct = src if isinstance(src, Tensor) else Tensor(src, self.device, self.dtype)._broadcast_to(index.shape)
    d = self._check_index_arg("scatter_reduce", dim, index, srct)
    hit, vals = self._scatter_hits(d, index, srct.cast(self.dtype))
    count = hit.cast(dtypes.int32)._reduce(Ops.ADD, -1)
    if reduce in ("sum", "mean"): red = hit.where(vals, Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -1)
    elif reduce == "prod": red = hit.where(vals, Tensor(1, self.device, self.dtype))._reduce(Ops.MUL, -1)
    elif reduce == "amax": red = hit.where(vals, Tensor(dtypes.min(self.dtype), self.device, self.dtype))._reduce(Ops.MAX, -1)
    else: red = hit.where(vals, Tensor(dtypes.max(self.dtype), self.device, self.dtype))._inverse()._reduce(Ops.MAX, -1)._inverse()
    placed, landed = self._scatter_place(d, index, red, count)
    cnt = count.pad(tuple((0, s - i) if k != d else (0, 0) for k, (i, s) in enumerate(zip(index.shape, self.shape))))
    if include_self:
      if reduce in ("sum", "mean"): placed = placed + self
      elif reduce == "prod": placed = placed * self
      elif reduce == "amax": placed = placed.maximum(self)
      else: placed = placed.minimum(self)
      cnt = cnt + 1
    if reduce == "mean":
      placed = placed // cnt.maximum(1).cast(self.dtype) if not dtypes.is_float(self.dtype) else placed / cnt.maximum(1).cast(self.dtype)
    return landed.where(placed, self)

  # ***** processing *****

  def _pool(self, k_:tuple[int, ...], stride:int|tuple[int, ...]=1, dilation:int|tuple[int, ...]=1) -> Tensor:
    """Sliding windows over the last len(k_) dims, as views only: (..., i...) -> (..., o..., k...) with o = (i - d*(k-1) - 1) // s + 1.
    Overlapping windows repeat the dim (an expand) and read it back with a longer row, so window element w of output o is at o*s + w*d."""
    n = len(k_)
    s_, d_ = _int_tuple(stride, n, "stride"), _int_tuple(dilation, n, "dilation")
    if self.ndim < n: raise ValueError(f"pool: a kernel of {n} dims needs a tensor of at least {n} dims, got shape {self.shape}")
    lead = self.ndim - n
    x = self
    for j, (k, s, d) in enumerate(zip(k_, s_, d_)):
      ax, i = lead + 2*j, x.shape[lead + 2*j]
      if not isinstance(i, int): raise NotImplementedError(f"pool over a symbolic dim {i}")
      o = (i - d*(k-1) - 1) // s + 1
      if o <= 0: raise ValueError(f"pool: window {k} with dilation {d} doesn't fit dim {ax} of size {i}")
      pre, post = x.shape[:ax], x.shape[ax+1:]
      def keep(*args:tuple[int, int]) -> tuple: return tuple(None for _ in pre) + args + tuple(None for _ in post)
      if k <= s and d == 1:
        # non-overlapping windows: rows of s, keep the first k of each
        x = x.pad(keep((0, o*s - i))).reshape(pre + (o, s) + post).shrink(keep((0, o), (0, k)))
        continue
      e = -(-k*(i+d) // i)
      x = x.reshape(pre + (1, i) + post).expand(pre + (e, i) + post).reshape(pre + (e*i,) + post)
      x = x.shrink(keep((0, k*(i+d)))).reshape(pre + (k, i+d) + post).pad(keep((0, 0), (0, o*s - (i+d))))
      x = x.reshape(pre + (k, o, s) + post).shrink(keep((0, k), (0, o), (0, 1))).reshape(pre + (k, o) + post)
      x = x.transpose(ax, ax+1)
    return x.permute(list(range(lead)) + [lead + 2*j for j in range(n)] + [lead + 2*j + 1 for j in range(n)])

  def _conv(self, name:str, weight:Tensor, bias:Tensor|None, groups:int, stride:Any, dilation:Any, pads:list[tuple[int, int]]) -> Tensor:
    # x (bs, cin, *spatial) and weight (cout, cin/groups, *k): windows of x (a view) times the weight, summed: one reduce kernel
    x, w = self, weight
    n = w.ndim - 2
    bs, cin, cout, cin_g, k_ = x.shape[0], x.shape[1], w.shape[0], w.shape[1], w.shape[2:]
    if not isinstance(groups, int) or groups < 1: raise ValueError(f"{name}: groups must be an int >= 1, got {groups!r}")
    if cin != cin_g * groups:
      raise ValueError(f"{name}: input has {cin} channels but weight expects {cin_g * groups}" + (f" ({cin_g} x groups={groups})" if groups > 1
                                                                                                  else ""))
    if cout % groups != 0: raise ValueError(f"{name}: weight has {cout} output channels, which groups={groups} doesn't divide")
    if bias is not None and bias.shape != (cout,): raise ValueError(f"{name}: bias must have shape ({cout},), got {bias.shape}")
    out_dt = least_upper_dtype(x.dtype, w.dtype)
    x = x.pad(((0, 0), (0, 0)) + tuple(pads))
    s_, d_ = _int_tuple(stride, n, "stride"), _int_tuple(dilation, n, "dilation")
    for sz, k, d, ax in zip(x.shape[2:], k_, d_, range(n)):
      if d*(k-1) + 1 > sz:
        raise ValueError(f"{name}: kernel {tuple(k_)} (dilation {d_}) is bigger than the padded input {tuple(x.shape[2:])} in spatial dim {ax}")
    rcout, oyx = cout // groups, tuple((sz - d*(k-1) - 1) // s + 1 for sz, k, s, d in zip(x.shape[2:], k_, s_, d_))
    if self.dtype == weight.dtype == out_dt and (m := Tensor._winograd_tile(x.shape, w.shape, groups, s_, d_, out_dt)):
      ret = x._winograd_conv(w.winograd_conv_weight(False, m))
    else:
      # (where the renderer asks for it, the scheduler copies a big conv's weight with the output channels innermost: schedule/packing.py)
      x = x._pool(tuple(_as_int(k, name) for k in k_), s_, d_)
      x = x.reshape((bs, groups, cin_g, 1) + oyx + tuple(k_)).expand((bs, groups, cin_g, rcout) + oyx + tuple(k_))
      x = x.permute([0, 1, 3] + list(range(4, 4+n)) + [2] + list(range(4+n, 4+2*n)))
      wr = w.reshape((1, groups, rcout) + (1,)*n + (cin_g,) + tuple(k_))
      ret = x.cast(out_dt).mul(wr.cast(out_dt)).sum(tuple(range(-1-n, 0)), dtype=sum_acc_dtype(out_dt)).cast(out_dt).reshape((bs, cout) + oyx)
    if self.dtype == weight.dtype == out_dt and dtypes.is_float(out_dt) and all(b >= 0 and e >= 0 for b, e in pads) and \
        all_int(self.shape + weight.shape):
      # backward as two more convolutions (_conv_grad), not through the window view (its gradient is a huge col2im reduce)
      ret = Tensor(UOp(Ops.CONTIGUOUS_BACKWARD, out_dt, (ret.uop, self.uop, weight.uop), ("conv", groups, s_, d_, tuple(pads))), device=ret.device)
    return ret if bias is None else ret + bias.reshape((1, -1) + (1,)*n)
  def pack_conv_weight(self, groups:int=1, out_width:int|None=None) -> Tensor:
    """This conv weight (cout, cin/groups, *k), realized in the layout its device's convolutions read (schedule/packing.py), else itself: on
    devices that pack operands (CPUs) panels of output channels, (cout/lanes, cin/groups, *k, lanes). An inference model's constant weights
    packed once are not copied by every call. A group's output channels must fill whole panels (a depthwise conv's weight stays as it is).
    out_width, the conv's output size along its last axis, picks the panels its register tile reads best (the conv packs its own otherwise)."""
    if (cols := conv_weight_panels(self.uop, groups, out_width)) is None: return self
    n, shape = self.ndim, cast(tuple[int, ...], self.shape)
    panels = self.reshape((shape[0] // cols, cols) + shape[1:]).permute((0,) + tuple(range(2, n+1)) + (1,)).contiguous().realize()
    return panels.permute((0, n) + tuple(range(1, n))).reshape(shape)
  @staticmethod
  def _winograd_tile(xshape:tuple[sint, ...], wshape:tuple[sint, ...], groups:int, s_:tuple[int, ...], d_:tuple[int, ...], dt:DType,
                     const_weight:bool=False) -> int:
    # a 2D 3x3 conv, stride and dilation 1, one group, float32, (padded) input xshape, as Winograd F(mxm, 3x3): m, or 0 for a direct conv.
    # WINO=1: always, WINO=-1: never, WINO=0 (the default): a model's constant weight transformed once (winograd_conv_weight, the ONNX
    # runner), 32 channels or more in and out. conv2d transforms its weight each call: that pays at 56x56x64 and 28x28x128, costs at 14x14x256
    # and 7x7x512 (and a training step of beautiful_mnist is no faster), so not by default. m = 4 for outputs of 14 or more, else 2: ResNet-18's
    # 56x56x64, 28x28x128, 14x14x256 convs took 2.6-2.9 ms direct, 1.4-1.6 with F(2x2), 1.0-1.4 with F(4x4) (Zen 3, one core); 7x7x512 2.2
    # with F(2x2), where F(4x4)'s GEMM alone took 2.3 (4 tiles)
    if len(wshape) != 4 or tuple(wshape[2:]) != (3, 3) or groups != 1 or s_ != (1, 1) or d_ != (1, 1) or dt != dtypes.float32: return 0
    if not all_int(xshape + wshape) or WINO.value < 0: return 0
    if WINO.value < 1 and not (const_weight and min(cast(int, wshape[0]), cast(int, wshape[1])) >= 32): return 0
    return 4 if min(cast(int, v) for v in xshape[2:]) - 2 >= 14 else 2
  def winograd_conv_weight(self, pack:bool=True, m:int=2) -> Tensor:
    """The weight (cout, cin, 3, 3) of a stride-1 3x3 conv transformed for Winograd F(mxm, 3x3), m 2 or 4: G g G^T, ((m+2)^2 points, cin,
    cout). Realized (pack=True, an inference model's constant weight, done once), and where the device packs a matmul's operand, in its
    panels (points, cout/cols, cin, cols), as the GEMM over the points reads them."""
    if self.ndim != 4 or self.shape[2:] != (3, 3): raise ValueError(f"winograd_conv_weight: expected a (cout, cin, 3, 3) weight, got {self.shape}")
    if m not in _WINO: raise ValueError(f"winograd_conv_weight: output tiles of {tuple(_WINO)}, got {m}")
    (cout, cin), p = self.shape[:2], (m + 2) ** 2
    g = Tensor(_kron(_WINO[m][1], _WINO[m][1]), device=self.device, dtype=self.dtype)   # (points, 9 taps)
    u = (self.reshape(cout, cin, 1, 9) * g.reshape(1, 1, p, 9)).sum(-1).permute(2, 1, 0)
    if not pack: return u
    if (cols := matmul_weight_panels(u.uop)) is None: return u.contiguous().realize()
    return u.reshape(p, cin, cout // cols, cols).permute(0, 2, 1, 3).contiguous().realize()
  def _winograd_conv(self, u:Tensor) -> Tensor:
    # this padded input (bs, cin, h, w) convolved with the 3x3 weight that u is (winograd_conv_weight): mxm output tiles from (m+2)x(m+2)
    # input tiles (stride m), each transformed (B^T d B, (m+2)^2 points), a GEMM per point over the channels, each tile's products transformed
    # back (A^T m A). Both transforms are sums with constant matrices (reduces: the last one is realized, its readers add the epilogue).
    bs, cin, h, w = cast(tuple[int, int, int, int], self.shape)
    p, (oy, ox) = cast(int, u.shape[0]), (h - 2, w - 2)
    cout, n = prod(u.shape[1:]) // cin, math.isqrt(p)
    m, cdiv = n - 2, (lambda a, b: -(-a // b))
    ty, tx = cdiv(oy, m), cdiv(ox, m)
    bt, at = (Tensor(a, device=self.device, dtype=self.dtype) for a in (_WINO[m][0], _WINO[m][2]))
    # (channels innermost, the GEMM's reduce axis: the input read from a channels-last copy, padded to whole tiles and one more)
    x = self.pad(((0, 0), (0, 0), (0, m*ty + m - h), (0, m*tx + m - w))).permute(0, 2, 3, 1).contiguous()
    # B^T d B in two passes, rows then columns (2m multiply-adds each, where the 2D transform as one reduce takes (m+2)^2). Each is one
    # reduce of a sum: not a conv's product for schedule/packing.py to store blocked (the points innermost: the GEMM read A 16 floats apart)
    def tiles(t:Tensor, ax:int, k:int, shape:tuple[int, ...], perm:tuple[int, ...], coef:tuple[int, ...]) -> Tensor:
      # t's axis ax (m*k+m) as k tiles: sum over s of the rows ms..ms+m-1 of each (a plain view, reshaped to shape, permuted so those rows
      # are last) times B^T's columns ms..ms+m-1 (reshaped to coef), summed over those rows
      return functools.reduce(Tensor.add, [t.shrink(tuple((m*s, m*s + m*k) if a == ax else None for a in range(t.ndim))).reshape(shape)
        .permute(perm) * bt[:, m*s:m*s+m].reshape(coef) for s in (0, 1)]).sum(-1)
    rows = tiles(x, 1, ty, (1, bs, ty, m, m*tx + m, cin), (0, 1, 2, 4, 5, 3), (n, 1, 1, 1, 1, m))   # (n row points, bs, ty, m*tx+m, cin)
    v = tiles(rows, 3, tx, (n, 1, bs, ty, tx, m, cin), (0, 1, 2, 3, 4, 6, 5), (1, n, 1, 1, 1, 1, m))   # (n, n column points, bs, ty, tx, cin)
    v = v.reshape(p, bs*ty*tx, cin)   # (points, tiles, cin)
    if u.ndim == 4:   # the weight's panels (points, cout/cols, cin, cols): the GEMM as the scheduler packs it (schedule/packing.py pack_matmul)
      mm = (v.reshape(p, bs*ty*tx, 1, 1, cin) * u.permute(0, 1, 3, 2).unsqueeze(1)).sum(-1).reshape(p, bs*ty*tx, cout)
    else: mm = v @ u
    # back: A^T over the points' rows, then their columns (each a reduce over its last axis, which schedule/packing.py leaves alone), the output
    # tiles channels last (bs, m*ty, m*tx, cout), cropped to the output
    z = (mm.reshape(1, n, n, bs, ty, tx, cout).permute(0, 2, 3, 4, 5, 6, 1) * at.reshape(m, 1, 1, 1, 1, 1, n)).sum(-1)   # (m, n, bs, ty, tx, cout)
    y = (z.permute(2, 3, 0, 4, 5, 1).reshape(bs, ty, m, tx, 1, cout, n) * at.reshape(1, 1, 1, 1, m, 1, n)).sum(-1)
    return y.reshape(bs, m*ty, m*tx, cout).shrink((None, (0, oy), (0, ox), None)).permute(0, 3, 1, 2)
  @staticmethod
  def _conv_grad(g:Tensor, x:Tensor, w:Tensor, groups:int, s_:tuple[int, ...], d_:tuple[int, ...], pads:tuple[tuple[int, int], ...]) \
      -> tuple[Tensor, Tensor]:
    # the gradients of x._conv(w) given g, the gradient of its output (bs, cout, *o), realized
    n, (bs, cin), (cout, cin_g), k_ = w.ndim - 2, cast(tuple[int, int], x.shape[:2]), w.shape[:2], cast(tuple[int, ...], w.shape[2:])
    rcout, o_ = cout // groups, g.shape[2:]
    # input: the transposed conv of g with w covers the padded input up to the last window's end; past it and in the padding nothing
    dx = g.conv_transpose2d(w, groups=groups, stride=s_, dilation=d_)
    dx = dx.pad(((0, 0), (0, 0)) + tuple((0, i + b + e - sz) for i, (b, e), sz in zip(x.shape[2:], pads, dx.shape[2:])))
    dx = dx.shrink(((0, bs), (0, cin)) + tuple((b, b + i) for i, (b, _) in zip(x.shape[2:], pads)))
    # weight: the windows of x times g, summed over the batch and the output positions (the layout the device reads them in, copies and
    # partial sums over the batch, is the scheduler's: schedule/packing.py)
    xw = x.pad(((0, 0), (0, 0)) + pads)._pool(k_, s_, d_).reshape((bs, groups, 1, cin_g) + tuple(o_) + tuple(k_))
    gw = g.reshape((bs, groups, rcout, 1) + tuple(o_) + (1,)*n)
    dw = (xw * gw).sum((0,) + tuple(range(4, 4+n)), dtype=sum_acc_dtype(g.dtype)).cast(g.dtype).reshape(w.shape)
    return dx, dw
  def _conv_prep(self, name:str, weight:Tensor) -> tuple[Tensor, bool]:
    # (input with a batch dim, whether one was added): like torch, an input without the batch dim is one sample
    if not isinstance(weight, Tensor) or weight.ndim < 3:
      raise ValueError(f"{name}: weight must be a tensor of at least 3 dims (out, in, *kernel), got {getattr(weight, 'shape', weight)}")
    if self.ndim == weight.ndim - 1: return self.unsqueeze(0), True
    if self.ndim != weight.ndim:
      raise ValueError(f"{name}: input of shape {self.shape} doesn't match weight {weight.shape}: expected {weight.ndim} dims (batched) or "
                       f"{weight.ndim-1} (unbatched)")
    return self, False
  def conv2d(self, weight:Tensor, bias:Tensor|None=None, groups:int=1, stride:int|tuple[int, ...]=1, dilation:int|tuple[int, ...]=1,
             padding:int|str|Sequence[int]=0) -> Tensor:
    """Convolution (really cross-correlation, like torch) over as many spatial dims as the weight has: weight (cout, cin/groups, *k).
    padding: an int, one int per spatial dim, 2 per spatial dim (torch's flat pad order, last dim first), 'valid' or 'same'."""
    x, unbatched = self._conv_prep("conv2d", weight)
    n, k_ = weight.ndim - 2, weight.shape[2:]
    d_ = _int_tuple(dilation, n, "dilation")
    if isinstance(padding, str):
      if padding not in ("same", "valid"): raise ValueError(f"conv2d: padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
      if padding == "same" and any(s != 1 for s in _int_tuple(stride, n, "stride")): raise ValueError("conv2d: padding='same' needs stride 1")
      # same: the total d*(k-1) split with the extra one on the right, like torch
      pads = [(d*(k-1)//2, d*(k-1) - d*(k-1)//2) if padding == "same" else (0, 0) for k, d in zip(k_, d_)]
    elif isinstance(padding, int): pads = [(padding, padding)] * n
    elif len(padding) == n: pads = [(p, p) for p in padding]
    elif len(padding) == 2*n: pads = list(_flat_to_pairs(padding, n))
    else: raise ValueError(f"conv2d: padding {padding} needs 1, {n} or {2*n} ints for {n} spatial dims")
    ret = x._conv("conv2d", weight, bias, groups, stride, d_, pads)
    return ret.squeeze(0) if unbatched else ret
  def conv_transpose2d(self, weight:Tensor, bias:Tensor|None=None, groups:int=1, stride:int|tuple[int, ...]=1, dilation:int|tuple[int, ...]=1,
                       padding:int|tuple[int, ...]=0, output_padding:int|tuple[int, ...]=0) -> Tensor:
    """Transposed convolution (the gradient of conv2d with respect to its input), weight (cin, cout/groups, *k): the input spread out by
    stride with zeros between, convolved with the flipped, transposed weight."""
    x, unbatched = self._conv_prep("conv_transpose2d", weight)
    n, k_ = weight.ndim - 2, weight.shape[2:]
    s_, d_ = _int_tuple(stride, n, "stride"), _int_tuple(dilation, n, "dilation")
    p_, op_ = _int_tuple(padding, n, "padding", 0), _int_tuple(output_padding, n, "output_padding", 0)
    if not isinstance(groups, int) or groups < 1: raise ValueError(f"conv_transpose2d: groups must be an int >= 1, got {groups!r}")
    cin, rcout = weight.shape[0], weight.shape[1]
    if x.shape[1] != cin: raise ValueError(f"conv_transpose2d: input has {x.shape[1]} channels but weight expects {cin}")
    if cin % groups != 0: raise ValueError(f"conv_transpose2d: weight has {cin} input channels, which groups={groups} doesn't divide")
    if any(op >= max(s, d) for op, s, d in zip(op_, s_, d_)):
      raise ValueError(f"conv_transpose2d: output_padding {op_} must be smaller than stride {s_} or dilation {d_}")
    w = weight.reshape((groups, cin // groups, rcout) + tuple(k_)).transpose(1, 2).flip(list(range(3, 3+n)))
    w = w.reshape((groups * rcout, cin // groups) + tuple(k_))
    if any(s > 1 for s in s_):
      # s-1 zeros between neighbours: each element padded to s, the tail past the last element cut
      for j, s in enumerate(s_):
        ax, i = 2 + j, x.shape[2 + j]
        pre, post = x.shape[:ax], x.shape[ax+1:]
        x = x.reshape(pre + (i, 1) + post).pad(tuple((0, 0) for _ in pre) + ((0, 0), (0, s-1)) + tuple((0, 0) for _ in post))
        x = x.reshape(pre + (i*s,) + post).shrink(tuple(None for _ in pre) + ((0, max((i-1)*s + 1, 0)),) + tuple(None for _ in post))
    pads = [(d*(k-1) - p, d*(k-1) - p + op) for k, d, p, op in zip(k_, d_, p_, op_)]
    ret = x._conv("conv_transpose2d", w, bias, groups, 1, d_, pads)
    return ret.squeeze(0) if unbatched else ret

  def _pool_prep(self, name:str, kernel_size:Any, stride:Any, padding:Any, dilation:Any, ceil_mode:bool) -> tuple:
    # -> (k, s, p, d, output sizes, extra right padding per spatial dim) with torch's checks and ceil_mode rule
    n = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 2
    k_ = _int_tuple(kernel_size, n, "kernel_size")
    s_ = k_ if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _int_tuple(stride, n, "stride")
    d_ = _int_tuple(dilation, n, "dilation")
    if self.ndim < n + 1: raise ValueError(f"{name}: a {n}-d kernel needs an input of at least {n+1} dims, got shape {self.shape}")
    # tinygrad's extension: one (begin, end) pair per spatial dim pads asymmetrically (torch's half-kernel limit is for symmetric padding)
    if isinstance(padding, (tuple, list)) and len(padding) == n and all(isinstance(p, (tuple, list)) for p in padding):
      p_ = tuple(_int_tuple(p, 2, f"padding pair {p!r}", 0) for p in padding)
    elif isinstance(padding, (tuple, list)) and len(padding) == 2*n:   # flat, last dim first, as F.pad and tinygrad's pools take it
      flat = _int_tuple(padding, 2*n, "padding", 0)
      p_ = tuple((flat[2*i], flat[2*i+1]) for i in reversed(range(n)))
    else:
      p_ = tuple((p, p) for p in _int_tuple(padding, n, "padding", 0))
      if any(p > (d*(k-1) + 1) // 2 for k, (p, _), d in zip(k_, p_, d_)):
        raise ValueError(f"{name}: padding {tuple(p for p, _ in p_)} must be at most half the (dilated) kernel size {k_}")
    outs, extras = [], []
    for i, k, s, (pb, pe), d in zip(self.shape[-n:], k_, s_, p_, d_):
      span = i + pb + pe - d*(k-1) - 1
      if span < 0: raise ValueError(f"{name}: kernel {k_} (dilation {d_}) is bigger than the padded input {self.shape[-n:]}")
      o = (-(-span // s) if ceil_mode else span // s) + 1
      # torch: with ceil_mode the last window must start inside the input or the left padding
      if ceil_mode and (o - 1) * s >= i + pb: o -= 1
      outs.append(o)
      extras.append(max(0, (o-1)*s + d*(k-1) + 1 - (i + pb + pe)))
    return k_, s_, p_, d_, outs, extras
  def avg_pool2d(self, kernel_size:int|tuple[int, ...]=(2, 2), stride:int|tuple[int, ...]|None=None, padding:int|tuple=0,
                 ceil_mode:bool=False, count_include_pad:bool=True, divisor_override:int|None=None, dilation:int|tuple[int, ...]=1) -> Tensor:
    """Average over windows of the last len(kernel_size) dims (2 for an int); padding may be one (begin, end) pair per dim, as in tinygrad.
    count_include_pad counts the zero padding in the divisor;
    the extra right padding of ceil_mode never counts, like torch."""
    k_, s_, p_, d_, _, extras = self._pool_prep("avg_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    n = len(k_)
    lead = ((0, 0),) * (self.ndim - n)
    x = self._to_float()
    sums = x.pad(lead + tuple((pb, pe + e) for (pb, pe), e in zip(p_, extras)))._pool(k_, s_, d_).sum(tuple(range(-n, 0)))
    if divisor_override is not None: return sums / divisor_override
    spatial = self.shape[-n:]
    ones = Tensor.ones(tuple(i + pb + pe for i, (pb, pe) in zip(spatial, p_)) if count_include_pad else spatial, device=self.device, dtype=x.dtype)
    ones = ones.pad(tuple((0, e) if count_include_pad else (pb, pe + e) for (pb, pe), e in zip(p_, extras)))
    return sums / ones._pool(k_, s_, d_).sum(tuple(range(-n, 0)))
  def max_pool2d(self, kernel_size:int|tuple[int, ...]=(2, 2), stride:int|tuple[int, ...]|None=None, padding:int|tuple=0,
                 dilation:int|tuple[int, ...]=1, ceil_mode:bool=False, return_indices:bool=False) -> Tensor|tuple[Tensor, Tensor]:
    """Max over windows of the last len(kernel_size) dims (2 for an int), padding with -inf (one (begin, end) pair per dim pads
    asymmetrically, as in tinygrad). return_indices also gives the int32 index
    of the (first) maximum within the flattened spatial dims, for max_unpool2d."""
    k_, s_, p_, d_, _, extras = self._pool_prep("max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    n = len(k_)
    lead = ((0, 0),) * (self.ndim - n)
    pads = lead + tuple((pb, pe + e) for (pb, pe), e in zip(p_, extras))
    windows = self.pad(pads, value=dtypes.min(self.dtype))._pool(k_, s_, d_)
    ret = windows._max_nan(tuple(range(-n, 0)), False, spread=False)
    if not return_indices: return ret
    spatial = self.shape[-n:]
    pos = Tensor.arange(_as_int(prod(spatial), "max_pool2d"), device=self.device).reshape(spatial).pad(tuple(pads[-n:]), value=-1)._pool(k_, s_, d_)
    best = ret.reshape(ret.shape + (1,)*n)
    hit = (windows == best) | (windows.isnan() & best.isnan()) if dtypes.is_float(self.dtype) else windows == best
    # the smallest position among the hits is the first maximum in scan order (padding has position -1 and is skipped)
    first = (hit & (pos >= 0)).where(pos, prod(spatial))._inverse().max(tuple(range(-n, 0)))._inverse()
    return ret, first.cast(dtypes.int32)
  def max_unpool2d(self, indices:Tensor, kernel_size:int|tuple[int, ...]=(2, 2), stride:int|tuple[int, ...]|None=None,
                   padding:int|tuple[int, ...]=0, output_size:Sequence[int]|None=None) -> Tensor:
    """The inverse of max_pool2d: each value goes to its index in the flattened output spatial dims, zeros elsewhere."""
    n = len(kernel_size) if isinstance(kernel_size, (tuple, list)) else 2
    k_ = _int_tuple(kernel_size, n, "kernel_size")
    s_ = k_ if stride is None else _int_tuple(stride, n, "stride")
    p_ = _int_tuple(padding, n, "padding", 0)
    if indices.shape != self.shape: raise ValueError(f"max_unpool2d: indices of shape {indices.shape} must match the input {self.shape}")
    if not dtypes.is_int(indices.dtype): raise TypeError(f"max_unpool2d: indices must be an int tensor, got {indices.dtype}")
    if output_size is None: out_sp = tuple((i-1)*s - 2*p + k for i, k, s, p in zip(self.shape[-n:], k_, s_, p_))
    else:
      out_sp = tuple(output_size)[-n:]
      if len(out_sp) != n: raise ValueError(f"max_unpool2d: output_size {tuple(output_size)} needs at least {n} sizes")
    total = prod(out_sp)
    lead = self.shape[:-n]
    xf, idf = self.reshape(lead + (1, -1)), indices.reshape(lead + (1, -1))
    hit = idf == Tensor.arange(total, device=self.device, dtype=indices.dtype).reshape(total, 1)
    summed = hit.where(xf, Tensor(0, self.device, self.dtype)).sum(-1)
    # overlapping windows can pick one input twice (the same value): the output takes it once, and like torch each copy still gets the
    # whole gradient of that output, so the division by the count is hidden from autograd
    count = hit.sum(-1).maximum(1).cast(summed.dtype)
    return (summed - (summed - summed / count).detach()).cast(self.dtype).reshape(lead + out_sp)

  def _tri_mask(self, name:str, diagonal:int) -> Tensor:
    # col - row for the last two dims, as an int32 grid of their shape
    if self.ndim < 2: raise ValueError(f"{name}: expected a tensor of at least 2 dims, got shape {self.shape}")
    r, c = self.shape[-2], self.shape[-1]
    if not isinstance(r, int) or not isinstance(c, int): raise NotImplementedError(f"{name} of symbolic dims")
    return Tensor.arange(c, device=self.device).reshape(1, c) - Tensor.arange(r, device=self.device).reshape(r, 1) - diagonal
  def triu(self, diagonal:int=0) -> Tensor:
    """Zero below the given diagonal of the last two dims."""
    return (self._tri_mask("triu", diagonal) >= 0).where(self, Tensor(0, self.device, self.dtype))
  def tril(self, diagonal:int=0) -> Tensor:
    """Zero above the given diagonal of the last two dims."""
    return (self._tri_mask("tril", diagonal) <= 0).where(self, Tensor(0, self.device, self.dtype))

  def interpolate(self, size:int|Sequence[int]|None=None, scale_factor:float|Sequence[float]|None=None, mode:str="nearest",
                  align_corners:bool|None=None) -> Tensor:
    """Resize the spatial dims (all but batch and channel) like torch.nn.functional.interpolate: mode 'nearest', 'nearest-exact',
    'linear', 'bilinear' (4-D), 'trilinear' (5-D). As in tinygrad, 'linear' is n-linear for any number of spatial dims (torch: 3-D only).
    Source positions are computed in float32 as torch does."""
    modes = {"nearest": None, "nearest-exact": None, "linear": 0, "bilinear": 4, "trilinear": 5}
    if mode not in modes: raise NotSupportedError(f"interpolate: mode must be one of {list(modes)}, got {mode!r}")
    if (nd := modes[mode]) and self.ndim != nd:
      raise ValueError(f"interpolate: mode {mode!r} needs a {nd}-D input, got shape {self.shape}")
    if self.ndim < 3: raise ValueError(f"interpolate: expected an input of at least 3 dims (batch, channel, spatial...), got shape {self.shape}")
    if align_corners is not None and modes[mode] is None:
      raise ValueError("interpolate: align_corners can only be set with the interpolating modes linear, bilinear and trilinear")
    if (size is None) == (scale_factor is None): raise ValueError("interpolate: give exactly one of size and scale_factor")
    n = self.ndim - 2
    spatial = self.shape[2:]
    scales: tuple[float|None, ...] = (None,) * n
    if size is not None: out = _int_tuple(size, n, "size", 0)
    else:
      assert scale_factor is not None
      scales = tuple(float(f) for f in (scale_factor if isinstance(scale_factor, (tuple, list)) else [float(scale_factor)] * n))  # type: ignore[arg-type]
      if len(scales) != n: raise ValueError(f"interpolate: scale_factor needs {n} values, got {scale_factor}")
      out = tuple(int(math.floor(i * f)) for i, f in zip(spatial, scales))  # type: ignore[operator]
    x = self
    for j, (i, o, sf) in enumerate(zip(spatial, out, scales)):
      if not isinstance(i, int): raise NotImplementedError(f"interpolate of a symbolic dim {i}")
      if o <= 0: raise ValueError(f"interpolate: output size {o} of spatial dim {j} must be > 0")
      scale = _f32(1.0 / sf) if sf is not None else _f32(_f32(i) / _f32(o))
      ax = 2 + j
      pick = (slice(None),) * ax
      if modes[mode] is None:
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = [min(int(math.floor(_f32(_f32(k + offset) * scale))), i - 1) for k in range(o)]
        x = x[pick + (src,)]
        continue
      if align_corners: scale = _f32((i - 1) / (o - 1)) if o > 1 else 0.0
      pos = [_f32(scale * k) if align_corners else max(_f32(_f32(scale * _f32(k + 0.5)) - 0.5), 0.0) for k in range(o)]
      low = [min(int(p), i - 1) for p in pos]
      high = [lo + 1 if lo < i - 1 else lo for lo in low]
      frac = Tensor([_f32(p - lo) for p, lo in zip(pos, low)], self.device, dtypes.float32).reshape((o,) + (1,) * (self.ndim - ax - 1))
      xf = x._to_float()
      x = xf[pick + (low,)] * (1 - frac).cast(xf.dtype) + xf[pick + (high,)] * frac.cast(xf.dtype)
    return x

  def _rank(self, descending:bool) -> Tensor:
    # for each element along the last dim, how many sort before it: smaller ones (larger for descending; nan is largest, like torch) and
    # equal ones at smaller positions (so the sort is stable). An (n, n) compare fused into a sum: O(n^2) work, no (n, n) buffer
    x = self.cast(dtypes.int32) if self.dtype == dtypes.bool else self
    mine, other = x.unsqueeze(-1), x.unsqueeze(-2)
    before = other > mine if descending else other < mine
    same = other == mine
    if dtypes.is_float(x.dtype):
      mine_nan, other_nan = mine.isnan(), other.isnan()
      before = before | ((other_nan & mine_nan.logical_not()) if descending else (mine_nan & other_nan.logical_not()))
      same = same | (mine_nan & other_nan)
    n = _as_int(self.shape[-1], "sort")
    earlier = Tensor.arange(n, device=self.device).reshape(1, n) < Tensor.arange(n, device=self.device).reshape(n, 1)
    return (before | (same & earlier)).cast(dtypes.int32).sum(-1)
  def _take_ranks(self, rank:Tensor, k:int) -> tuple[Tensor, Tensor]:
    # the elements of ranks 0..k-1 along the last dim and their positions (int32)
    n = self.shape[-1]
    hit = rank.unsqueeze(-2) == Tensor.arange(k, device=self.device, dtype=dtypes.int32).reshape(k, 1)
    values = hit.where(self.unsqueeze(-2), Tensor(0, self.device, self.dtype))._reduce(Ops.ADD, -1)
    positions = hit.where(Tensor.arange(_as_int(n, "sort"), device=self.device, dtype=dtypes.int32), 0).sum(-1)
    return values, positions
  def sort(self, dim:int=-1, descending:bool=False, stable:bool=False) -> tuple[Tensor, Tensor]:
    """(values, int32 indices) sorted along dim. Always stable; nan sorts as the largest value, like torch. O(n^2) compares per row."""
    if self.ndim == 0: return self, Tensor(0, self.device, dtypes.int32)
    d = self._resolve_dim(dim)
    x = self.transpose(d, -1)
    if not isinstance(n := x.shape[-1], int): raise NotImplementedError(f"sort of a symbolic dim {n}")
    values, positions = x._take_ranks(x._rank(descending), n)
    return values.transpose(d, -1), positions.transpose(d, -1)
  def argsort(self, dim:int=-1, descending:bool=False, stable:bool=False) -> Tensor:
    """The int32 indices that sort self along dim (stable)."""
    return self.sort(dim, descending, stable)[1]
  def topk(self, k:int, dim:int=-1, largest:bool=True, sorted:bool=True) -> tuple[Tensor, Tensor]:
    """The k largest (or smallest) values along dim, in order, and their int32 indices; ties go to the earlier index."""
    if self.ndim == 0:
      if k != 1: raise ValueError(f"topk: k={k!r} is out of range for a 0-d tensor: expected 1")
      return self, Tensor(0, self.device, dtypes.int32)
    d = self._resolve_dim(dim)
    n = self.shape[d]
    if not isinstance(k, int) or not 0 <= k <= n: raise ValueError(f"topk: k={k!r} is out of range for dim {dim} of size {n}: expected 0 <= k <= {n}")
    x = self.transpose(d, -1)
    values, positions = x._take_ranks(x._rank(largest), k)
    return values.transpose(d, -1), positions.transpose(d, -1)

  def sequential(self, ll:Sequence[Any]) -> Tensor:
    """Apply each callable in turn: self -> ll[0] -> ll[1] ..."""
    return functools.reduce(lambda x, f: f(x), ll, self)
  def layernorm(self, axis:int|Sequence[int]=-1, eps:float=1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over axis (biased variance), without scale and shift."""
    y = self - self.mean(axis, keepdim=True)
    return y.mul((y * y).mean(axis, keepdim=True).add(eps).rsqrt())
  def batchnorm(self, weight:Tensor|None, bias:Tensor|None, mean:Tensor, invstd:Tensor, axis:int|Sequence[int]=1) -> Tensor:
    """(x - mean) * invstd * weight + bias, with the 1-D statistics broadcast along axis (the channel dim)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(self._resolve_dim(a) for a in axes)
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = self - mean.reshape(shape)
    if weight is not None: x = x * weight.reshape(shape)
    ret = x.mul(invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
    return ret + bias.reshape(shape) if bias is not None else ret
  def dropout(self, p:float=0.5) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p), when Tensor.training; else self."""
    if not 0 <= p <= 1: raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    return self._dropout(p) if Tensor.training else self
  def _dropout(self, p:float) -> Tensor:
    if p == 0: return self
    if p == 1: return Tensor(False, self.device).where(self, Tensor(0, self.device, self.dtype))  # not self * 0: nan * 0 is nan
    keep = Tensor.rand(*self.shape, device=self.device, dtype=dtypes.float32) >= p
    return keep.where(self * (1 / (1 - p)), Tensor(0, self.device, self.dtype))
  def scaled_dot_product_attention(self, key:Tensor, value:Tensor, attn_mask:Tensor|None=None, dropout_p:float=0.0, is_causal:bool=False,
                                   scale:float|None=None, enable_gqa:bool=False) -> Tensor:
    """softmax(self @ key^T * scale + mask) @ value, like torch: a bool attn_mask says which positions take part, a float one is added;
    is_causal masks the upper triangle; enable_gqa repeats key/value heads (dim -3) to the query's head count. dropout_p applies
    dropout to the attention weights (always, like torch's functional form). attn_mask and is_causal together apply both masks."""
    q, k, v = self, key, value
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2: raise ValueError(f"scaled_dot_product_attention: query, key and value need >= 2 dims, got "
                                                            f"{q.shape}, {k.shape}, {v.shape}")
    if q.shape[-1] != k.shape[-1]: raise ValueError(f"scaled_dot_product_attention: query's last dim {q.shape[-1]} != key's {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]: raise ValueError(f"scaled_dot_product_attention: key has {k.shape[-2]} positions, value {v.shape[-2]}")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
      hq, hk = q.shape[-3], k.shape[-3]
      if not isinstance(hq, int) or not isinstance(hk, int) or hq % hk != 0:
        raise ValueError(f"scaled_dot_product_attention: with enable_gqa the query heads {hq} must be a multiple of the key heads {hk}")
      k, v = k.repeat_interleave(hq // hk, dim=-3), v.repeat_interleave(hq // hk, dim=-3)
    attn = (q @ k.transpose(-2, -1)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)  # type: ignore[arg-type]
    if attn_mask is not None: attn = attn_mask.where(attn, -math.inf) if attn_mask.dtype == dtypes.bool else attn + attn_mask
    # tinygrad's extension: is_causal with an attn_mask applies both (torch refuses the pair)
    if is_causal: attn = Tensor.ones(q.shape[-2], k.shape[-2], dtype=dtypes.bool, device=q.device).tril().where(attn, -math.inf)
    weights = attn.softmax(-1)
    if dropout_p: weights = weights._dropout(dropout_p)
    return weights @ v

  def _do_reduction(self, name:str, reduction:str) -> Tensor:
    if reduction not in ("none", "sum", "mean"): raise ValueError(f"{name}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}")
    return self if reduction == "none" else self.sum() if reduction == "sum" else self.mean()
  def binary_crossentropy(self, Y:Tensor, reduction:str="mean") -> Tensor:
    """BCE of probabilities self against targets Y; the logs are clamped at -100 like torch, so 0 and 1 give finite losses."""
    if self.shape != Y.shape: raise ValueError(f"binary_crossentropy: input shape {self.shape} and target shape {Y.shape} must match")
    loss = -(Y * self.log().maximum(-100) + (1 - Y) * (1 - self).log().maximum(-100))
    return loss._do_reduction("binary_crossentropy", reduction)
  def binary_crossentropy_logits(self, Y:Tensor, reduction:str="mean", pos_weight:Tensor|None=None) -> Tensor:
    """BCE on logits, stably: (1 - y) * x + (1 + (pw - 1) * y) * log(1 + exp(-x)), with log(1 + exp(-x)) = log1p(exp(-|x|)) + max(-x, 0)."""
    if self.shape != Y.shape: raise ValueError(f"binary_crossentropy_logits: input shape {self.shape} and target shape {Y.shape} must match")
    softplus_neg = (1 + (-self.abs()).exp()).log() + (-self).relu()
    weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * Y
    return ((1 - Y) * self + weight * softplus_neg)._do_reduction("binary_crossentropy_logits", reduction)
  def _class_hits(self, name:str, Y:Tensor, class_dim:int) -> Tensor:
    # bool mask over self's shape: the class each target names (targets outside [0, C) hit nothing)
    if not dtypes.is_int(Y.dtype): raise TypeError(f"{name}: class targets must be an int tensor, got {Y.dtype}")
    expected = self.shape[:class_dim] + self.shape[class_dim+1:]
    if Y.shape != expected: raise ValueError(f"{name}: target shape {Y.shape} doesn't match the input {self.shape}: expected {expected}")
    n_cls = self.shape[class_dim]
    classes = Tensor(_class_ids(_as_int(n_cls, name), self.device, Y.dtype)).reshape((n_cls,) + (1,) * (self.ndim - class_dim - 1))
    return Y.unsqueeze(class_dim) == classes
  def nll_loss(self, Y:Tensor, weight:Tensor|None=None, ignore_index:int=-100, reduction:str="mean") -> Tensor:
    """Negative log likelihood of log-probabilities self (N, C, ...) or (C,) at class targets Y (N, ...) or (); mean divides by the summed
    weights of the targets that aren't ignore_index."""
    class_dim = 0 if self.ndim == 1 else 1
    if self.ndim == 0: raise ValueError("nll_loss: input must have a class dim, got a 0-d tensor")
    hits = self._class_hits("nll_loss", Y, class_dim)
    n_cls = self.shape[class_dim]
    if weight is not None and weight.shape != (n_cls,): raise ValueError(f"nll_loss: weight must have shape ({n_cls},), got {weight.shape}")
    wshape = (n_cls,) + (1,) * (self.ndim - class_dim - 1)
    w = Tensor.ones(n_cls, device=self.device, dtype=self.dtype) if weight is None else weight.cast(self.dtype)
    hit_w = hits.where(w.reshape(wshape), 0) * Y.ne(ignore_index).unsqueeze(class_dim)
    loss = -(hit_w * self).sum(class_dim)
    if reduction == "mean" and weight is None:   # the targets that count: no pass over the classes for that
      return loss.sum() / (Y.ne(ignore_index) & (Y >= 0) & (Y < n_cls)).sum().cast(self.dtype)
    if reduction == "mean": return loss.sum() / hit_w.sum()
    return loss._do_reduction("nll_loss", reduction)
  def cross_entropy(self, Y:Tensor, weight:Tensor|None=None, ignore_index:int=-100, reduction:str="mean", label_smoothing:float=0.0) -> Tensor:
    """torch's cross_entropy on logits self (N, C, ...) or (C,): Y holds class indices (N, ...) or class probabilities of self's shape."""
    if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if self.ndim == 0: raise ValueError("cross_entropy: input must have a class dim, got a 0-d tensor")
    class_dim = 0 if self.ndim == 1 else 1
    n_cls = self.shape[class_dim]
    logp = self.log_softmax(class_dim)
    wshape = (n_cls,) + (1,) * (self.ndim - class_dim - 1)
    if weight is not None and weight.shape != (n_cls,): raise ValueError(f"cross_entropy: weight must have shape ({n_cls},), got {weight.shape}")
    w = None if weight is None else weight.cast(logp.dtype).reshape(wshape)
    if dtypes.is_float(Y.dtype):
      if Y.shape != self.shape: raise ValueError(f"cross_entropy: probability targets of shape {Y.shape} must match the input {self.shape}")
      target = Y * (1 - label_smoothing) + label_smoothing / n_cls
      loss = -(logp * target * (1 if w is None else w)).sum(class_dim)
      return loss._do_reduction("cross_entropy", reduction)
    if label_smoothing == 0: return logp.nll_loss(Y, weight, ignore_index, reduction)
    nll = logp.nll_loss(Y, weight, ignore_index, "none")
    kept = Y.ne(ignore_index)
    smooth = -(logp * (1 if w is None else w)).sum(class_dim) * kept / n_cls
    loss = nll * (1 - label_smoothing) + smooth * label_smoothing
    if reduction == "mean":
      hits = logp._class_hits("cross_entropy", Y, class_dim)
      denom = (hits.where(1 if w is None else w, 0) * kept.unsqueeze(class_dim)).sum()
      return loss.sum() / denom
    return loss._do_reduction("cross_entropy", reduction)
  def sparse_categorical_crossentropy(self, Y:Tensor, ignore_index:int=-1, label_smoothing:float=0.0, reduction:str="mean") -> Tensor:
    """Cross entropy of logits self (..., C), classes last, at int targets Y (...); targets equal to ignore_index don't count."""
    if self.ndim == 0: raise ValueError("sparse_categorical_crossentropy: input must have a class dim, got a 0-d tensor")
    if Y.shape != self.shape[:-1]: raise ValueError(f"sparse_categorical_crossentropy: target shape {Y.shape} must be the input's {self.shape} "
                                                    f"without the class dim: {self.shape[:-1]}")
    x, y = (self, Y) if self.ndim == 1 else (self.reshape(-1, self.shape[-1]), Y.reshape(-1))
    loss = x.cross_entropy(y, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)
    return loss.reshape(self.shape[:-1]) if reduction == "none" else loss

  def qr(self, mode:str="reduced") -> tuple[Tensor, Tensor]:
    """Householder QR of (..., m, n): Q orthonormal, R upper triangular, Q @ R = self. mode 'reduced' (Q (m, k), R (k, n), k = min(m, n))
    or 'complete' (Q (m, m), R (m, n)). Signs may differ from LAPACK's."""
    if mode not in ("reduced", "complete"): raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    if self.ndim < 2: raise ValueError(f"qr: expected a matrix of at least 2 dims, got shape {self.shape}")
    m, n = self.shape[-2], self.shape[-1]
    if not isinstance(m, int) or not isinstance(n, int): raise NotImplementedError("qr of symbolic dims")
    R = self._to_float()
    Q = Tensor.eye(m, dtype=R.dtype, device=self.device).expand(R.shape[:-2] + (m, m))
    rows = Tensor.arange(m, device=self.device).reshape(m, 1)
    for j in range(min(m - 1, n)):
      # the reflection that zeroes column j below the diagonal: v = x - alpha e_j with alpha = -sign(x_j) |x|, on rows j.. only
      x = (rows >= j).where(R[..., :, j:j+1], 0)
      xj = R[..., j:j+1, j:j+1]
      alpha = -(xj >= 0).where(1.0, -1.0) * (x * x).sum(-2, keepdim=True).sqrt()
      v = x - (rows == j).where(alpha, 0)
      vnorm2 = (v * v).sum(-2, keepdim=True)
      v = v * (vnorm2 > 0).where(vnorm2, 1).rsqrt() * (vnorm2 > 0)
      R = R - 2 * v @ (v.transpose(-2, -1) @ R)
      Q = Q - 2 * (Q @ v) @ v.transpose(-2, -1)
    R = R.triu()
    if mode == "complete": return Q, R
    k = min(m, n)
    return Q[..., :, :k], R[..., :k, :]
  def svd(self, full_matrices:bool=True) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, Vh) of (..., m, n) with self = U @ diag(S) @ Vh and S descending, by one-sided Jacobi rotations (all column pairs of a
    round rotated at once), one matrix of a batch at a time. full_matrices gives U (m, m) and Vh (n, n), else (m, k) and (k, n),
    k = min(m, n). Signs may differ from LAPACK's."""
    if self.ndim < 2: raise ValueError(f"svd: expected a matrix of at least 2 dims, got shape {self.shape}")
    m, n = self.shape[-2:]
    if not isinstance(m, int) or not isinstance(n, int) or not all_int(self.shape): raise NotImplementedError("svd of symbolic dims")
    if self.ndim > 2:
      k, batch = min(m, n), self.shape[:-2]
      shapes = ((m, m if full_matrices else k), (k,), (n if full_matrices else k, n))
      if prod(batch) == 0: U, S, Vh = (Tensor.empty(*batch, *s, dtype=self._to_float().dtype, device=self.device) for s in shapes)
      else:
        outs = [mat.svd(full_matrices) for mat in self.reshape(-1, m, n)]
        U, S, Vh = (Tensor.stack(*[o[j] for o in outs]).reshape(batch + s) for j, s in enumerate(shapes))
      return U, S, Vh
    if m < n:
      U, S, Vh = self.transpose().svd(full_matrices)
      return Vh.transpose(), S, U.transpose()
    A = self._to_float()
    dt, dev = A.dtype, self.device
    nn = n + n % 2  # an even number of columns, padding with a zero column
    A = A.pad(((0, 0), (0, nn - n))).contiguous()
    V = Tensor.eye(nn, dtype=dt, device=dev).contiguous()
    # round-robin tournament: every round pairs all columns, n-1 rounds pair every column with every other once
    players = list(range(nn))
    rounds = []
    for _ in range(nn - 1):
      top, bottom = players[:nn//2], players[nn//2:][::-1]
      perm = [0.0] * (nn * nn)
      for c, p in enumerate(top + bottom): perm[p * nn + c] = 1.0
      rounds.append(Tensor(perm, dev, dt).reshape(nn, nn))
      players = [players[0]] + [players[-1]] + players[1:-1]
    eps = 1e-12 if dt == dtypes.float64 else 1e-7
    for _ in range(30):
      worst = 0.0
      for P in rounds:
        AP, VP = A @ P, V @ P
        x, y = AP[:, :nn//2], AP[:, nn//2:]
        alpha, beta, gamma = (x * x).sum(0), (y * y).sum(0), (x * y).sum(0)
        skip = gamma.abs() <= eps * (alpha * beta).sqrt()
        zeta = (beta - alpha) / (2 * skip.where(1, gamma))
        t = (zeta >= 0).where(1.0, -1.0) / (zeta.abs() + (1 + zeta * zeta).sqrt())
        c = skip.where(1, (1 + t * t).rsqrt())
        s = skip.where(0, c * t)
        rot = lambda M: (M[:, :nn//2] * c - M[:, nn//2:] * s).cat(M[:, :nn//2] * s + M[:, nn//2:] * c, dim=1) @ P.transpose()
        off = (gamma.abs() / (alpha * beta).sqrt().maximum(1e-30)).max()
        A, V = rot(AP).contiguous(), rot(VP).contiguous()
        Tensor.realize(A, V, off)
        worst = max(worst, float(off.item()))
      if worst <= eps: break
    sig = (A * A).sum(0).sqrt().tolist()
    # the padding column stays at index n (a zero column is never rotated), so only the first n are candidates
    order = sorted(range(n), key=lambda i: -sig[i])
    k = n
    tol = max(sig) * max(m, n) * eps if sig else 0.0
    rank = sum(1 for i in order if sig[i] > tol)
    S = Tensor([sig[i] for i in order], dev, dt)
    Vh = V[:n, order].transpose()
    U_r = A[:, order[:rank]] / S[:rank] if rank else Tensor.empty(m, 0, dtype=dt, device=dev)
    if rank == m or (not full_matrices and rank == k): U = U_r
    else:
      # complete the columns of U with an orthonormal basis of the rest of the space (for zero singular values and full_matrices)
      Q = U_r.cat(Tensor.eye(m, dtype=dt, device=dev), dim=1).qr("reduced")[0] if rank else Tensor.eye(m, dtype=dt, device=dev)
      U = U_r.cat(Q[:, rank:m], dim=1) if rank else Q
    return (U, S, Vh) if full_matrices else (U[:, :k], S, Vh[:k])

  # ***** autograd *****
  def gradient(self, *targets:Tensor, gradient:Tensor|None=None, materialize_grads:bool=False) -> list[Tensor]:
    """The gradients of self with respect to targets, as lazy Tensors. self must be a scalar unless gradient (of self's shape) is given.
    A target self doesn't depend on raises, or gives zeros with materialize_grads."""
    from tinygrad.gradient import compute_gradient
    if gradient is None and self.shape != (): raise ValueError(f"gradient of a tensor of shape {self.shape} needs gradient= (only scalars imply 1)")
    if not all(dtypes.is_float(t.dtype) for t in (self,)+targets):
      raise TypeError(f"only float tensors have gradients, got {self.dtype} and targets {[t.dtype for t in targets]}")
    root_grad = Tensor(1.0, self.device, self.dtype) if gradient is None else gradient.cast(self.dtype)
    if root_grad.shape != self.shape: raise ValueError(f"gradient= has shape {root_grad.shape}, expected this tensor's shape {self.shape}")
    grads = compute_gradient(_with_grad_origins(self.uop), root_grad.uop, {t.uop for t in targets})
    _consumed[self.uop] = None
    ret: list[Tensor] = []
    for i, t in enumerate(targets):
      if (g := grads.get(t.uop)) is not None: ret.append(Tensor(g))
      elif materialize_grads: ret.append(t.zeros_like())
      else: raise RuntimeError(f"target {i} (shape {t.shape}) is not used differentiably by this tensor; pass materialize_grads=True for zeros")
    return ret
  def backward(self, gradient:Tensor|None=None) -> Tensor:
    """Add the gradient of self into .grad of every float tensor with requires_grad that self depends on. Like PyTorch: a scalar self
    implies gradient 1, grads add up across calls, and a tensor reached only through detach keeps grad None."""
    from tinygrad.gradient import compute_gradient
    if gradient is None and self.shape != (): raise ValueError(f"backward of a tensor of shape {self.shape} needs gradient= (only scalars imply 1)")
    root = _with_grad_origins(self.uop)
    _consumed[self.uop] = None
    in_graph = root.toposort()
    params = [t for ref in list(_grad_tensors) if (t := ref()) is not None and t._requires_grad and dtypes.is_float(t.dtype) and t._uop in in_graph]
    if not params: raise RuntimeError("backward: no tensor with requires_grad=True is used by this tensor")
    root_grad = Tensor(1.0, self.device, self.dtype) if gradient is None else gradient.cast(self.dtype)
    if root_grad.shape != self.shape: raise ValueError(f"gradient= has shape {root_grad.shape}, expected this tensor's shape {self.shape}")
    grads = compute_gradient(root, root_grad.uop, {t.uop for t in params})
    for t in params:
      if (g := grads.get(t.uop)) is None: continue
      # like PyTorch, .grad itself doesn't require grad (nor do results computed from it)
      t.grad = Tensor(g.detach()) if t.grad is None else t.grad.assign(t.grad + Tensor(g.detach()))
    return self

  # ***** matmul *****

  def dot(self, w:Tensor) -> Tensor:
    """Matrix product with numpy's matmul rules: 1-D operands gain and lose a dim, batch dims broadcast."""
    # built on UOps directly, the same graph as x.mul(wt).sum(-1) of Tensors: matmul is the op a training step calls most
    xu, wu = self.uop, w.uop
    xs, ws = xu.shape, wu.shape
    if not xs or not ws: raise ValueError(f"matmul needs at least 1-D tensors, got shapes {xs} and {ws}")
    k_w = ws[-(nw := min(len(ws), 2))]
    if resolve(xs[-1] != k_w): raise ValueError(f"matmul shapes {xs} and {ws} don't line up: {xs[-1]} (last dim) != {k_w} (dim {-nw})")
    if (dev := xu.device) != wu.device: raise ValueError(f"mul: tensors are on different devices, {xu.device} and {wu.device}")
    # (the graph for inputs of these ShapeTrackers (.shape memoized them) and dtypes made before: its nodes rebuilt on these, ShapeTrackers
    # and device copied)
    if (plan := _dot_plans.get(key := (xu.__dict__["_st"], wu.__dict__["_st"], xu.dtype._key, wu.dtype._key))) is not None:
      get = (nodes := [xu, wu]).__getitem__
      for op, dt, ix, arg, st in plan:
        nodes.append(n := UOp(op, dt, tuple(map(get, ix)), arg))
        if "_st" not in (d := n.__dict__): d["_st"], d["_device"] = st, dev
      return Tensor(n)
    out_dt = least_upper_dtype(xu.dtype, wu.dtype)
    one = (1,)*min(len(xs)-1, len(ws)-1, 1)
    # x: (..., n, 1, k) times wt: (..., 1, m, k), batch dims broadcasting, summed over k
    x = xu.reshape(xs[:-1] + one + xs[-1:])
    order = list(range(len(ws[:-2] + one) + nw))
    order[-1], order[-nw] = order[-nw], order[-1]
    wt = wu.reshape(ws[:-2] + one + ws[-nw:]).permute(tuple(order))
    # (the usual case, one dtype, casts nothing: no call)
    if xu.dtype is not out_dt: x = x.cast(out_dt)
    if wu.dtype is not out_dt: wt = wt.cast(out_dt)
    # (the same batch dims, none the usual: (..., n, m, k) without the general broadcast)
    shape = xs[:-1] + (ws[-1], xs[-1]) if one and xs[:-2] == ws[:-2] else _broadcast_shape("mul", x.shape, wt.shape)
    prod_ = _uop_broadcast(x, shape).alu(Ops.MUL, _uop_broadcast(wt, shape))
    if (acc_dt := sum_acc_dtype(out_dt)) is not out_dt: prod_ = prod_.cast(acc_dt)
    out = prod_.r(Ops.ADD, (len(shape)-1,)).reshape(shape[:-1])
    if acc_dt is not out_dt: out = out.cast(out_dt)
    # (kept where neither input is built on the other: then no node of the graph is one of them by chance of hash-consing)
    if len(_dot_plans) < 256 and xu is not wu and xu not in (wt_ := wu.toposort()) and wu not in xu.toposort():
      del wt_
      made = list(out.toposort(gate=lambda u: u is not xu and u is not wu))
      place = {u: i for i, u in enumerate([xu, wu] + made)}
      _dot_plans[key] = [(u.op, u.dtype, tuple(place[s] for s in u.src), u.arg, u.st) for u in made]
    return Tensor(out)
  def matmul(self, x:Tensor, reverse:bool=False) -> Tensor: return x.dot(self) if reverse else self.dot(x)
  def linear(self, weight:Tensor, bias:Tensor|None=None) -> Tensor:
    """self @ weight + bias, with weight of shape (in, out); a 1-D weight scales elementwise."""
    ret = self * weight if weight.ndim == 1 else self.dot(weight)
    return ret + bias if bias is not None else ret

  # ***** dtype shorthands (last, so their names don't shadow the builtins used as annotations above) *****
  # (the meta methods first: their annotations still need the builtin bool)

  def kernelize(self, *lst:Tensor) -> Tensor:
    """Group these tensors into kernels without running anything: each one not yet realized becomes the output of its own kernel at the
    next realize (its graph is cut there, like tinygrad's kernelize). Returns self."""
    for t in (self,) + lst:
      if not t.uop.is_realized and t.uop.base.op not in (Ops.CONTIGUOUS, Ops.BUFFER, Ops.ASSIGN): t.uop = t.uop.contiguous()
    return self
  def contiguous_backward(self) -> Tensor:
    """Nothing going forward; going backward the gradient arriving here is made contiguous (realized) before it flows on."""
    return Tensor(UOp(Ops.CONTIGUOUS_BACKWARD, self.dtype, (self.uop,)))
  def requires_grad_(self, requires_grad:bool=True) -> Tensor:
    self.requires_grad = requires_grad
    return self
  class train(contextlib.ContextDecorator):
    """`with Tensor.train():` (or @Tensor.train()) sets Tensor.training for the block, restoring the old value after"""
    def __init__(self, mode:bool=True): self.mode, self.prev = mode, False
    def __enter__(self): self.prev, Tensor.training = Tensor.training, self.mode
    def __exit__(self, *exc:Any): Tensor.training = self.prev
  class test(contextlib.ContextDecorator):
    """`with Tensor.test():` (or @Tensor.test()) evaluates: Tensor.training off and no_grad on for the block"""
    def __init__(self, mode:bool=True): self.mode, self.prev = mode, (False, False)
    def __enter__(self):
      self.prev = (Tensor.training, _TensorMeta._no_grad)
      Tensor.training, _TensorMeta._no_grad = not self.mode and Tensor.training, self.mode
    def __exit__(self, *exc:Any): Tensor.training, _TensorMeta._no_grad = self.prev

  def float(self) -> Tensor: return self.cast(dtypes.float32)
  def half(self) -> Tensor: return self.cast(dtypes.float16)
  def double(self) -> Tensor: return self.cast(dtypes.float64)
  def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
  def int(self) -> Tensor: return self.cast(dtypes.int32)
  def long(self) -> Tensor: return self.cast(dtypes.int64)
  def short(self) -> Tensor: return self.cast(dtypes.int16)
  def char(self) -> Tensor: return self.cast(dtypes.int8)
  def bool(self) -> Tensor: return self.cast(dtypes.bool)

for _n in ("add", "sub", "mul", "div", "pow", "clamp", "clip", "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "neg", "abs", "floor", "ceil",
           "round", "trunc", "masked_fill", "square", "reciprocal", "sin", "cos", "lerp", "maximum", "minimum", "fmod", "remainder"):
  if hasattr(Tensor, _n): setattr(Tensor, _n + "_", lambda self, *a, _n=_n, **k: self._inplace(getattr(self, _n)(*a, **k)))

def _unflatten_sizes(sizes:tuple[int, ...], total:sint) -> tuple[sint, ...]:
  # resolve one -1 in sizes against the size of the dim being split
  if sum(1 for s in sizes if s == -1) > 1: raise ValueError(f"only one of the sizes {sizes} may be -1")
  known = prod(s for s in sizes if s != -1)
  if -1 in sizes:
    if known == 0 or total % known != 0: raise ValueError(f"can't unflatten a dim of size {total} into {sizes}")
    return tuple(total // known if s == -1 else s for s in sizes)
  if known != total: raise ValueError(f"can't unflatten a dim of size {total} into {sizes} ({known} elements)")
  return sizes

def _canonical(device:DeviceLike) -> str|tuple[str, ...]:
  return tuple(Device.canonicalize(d) for d in device) if isinstance(device, tuple) else Device.canonicalize(device)

def _one_device(device:DeviceLike) -> str:
  if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"creating a tensor on several devices {dev}")
  return dev

def _check_shape(shape:tuple) -> None:
  if not all(isinstance(s, (int, UOp)) and not isinstance(s, bool) for s in shape): raise TypeError(f"shape {shape} must be ints")
  if any(isinstance(s, int) and s < 0 for s in shape): raise ValueError(f"shape {shape} has a negative size")

def _int_tuple(x:Any, n:int, what:str, least:int=1) -> tuple[int, ...]:
  # an int or n ints (each >= least), for kernel sizes, strides, dilations and paddings
  ret = (x,) * n if isinstance(x, int) else tuple(x)
  if len(ret) != n or not all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in ret):
    raise ValueError(f"{what} must be an int or {n} ints, each >= {least}; got {x!r}")
  return ret

@functools.lru_cache(maxsize=64)
def _class_ids(n:int, device:str, dtype:DType) -> UOp:
  # a loss's class indices 0..n-1: the same graph every step, built once (an arange is some 60 tensor ops of Python)
  return Tensor.arange(n, device=device, dtype=dtype).uop

def _as_int(x:sint, what:str) -> int:
  if not isinstance(x, int): raise NotImplementedError(f"{what} of a symbolic size {x}")
  return x

# Winograd F(2x2, 3x3) (Lavin & Gray): input transform B^T, weight transform G, output transform A^T, and the 2D ones as Kronecker products
# Winograd F(2x2, 3x3) and F(4x4, 3x3) (Lavin & Gray), by output tile m: input transform B^T (its columns padded with zeros to 2m: two views
# of m rows), weight transform G, output transform A^T; the 2D ones as Kronecker products
_WINO: dict[int, tuple[list[list[float]], list[list[float]], list[list[float]]]] = {
  2: ([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], [[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]],
      [[1, 1, 1, 0], [0, 1, -1, -1]]),
  4: ([[4, 0, -5, 0, 1, 0, 0, 0], [0, -4, -4, 1, 1, 0, 0, 0], [0, 4, -4, -1, 1, 0, 0, 0], [0, -2, -1, 2, 1, 0, 0, 0], [0, 2, -1, -2, 1, 0, 0, 0],
       [0, 4, 0, -5, 0, 1, 0, 0]], [[1/4, 0, 0], [-1/6, -1/6, -1/6], [-1/6, 1/6, -1/6], [1/24, 1/12, 1/6], [1/24, -1/12, 1/6], [0, 0, 1]],
      [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]])}
def _kron(a:list[list[float]], b:list[list[float]]) -> list[list[float]]: return [[p*q for p in ra for q in rb] for ra in a for rb in b]

def _f32(x:float) -> float: return struct.unpack("=f", struct.pack("=f", x))[0]  # round to float32, to follow torch's float maths

def _conv_grad_uops(ctx:UOp, ret:UOp) -> tuple[UOp, ...]:
  _, groups, s_, d_, pads = ret.arg
  dx, dw = Tensor._conv_grad(Tensor(ctx), Tensor(ret.src[1]), Tensor(ret.src[2]), groups, s_, d_, pads)
  return dx.uop, dw.uop
custom_grads["conv"] = _conv_grad_uops
