from __future__ import annotations
import ctypes, ctypes.util, functools, importlib, mmap, os, pathlib
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, Sequence, TypeVar
from tinygrad.helpers import DEBUG, LRU, GlobalCounters, diskcache_get, diskcache_put, flat_mv
from tinygrad.dtype import DType, ImageDType, dtypes

# **************** Device ****************

# tried in this order when no device is named in the environment; PYTHON (the emulator) is never picked by default. A device that opens but
# says it shouldn't be the default (CPU without a C compiler: LLVM takes over; OpenCL on the host CPU, like PoCL) is passed over
DEFAULT_PREFERENCE = ("METAL", "AMD", "NV", "CUDA", "GPU", "CPU", "LLVM")

class _Device:
  def __init__(self) -> None:
    # listing the files finds every device without importing (and so without opening) any of them
    self._devices: list[str] = sorted(x.stem[len("ops_"):].upper() for x in (pathlib.Path(__file__).parent/"runtime").glob("ops_*.py"))
    self._opened: dict[str, Compiled] = {}
  def canonicalize(self, device:str|None) -> str:
    if device is None: return self.DEFAULT
    base, sep, rest = device.partition(":")
    # "CPU:0" is the same device as "CPU"; anything else after the colon (an index, a DISK path) is kept as given
    return base.upper() if rest == "0" or not sep else f"{base.upper()}:{rest}"
  def __getitem__(self, ix:str) -> Compiled:
    if (dev := self._opened.get(ix)) is not None: return dev   # the usual case: an open device by its canonical name
    name = self.canonicalize(ix)
    if (dev := self._opened.get(name)) is not None: return dev
    base = name.split(":", 1)[0]
    if base not in self._devices: raise ValueError(f"unknown device {ix!r}, known devices are {', '.join(self._devices)}")
    mod = importlib.import_module(f"tinygrad.runtime.ops_{base.lower()}")
    cls: list[Any] = [c for n,c in vars(mod).items() if isinstance(c, type) and n.lower() == f"{base.lower()}device"]
    if len(cls) != 1: raise RuntimeError(f"tinygrad.runtime.ops_{base.lower()} must define exactly one class named {base}Device, found {len(cls)}")
    if DEBUG >= 1: print(f"opened device {name} from pid:{os.getpid()}")
    self._opened[name] = dev = cls[0](name)
    return dev
  @property
  def default(self) -> Compiled: return self[self.DEFAULT]
  # a cached_property has no setter, so `Device.DEFAULT = "PYTHON"` simply replaces the cached value
  @functools.cached_property
  def DEFAULT(self) -> str:
    # os.environ is read directly (not through getenv's cache) so a fresh _Device sees the current environment
    named = [d for d in self._devices if _env_flag(d)]
    if (dev := os.environ.get("DEV", "")):
      if (d := self.canonicalize(dev)).split(":")[0] not in self._devices:
        raise ValueError(f"DEV={dev} is not a known device: {', '.join(self._devices)}")
      if d not in named: named.append(d)
    if len(named) > 1: raise RuntimeError(f"only one device may be selected in the environment, got {named}")
    if named: return named[0]
    for d in DEFAULT_PREFERENCE:
      if d not in self._devices: continue
      try:
        # a runtime may tell without opening its driver that it won't be the default (an OpenCL whose only driver runs on the host CPU)
        if not getattr(importlib.import_module(f"tinygrad.runtime.ops_{d.lower()}"), "default_candidate", lambda: True)(): continue
        if getattr(self[d], "default_ok", True): return d
      except Exception as e:
        if DEBUG >= 2: print(f"device {d} is not usable: {e!r}")
    raise RuntimeError(f"no usable device found among {', '.join(x for x in DEFAULT_PREFERENCE if x in self._devices)}; set one with e.g. CPU=1")
Device = _Device()

def _env_flag(key:str) -> bool:
  try: return int(os.environ.get(key, "0")) != 0
  except ValueError: return False

# **************** Buffer + Allocators ****************

