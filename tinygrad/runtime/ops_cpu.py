from __future__ import annotations
import ctypes, functools, hashlib, itertools, os, pathlib, platform, shlex, shutil, subprocess, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, cast
from tinygrad.device import Compiled, CompileError, Compiler, MallocAllocator
from tinygrad.helpers import CPU_THREADS, cpu_objdump, temp
from tinygrad.renderer import MachineModel
from tinygrad.runtime.support.cpu_model import host_model, vector_flags

# IEEE semantics are kept (no -ffast-math); -fno-math-errno only lets sqrt and friends compile to single instructions
# the vector width flag (x86 compilers split 512-bit vectors in two by default on most AVX-512 parts) comes from the machine model
CFLAGS = ("-x", "c", "-std=gnu11", "-O2", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-fwrapv")

def find_cc() -> list[str]|None:
  """The C compiler command: $CC (may carry arguments) if set, else clang, else gcc. None if there is none."""
  for cand in ([os.environ["CC"]] if os.environ.get("CC") else []) + ["clang", "gcc"]:
    if (args := shlex.split(cand)) and shutil.which(args[0]) is not None: return args
  return None

@functools.cache
def _cc_version(cc:tuple[str, ...]) -> str:
  try: return subprocess.run([*cc, "--version"], capture_output=True, text=True, timeout=30).stdout
  except (OSError, subprocess.SubprocessError): return ""

class CPUCompiler(Compiler):
  """Compiles C source to a shared object with clang or gcc and returns the object's bytes."""
  threaded = True   # each compile is a subprocess in its own temp dir
  def __init__(self, cachekey:str|None=None, extra_flags:tuple[str, ...]=()):
    self.cc, self.cflags = find_cc(), CFLAGS + extra_flags
    if self.cc is not None and cachekey is None:
      # a different compiler, version, flags or machine must never reuse these binaries
      ident = "\0".join([*self.cc, _cc_version(tuple(self.cc)), *self.cflags, platform.machine()])
      cachekey = f"compile_cpu_{pathlib.Path(self.cc[0]).name}_{hashlib.sha256(ident.encode()).hexdigest()[:16]}"
    super().__init__(cachekey)
  def compile(self, src:str) -> bytes:
    if self.cc is None: raise CompileError("no C compiler found for the CPU device: install clang or gcc, or point $CC at one")
    with tempfile.TemporaryDirectory(prefix="tinygrad_cpu_") as tmp:
      out = pathlib.Path(tmp)/"kernel.so"
      try: ret = subprocess.run([*self.cc, *self.cflags, "-", "-o", str(out), "-lm"], input=src.encode(), capture_output=True)
      except OSError as e: raise CompileError(f"could not run {' '.join(self.cc)}: {e}") from e
      if ret.returncode != 0:
        raise CompileError(f"{' '.join(self.cc)} failed with exit code {ret.returncode}:\n{ret.stderr.decode(errors='replace')}", src)
      return out.read_bytes()
  def disassemble(self, lib:bytes) -> None: cpu_objdump(lib)
ClangJITCompiler = CPUCompiler

_pool: ThreadPoolExecutor|None = None
_pool_size = 0
def _get_pool() -> ThreadPoolExecutor:
  global _pool, _pool_size
  # recreated when CPU_THREADS changes (e.g. inside a Context)
  n = CPU_THREADS.value or os.cpu_count() or 1
  if _pool is None or _pool_size != n:
    if _pool is not None: _pool.shutdown(wait=False)
    _pool, _pool_size = ThreadPoolExecutor(max_workers=n, thread_name_prefix="tinygrad_cpu"), n
  return _pool

class CPUProgram:
  """A kernel in a shared object. Called with the allocator's ctypes buffers, then the int32 variable values.

  When global_size[0] > 1 the kernel takes one more trailing `int core_id` argument and is launched global_size[0] times,
  once per core_id, on a thread pool. ctypes drops the GIL during the foreign call, so the threads really run in parallel.
  With wait=True the run time returned is the busiest thread's CPU time, the wall time of an unloaded machine."""
  def __init__(self, name:str, lib:bytes):
    self.name, self.lib = name, lib
    path = pathlib.Path(temp(f"tinygrad_cpu_{hashlib.sha256(lib).hexdigest()[:32]}.so"))
    if not path.is_file():
      # write then rename: another process loading the same kernel never sees a half written file
      tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
      tmp.write_bytes(lib)
      os.replace(tmp, path)
    self.handle = ctypes.CDLL(str(path))
    try: self.fxn = getattr(self.handle, name)
    except AttributeError as e: raise RuntimeError(f"function {name!r} not found in the compiled kernel") from e
    self._nargs, self._plain = -1, cast(Callable|None, None)
  def __call__(self, *bufs, global_size:tuple[int, ...]|None=(1,1,1), local_size:tuple[int, ...]|None=(1,1,1), vals:tuple[int, ...]=(),
               wait:bool=False) -> float|None:
    # the plain launch (one thread, no clock) first and alone: it runs for every kernel of every realize
    if not wait and (global_size is None or global_size[0] == 1):
      if self._nargs != len(bufs) + len(vals): self._set_argtypes(len(bufs), len(vals))
      if vals: self.fxn(*bufs, *vals)
      else: self.fxn(*bufs)
      return None
    return self._launch(bufs, global_size[0] if global_size is not None else 1, vals, wait)
  def bind(self, bufs:list, global_size:tuple[int, ...]|None, local_size:tuple[int, ...]|None, vals:tuple[int, ...]) -> tuple[Callable, list]:
    """This launch as a callable and its argument list, buffers first: callable(*args) runs it (TinyJit's launch loop swaps buffers in)."""
    if global_size is not None and global_size[0] > 1:
      threads, nbufs = global_size[0], len(bufs)
      return (lambda *args: self._launch(args[:nbufs], threads, vals, False)), list(bufs)
    if self._plain is None:
      # a function object of its own with no argtypes: ctypes passes arrays as pointers and ints as C ints itself, faster than through
      # c_void_p's conversion (and __call__'s argtypes stay as they are)
      plain = self.handle[self.name]
      plain.restype, self._plain = None, plain
    return self._plain, [*bufs, *vals]
  def _set_argtypes(self, nbufs:int, nints:int) -> None:
    # set once: with argtypes ctypes converts the arguments in C, which keeps the launch cheap
    self.fxn.argtypes, self.fxn.restype, self._nargs = [ctypes.c_void_p]*nbufs + [ctypes.c_int]*nints, None, nbufs + nints
  def _launch(self, bufs:tuple, threads:int, vals:tuple[int, ...], wait:bool) -> float|None:
    if self._nargs != len(bufs) + len(vals) + (threads > 1): self._set_argtypes(len(bufs), len(vals) + (threads > 1))
    # with wait, the run time is the busiest thread's CPU time: other processes on a loaded machine don't count (BEAM compares these)
    if threads > 1:
      # waking a worker costs more than a call, so each worker runs core_ids until none are left, and the calling thread takes a share too:
      # each takes the next one when it comes free (next() on a count is atomic under the GIL), so a thread the OS runs late takes fewer
      pool, fxn, ids = _get_pool(), self.fxn, itertools.count()
      nworkers = min(threads, _pool_size)
      def run() -> float:
        st = time.thread_time() if wait else 0.0
        while (i := next(ids)) < threads: fxn(*bufs, *vals, i)
        return time.thread_time() - st if wait else 0.0
      futures = [pool.submit(run) for _ in range(1, nworkers)]
      mine = run()
      busiest = max([mine] + [f.result() for f in futures])
      return busiest if wait else None
    st = time.thread_time()
    self.fxn(*bufs, *vals)
    return time.thread_time() - st

@functools.cache
def host_machine() -> MachineModel:
  """The host's machine model (measured once, cached on disk; CPU_MODEL overrides it): the CPU heuristics size their tiles from it."""
  return host_model(find_cc(), CFLAGS)

class CPUDevice(Compiled):
  def __init__(self, device:str):
    from tinygrad.renderer.cstyle import ClangRenderer
    renderer = ClangRenderer()
    renderer.machine = host_machine()
    renderer.simd_bytes = renderer.machine.simd_bytes
    # graph=True: TinyJit replays runs of kernels through the generic GraphRunner, one batch with no per-kernel bookkeeping
    super().__init__(device, MallocAllocator, renderer, CPUCompiler(extra_flags=vector_flags(renderer.simd_bytes)), CPUProgram, graph=True)
    self.default_ok = cast(CPUCompiler, self.compiler).cc is not None   # without a C compiler the default is LLVM
