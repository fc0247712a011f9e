# state dicts, and loaders/savers for weight files: safetensors, torch .pth (zip, legacy pickle, legacy tar) and GGUF. Loaders never run code
# from a file, and a malformed file raises ValueError naming the file and what is wrong with it
from __future__ import annotations
import json, pathlib, pickle, struct, tarfile, zipfile, io
from collections import OrderedDict
from typing import Any, Callable, cast
from tinygrad.tensor import Tensor
from tinygrad.dtype import DType, dtypes
from tinygrad.device import Device
from tinygrad.helpers import prod, round_up

MAX_HEADER = 1 << 27  # a header (safetensors json, GGUF metadata string or array) longer than this is rejected, not allocated

def _bad(fn:Any, problem:str) -> ValueError: return ValueError(f"{fn}: {problem}")

# ***** state dicts *****

def get_state_dict(obj:Any, prefix:str="", tensor_type:type=Tensor) -> dict[str, Tensor]:
  """Every Tensor reachable from obj through attributes, lists, tuples and dicts, named by its path ("layers.0.weight")."""
  ret: dict[str, Tensor] = {}
  stack: list[tuple[str, Any]] = [(prefix, obj)]
  seen: set[int] = set()
  while stack:
    name, x = stack.pop()
    if isinstance(x, tensor_type):
      ret[name.rstrip(".")] = cast(Tensor, x)
      continue
    if id(x) in seen: continue
    seen.add(id(x))
    if isinstance(x, OrderedDict) or isinstance(x, dict): items = [(str(k), v) for k, v in x.items()]
    elif isinstance(x, (list, tuple)): items = [(str(i), v) for i, v in enumerate(x)]
    elif hasattr(x, "__dict__"): items = list(x.__dict__.items())
    else: continue
    stack.extend((f"{name}{k}.", v) for k, v in reversed(items))
  return ret

def get_parameters(obj:Any) -> list[Tensor]: return list(get_state_dict(obj).values())

def load_state_dict(model:Any, state_dict:dict[str, Tensor], strict:bool=True, verbose:bool=False, consume:bool=False, realize:bool=True) -> None:
  """Copy state_dict's tensors into model's (onto each model tensor's device). strict: a missing or unexpected key raises; a shape or dtype
  that differs always raises, naming the key."""
  model_sd = get_state_dict(model)
  if strict:
    missing, unexpected = [k for k in model_sd if k not in state_dict], [k for k in state_dict if k not in model_sd]
    if missing or unexpected: raise RuntimeError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
  for k, v in model_sd.items():
    if k not in state_dict: continue
    new = state_dict[k]
    if new.shape != v.shape: raise RuntimeError(f"load_state_dict: {k} has shape {new.shape} in the state dict, the model's is {v.shape}")
    if new.dtype != v.dtype: raise RuntimeError(f"load_state_dict: {k} has dtype {new.dtype} in the state dict, the model's is {v.dtype}")
    if verbose: print(f"loading {k} {new.shape} {new.dtype}")
    v.replace(new.to(v.device) if new.device != v.device else new.clone())
    if realize: v.realize()
    if consume: del state_dict[k]

# ***** safetensors *****

SAFE_DTYPES = {"F64": dtypes.float64, "F32": dtypes.float32, "F16": dtypes.float16, "BF16": dtypes.bfloat16, "I64": dtypes.int64, "I32": dtypes.int32,
               "I16": dtypes.int16, "I8": dtypes.int8, "U64": dtypes.uint64, "U32": dtypes.uint32, "U16": dtypes.uint16, "U8": dtypes.uint8,
               "BOOL": dtypes.bool, "F8_E4M3": dtypes.fp8e4m3, "F8_E5M2": dtypes.fp8e5m2}
_SAFE_NAMES = {v: k for k, v in SAFE_DTYPES.items()}

def _disk_file(fn:str|pathlib.Path) -> tuple[Tensor, int]:
  path = pathlib.Path(fn)
  if not path.is_file(): raise FileNotFoundError(f"{fn}: no such file")
  size = path.stat().st_size
  return Tensor.empty(size, dtype=dtypes.uint8, device=f"DISK:{path.resolve()}"), size

def _loads_json(fn:Any, raw:bytes) -> Any:
  try: return json.loads(raw)
  except RecursionError: raise _bad(fn, "the json header is nested too deeply") from None
  except (UnicodeDecodeError, ValueError) as e: raise _bad(fn, f"the json header is not valid json ({e})") from None