@dataclass(frozen=True, eq=True)
class BufferSpec:
  # TODO: move image to dtype
  image: ImageDType|None = None
  uncached: bool = False
  cpu_access: bool = False
  host: bool = False
  nolru: bool = False
  external_ptr: int|None = None

_NO_SPEC = BufferSpec()   # shared: building and hashing a fresh one on every allocation costs more than the LRU lookup

class Buffer:
  _buf: Any  # the allocator's handle; set only while allocated
  # (on a base buffer) writes counts everything that may have changed its memory, its own or a view's: a kernel or copy storing to it,
  # copyin, (de)allocation; escaped: memory someone else can write unseen (wrapped host memory, a zero-copy view handed out). packs:
  # relayout copies of it, reused while writes stays the same (run_schedule)
  writes: int = 0
  escaped: bool = False
  packs: dict|None = None
  def written(self) -> None: (self._base or self).writes += 1   # (the base, without the property: once per buffer a kernel writes)
  def __init__(self, device:str, size:int, dtype:DType, opaque:Any=None, options:BufferSpec|None=None, initial_value:bytes|None=None,
               lb_refcount:int=0, base:Buffer|None=None, offset:int=0, preallocate:bool=False):
    if isinstance(dtype, ImageDType): options = replace(options or BufferSpec(), image=dtype)
    if not isinstance(size, int) or size < 0: raise ValueError(f"buffer size must be a non-negative int (elements), got {size!r}")
    self.device, self.size, self.dtype, self.options, self.offset, self.allocated_views = device, size, dtype, options, offset, 0
    if base is None:
      if offset != 0: raise ValueError("a base buffer can't have an offset")
      self._base: Buffer|None = None
      self._lb_refcount = lb_refcount
      if opaque is not None: self.allocate(opaque)
      if initial_value is not None:
        self.ensure_allocated()
        self.copyin(memoryview(initial_value))
    else:
      if base._base is not None: raise ValueError("the base of a view must be a base buffer")
      if base.device != device: raise ValueError(f"a view must be on its base's device {base.device}, got {device}")
      if offset < 0 or offset + self.nbytes > base.nbytes:
        raise ValueError(f"view of {self.nbytes} bytes at offset {offset} is out of bounds of a {base.nbytes} byte buffer")
      self._base = base
    if preallocate: self.allocate()
  @property
  def base(self) -> Buffer: return self._base if self._base is not None else self
  @property
  def lb_refcount(self) -> int: return self.base._lb_refcount
  def ref(self, cnt:int) -> None: self.base._lb_refcount += cnt
  @property
  def nbytes(self) -> int: return self.size*self.dtype.itemsize
  def is_allocated(self) -> bool: return hasattr(self, "_buf")
  # (attributes, not is_allocated()/written()/base: these run for every buffer a kernel writes)
  def ensure_allocated(self) -> Buffer: return self if hasattr(self, "_buf") else self.allocate()
  def allocate(self, opaque:Any=None, external_ptr:int|None=None) -> Buffer:
    if hasattr(self, "_buf"): raise RuntimeError(f"{self} is already allocated")
    (self._base or self).writes += 1
    if opaque is not None or external_ptr is not None: self.base.escaped = True
    self.allocator: Allocator = (Device._opened.get(self.device) or Device[self.device]).allocator   # (an open device without a call)
    if external_ptr is not None: self.options = replace(self.options or BufferSpec(), external_ptr=external_ptr)
    if self._base is not None:
      self._base.ensure_allocated()
      if (offset_fn := getattr(self.allocator, "_offset", None)) is None: raise RuntimeError(f"device {self.device} does not support buffer views")
      self._buf = offset_fn(self._base._buf, self.nbytes, self.offset)
      self._base.allocated_views += 1
    else:
      nbytes = self.size*self.dtype.itemsize
      self._buf = opaque if opaque is not None else self.allocator.alloc(nbytes, self.options)
      if self.allocator.device_memory: GlobalCounters.mem_used += nbytes
    return self
  def deallocate(self) -> None:
    if not self.is_allocated(): raise RuntimeError(f"{self} is not allocated")
    self._release()
  def _release(self) -> None:
    (self._base or self).writes += 1
    if self._base is None:
      nbytes = self.size*self.dtype.itemsize
      self.packs = None
      if self.allocator.device_memory: GlobalCounters.mem_used -= nbytes
      # memory the buffer doesn't own must never land in the LRU cache
      if self.options is None or self.options.external_ptr is None: self.allocator.free(self._buf, nbytes, self.options)
    else: self._base.allocated_views -= 1
    del self._buf
  def __del__(self) -> None:
    try:
      if hasattr(self, "_buf"): self._release()
    except Exception: pass  # at interpreter shutdown modules may already be gone
  def __reduce__(self):
    if self._base is not None:
      return self.__class__, (self.device, self.size, self.dtype, None, None, None, 0, self._base, self.offset, self.is_allocated())
    buf = None
    if self.is_allocated():
      buf = bytearray(self.nbytes)
      self.copyout(memoryview(buf))
    options = replace(self.options, external_ptr=None) if self.options is not None else None
    return self.__class__, (self.device, self.size, self.dtype, None, options, buf, self.lb_refcount)
  def __repr__(self) -> str:
    return f"<buf real:{self.is_allocated()} device:{self.device} size:{self.size} dtype:{self.dtype}" + \
      (f" offset:{self.offset}" if self._base is not None else "") + (f" {self.options}" if self.options is not None else "") + ">"
  def as_buffer(self, allow_zero_copy:bool=False, force_zero_copy:bool=False, keep:bool=True) -> memoryview:
    """keep=False: the caller drops a zero-copy view before anything else runs (else the memory may be written unseen from then on)"""
    if not self.is_allocated(): raise RuntimeError(f"as_buffer of {self} that isn't allocated")
    # zero copy only for plain (non image) buffers of allocators that can expose their memory to the host
    if (allow_zero_copy or force_zero_copy) and (fn := getattr(self.allocator, "_as_buffer", None)) is not None and \
       (self.options is None or self.options.image is None):
      if keep: self.base.escaped = True
      return fn(self._buf)
    if force_zero_copy: raise RuntimeError(f"zero copy is not possible for {self}")
    return self.copyout(memoryview(bytearray(self.nbytes)))
  def copyin(self, mv:memoryview) -> Buffer:
    mv = flat_mv(mv)
    if mv.nbytes != self.nbytes: raise ValueError(f"copyin of {mv.nbytes} bytes into a buffer of {self.nbytes} bytes")
    if not self.is_allocated(): raise RuntimeError(f"copyin into {self} that isn't allocated")
    self.written()
    if mv.nbytes: self.allocator._copyin(self._buf, mv)
    return self
  def copyout(self, mv:memoryview) -> memoryview:
    mv = flat_mv(mv)
    # (the fields, not nbytes and is_allocated(): every .numpy() and .item() comes here)
    if mv.nbytes != (nbytes := self.size*self.dtype.itemsize): raise ValueError(f"copyout of a buffer of {nbytes} bytes into {mv.nbytes} bytes")
    if not hasattr(self, "_buf"): raise RuntimeError(f"copyout from {self} that isn't allocated")
    if nbytes: self.allocator._copyout(mv, self._buf)
    return mv
  def view(self, size:int, dtype:DType, offset:int) -> Buffer:
    if offset < 0 or offset > self.nbytes: raise ValueError(f"view offset {offset} is out of bounds of a {self.nbytes} byte buffer")
    return Buffer(self.device, size, dtype, base=self.base, offset=self.offset+offset if self._base is not None else offset)
  def numpy(self):  # only for tests and debugging
    import numpy as np
    if self.dtype.fmt is None: raise TypeError(f"no numpy dtype for {self.dtype}")
    return np.frombuffer(self.as_buffer(), dtype=np.dtype(self.dtype.fmt))

