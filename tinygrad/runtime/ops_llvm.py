"""The LLVM device: LLVM IR (renderer/llvmir.py) compiled in process by libLLVM through its C API, for the host CPU and its features
(AVX-512 where it has it), to an ELF object that runtime/support/elf.py loads. Launched like CPU: threads of CPU's pool over core_id."""
from __future__ import annotations
import ctypes, ctypes.util, functools, hashlib, platform
from typing import Any
from tinygrad.device import Compiled, Compiler, CompileError, MallocAllocator
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.runtime.ops_cpu import CPUProgram, host_machine
from tinygrad.runtime.support.elf import ElfImage
from tinygrad.helpers import getenv, cpu_objdump

INSTALL_HINT = "install libLLVM 14 or newer, e.g. `apt-get install -y libllvm15`"
# argument types: p pointer/handle, s C string, i int, z size_t; "->p" returns a handle, "->s" a message we must dispose, "->i" an int
_PROTOS = {"LLVMContextCreate": "->p", "LLVMCreateMemoryBufferWithMemoryRangeCopy": "pzs->p", "LLVMParseIRInContext": "pppp->i",
           "LLVMVerifyModule": "pip->i", "LLVMGetDefaultTargetTriple": "->p", "LLVMGetTargetFromTriple": "spp->i", "LLVMGetHostCPUName": "->p",
           "LLVMGetHostCPUFeatures": "->p", "LLVMCreateTargetMachine": "psssiii->p", "LLVMSetTarget": "ps", "LLVMCreateTargetDataLayout": "p->p",
           "LLVMSetModuleDataLayout": "pp", "LLVMCreatePassBuilderOptions": "->p", "LLVMRunPasses": "pspp->p", "LLVMGetErrorMessage": "p->p",
           "LLVMTargetMachineEmitToMemoryBuffer": "ppipp->i", "LLVMGetBufferStart": "p->p", "LLVMGetBufferSize": "p->z",
           "LLVMDisposeMemoryBuffer": "p", "LLVMDisposeModule": "p", "LLVMDisposeMessage": "p", "LLVMParseCommandLineOptions": "ips"}
_CT = {"p": ctypes.c_void_p, "s": ctypes.c_char_p, "i": ctypes.c_int, "z": ctypes.c_size_t}

@functools.cache
def llvm() -> tuple[Any, int]:
  """libLLVM and its major version: the newest of 19..14 found, or LLVM_PATH."""
  cands = [(p, 0) for p in [getenv("LLVM_PATH", "")] if p] + [(n, v) for v in range(19, 13, -1)
           for n in (f"libLLVM-{v}.so.1", f"libLLVM.so.{v}", f"libLLVM-{v}.so", ctypes.util.find_library(f"LLVM-{v}")) if n]
  for name, ver in cands:
    try: lib = ctypes.CDLL(name)
    except OSError: continue
    for fn, proto in _PROTOS.items():
      args, _, ret = proto.partition("->")
      getattr(lib, fn).argtypes, getattr(lib, fn).restype = [_CT[c] for c in args], _CT[ret] if ret else None
    if platform.machine() not in ("x86_64", "AMD64"): raise RuntimeError(f"the LLVM device loads x86-64 objects only, this is {platform.machine()}")
    for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"): getattr(lib, f"LLVMInitializeX86{part}")()
    # LLVM 14 parses `ptr` only with opaque pointers, which must be switched on before the first context exists
    if ver == 14: lib.LLVMParseCommandLineOptions(2, (ctypes.c_char_p * 2)(b"tinygrad", b"-opaque-pointers"), None)
    return lib, ver
  raise RuntimeError(f"LLVM needs libLLVM (libLLVM-15.so.1 or similar), which is not installed: {INSTALL_HINT}")

def _message(lib:Any, ptr:int|None) -> str:
  if not ptr: return ""
  ret = ctypes.string_at(ptr).decode(errors="replace")
  lib.LLVMDisposeMessage(ptr)
  return ret

def _numbered(src:str) -> str: return "\n".join(f"{i:4d} {line}" for i,line in enumerate(src.splitlines(), 1))