def safe_load_metadata(fn:str|pathlib.Path) -> tuple[Tensor, int, dict[str, Any]]:
  """The whole file as a uint8 DISK tensor, the header's length and the parsed, checked header."""
  t, size = _disk_file(fn)
  if size < 8: raise _bad(fn, f"a safetensors file starts with an 8 byte header length, the file has {size} bytes")
  n = struct.unpack("<Q", bytes(t[0:8].data()))[0]
  if n > min(size - 8, MAX_HEADER): raise _bad(fn, f"the header length {n} is larger than the file's {size - 8} bytes after it (or {MAX_HEADER})")
  header = _loads_json(fn, bytes(t[8:8+n].data()) if n else b"")
  if not isinstance(header, dict): raise _bad(fn, f"the header must be a json object, got {type(header).__name__}")
  data_size, ranges = size - 8 - n, []
  for k, v in header.items():
    if k == "__metadata__":
      if not isinstance(v, dict): raise _bad(fn, "__metadata__ must be an object of strings")
      continue
    if not isinstance(v, dict) or v.get("dtype") not in SAFE_DTYPES: raise _bad(fn, f"tensor {k!r} has no known dtype: {str(v)[:100]}")
    shape, offs = v.get("shape"), v.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
      raise _bad(fn, f"tensor {k!r} has a bad shape {shape!r}")
    if not isinstance(offs, list) or len(offs) != 2 or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs) or \
       not 0 <= offs[0] <= offs[1] <= data_size:
      raise _bad(fn, f"tensor {k!r} has data_offsets {offs!r} outside the data's [0, {data_size}]")
    if offs[1] - offs[0] != prod(shape) * SAFE_DTYPES[v["dtype"]].itemsize:
      raise _bad(fn, f"tensor {k!r} of shape {shape} {v['dtype']} needs {prod(shape) * SAFE_DTYPES[v['dtype']].itemsize} bytes, "
                     f"its offsets span {offs[1]-offs[0]}")
    ranges.append((offs[0], offs[1], k))
  ranges.sort()
  for (_, e0, k0), (b1, _, k1) in zip(ranges, ranges[1:]):
    if b1 < e0: raise _bad(fn, f"tensors {k0!r} and {k1!r} overlap")
  return t, n, header

def safe_load(fn:str|pathlib.Path) -> dict[str, Tensor]:
  """The tensors of a safetensors file, as zero-copy views of the file on the DISK device (`.to(device)` reads them)."""
  t, n, header = safe_load_metadata(fn)
  ret = {}
  for k, v in header.items():
    if k == "__metadata__": continue
    (b, e), dt = v["data_offsets"], SAFE_DTYPES[v["dtype"]]
    ret[k] = t[8+n+b:8+n+e].bitcast(dt).reshape(v["shape"]) if e > b else Tensor.empty(*v["shape"], dtype=dt)
  return ret

def safe_save(tensors:dict[str, Tensor], fn:str|pathlib.Path, metadata:dict[str, Any]|None=None) -> None:
  header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
  offset = 0
  for k, v in tensors.items():
    if v.dtype not in _SAFE_NAMES: raise TypeError(f"safe_save: {k} has dtype {v.dtype}, which safetensors can't hold")
    header[k] = {"dtype": _SAFE_NAMES[v.dtype], "shape": list(v.shape), "data_offsets": [offset, offset + v.nbytes()]}
    offset += v.nbytes()
  raw = json.dumps(header, separators=(",", ":")).encode()
  raw += b" " * (round_up(len(raw), 8) - len(raw))   # the data starts 8-byte aligned
  with open(fn, "wb") as f:
    f.write(struct.pack("<Q", len(raw)) + raw)
    for v in tensors.values(): f.write(v._host_bytes())

# ***** torch .pth *****

_TORCH_STORAGES = {"DoubleStorage": dtypes.float64, "FloatStorage": dtypes.float32, "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
                   "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16, "CharStorage": dtypes.int8,
                   "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool,
                   "Float8_e4m3fnStorage": dtypes.fp8e4m3, "Float8_e5m2Storage": dtypes.fp8e5m2}
class _StorageType:
  def __init__(self, dtype:DType): self.dtype = dtype