T = TypeVar("T")
class Allocator(Generic[T]):
  """A device's memory. Subclasses implement _alloc/_free/_copyin/_copyout and may add _as_buffer(src) -> memoryview (host-visible memory,
  zero copy), _offset(buf, size, offset) -> T (sub-buffers) and _transfer(dest, src, nbytes, src_dev, dest_dev) (device-to-device copies,
  used by BufferCopy when can_transfer says the pair allows it)."""
  device_memory: bool = True   # its buffers count in GlobalCounters.mem_used (a mapped file or memory numpy owns does not)
  host_memory: bool = False    # its buffers are plain host memory: one over memory someone else owns (external_ptr) is free and as fast
  def can_transfer(self, src:Allocator) -> bool:
    """Whether _transfer may copy from a buffer of src into one of this allocator: by default, between allocators of one class."""
    return hasattr(self, "_transfer") and type(src) is type(self)
  def alloc(self, size:int, options:BufferSpec|None=None) -> T:
    if not isinstance(size, int) or size < 0: raise ValueError(f"allocation size must be a non-negative int (bytes), got {size!r}")
    return self._alloc(size, options if options is not None else _NO_SPEC)
  def free(self, opaque:T, size:int, options:BufferSpec|None=None) -> None:
    self._free(opaque, options if options is not None else _NO_SPEC)
  def _alloc(self, size:int, options:BufferSpec) -> T: raise NotImplementedError(f"{type(self).__name__} must implement _alloc")
  def _free(self, opaque:T, options:BufferSpec) -> None: pass  # if opaque is a Python object, the garbage collector frees it
  def _copyin(self, dest:T, src:memoryview) -> None: raise NotImplementedError(f"{type(self).__name__} must implement _copyin")
  def _copyout(self, dest:memoryview, src:T) -> None: raise NotImplementedError(f"{type(self).__name__} must implement _copyout")