class LLVMCompiler(Compiler):
  """LLVM IR -> an x86-64 ELF object, optimized with the new pass manager's default<O2> pipeline for the host CPU."""
  def __init__(self, opt_level:int=2, target:tuple[str, str, str]|None=None):
    """target: (triple, cpu, features) to cross-compile for (its LLVM target initialized); None: the host."""
    lib, self.version = llvm()
    self.lib, self.opt = lib, opt_level
    if target is not None: triple, self.cpu, self.features = (t.encode() for t in target)
    else:
      triple = _message(lib, lib.LLVMGetDefaultTargetTriple()).encode()
      self.cpu, self.features = _message(lib, lib.LLVMGetHostCPUName()).encode(), _message(lib, lib.LLVMGetHostCPUFeatures()).encode()
    tgt, err = ctypes.c_void_p(), ctypes.c_void_p()
    if lib.LLVMGetTargetFromTriple(triple, ctypes.byref(tgt), ctypes.byref(err)): raise RuntimeError(f"LLVM: {_message(lib, err.value)}")
    # position independent code: constants are reached RIP-relative and calls go through the loader's stubs
    self.tm = lib.LLVMCreateTargetMachine(tgt, triple, self.cpu, self.features, 3, 2, 0)
    self.triple, self.ctx = triple, lib.LLVMContextCreate()
    ident = f"{self.version}\0{triple.decode()}\0{self.cpu.decode()}\0{self.features.decode()}\0{opt_level}"
    super().__init__(f"compile_llvm_{hashlib.sha256(ident.encode()).hexdigest()[:16]}")
  def compile(self, src:str) -> bytes:
    lib, mod, err = self.lib, ctypes.c_void_p(), ctypes.c_void_p()
    def fail(what:str, msg:str) -> CompileError: return CompileError(f"LLVM {what} failed:\n{msg}\nsource:\n{_numbered(src)}")
    buf = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(src.encode(), len(src.encode()), b"kernel")
    if lib.LLVMParseIRInContext(self.ctx, buf, ctypes.byref(mod), ctypes.byref(err)): raise fail("parsing the IR", _message(lib, err.value))
    try:
      if lib.LLVMVerifyModule(mod, 2, ctypes.byref(err)): raise fail("verifying the IR", _message(lib, err.value))   # LLVMReturnStatusAction
      _message(lib, err.value)
      lib.LLVMSetTarget(mod, self.triple)
      lib.LLVMSetModuleDataLayout(mod, lib.LLVMCreateTargetDataLayout(self.tm))
      opts = lib.LLVMCreatePassBuilderOptions()
      if (perr := lib.LLVMRunPasses(mod, f"default<O{self.opt}>".encode(), self.tm, opts)):
        raise fail("optimizing", ctypes.string_at(lib.LLVMGetErrorMessage(perr)).decode())
      out = ctypes.c_void_p()
      if lib.LLVMTargetMachineEmitToMemoryBuffer(self.tm, mod, 1, ctypes.byref(err), ctypes.byref(out)):   # LLVMObjectFile
        raise fail("emitting the object", _message(lib, err.value))
      ret = ctypes.string_at(lib.LLVMGetBufferStart(out), lib.LLVMGetBufferSize(out))
      lib.LLVMDisposeMemoryBuffer(out)
      return ret
    finally: lib.LLVMDisposeModule(mod)
  def disassemble(self, lib:bytes) -> None: cpu_objdump(lib)

class LLVMProgram(CPUProgram):
  """The kernel's function in the loaded object; CPUProgram launches it (over its thread pool when the kernel has a core_id)."""
  def __init__(self, name:str, lib:bytes):
    self.name, self.lib, self.image = name, lib, ElfImage(lib)
    if name not in self.image.symbols: raise RuntimeError(f"function {name!r} not found in the compiled kernel")
    self.fxn, self._nargs = ctypes.CFUNCTYPE(None)(self.image.symbols[name]), -1

class LLVMDevice(Compiled):
  def __init__(self, device:str):
    renderer = LLVMRenderer()
    renderer.machine = host_machine()   # the host's machine model, as for CPU: AVX-512 gets 16-lane float tiles
    renderer.simd_bytes = renderer.machine.simd_bytes
    super().__init__(device, MallocAllocator, renderer, LLVMCompiler(), LLVMProgram, graph=True)