class _Storage:
  def __init__(self, dtype:DType, data:Tensor): self.dtype, self.data = dtype, data   # data: the storage's bytes (uint8)
  @property
  def numel(self) -> int: return self.data.shape[0] // self.dtype.itemsize  # type: ignore[operator]

def _ints(x:Any, what:str) -> tuple[int, ...]:
  if not isinstance(x, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in x) or len(x) > 64:
    raise pickle.UnpicklingError(f"{what} must be a tuple of at most 64 ints >= 0, got {str(x)[:100]}")
  return tuple(x)

def _rebuild_tensor(storage:Any, offset:Any, size:Any, stride:Any, *args:Any) -> Tensor:
  if not isinstance(storage, _Storage) or not isinstance(offset, int): raise pickle.UnpicklingError("a tensor needs a storage and an int offset")
  size, stride = _ints(size, "size"), _ints(stride, "stride")
  if len(size) != len(stride): raise pickle.UnpicklingError(f"size {size} and stride {stride} differ in length")
  if 0 in size: return Tensor.empty(*size, dtype=storage.dtype)
  end = offset + sum((s - 1) * st for s, st in zip(size, stride)) + 1
  if offset < 0 or end > storage.numel: raise pickle.UnpicklingError(f"tensor of size {size} at {offset} overruns its storage of {storage.numel}")
  # a strided layout that is a permutation of a contiguous one (a transpose) loads contiguous, then permutes on a compute device
  order = sorted(range(len(size)), key=lambda i: (-stride[i], -size[i]))
  perm_size = tuple(size[i] for i in order)
  if any(stride[order[j]] != prod(perm_size[j+1:]) for j in range(len(size)) if perm_size[j] != 1):
    raise pickle.UnpicklingError(f"can't load a tensor with strides {stride} for size {size}: not a permutation of a contiguous layout")
  flat = storage.data[offset*storage.dtype.itemsize:(offset + prod(size))*storage.dtype.itemsize].bitcast(storage.dtype)
  if order == sorted(order): return flat.reshape(size)
  return flat.to(Device.DEFAULT).reshape(perm_size).permute([order.index(i) for i in range(len(size))])

def _rebuild_parameter(data:Any, *args:Any) -> Any: return data
# the only callables a pickle may reach: explicit (module, name) pairs, never a whole module
_ALLOWED: dict[tuple[str, str], Any] = {("collections", "OrderedDict"): OrderedDict, ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
  ("torch._utils", "_rebuild_tensor"): _rebuild_tensor, ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
  ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter, ("torch.nn.parameter", "Parameter"): _rebuild_parameter,
  **{("torch", k): _StorageType(v) for k, v in _TORCH_STORAGES.items()}}

class _RestrictedUnpickler(pickle.Unpickler):
  def __init__(self, f:Any, load_storage:Callable[[tuple], _Storage], dry_run:bool=False):
    super().__init__(f)
    self.load_storage, self.dry_run = load_storage, dry_run
  def find_class(self, module:str, name:str) -> Any:
    if (ret := _ALLOWED.get((module, name))) is None: raise pickle.UnpicklingError(f"refusing to load {module}.{name}: not an allowed callable")
    return (lambda *args: None) if self.dry_run and ret is _rebuild_tensor else ret
  def persistent_load(self, pid:Any) -> Any:
    if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType): return self.load_storage(pid)
    if isinstance(pid, (str, int)): return self.load_storage((pid,))
    raise pickle.UnpicklingError(f"unknown persistent id {str(pid)[:100]}")

def _check_depth(fn:Any, obj:Any, limit:int=1000) -> Any:
  # the unpickler builds any depth without recursing, but a user walking the result would hit the recursion limit: refuse it here
  stack, seen = [(obj, 0)], set()
  while stack:
    x, depth = stack.pop()
    if depth > limit: raise _bad(fn, f"the pickle nests containers more than {limit} deep")
    if isinstance(x, (list, tuple, dict)) and id(x) not in seen:
      seen.add(id(x))
      stack.extend((v, depth + 1) for v in (x.values() if isinstance(x, dict) else x))
  return obj

def _unpickle(fn:Any, f:Any, load_storage:Callable[[tuple], _Storage], dry_run:bool=False) -> Any:
  try: return _check_depth(fn, _RestrictedUnpickler(f, load_storage, dry_run).load())
  except (pickle.UnpicklingError, EOFError, MemoryError, RecursionError, OverflowError, ValueError, TypeError, struct.error, IndexError, KeyError,
          AttributeError) as e:
    raise _bad(fn, f"bad or truncated pickle: {type(e).__name__}: {e}") from None