class LRUAllocator(Allocator[T]):
  """Keeps freed buffers by (size, options) and hands them out again: device allocation is slow, reuse is fast."""
  def __init__(self) -> None: self.cache: defaultdict[tuple[int, BufferSpec|None], list[T]] = defaultdict(list)
  def alloc(self, size:int, options:BufferSpec|None=None) -> T:
    # (plain buffers are kept under (size, None): a BufferSpec's hash is Python code, and this runs for every buffer a kernel writes)
    if options is None or options is _NO_SPEC:
      if (cached := self.cache.get((size, None))): return cached.pop()
      options = _NO_SPEC
    elif options.external_ptr is None and (cached := self.cache.get((size, options))): return cached.pop()
    try: return super().alloc(size, options)
    except MemoryError:
      self.free_cache()
      return super().alloc(size, options)
  def free_cache(self) -> None:
    for (sz, options), opaques in self.cache.items():   # (options None: a plain buffer)
      for opaque in opaques: super().free(opaque, sz, options)
      opaques.clear()
  def free(self, opaque:T, size:int, options:BufferSpec|None=None) -> None:
    if (options is None or options is _NO_SPEC) and LRU.value: self.cache[(size, None)].append(opaque)
    elif LRU.value and options is not None and not options.nolru and options.external_ptr is None: self.cache[(size, options)].append(opaque)
    else: super().free(opaque, size, options)

