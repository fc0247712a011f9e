# the user-facing Tensor: a lazy wrapper around one UOp. Every method builds new UOps; nothing runs until data is asked for
from __future__ import annotations
import math, struct, weakref, functools, itertools
from typing import Any, ClassVar, Iterator, Sequence
from tinygrad.dtype import DType, DTypeLike, ConstType, dtypes, to_dtype, least_upper_dtype, least_upper_float, sum_acc_dtype, truncate
from tinygrad.dtype import float_to_fp8, fp8_to_float
from tinygrad.helpers import prod, argfix, all_int, fully_flatten
from tinygrad.uop import Ops
from tinygrad.uop.mathtraits import MathTrait
from tinygrad.uop.ops import UOp, sint, resolve
from tinygrad.device import Device

DeviceLike = str|tuple[str, ...]|None  # one device, several (a sharded tensor), or None for Device.DEFAULT

# every live Tensor, so a realize can point all of them at the buffers it produced (weak: the registry never keeps a Tensor alive)
all_tensors: dict[weakref.ref[Tensor], None] = {}
def _drop_tensor(ref:weakref.ref[Tensor]) -> None: all_tensors.pop(ref, None)

def _apply_map_to_tensors(becomes_map:dict[UOp, UOp]) -> None:
  if not becomes_map: return
  tensors = [t for ref in list(all_tensors) if (t := ref()) is not None]
  if not tensors: return
  # one substitute over the sink of every live graph: shared subgraphs are rewritten once, untouched graphs come back as the same UOps
  old_sink = UOp.sink(*[t.uop for t in tensors])
  new_sink = old_sink.substitute(becomes_map)
  if new_sink is old_sink: return
  for t, new_uop in zip(tensors, new_sink.src):
    if new_uop is not t.uop: t.uop = new_uop

# ***** numpy and python value conversion (numpy is imported only by the functions that take or return numpy arrays) *****

def _to_np_dtype(dtype:DType) -> Any:
  """The numpy dtype of a tinygrad dtype, or None where numpy has none (bfloat16, fp8)."""
  import numpy as np
  return np.dtype(dtype.scalar().fmt) if dtype.scalar().fmt is not None else None

def _from_np_dtype(npdtype:Any) -> DType:
  import numpy as np
  npdtype = np.dtype(npdtype)
  for dt in dtypes.all:
    if dt.fmt is not None and np.dtype(dt.fmt) == npdtype: return dt
  raise TypeError(f"numpy dtype {npdtype} has no tinygrad dtype; expected one of bool, (u)int8-64, float16/32/64")

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

def _const(value:ConstType, dtype:DType, device:str) -> UOp:
  # a scalar of shape () on device, wrapped into the dtype's range like a cast (ops rely on this: -1 as uint32 is 0xffffffff)
  return UOp.const(dtype, truncate.get(dtype, lambda x: x)(dtypes.as_const(value, dtype)), device, ())

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
  # tobytes is row-major whatever the strides (ascontiguousarray would turn a 0-d array into 1-d)
  return _buffer_uop(arr.astype(_to_np_dtype(dtype), copy=False).tobytes(), arr.shape, dtype, device)

def _broadcast_shape(what:str, *shapes:tuple[sint, ...]) -> tuple[sint, ...]:
  # numpy rules: align on the right, every dim equal or 1
  ndim = max(len(s) for s in shapes)
  padded = [(1,)*(ndim-len(s)) + tuple(s) for s in shapes]
  out: list[sint] = []
  for dims in zip(*padded):
    sizes = list(dict.fromkeys(d for d in dims if resolve(d != 1)))
    if len(sizes) > 1: raise ValueError(f"{what}: shapes {' and '.join(str(tuple(s)) for s in shapes)} can't be broadcast together")
    out.append(sizes[0] if sizes else 1)
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