def torch_load(fn:str|pathlib.Path) -> Any:
  """Load a torch.save file (the zip format, or the legacy pickle and tar formats) without torch and without running its pickle's code:
  tensors come back as views of the file on the DISK device where their layout allows."""
  t, size = _disk_file(fn)
  if zipfile.is_zipfile(fn): return _torch_load_zip(fn, t, size)
  if tarfile.is_tarfile(fn): return _torch_load_tar(fn, t)
  return _torch_load_legacy(fn, t, size)

def _storage_of(fn:Any, pid:tuple, data:Tensor, nbytes_have:int) -> _Storage:
  dt, numel = pid[1].dtype, pid[4]
  if not isinstance(numel, int) or numel < 0 or numel * dt.itemsize > nbytes_have:
    raise _bad(fn, f"storage {pid[2]!r} claims {numel} {dt} elements, the file holds {nbytes_have} bytes for it")
  return _Storage(dt, data[:numel*dt.itemsize] if numel else Tensor.empty(0, dtype=dtypes.uint8))

def _torch_load_zip(fn:Any, t:Tensor, size:int) -> Any:
  try:
    with zipfile.ZipFile(fn) as z:
      infos = {i.filename: i for i in z.infolist()}
      pkl = [n for n in infos if n.endswith("/data.pkl") and n.count("/") == 1]
      if len(pkl) != 1: raise _bad(fn, "a torch zip file needs exactly one <name>/data.pkl")
      base = pkl[0][:-len("data.pkl")]
      if (bo := infos.get(base + "byteorder")) is not None and z.read(bo) != b"little": raise _bad(fn, "only little-endian files load")
      if infos[pkl[0]].file_size > MAX_HEADER: raise _bad(fn, f"data.pkl claims {infos[pkl[0]].file_size} bytes, more than {MAX_HEADER}")
      raw_pkl = z.read(pkl[0])
      def load_storage(pid:tuple) -> _Storage:
        if len(pid) < 5 or (info := infos.get(f"{base}data/{pid[2]}")) is None: raise _bad(fn, f"storage {pid[2:3]} is not in the zip")
        if info.compress_type != zipfile.ZIP_STORED: data = Tensor(z.read(info))
        else:
          # the member's bytes sit after its local header, whose name and extra fields have their own lengths
          hdr = bytes(t[info.header_offset:info.header_offset+30].data()) if info.header_offset + 30 <= size else b""
          if len(hdr) != 30 or hdr[:4] != b"PK\x03\x04": raise _bad(fn, f"the zip header of {info.filename} is corrupted")
          start = info.header_offset + 30 + struct.unpack("<H", hdr[26:28])[0] + struct.unpack("<H", hdr[28:30])[0]
          if start + info.file_size > size: raise _bad(fn, f"{info.filename} runs past the end of the file")
          data = t[start:start+info.file_size]
        return _storage_of(fn, pid, data, info.file_size)
      return _unpickle(fn, io.BytesIO(raw_pkl), load_storage)
  except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError) as e: raise _bad(fn, f"corrupted zip: {e}") from None