_HUGE, _HUGE_OK = 2 << 20, hasattr(mmap, "MADV_HUGEPAGE")   # (Linux only)
class _MallocAllocator(LRUAllocator[ctypes.Array]):
  """Host memory from ctypes, 64-byte aligned. The opaque handle is a ctypes array, which ctypes passes to C as a pointer."""
  host_memory = True
  def _alloc(self, size:int, options:BufferSpec) -> ctypes.Array:
    if options.external_ptr is not None: return (ctypes.c_uint8 * size).from_address(options.external_ptr)
    if size >= _HUGE and _HUGE_OK:
      # a big buffer: fresh pages (zero when first touched, not written here) on 2 MiB boundaries, asked to be huge pages, as numpy's
      # are: a kernel streaming it misses the TLB 512x less often
      try: mem = mmap.mmap(-1, size + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
      except OSError as e: raise MemoryError(f"can't map {size} bytes: {e}") from e   # (the LRU cache frees what it keeps and tries again)
      mem.madvise(mmap.MADV_HUGEPAGE)
      return (ctypes.c_uint8 * size).from_buffer(mem, -ctypes.addressof(ctypes.c_uint8.from_buffer(mem)) % _HUGE)
    raw = (ctypes.c_uint8 * (size + 63))()
    # from_buffer keeps a reference to raw, so the owner lives as long as the aligned array
    return (ctypes.c_uint8 * size).from_buffer(raw, -ctypes.addressof(raw) % 64)
  def _as_buffer(self, src:ctypes.Array) -> memoryview: return flat_mv(memoryview(src))
  def _copyin(self, dest:ctypes.Array, src:memoryview) -> None: memoryview(dest).cast("B")[:] = src  # a memcpy, and src may be read-only
  def _copyout(self, dest:memoryview, src:ctypes.Array) -> None: dest[:] = memoryview(src).cast("B")
  def _offset(self, buf:ctypes.Array, size:int, offset:int) -> ctypes.Array: return (ctypes.c_uint8 * size).from_buffer(buf, offset)
  def _transfer(self, dest:ctypes.Array, src:ctypes.Array, nbytes:int, src_dev:Compiled, dest_dev:Compiled) -> None:
    ctypes.memmove(dest, src, nbytes)   # both are host memory: one memcpy, no staging copy
MallocAllocator = _MallocAllocator()

# **************** Compiler + Compiled ****************

class CompileError(Exception):
  """A kernel that failed to compile: the compiler's message, then the source with line numbers."""
  def __init__(self, msg:str, src:str|None=None):
    super().__init__(msg if src is None else f"{msg}\nsource:\n" + "\n".join(f"{i:4d} {line}" for i, line in enumerate(src.splitlines(), 1)))

class DeviceUnavailable(RuntimeError): pass

def load_library(device:str, names:Sequence[str], install:str) -> ctypes.CDLL:
  """The first of names (e.g. "OpenCL" or "libOpenCL.so.1") that loads, else an error saying what to install."""
  for n in names:
    try: return ctypes.CDLL(ctypes.util.find_library(n) or n)
    except OSError: continue
  raise DeviceUnavailable(f"{device} needs the {names[0]} library, which isn't installed here; install it with: {install}")

_compile_pool: ThreadPoolExecutor|None = None

class Compiler:
  threaded: bool = False   # compile() may run on a thread (it runs a subprocess or drops the GIL): the engine compiles kernels ahead
  def __init__(self, cachekey:str|None=None):
    self.cachekey = cachekey
    self._mem_cache: dict[str, bytes] = {}
    self._pending: dict[str, Future] = {}
  def compile(self, src:str) -> bytes: return src.encode()  # the default "compiler" passes the source through
  def compile_ahead(self, src:str) -> None:
    """Start compiling src on a thread where the compiler allows it (compile_cached then waits for it), so compiles of the kernels to come
    overlap with the Python that lowers them and with each other. The disk cache is only touched from the caller's thread."""
    global _compile_pool
    if not self.threaded or src in self._mem_cache or src in self._pending: return
    if self.cachekey is not None and (lib := diskcache_get(self.cachekey, src)) is not None: self._mem_cache[src] = lib
    else:
      if _compile_pool is None: _compile_pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="tinygrad_compile")
      self._pending[src] = _compile_pool.submit(self.compile, src)
  def compile_cached(self, src:str) -> bytes:
    if (lib := self._mem_cache.get(src)) is not None: return lib
    # diskcache_get/put are no-ops when CACHELEVEL=0; a compile started ahead that failed raises here, in the kernel's turn
    if (ahead := self._pending.pop(src, None)) is not None: lib, fresh = ahead.result(), True
    elif self.cachekey is None or (lib := diskcache_get(self.cachekey, src)) is None: lib, fresh = self.compile(src), True
    else: fresh = False
    if fresh and self.cachekey is not None: diskcache_put(self.cachekey, src, lib)
    self._mem_cache[src] = lib
    return lib
  def disassemble(self, lib:bytes) -> None: pass

