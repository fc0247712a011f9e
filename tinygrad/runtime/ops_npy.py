# NPY: numpy arrays as buffers, without a copy. Tensor(arr, device="NPY") reads arr's own memory (so arr must not change while the tensor
# is in use); moving it to a device that computes (.to("CPU")) is one copy from that memory. NPY stores, it runs no kernels.
from __future__ import annotations
from tinygrad.device import Allocator, BufferSpec, Compiled
from tinygrad.helpers import flat_mv

class NpyAllocator(Allocator[memoryview]):
  device_memory = False      # numpy owns the memory
  wraps_host_memory = True   # Buffer.allocate(opaque=memoryview) uses that memory in place (tensor.py does it for numpy input)
  def _alloc(self, size:int, options:BufferSpec) -> memoryview: return memoryview(bytearray(size))
  def _as_buffer(self, src:memoryview) -> memoryview: return src
  def _copyin(self, dest:memoryview, src:memoryview) -> None: dest[:] = flat_mv(src)
  def _copyout(self, dest:memoryview, src:memoryview) -> None: dest[:] = src
  def _offset(self, buf:memoryview, size:int, offset:int) -> memoryview: return buf[offset:offset+size]

class NpyDevice(Compiled):
  def __init__(self, device:str): super().__init__(device, NpyAllocator(), None, None, None)