def _torch_load_legacy(fn:Any, t:Tensor, size:int) -> Any:
  # pickles: magic number, protocol version, sys info, the object (storages as persistent ids), the storage keys; then each storage as
  # an int64 element count and its bytes, in the order of the keys
  with open(fn, "rb") as f:
    noop = lambda pid: _Storage(dtypes.uint8, Tensor.empty(0, dtype=dtypes.uint8))
    if _unpickle(fn, f, noop) != 0x1950a86a20f9469cfc6c: raise _bad(fn, "not a torch file: no zip, tar or legacy magic number")
    if _unpickle(fn, f, noop) != 1001: raise _bad(fn, "unknown legacy protocol version")
    _unpickle(fn, f, noop)
    pids: dict[str, tuple] = {}
    def record(pid:tuple) -> _Storage:
      if len(pid) < 5 or not isinstance(pid[2], str): raise _bad(fn, f"bad storage id {str(pid)[:100]}")
      pids.setdefault(pid[2], pid)
      return _Storage(pid[1].dtype, Tensor.empty(0, dtype=dtypes.uint8))
    obj_start = f.tell()
    _unpickle(fn, f, record, dry_run=True)   # a first pass learns the storages' dtypes, needed to find where each one's bytes end
    keys = _unpickle(fn, f, noop)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys): raise _bad(fn, "the storage key list is corrupted")
    offsets, pos = {}, f.tell()
    for k in keys:
      if pos + 8 > size: raise _bad(fn, f"storage {k} runs past the end of the file")
      n = struct.unpack("<q", bytes(t[pos:pos+8].data()))[0]
      dt = pids[k][1].dtype if k in pids else dtypes.uint8
      if n < 0 or pos + 8 + n * dt.itemsize > size: raise _bad(fn, f"storage {k} of {n} elements runs past the end of the file")
      offsets[k], pos = (pos + 8, n * dt.itemsize), pos + 8 + n * dt.itemsize
    def load_storage(pid:tuple) -> _Storage:
      if pid[2] not in offsets: raise _bad(fn, f"storage {pid[2]!r} is not in the file")
      (start, nbytes), dt = offsets[pid[2]], pid[1].dtype
      st = _storage_of(fn, pid, t[start:start+nbytes], nbytes)
      if len(pid) > 5 and pid[5] is not None:   # a view into another storage: (key, offset, size)
        vk, voff, vsize = pid[5]
        st = _Storage(dt, offsets_view(vk, voff, vsize, dt))
      return st
    def offsets_view(vk:Any, voff:Any, vsize:Any, dt:DType) -> Tensor:
      if vk not in offsets or not isinstance(voff, int) or not isinstance(vsize, int) or voff < 0 or (voff + vsize) * dt.itemsize > offsets[vk][1]:
        raise _bad(fn, f"storage view {vk!r} at {voff} of {vsize} is out of bounds")
      return t[offsets[vk][0] + voff*dt.itemsize:offsets[vk][0] + (voff+vsize)*dt.itemsize]
    f.seek(obj_start)
    return _unpickle(fn, f, load_storage)

def _torch_load_tar(fn:Any, t:Tensor) -> Any:
  # the oldest format: a tar of "storages" (count, then per storage a pickled (key, location, type), an int64 count and the bytes),
  # "tensors" (count, then per tensor a pickled (key, storage key, type), ndim, sizes, strides, offset) and "pickle" (tensor keys as ids)
  try:
    with tarfile.open(fn) as tar:
      members = {m.name: m for m in tar.getmembers() if m.isfile()}
      if not {"storages", "tensors", "pickle"} <= set(members): raise _bad(fn, "a torch tar file needs storages, tensors and pickle")
      noop = lambda pid: _Storage(dtypes.uint8, Tensor.empty(0, dtype=dtypes.uint8))
      storages: dict[str, _Storage] = {}
      m = members["storages"]
      with tar.extractfile(m) as f:  # type: ignore[union-attr]
        for _ in range(_count(fn, _unpickle(fn, f, noop))):
          key, _, stype = _unpickle(fn, f, noop)
          if not isinstance(stype, _StorageType): raise _bad(fn, f"storage {key!r} has no known type")
          n = struct.unpack("<q", f.read(8))[0]
          start = m.offset_data + f.tell()
          if n < 0 or f.tell() + n * stype.dtype.itemsize > m.size: raise _bad(fn, f"storage {key!r} runs past the end of its member")
          storages[str(key)] = _Storage(stype.dtype, t[start:start + n*stype.dtype.itemsize])
          f.seek(n * stype.dtype.itemsize, 1)
      tensors: dict[str, Tensor] = {}
      with tar.extractfile(members["tensors"]) as f:  # type: ignore[union-attr]
        for _ in range(_count(fn, _unpickle(fn, f, noop))):
          key, skey, _ = _unpickle(fn, f, noop)
          ndim = struct.unpack("<i", f.read(4))[0]
          if not 0 <= ndim <= 64: raise _bad(fn, f"tensor {key!r} has {ndim} dims")
          shape, strides = struct.unpack(f"<{ndim}q", f.read(8*ndim)), struct.unpack(f"<{ndim}q", f.read(8*ndim))
          offset = struct.unpack("<q", f.read(8))[0]
          if str(skey) not in storages: raise _bad(fn, f"tensor {key!r} names a missing storage {skey!r}")
          tensors[str(key)] = _rebuild_tensor(storages[str(skey)], offset, shape, strides)
      with tar.extractfile(members["pickle"]) as f:  # type: ignore[union-attr]
        return _RestrictedTensorIds(fn, f, tensors).load()
  except (tarfile.TarError, struct.error, OSError, pickle.UnpicklingError) as e: raise _bad(fn, f"corrupted tar: {e}") from None