class Program(Protocol):
  """A compiled kernel, made by Compiled.program(name, lib). Called with the allocator's buffers, the launch size (workgroups per dim,
  threads per workgroup; None: one) and the values of the kernel's variables in order. With wait=True it returns once the kernel has
  finished, with its run time in seconds."""
  def __call__(self, *bufs:Any, global_size:tuple[int, ...]|None=(1, 1, 1), local_size:tuple[int, ...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None: ...

class ProgramFactory(Protocol):
  def __call__(self, name:str, lib:bytes) -> Program: ...

class Compiled:
  """A device: where its buffers live (allocator), how kernels are printed (renderer, which also declares what the device can do), compiled
  (compiler) and launched (program), and optionally a graph that batches launches (used by TinyJit): True picks the engine's generic
  GraphRunner, a batch of plain host calls; a callable graph(GraphRunner, jit_cache, input_buffers, var_vals) builds the device's own
  runner on the class it is handed, so a runtime never imports the engine.
  A storage-only device (DISK, NPY) has no program (and no renderer that renders)."""
  computes: bool = True   # False where kernels are made but run nowhere (NULL): results are not real
  def __init__(self, device:str, allocator:Allocator, renderer:Any, compiler:Compiler|None, program:ProgramFactory|None, graph:Any=None):
    self.device, self.allocator, self.compiler, self.program, self.graph = device, allocator, compiler or Compiler(), program, graph
    self.renderer = renderer
  @property
  def runtime(self) -> ProgramFactory|None: return self.program   # the old name
  def supports_dtype(self, dtype:DType) -> bool:
    """Whether the device holds and computes dtype: its renderer says; a storage-only device holds every dtype as bytes."""
    return self.program is None or self.renderer.supports_dtype(dtype)
  def synchronize(self) -> None:
    """Waits until all work queued on the device has finished. Synchronous devices have nothing to wait for."""

# **************** dtype support ****************

def is_dtype_supported(dtype:DType, device:str|None=None) -> bool:
  """Whether device (default: Device.DEFAULT) holds and computes dtype, as the device declares it."""
  return Device[Device.canonicalize(device)].supports_dtype(dtype)

# **************** python -m tinygrad.device: which devices work here ****************

if __name__ == "__main__":
  # run as a script this file is __main__: the devices Tensor uses live in the imported module
  import sys
  if sys.argv[1:2] == ["--compile"]:
    # python -m tinygrad.device --compile CUDA:sm_80,PTX [pytest args]: the op suite runs here, and every kernel is also compiled for the targets
    from tinygrad.engine.cross import main
    sys.exit(main(sys.argv[2:]))
  from tinygrad.device import Device as TheDevice, Buffer as TheBuffer
  from tinygrad.tensor import Tensor
  def selftest(name:str) -> str:
    mod = importlib.import_module(f"tinygrad.runtime.ops_{name.lower()}")
    dev = TheDevice[getattr(mod, "selftest_device", lambda: name)()]
    if dev.program is None:
      buf = TheBuffer(dev.device, 4, dtypes.uint8).allocate().copyin(memoryview(bytearray(b"tiny")))
      return "" if bytes(buf.as_buffer()) == b"tiny" else "a buffer doesn't read back what was written"
    out = (Tensor([1.0, 2.0, 3.0], device=dev.device) * 2 + 1).tolist()
    return "" if out == [3.0, 5.0, 7.0] or not dev.computes else f"computed {out} instead of [3.0, 5.0, 7.0]"
  for d in TheDevice._devices:
    try: err = selftest(d)
    except Exception as e: err = f"{type(e).__name__}: {e}".splitlines()[0]
    print(f"{d:8s} {'PASS' if not err else 'FAIL ' + err}")
