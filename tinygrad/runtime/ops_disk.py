from __future__ import annotations
import atexit, mmap, os, tempfile
from tinygrad.device import Allocator, BufferSpec, Compiled

class DiskBuffer:
  """A byte range [offset, offset+size) of the file mapped by a DiskDevice."""
  def __init__(self, device:DiskDevice, size:int, offset:int=0): self.device, self.size, self.offset = device, size, offset
  def __repr__(self) -> str: return f"<DiskBuffer size={self.size} offset={self.offset}>"
  def _buf(self) -> memoryview: return memoryview(self.device.mem)[self.offset:self.offset+self.size]

class DiskAllocator(Allocator[DiskBuffer]):
  device_memory = False   # a mapped file
  def __init__(self, dev:DiskDevice): self.dev = dev
  def _alloc(self, size:int, options:BufferSpec) -> DiskBuffer:
    self.dev._might_open(size)
    return DiskBuffer(self.dev, size)
  def _free(self, opaque:DiskBuffer, options:BufferSpec) -> None: self.dev._might_close()
  def _as_buffer(self, src:DiskBuffer) -> memoryview: return src._buf()
  def _copyin(self, dest:DiskBuffer, src:memoryview) -> None:
    if self.dev.readonly: raise PermissionError(f"{self.dev.filename} is opened read-only, it can't be written")
    dest._buf()[:] = src
  def _copyout(self, dest:memoryview, src:DiskBuffer) -> None: dest[:] = src._buf()
  def _offset(self, buf:DiskBuffer, size:int, offset:int) -> DiskBuffer: return DiskBuffer(buf.device, size, buf.offset+offset)

class NoKernelsRenderer:
  """DISK runs no kernels: anything asking it to render one gets a clear error (slices, reshapes and bitcasts are buffer views instead)."""
  def __init__(self, device:str): self.device = device
  def __getattr__(self, name:str):
    raise RuntimeError(f"{self.device} can't run kernels: move the tensor to a compute device with .to() first (it can only slice, reshape, "
                       "bitcast and copy)")

class DiskDevice(Compiled):
  """DISK:/path/to/file maps the file into memory; a Buffer on it reads and writes the file's bytes. It can't run kernels."""
  def __init__(self, device:str):
    if not device.startswith("DISK:") or len(device) <= len("DISK:"):
      raise ValueError(f"a disk device needs a file name, like DISK:/path/file, got {device!r}")
    self.filename, self.size, self.count, self.readonly = device[len("DISK:"):], 0, 0, False
    self.mem: mmap.mmap|bytearray = bytearray()
    super().__init__(device, DiskAllocator(self), NoKernelsRenderer(device), None, None)
  def _might_open(self, size:int) -> None:
    self.count += 1
    if self.count > 1:
      if size > self.size: raise ValueError(f"{self.filename} is mapped with {self.size} bytes, can't allocate {size}")
      return
    # the file is made at least as big as the buffer; a file we may not write (a downloaded model, say) is mapped read-only
    try: fd, self.readonly = os.open(self.filename, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0)), False
    except PermissionError: fd, self.readonly = os.open(self.filename, os.O_RDONLY | getattr(os, "O_BINARY", 0)), True
    try:
      if (fsize := os.fstat(fd).st_size) < size:
        if self.readonly: raise ValueError(f"{self.filename} has {fsize} bytes, a buffer of {size} bytes doesn't fit")
        os.ftruncate(fd, size)
      # mmap can't map zero bytes; an empty bytearray stands in for an empty file
      self.mem = mmap.mmap(fd, size, access=mmap.ACCESS_READ if self.readonly else mmap.ACCESS_WRITE) if size > 0 else bytearray()
      self.size = size
    except Exception:
      self.count -= 1
      raise
    finally: os.close(fd)
  def _might_close(self) -> None:
    self.count -= 1
    if self.count == 0 and isinstance(self.mem, mmap.mmap):
      try: self.mem.close()
      except BufferError: pass  # a memoryview of it is still alive; the map goes when that does
      self.mem, self.size = bytearray(), 0

def selftest_device() -> str:
  # python -m tinygrad.device checks DISK on a scratch file, removed at exit
  fn = os.path.join(tempfile.gettempdir(), f"tinygrad_disk_selftest_{os.getpid()}")
  @atexit.register
  def _remove() -> None:
    if os.path.exists(fn): os.remove(fn)
  return f"DISK:{fn}"