def _count(fn:Any, n:Any) -> int:
  if not isinstance(n, int) or not 0 <= n <= 1 << 24: raise _bad(fn, f"bad count {str(n)[:50]}")
  return n

class _RestrictedTensorIds(_RestrictedUnpickler):
  def __init__(self, fn:Any, f:Any, tensors:dict[str, Tensor]):
    super().__init__(f, lambda pid: _Storage(dtypes.uint8, Tensor.empty(0, dtype=dtypes.uint8)))
    self.fn, self.tensors = fn, tensors
  def persistent_load(self, pid:Any) -> Any:
    if str(pid) not in self.tensors: raise _bad(self.fn, f"the pickle names a missing tensor {str(pid)[:50]!r}")
    return self.tensors[str(pid)]

# ***** tar *****

def tar_extract(fn:str|pathlib.Path) -> dict[str, Tensor]:
  """The regular files of a tar archive as uint8 DISK tensors, zero-copy, by name."""
  t, size = _disk_file(fn)
  try:
    with tarfile.open(fn) as tar:
      ret = {}
      for m in tar.getmembers():
        if not m.isfile(): continue
        if m.offset_data + m.size > size: raise _bad(fn, f"{m.name} runs past the end of the file")
        ret[m.name] = t[m.offset_data:m.offset_data+m.size] if m.size else Tensor.empty(0, dtype=dtypes.uint8)
      return ret
  except tarfile.TarError as e: raise _bad(fn, f"corrupted tar: {e}") from None

# ***** GGUF *****

# ggml type: (elements per block, bytes per block)
_GGML_BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 8: (32, 34), 14: (256, 210)}
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

def ggml_data_to_tensor(t:Tensor, n:int, ggml_type:int) -> Tensor:
  """n elements of ggml_type from the uint8 tensor t, dequantized to float32 by Tensor ops (so on t's device)."""
  if ggml_type not in _GGML_BLOCKS: raise ValueError(f"GGML type {ggml_type} is not supported (F32, F16, Q4_0, Q4_1, Q8_0, Q6_K are)")
  if ggml_type in (0, 1): return t.bitcast(dtypes.float32 if ggml_type == 0 else dtypes.float16).cast(dtypes.float32)
  bsz, bbytes = _GGML_BLOCKS[ggml_type]
  blocks = t.reshape(n // bsz, bbytes)
  def f16(lo:int) -> Tensor: return blocks[:, lo:lo+2].bitcast(dtypes.float16).cast(dtypes.float32)
  def nibbles(x:Tensor) -> Tensor: return Tensor.cat(x & 0xF, x >> 4, dim=1).cast(dtypes.float32)  # low halves are the first elements
  if ggml_type == 2: return ((nibbles(blocks[:, 2:]) - 8) * f16(0)).flatten()
  if ggml_type == 3: return (nibbles(blocks[:, 4:]) * f16(0) + f16(2)).flatten()
  if ggml_type == 8: return (blocks[:, 2:].bitcast(dtypes.int8).cast(dtypes.float32) * f16(0)).flatten()
  # Q6_K: 256 values as 4 low bits (ql) and 2 high bits (qh), 16 int8 scales over 16 values each, one f16 d; two halves of 128
  ql, qh, sc, d = blocks[:, :128], blocks[:, 128:192], blocks[:, 192:208].bitcast(dtypes.int8).cast(dtypes.float32), f16(208)
  halves = []
  for h in range(2):
    lq, hq = ql[:, 64*h:64*h+64], qh[:, 32*h:32*h+32]
    q = Tensor.stack(lq[:, :32] & 0xF, lq[:, 32:] & 0xF, lq[:, :32] >> 4, lq[:, 32:] >> 4, dim=1)
    hi = Tensor.stack(*[(hq >> s) & 3 for s in (0, 2, 4, 6)], dim=1)
    q = (q | (hi << 4)).cast(dtypes.float32) - 32   # (n, 4, 32); scale 2*k + l//16 for group k, element l
    halves.append((q.reshape(-1, 4, 2, 16) * sc[:, 8*h:8*h+8].reshape(-1, 4, 2, 1)).reshape(-1, 128))
  return (Tensor.cat(*halves, dim=1) * d).flatten()

class _GGUFReader:
  # the metadata is read through a plain file (a tokenizer's vocabulary is many small reads); the tensors' data through DISK
  def __init__(self, fn:Any, f:Any, size:int): self.fn, self.f, self.size, self.pos = fn, f, size, 0
  def read(self, n:int) -> bytes:
    if n < 0 or self.pos + n > self.size: raise _bad(self.fn, f"truncated GGUF: reading {n} bytes at {self.pos} of {self.size}")
    self.pos += n
    return self.f.read(n)
  def scalar(self, fmt:str) -> Any: return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]
  def string(self) -> str:
    if (n := self.scalar("<Q")) > MAX_HEADER: raise _bad(self.fn, f"a GGUF string of {n} bytes is too long")
    try: return self.read(n).decode("utf-8")
    except UnicodeDecodeError: raise _bad(self.fn, "a GGUF string is not utf-8") from None
  def value(self, vtype:int, depth:int=0) -> Any:
    if vtype in _GGUF_SCALARS: return self.scalar(_GGUF_SCALARS[vtype])
    if vtype == 8: return self.string()
    if vtype == 9:
      if depth > 8: raise _bad(self.fn, "GGUF arrays are nested too deeply")
      itype, n = self.scalar("<I"), self.scalar("<Q")
      if n > MAX_HEADER or n > self.size - self.pos: raise _bad(self.fn, f"a GGUF array of {n} items is longer than the file")
      return [self.value(itype, depth+1) for _ in range(n)]
    raise _bad(self.fn, f"unknown GGUF value type {vtype}")

