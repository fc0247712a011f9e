# NULL: a device that allocates nothing real, compiles nothing and runs nothing. Everything before the launch (scheduling, optimizing,
# rendering) still happens, so a script run with NULL=1 measures tinygrad's Python overhead. Results read back as zeros.
from __future__ import annotations
from tinygrad.device import Allocator, BufferSpec, Compiled, Compiler

class NullAllocator(Allocator[int]):
  def _alloc(self, size:int, options:BufferSpec) -> int: return size
  def _copyin(self, dest:int, src:memoryview) -> None: pass
  def _copyout(self, dest:memoryview, src:int) -> None: dest[:] = bytes(len(dest))
  def _offset(self, buf:int, size:int, offset:int) -> int: return size
  def _transfer(self, dest:int, src:int, nbytes:int, src_dev:Compiled, dest_dev:Compiled) -> None: pass

class NullCompiler(Compiler):
  def compile(self, src:str) -> bytes: return b""

class NullProgram:
  def __init__(self, name:str, lib:bytes): self.name = name
  def __call__(self, *bufs, global_size:tuple[int, ...]|None=(1, 1, 1), local_size:tuple[int, ...]|None=None, vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None: return 0.0 if wait else None

class NullDevice(Compiled):
  computes = False   # python -m tinygrad.device: a NULL kernel's result is not checked
  def __init__(self, device:str):
    from tinygrad.renderer.cstyle import ClangRenderer
    super().__init__(device, NullAllocator(), ClangRenderer(), NullCompiler(), NullProgram)