class Tensor(MathTrait):
  """A lazy, multi-dimensional array. Operations build a UOp graph; `realize()`, `numpy()`, `tolist()` ... run it."""
  __slots__ = ("uop", "requires_grad", "grad", "__weakref__")
  training: ClassVar[bool] = False
  # numpy defers to our reflected operators (np.float32(2) * t) instead of turning the Tensor into an object array
  __array_ufunc__ = None

  def __init__(self, data:Any, device:DeviceLike=None, dtype:DTypeLike|None=None, requires_grad:bool|None=None):
    dt = to_dtype(dtype) if dtype is not None else None
    if isinstance(data, UOp):
      if dt is not None and dt != data.dtype: raise ValueError(f"Tensor of a UOp of dtype {data.dtype} can't take dtype {dt}; cast it instead")
      if device is not None and _canonical(device) != data.device:
        raise ValueError(f"Tensor of a UOp on {data.device} can't be put on {device}; use .to()")
      uop = data
    elif isinstance(data, Tensor):
      uop = data.uop.cast(dt) if dt is not None else data.uop
      if device is not None and (dev := _canonical(device)) != uop.device:
        if not isinstance(dev, str): raise NotImplementedError(f"moving a tensor to several devices {dev}")
        uop = uop.copy_to_device(dev)
    else:
      if not isinstance(dev := _canonical(device), str): raise NotImplementedError(f"creating a tensor on several devices {dev}")
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
        _check_int_range(flat, dt)
        uop = _buffer_uop(_pack(flat, dt), shape, dt, dev)
      else:
        raise TypeError(f"can't make a Tensor from {type(data).__name__}: expected a UOp, Python scalar, nested list, bytes, numpy array or None")
    self.uop: UOp = uop
    self.requires_grad: bool|None = requires_grad
    self.grad: Tensor|None = None  # autograd fills this in
    all_tensors[weakref.ref(self, _drop_tensor)] = None

  # ***** properties *****

  @property
  def lazydata(self) -> UOp: return self.uop
  @lazydata.setter
  def lazydata(self, uop:UOp) -> None: self.uop = uop
  @property
  def device(self) -> str|tuple[str, ...]: return self.uop.device
  @property
  def shape(self) -> tuple[sint, ...]: return self.uop.shape
  @property
  def dtype(self) -> DType: return self.uop.dtype
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
  def __hash__(self) -> int: return id(self)  # __eq__ is elementwise, so identity is the only sound hash
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
    from tinygrad.engine.schedule import create_schedule_with_vars
    schedule, var_vals, becomes_map = create_schedule_with_vars(UOp.sink(*[t.uop for t in (self,)+lst]))
    _apply_map_to_tensors(becomes_map)
    return schedule, var_vals
  def schedule(self, *lst:Tensor) -> list:
    schedule, var_vals = self.schedule_with_vars(*lst)
    if var_vals: raise ValueError(f"schedule() has variables {var_vals}; use schedule_with_vars()")
    return schedule
  def realize(self, *lst:Tensor, do_update_stats:bool=True) -> Tensor:
    """Run every kernel these tensors need; afterwards they are backed by buffers."""
    from tinygrad.engine.realize import run_schedule
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
    if not isinstance(x, Tensor): x = Tensor(x, device=self.device, dtype=self.dtype)
    if x.shape != self.shape: raise ValueError(f"assign needs the same shape, got {x.shape} for a tensor of shape {self.shape}")
    if x.dtype != self.dtype: raise TypeError(f"assign needs the same dtype, got {x.dtype} for a tensor of dtype {self.dtype}; cast it first")
    if x.device != self.device: raise ValueError(f"assign needs the same device, got {x.device} for a tensor on {self.device}")
    # a pending ASSIGN counts as realized: it writes into a buffer
    if not (self.uop.is_realized or self.uop.base.op is Ops.ASSIGN) or x.uop is self.uop: return self.replace(x)
    self.uop = self.uop.assign(x.uop)
    return self
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

  def _host_bytes(self) -> memoryview:
    """The elements in row-major order, read back from a realized contiguous buffer (realizing one first if needed)."""
    if self.numel() == 0: return memoryview(b"")
    t = self
    if not (t.uop.is_realized and t._is_plain_buffer()): t = (self if self.uop.op is Ops.CONTIGUOUS else self.contiguous()).realize()
    if not t._is_plain_buffer(): raise RuntimeError(f"realize left {t.uop.op} over {t.uop.base.op}, expected a BUFFER with only RESHAPEs on top")
    return t.uop.base.buffer.as_buffer()
  def _is_plain_buffer(self) -> bool:
    u = self.uop
    while u.op is Ops.RESHAPE: u = u.src[0]
    return u.op is Ops.BUFFER and u.size == self.numel()
  def data(self) -> memoryview:
    """A memoryview of the elements, cast to the dtype's format and the tensor's shape."""
    fmt = self.dtype.fmt
    if fmt is None or fmt == "e": raise TypeError(f"memoryview has no format for {self.dtype}; use .tolist() or .numpy()")
    if 0 in self.shape: raise ValueError(f"memoryview can't have a 0 in its shape, got {self.shape}")
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
    if _to_np_dtype(self.dtype) is None: return self.cast(dtypes.float32).numpy()
    if not all_int(self.shape): raise ValueError(f"numpy needs a concrete shape, got {self.shape}")
    if self.numel() == 0: return np.zeros(self.shape, dtype=_to_np_dtype(self.dtype))
    return np.frombuffer(self._host_bytes(), dtype=_to_np_dtype(self.dtype)).reshape(self.shape)
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
  def _index_range(n:int, device:DeviceLike) -> Tensor:
    # 0..n-1 as int32 without a reduce: the binary digits of the index, each a padded constant expanded over a (2,)*k grid, summed
    if n == 0: return Tensor.full((0,), 0, dtypes.int32, device)
    k = max(1, (n-1).bit_length())
    digits = [Tensor(1 << (k-1-d), device, dtypes.int32).reshape(1).pad(((1, 0),)).reshape((1,)*d + (2,) + (1,)*(k-1-d)).expand((2,)*k)
              for d in range(k)]
    return functools.reduce(Tensor.add, digits).reshape(1 << k).shrink(((0, n),))
  @staticmethod
  def arange(start:int|float, stop:int|float|None=None, step:int|float=1, dtype:DTypeLike|None=None, device:DeviceLike=None,
             **kwargs) -> Tensor:
    """Values from start (inclusive) to stop (exclusive) by step; ints when all arguments are ints, like torch."""
    if stop is None: start, stop = 0, start
    if step == 0: raise ValueError("arange step must be nonzero")
    all_ints = all(isinstance(x, int) for x in (start, stop, step))
    dt = to_dtype(dtype) if dtype is not None else (dtypes.default_int if all_ints else dtypes.default_float)
    n = max(0, math.ceil((stop - start) / step))
    idx = Tensor._index_range(n, device)
    # ints stay exact in int32; anything else is computed in the float dtype (or float32) and cast at the end
    ret = idx * step + start if all_ints and dtypes.is_int(dt) else idx.cast(least_upper_float(dt)) * step + start
    return Tensor(ret.cast(dt).uop, **kwargs)
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
    if _is_numpy(x) and getattr(x, "shape", None) == (): x = x.item()
    if not isinstance(x, (bool, int, float)): raise TypeError(f"expected a Tensor or a Python scalar, got {type(x).__name__}")
    own = dtypes.is_float(self.dtype) or (dtypes.is_int(self.dtype) and not isinstance(x, float)) or isinstance(x, bool)
    if not isinstance(dev := self.device, str): raise NotImplementedError(f"scalars with tensors on several devices {dev}")
    return Tensor(_const(x, self.dtype if own else dtypes.from_py(x), dev))
  def _broadcast_to(self, new_shape:tuple[sint, ...]) -> Tensor:
    if self.shape == tuple(new_shape): return self
    if self.ndim > len(new_shape) or any(resolve(s != 1) and resolve(s != ns) for s, ns in zip(self.shape[::-1], new_shape[::-1])):
      raise ValueError(f"can't broadcast shape {self.shape} to {tuple(new_shape)}")
    return Tensor(self.uop.reshape((1,)*(len(new_shape)-self.ndim) + self.shape).expand(tuple(new_shape)))
  def _broadcasted(self, y:Any, reverse:bool=False, what:str="elementwise op") -> tuple[Tensor, Tensor]:
    x, yt = self, self.ufix(y)
    if reverse: x, yt = yt, x
    if x.device != yt.device: raise ValueError(f"{what}: tensors are on different devices, {x.device} and {yt.device}")
    dt = least_upper_dtype(x.dtype, yt.dtype)
    x, yt = x.cast(dt), yt.cast(dt)
    out_shape = _broadcast_shape(what, x.shape, yt.shape)
    return x._broadcast_to(out_shape), yt._broadcast_to(out_shape)
  def alu(self, op:Ops, *src:Any) -> Tensor:
    if not src: return Tensor(self.uop.alu(op))
    if len(src) == 1:
      x, y = self._broadcasted(src[0], what=(name := _OP_NAMES.get(op, op.name.lower())))
      if op in (Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR) and dtypes.is_float(x.dtype):
        raise TypeError(f"{name} needs int or bool tensors, got {x.dtype}")
      return Tensor(x.uop.alu(op, y.uop))
    if op is not Ops.WHERE or len(src) != 2: raise ValueError(f"unexpected {op} with {len(src)+1} operands")
    x, y = src[0]._broadcasted(src[1], what="where") if isinstance(src[0], Tensor) else self.ufix(src[1])._broadcasted(src[0], True, "where")
    shape = _broadcast_shape("where", self.shape, x.shape)
    cond = self.cast(dtypes.bool)._broadcast_to(shape)
    x, y = x._broadcast_to(shape), y._broadcast_to(shape)
    if len({cond.device, x.device}) > 1: raise ValueError(f"where: tensors are on different devices, {cond.device} and {x.device}")
    return Tensor(cond.uop.alu(Ops.WHERE, x.uop, y.uop))
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
    return self if self.dtype == dt else Tensor(self.uop.cast(dt))
  def bitcast(self, dtype:DTypeLike) -> Tensor:
    """Reinterpret the bits. A dtype of another size changes the last dim, like numpy's view."""
    dt = to_dtype(dtype)
    if self.dtype == dt: return self
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

  def sub(self, x:Any, reverse:bool=False) -> Tensor:
    a, b = self._broadcasted(x, reverse, "sub")
    if a.dtype == dtypes.bool: raise TypeError("subtraction of bool tensors; use logical_xor or ~ instead")
    return a + (-b)
  def div(self, x:Any, reverse:bool=False, rounding_mode:str|None=None) -> Tensor:
    """True division (ints give the default float); rounding_mode "trunc" or "floor" rounds the quotient."""
    if rounding_mode == "floor": return self.floordiv(x, reverse)
    if rounding_mode == "trunc":
      a, b = self._broadcasted(x, reverse, "div")
      return b.eq(0).where(0, a._int_div(b)) if not dtypes.is_float(a.dtype) else (a * b.reciprocal()).trunc()
    if rounding_mode is not None: raise ValueError(f"rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    a, b = self._broadcasted(x, reverse, "div")
    dt = least_upper_float(a.dtype)
    return a.cast(dt) * b.cast(dt).reciprocal()
  def _int_div(self, b:Tensor) -> Tensor:
    # C truncating division; a zero divisor is replaced by 1 here (a hardware division by zero would kill the process) and callers
    # zero those elements at the end, like numpy
    return Tensor(self.uop.alu(Ops.IDIV, b.eq(0).where(1, b).uop))
  def _float_floordiv(self, b:Tensor) -> Tensor:
    # floor(a * 1/b) can land one off when the quotient is whole or nearly so: fix it with exact checks of the neighbours
    q = (self * b.reciprocal()).floor()
    q = ((q + 1) * b).eq(self).where(q + 1, q)
    return b.gt(0).where((q * b).gt(self), (q * b).lt(self)).where(q - 1, q)
  def floordiv(self, x:Any, reverse:bool=False) -> Tensor:
    """Python/numpy `//`: the quotient rounded toward -inf. Floats give floor(a / b), exact when the quotient is whole
    (numpy's fmod-based result can differ by one where a / b rounds onto a whole number)."""
    a, b = self._broadcasted(x, reverse, "floordiv")
    if dtypes.is_float(a.dtype): return a._float_floordiv(b)
    if a.dtype == dtypes.bool: raise TypeError("floor division of bool tensors; cast them to an int dtype first")
    q = a._int_div(b)
    # truncation rounds toward zero: one less where the exact quotient is negative and not whole
    if not dtypes.is_unsigned(a.dtype): q = q - ((q * b).ne(a) & a.lt(0).ne(b.lt(0))).cast(a.dtype)
    return b.eq(0).where(0, q)
  def mod(self, x:Any, reverse:bool=False) -> Tensor:
    """Python/numpy `%`: the remainder has the sign of the divisor, for ints and floats."""
    a, b = self._broadcasted(x, reverse, "mod")
    if dtypes.is_float(a.dtype):
      m = a - b * a._float_floordiv(b)
      # like numpy: a remainder of the wrong sign (from rounding) moves up by one divisor
      return (m.ne(0) & m.lt(0).ne(b.lt(0))).where(m + b, m)
    if a.dtype == dtypes.bool: raise TypeError("mod of bool tensors; cast them to an int dtype first")
    r = a - b * a._int_div(b)
    if not dtypes.is_unsigned(a.dtype): r = (r.ne(0) & r.lt(0).ne(b.lt(0))).where(r + b, r)
    return b.eq(0).where(0, r)
  def idiv(self, x:Any, reverse:bool=False) -> Tensor: return self.div(x, reverse, rounding_mode="trunc")
  def __floordiv__(self, x:Any) -> Tensor: return self.floordiv(x)
  def __rfloordiv__(self, x:Any) -> Tensor: return self.floordiv(x, True)

  def pow(self, x:Any, reverse:bool=False) -> Tensor:
    """self ** x. Int ** int stays int (exact); negative bases with whole exponents keep their sign, other negative bases give nan."""
    if not reverse and (type(x) is int or (isinstance(x, float) and x.is_integer())) and abs(x) <= 64:
      base = self._to_float() if isinstance(x, float) else self
      if base.dtype == dtypes.bool: base = base.cast(dtypes.default_int)
      if x < 0 and not dtypes.is_float(base.dtype): return base._int_pow(base.ufix(int(x))._broadcast_to(base.shape))
      ret = base._square_multiply(abs(int(x)))
      return ret.reciprocal() if x < 0 else ret
    a, b = self._broadcasted(x, reverse, "pow")
    if not dtypes.is_float(a.dtype):
      if a.dtype == dtypes.bool: a, b = a.cast(dtypes.default_int), b.cast(dtypes.default_int)
      return a._int_pow(b)
    # |a| ** b = 2 ** (b * log2|a|); the sign comes from the parity of a whole exponent
    mag = (b * a.abs().log2()).exp2()
    whole = b.eq(b.trunc())
    odd = whole & (b * 0.5).trunc().mul(2).ne(b)
    signed = a.lt(0).where(whole.where(odd.where(-mag, mag), math.nan), mag)
    return b.eq(0).where(1, signed)  # x ** 0 == 1, even for 0 and nan
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
  def __matmul__(self, x:Tensor) -> Tensor: return self.matmul(x)
  def __rmatmul__(self, x:Tensor) -> Tensor: return self.matmul(x, True)
  def __eq__(self, x:Any) -> Tensor: return self.eq(x)  # type: ignore[override]
  def __ne__(self, x:Any) -> Tensor: return self.ne(x)  # type: ignore[override]
  def __invert__(self) -> Tensor: return self.bitwise_not()
  def __abs__(self) -> Tensor: return self.abs()

  # in place: into the buffer when realized, else the tensor just becomes the result
  def __iadd__(self, x:Any) -> Tensor: return self.assign(self.add(x))
  def __isub__(self, x:Any) -> Tensor: return self.assign(self.sub(x))
  def __imul__(self, x:Any) -> Tensor: return self.assign(self.mul(x))
  def __itruediv__(self, x:Any) -> Tensor: return self.assign(self.div(x))
  def __ifloordiv__(self, x:Any) -> Tensor: return self.assign(self.floordiv(x))
  def __imod__(self, x:Any) -> Tensor: return self.assign(self.mod(x))
  def __ipow__(self, x:Any) -> Tensor: return self.assign(self.pow(x))
  def __iand__(self, x:Any) -> Tensor: return self.assign(self.bitwise_and(x))
  def __ior__(self, x:Any) -> Tensor: return self.assign(self.bitwise_or(x))
  def __ixor__(self, x:Any) -> Tensor: return self.assign(self.bitwise_xor(x))
  def __ilshift__(self, x:Any) -> Tensor: return self.assign(self.lshift(x))
  def __irshift__(self, x:Any) -> Tensor: return self.assign(self.rshift(x))
  def __imatmul__(self, x:Tensor) -> Tensor: return self.assign(self.matmul(x))

  def minimum(self, x:Any) -> Tensor:
    a, b = self._broadcasted(x, what="minimum")
    # -max(-a, -b) would wrap for unsigned ints and INT_MIN, so only floats use it (it keeps max's nan handling)
    return -((-a).maximum(-b)) if dtypes.is_float(a.dtype) else a.lt(b).where(a, b)
  def clip(self, min_:Any=None, max_:Any=None) -> Tensor:
    if min_ is None and max_ is None: raise ValueError("clip needs at least one of min_ and max_")
    ret = self.maximum(min_) if min_ is not None else self
    return ret.minimum(max_) if max_ is not None else ret
  def clamp(self, min_:Any=None, max_:Any=None) -> Tensor: return self.clip(min_, max_)

  def logical_not(self) -> Tensor: return self.cast(dtypes.bool).ne(True)
  def logical_and(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_and(self.ufix(x).cast(dtypes.bool))
  def logical_or(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_or(self.ufix(x).cast(dtypes.bool))
  def logical_xor(self, x:Any) -> Tensor: return self.cast(dtypes.bool).bitwise_xor(self.ufix(x).cast(dtypes.bool))
  def bitwise_not(self) -> Tensor:
    if self.dtype == dtypes.bool: return self.logical_not()
    if not dtypes.is_int(self.dtype): raise TypeError(f"bitwise_not needs an int or bool tensor, got {self.dtype}")
    return self.bitwise_xor(dtypes.max(self.dtype) if dtypes.is_unsigned(self.dtype) else -1)

  # ***** unary math *****

  def exp2(self) -> Tensor: return self._float_op(Ops.EXP2)
  def log2(self) -> Tensor: return self._float_op(Ops.LOG2)
  def sqrt(self) -> Tensor: return self._float_op(Ops.SQRT)
  def sin(self) -> Tensor: return self._float_op(Ops.SIN)
  def reciprocal(self) -> Tensor: return self._float_op(Ops.RECIP)
  def exp(self) -> Tensor: return self._to_float().mul(1/math.log(2)).exp2()
  def log(self) -> Tensor: return self.log2().mul(math.log(2))
  def rsqrt(self) -> Tensor: return self.sqrt().reciprocal()
  def cos(self) -> Tensor: return (math.pi/2 - self._to_float()).sin()
  def tan(self) -> Tensor: return self.sin() / self.cos()
  def sigmoid(self) -> Tensor: return (1 + (self._to_float() * (-1/math.log(2))).exp2()).reciprocal()
  def tanh(self) -> Tensor: return 2.0 * (2.0 * self._to_float()).sigmoid() - 1.0
  def relu(self) -> Tensor: return self.gt(0).where(self, 0)
  def square(self) -> Tensor: return self * self
  def abs(self) -> Tensor: return self if dtypes.is_unsigned(self.dtype) or self.dtype == dtypes.bool else self.lt(0).where(-self, self)
  def sign(self) -> Tensor:
    if self.dtype == dtypes.bool: return self
    ret = self.gt(0).cast(self.dtype) - self.lt(0).cast(self.dtype)
    return self.isnan().where(self, ret) if dtypes.is_float(self.dtype) else ret
  def _to_float(self) -> Tensor: return self if dtypes.is_float(self.dtype) else self.cast(least_upper_float(self.dtype))
  def trunc(self) -> Tensor: return Tensor(self.uop.alu(Ops.TRUNC)) if dtypes.is_float(self.dtype) else self
  def floor(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return t - self.lt(t).cast(self.dtype)
  def ceil(self) -> Tensor:
    if not dtypes.is_float(self.dtype): return self
    t = self.trunc()
    return t + self.gt(t).cast(self.dtype)
  def round(self) -> Tensor:
    """Round half to even, like numpy and torch."""
    if not dtypes.is_float(self.dtype): return self
    f = self.floor()
    frac = self - f  # exact: floor(x) is within one unit of x
    f_is_odd = (f * 0.5).floor().mul(2).ne(f)
    return frac.gt(0.5).where(f + 1, frac.lt(0.5).where(f, f_is_odd.where(f + 1, f)))
  def isnan(self) -> Tensor: return self.ne(self) if dtypes.is_float(self.dtype) else self.full_like(False, dtype=dtypes.bool)
  def isinf(self, detect_positive:bool=True, detect_negative:bool=True) -> Tensor:
    if not dtypes.is_float(self.dtype): return self.full_like(False, dtype=dtypes.bool)
    return (self.eq(math.inf) & detect_positive) | (self.eq(-math.inf) & detect_negative)
  def isfinite(self) -> Tensor: return (self.isinf() | self.isnan()).logical_not()

  # ***** movement *****

  def _resolve_dim(self, dim:int, extra:bool=False) -> int:
    n = self.ndim + int(extra)
    bound = max(n, 1)
    if not isinstance(dim, int) or not -bound <= dim < bound:
      raise IndexError(f"dimension {dim} is out of range for a tensor of {self.ndim} dims (expected in [{-bound}, {bound-1}])")
    return dim % bound if n else 0
  def reshape(self, shape:Any, *args:Any) -> Tensor:
    """New shape with the same number of elements; one dim may be -1 (inferred), None keeps that dim."""
    new_shape = tuple(self.shape[i] if s is None else s for i, s in enumerate(argfix(shape, *args)))
    if (infer := sum(1 for s in new_shape if isinstance(s, int) and s == -1)) > 1:
      raise ValueError(f"only one dim of a reshape may be -1, got {new_shape}")
    if infer:
      known = prod(s for s in new_shape if not (isinstance(s, int) and s == -1))
      if resolve(known == 0) or self.numel() % known != 0: raise ValueError(f"can't reshape {self.shape} to {new_shape}")
      new_shape = tuple(self.numel() // known if isinstance(s, int) and s == -1 else s for s in new_shape)
    if any(isinstance(s, int) and s < 0 for s in new_shape): raise ValueError(f"reshape to a negative size {new_shape}")
    if resolve(prod(new_shape) != self.numel()):
      raise ValueError(f"can't reshape {self.shape} ({self.numel()} elements) to {new_shape} ({prod(new_shape)} elements)")
    return self if new_shape == self.shape else Tensor(self.uop.reshape(new_shape))
  def view(self, shape:Any, *args:Any) -> Tensor: return self.reshape(shape, *args)
  def permute(self, order:Any, *args:Any) -> Tensor:
    perm = tuple(self._resolve_dim(d) for d in argfix(order, *args))
    if sorted(perm) != list(range(self.ndim)): raise ValueError(f"permute order {argfix(order, *args)} is not a permutation of {self.ndim} dims")
    return self if perm == tuple(range(self.ndim)) else Tensor(self.uop.permute(perm))
  def expand(self, shape:Any, *args:Any) -> Tensor:
    """Broadcast to a bigger shape; -1 (or None) keeps a dim, new dims may be added in front."""
    new_shape = tuple(argfix(shape, *args))
    if len(new_shape) < self.ndim: raise ValueError(f"can't expand shape {self.shape} to fewer dims {new_shape}")
    old = (1,)*(len(new_shape) - self.ndim) + self.shape
    return self._broadcast_to(tuple(o if n is None or (isinstance(n, int) and n == -1) else n for o, n in zip(old, new_shape)))
  def shrink(self, arg:Sequence[tuple[sint, sint]|None]) -> Tensor:
    """Keep [start, end) of each dim (None keeps the whole dim)."""
    if len(arg) != self.ndim: raise ValueError(f"shrink needs one (start, end) per dim ({self.ndim}), got {tuple(arg)}")
    bounds = tuple((0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape))
    for (b, e), s in zip(bounds, self.shape):
      if resolve(b < 0) or resolve(e < b) or resolve(e > s): raise ValueError(f"shrink {tuple(arg)} is out of bounds for shape {self.shape}")
    return self if all(b == 0 and e == s for (b, e), s in zip(bounds, self.shape)) else Tensor(self.uop.shrink(bounds))  # type: ignore[arg-type]
  def pad(self, padding:Sequence, mode:str="constant", value:ConstType=0.0) -> Tensor:
    """Pad with value: padding is ((before, after) or None) per dim, or a flat torch-style tuple (last dim first). Negative pads cut."""
    if mode != "constant": raise NotImplementedError(f"pad mode {mode!r}: only 'constant' is supported")
    if all(isinstance(p, int) for p in padding): pairs = _flat_to_pairs(padding, self.ndim)
    else:
      if len(padding) != self.ndim: raise ValueError(f"padding {tuple(padding)} needs one (before, after) per dim ({self.ndim})")
      pairs = tuple((0, 0) if p is None else tuple(p) for p in padding)
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
    return self if not axes else Tensor(self.uop.flip(tuple(i in axes for i in range(self.ndim))))
  def transpose(self, dim0:int=-2, dim1:int=-1) -> Tensor:
    order = list(range(self.ndim))
    d0, d1 = self._resolve_dim(dim0), self._resolve_dim(dim1)
    order[d0], order[d1] = order[d1], order[d0]
    return self.permute(order)
  @property
  def T(self) -> Tensor: return self if self.ndim < 2 else self.transpose()
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
    """Basic indexing: ints (negative too), slices (any step), None and one Ellipsis."""
    idx = indices if isinstance(indices, tuple) else (indices,)
    for i in idx:
      if isinstance(i, (Tensor, list)) or _is_numpy(i) and getattr(i, "shape", ()) != ():
        raise NotImplementedError("advanced indexing with lists or Tensors is not supported yet; index with ints, slices, None and ...")
      if isinstance(i, bool) or not (i is None or i is Ellipsis or isinstance(i, (int, slice)) or _is_numpy(i)):
        raise TypeError(f"invalid index {i!r} of type {type(i).__name__}: expected an int, slice, None or ...")
    idx = tuple(int(i) if _is_numpy(i) else i for i in idx)
    if (n_ellipsis := sum(1 for i in idx if i is Ellipsis)) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if n_real > self.ndim: raise IndexError(f"too many indices for a tensor of {self.ndim} dims: {n_real} given")
    # the ellipsis (or the end, when there is none) stands for every dim not indexed
    fill = (slice(None),) * (self.ndim - n_real)
    idx = tuple(x for i in idx for x in (fill if i is Ellipsis else (i,))) + (() if n_ellipsis else fill)
    # per original dim: (begin, end) in (maybe flipped) coordinates, the stride, the number of elements, and whether the dim is kept
    bounds: list[tuple[int, int]] = []
    flips: list[bool] = []
    strides: list[int] = []
    counts: list[int] = []
    out_shape: list[int] = []
    dim = 0
    for i in idx:
      if i is None:
        out_shape.append(1)
        continue
      size = self.shape[dim]
      if not isinstance(size, int): raise NotImplementedError(f"indexing a symbolic dim {size}")
      if isinstance(i, int):
        if not -size <= i < size: raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
        i = i % size
        bounds.append((i, i+1)); flips.append(False); strides.append(1); counts.append(1)
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
    return x.reshape(tuple(out_shape))
  def __setitem__(self, indices:Any, v:Any) -> None:
    raise NotImplementedError("item assignment is not supported yet; build the new tensor with where/pad/cat and use assign")

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

  def _reduce_axes(self, axis:int|Sequence[int]|None) -> tuple[int, ...]:
    if axis is None: return tuple(range(self.ndim))
    axes = [self._resolve_dim(a) for a in ((axis,) if isinstance(axis, int) else axis)]
    if len(set(axes)) != len(axes): raise ValueError(f"axis {axis} names a dim more than once")
    return tuple(sorted(axes)) if self.ndim else ()
  def _reduce(self, op:Ops, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    axes = self._reduce_axes(axis)
    ret = Tensor(self.uop.r(op, axes))
    return ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))
  def _check_nonempty(self, name:str, axis:int|Sequence[int]|None) -> None:
    if any(resolve(self.shape[a] == 0) for a in self._reduce_axes(axis)):
      raise ValueError(f"{name} of a tensor of shape {self.shape} over axis {axis}: a dim of size 0 has no {name}")
  def sum(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, dtype:DTypeLike|None=None) -> Tensor:
    """Sum over axis. Small ints accumulate (and return) int32/uint32; half and bfloat16 accumulate in float32 and cast back."""
    acc = sum_acc_dtype(self.dtype) if dtype is None else to_dtype(dtype)
    ret = self.cast(acc)._reduce(Ops.ADD, axis, keepdim)
    return ret.cast(self.dtype) if dtype is None and dtypes.is_float(self.dtype) else ret
  def prod(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, dtype:DTypeLike|None=None) -> Tensor:
    acc = sum_acc_dtype(self.dtype) if dtype is None else to_dtype(dtype)
    ret = self.cast(acc)._reduce(Ops.MUL, axis, keepdim)
    return ret.cast(self.dtype) if dtype is None and dtypes.is_float(self.dtype) else ret
  def max(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    self._check_nonempty("max", axis)
    return self._reduce(Ops.MAX, axis, keepdim)
  def _inverse(self) -> Tensor:
    # an order-reversing map that never overflows: ~x for ints (and bools), -x for floats
    return -self if dtypes.is_float(self.dtype) else self.bitwise_not()
  def min(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    self._check_nonempty("min", axis)
    return self._inverse()._reduce(Ops.MAX, axis, keepdim)._inverse()
  def mean(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor:
    """The average; ints and bools give the default float, an empty reduction gives nan."""
    out_dt = least_upper_float(self.dtype)
    n = prod(self.shape[a] for a in self._reduce_axes(axis))
    total = self.cast(sum_acc_dtype(out_dt))._reduce(Ops.ADD, axis, keepdim)
    return (total * (1/n if n else math.nan)).cast(out_dt)
  def var(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int=1) -> Tensor:
    n = prod(self.shape[a] for a in self._reduce_axes(axis))
    sq = (self - self.mean(axis, keepdim=True)).square().sum(axis, keepdim)
    return sq * (1/(n - correction) if n - correction > 0 else math.nan)
  def std(self, axis:int|Sequence[int]|None=None, keepdim:bool=False, correction:int=1) -> Tensor: return self.var(axis, keepdim, correction).sqrt()
  def any(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor: return self.cast(dtypes.bool)._reduce(Ops.MAX, axis, keepdim)
  def all(self, axis:int|Sequence[int]|None=None, keepdim:bool=False) -> Tensor: return self.logical_not().any(axis, keepdim).logical_not()
  def argmax(self, axis:int|None=None, keepdim:bool=False) -> Tensor:
    """The index of the first maximum (int32); over the flattened tensor when axis is None."""
    if axis is None: return self.flatten().argmax(0, keepdim=False).reshape(tuple(1 for _ in self.shape) if keepdim else ())
    ax = self._resolve_dim(axis)
    if self.ndim == 0: return Tensor(0, self.device, dtypes.int32)
    self._check_nonempty("argmax", ax)
    if not isinstance(n := self.shape[ax], int): raise NotImplementedError(f"argmax over a symbolic dim {n}")
    # the first maximum gets the biggest weight n-i, so one max reduce finds it
    weights = Tensor.arange(n, 0, -1, device=self.device).reshape((n,) + (1,)*(self.ndim-ax-1))
    hit = self.eq(self.max(ax, keepdim=True))
    return (n - (hit * weights).max(ax, keepdim)).cast(dtypes.int32)
  def argmin(self, axis:int|None=None, keepdim:bool=False) -> Tensor: return self._inverse().argmax(axis, keepdim)
  def cumsum(self, axis:int=0) -> Tensor:
    """Running sum along axis, in one kernel: row r of an (n, n) window view holds the n values ending at r."""
    if self.ndim == 0: return self.sum()
    ax = self._resolve_dim(axis)
    x = self.transpose(ax, -1)
    n = x.shape[-1]
    if not isinstance(n, int): raise NotImplementedError("cumsum over a symbolic dim")
    if n == 0: return self.cast(self.sum().dtype)
    lead = ((0, 0),) * (x.ndim - 1)
    padded = x.pad(lead + ((n-1, 0),))
    tiled = padded.unsqueeze(-2).expand(padded.shape[:-1] + (n, 2*n-1)).flatten(-2)
    windows = tiled.pad(lead + ((0, n),)).unflatten(-1, (n, 2*n)).shrink(tuple((0, s) for s in x.shape[:-1]) + ((0, n), (0, n)))
    return windows.sum(-1).transpose(ax, -1)

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
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0: raise ValueError(f"linspace: steps must be an int >= 0, got {steps!r}")
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
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
  def rand(*shape, device:DeviceLike=None, dtype:DTypeLike|None=None, **kwargs) -> Tensor:
    """Uniform in [0, 1), computed on the device by Threefry-2x32: the same numbers on every device for the same seed and calls."""
    shp, dt, dev = Tensor._random_args("rand", shape, dtype, device)
    return Tensor(Tensor._bits_to_unit(Tensor._random_bits(prod(shp), dev), dt).reshape(shp).uop, **kwargs)
  @staticmethod
  def randn(*shape, device:DeviceLike=None, dtype:DTypeLike|None=None, **kwargs) -> Tensor:
    """Standard normal, by Box-Muller on two uniforms (computed in float32, or float64 for float64)."""
    shp, dt, dev = Tensor._random_args("randn", shape, dtype, device)
    fdt = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
    u = Tensor.rand(2, *shp, device=dev, dtype=fdt)
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

  # ***** processing *****

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
    grads = compute_gradient(self.uop, root_grad.uop, {t.uop for t in targets})
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
    in_graph = self.uop.toposort()
    params = [t for ref in list(all_tensors) if (t := ref()) is not None and t.requires_grad and dtypes.is_float(t.dtype) and t.uop in in_graph]
    if not params: raise RuntimeError("backward: no tensor with requires_grad=True is used by this tensor")
    root_grad = Tensor(1.0, self.device, self.dtype) if gradient is None else gradient.cast(self.dtype)
    if root_grad.shape != self.shape: raise ValueError(f"gradient= has shape {root_grad.shape}, expected this tensor's shape {self.shape}")
    grads = compute_gradient(self.uop, root_grad.uop, {t.uop for t in params})
    for t in params:
      if (g := grads.get(t.uop)) is None: continue
      t.grad = Tensor(g) if t.grad is None else t.grad.assign(t.grad + Tensor(g))
    return self

  # ***** matmul *****

  def dot(self, w:Tensor) -> Tensor:
    """Matrix product with numpy's matmul rules: 1-D operands gain and lose a dim, batch dims broadcast."""
    if self.ndim == 0 or w.ndim == 0: raise ValueError(f"matmul needs at least 1-D tensors, got shapes {self.shape} and {w.shape}")
    k_w = w.shape[-min(w.ndim, 2)]
    if resolve(self.shape[-1] != k_w):
      raise ValueError(f"matmul shapes {self.shape} and {w.shape} don't line up: {self.shape[-1]} (last dim) != {k_w} (dim {-min(w.ndim, 2)})")
    out_dt = least_upper_dtype(self.dtype, w.dtype)
    x = self.reshape(self.shape[:-1] + (1,)*min(self.ndim-1, w.ndim-1, 1) + self.shape[-1:])
    wt = w.reshape(w.shape[:-2] + (1,)*min(self.ndim-1, w.ndim-1, 1) + w.shape[-min(w.ndim, 2):]).transpose(-1, -min(w.ndim, 2))
    # x: (..., n, 1, k) times wt: (..., 1, m, k), batch dims broadcasting, summed over k
    return x.mul(wt).sum(-1, dtype=sum_acc_dtype(out_dt)).cast(out_dt)
  def matmul(self, x:Tensor, reverse:bool=False) -> Tensor: return x.dot(self) if reverse else self.dot(x)
  def linear(self, weight:Tensor, bias:Tensor|None=None) -> Tensor:
    """self @ weight + bias, with weight of shape (in, out); a 1-D weight scales elementwise."""
    ret = self * weight if weight.ndim == 1 else self.dot(weight)
    return ret + bias if bias is not None else ret

  # ***** dtype shorthands (last, so their names don't shadow the builtins used as annotations above) *****

  def float(self) -> Tensor: return self.cast(dtypes.float32)
  def half(self) -> Tensor: return self.cast(dtypes.float16)
  def double(self) -> Tensor: return self.cast(dtypes.float64)
  def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
  def int(self) -> Tensor: return self.cast(dtypes.int32)
  def long(self) -> Tensor: return self.cast(dtypes.int64)
  def short(self) -> Tensor: return self.cast(dtypes.int16)
  def char(self) -> Tensor: return self.cast(dtypes.int8)
  def bool(self) -> Tensor: return self.cast(dtypes.bool)

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

def _check_shape(shape:tuple) -> None:
  if any(isinstance(s, int) and s < 0 for s in shape): raise ValueError(f"shape {shape} has a negative size")