def gguf_load(fn:str|pathlib.Path) -> tuple[dict[str, Any], dict[str, Tensor]]:
  """(metadata, tensors) of a GGUF file; quantized tensors are dequantized to float32 on the default device."""
  t, size = _disk_file(fn)
  with open(fn, "rb") as f: kv, infos, data_start = _gguf_header(_GGUFReader(fn, f, size))
  tensors = {}
  for name, shape, ggml_type, off in infos:
    if ggml_type not in _GGML_BLOCKS: raise _bad(fn, f"tensor {name!r} has GGML type {ggml_type}; F32, F16, Q4_0, Q4_1, Q8_0, Q6_K are supported")
    bsz, bbytes = _GGML_BLOCKS[ggml_type]
    n = prod(shape)
    if n % bsz: raise _bad(fn, f"tensor {name!r} of {n} elements is not a whole number of {bsz}-element blocks")
    start, nbytes = data_start + off, n // bsz * bbytes
    if n > 1 << 48 or start + nbytes > size: raise _bad(fn, f"tensor {name!r} at offset {off} ({nbytes} bytes) runs past the end of the file")
    data = t[start:start+nbytes].to(Device.DEFAULT) if nbytes else Tensor.empty(0, dtype=dtypes.uint8)
    tensors[name] = ggml_data_to_tensor(data, n, ggml_type).reshape(shape) if n else Tensor.empty(*shape)
  return kv, tensors

def _gguf_header(r:_GGUFReader) -> tuple[dict[str, Any], list[tuple[str, tuple[int, ...], int, int]], int]:
  fn, size = r.fn, r.size
  if r.read(4) != b"GGUF": raise _bad(fn, "not a GGUF file (no GGUF magic)")
  if (version := r.scalar("<I")) not in (2, 3): raise _bad(fn, f"GGUF version {version} is not supported (2 and 3 are)")
  n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
  if n_tensors > size or n_kv > size: raise _bad(fn, f"{n_tensors} tensors and {n_kv} metadata entries can't fit in {size} bytes")
  kv = {}
  for _ in range(n_kv):
    k = r.string()
    kv[k] = r.value(r.scalar("<I"))
  infos = []
  for _ in range(n_tensors):
    name, ndim = r.string(), r.scalar("<I")
    if ndim > 8: raise _bad(fn, f"tensor {name!r} has {ndim} dims")
    dims = [r.scalar("<Q") for _ in range(ndim)]
    infos.append((name, tuple(reversed(dims)), r.scalar("<I"), r.scalar("<Q")))
  align = kv.get("general.alignment", 32)
  if not isinstance(align, int) or align <= 0: raise _bad(fn, f"bad general.alignment {align!r}")
  return kv, infos, round_up(r.pos, align)

