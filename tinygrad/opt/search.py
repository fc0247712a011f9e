# BEAM search: time candidate opt lists on the device and keep the fastest (BEAM=n, JITBEAM=n); the winner is cached on disk
from __future__ import annotations
import atexit, contextlib, copy, hashlib, math, multiprocessing, multiprocessing.pool, pickle, signal, struct, sys, time
from array import array
from dataclasses import dataclass, replace
from typing import Any, Iterator, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sint, sym_infer
from tinygrad.dtype import DType, dtypes
from tinygrad.device import Device, Buffer, Compiler, Program
from tinygrad.helpers import ContextVar, DEBUG, CACHELEVEL, diskcache_get, diskcache_put, prod, tqdm, colored, program_flags
from tinygrad.renderer import ProgramSpec
from tinygrad.opt.kernel import Kernel, Opt, OptOps, AxisType, KernelOptError
from tinygrad.opt.heuristic import cpu_threads, hand_coded_optimizations
from tinygrad.codegen import to_program
from tinygrad.helpers import BEAM_UPCAST_MAX, BEAM_LOCAL_MAX, BEAM_MIN_PROGRESS, BEAM_TIMEOUT_SEC, BEAM_COMPILE_TIMEOUT, BEAM_TEST_GLOBAL  # noqa: F401
from tinygrad.helpers import BEAM_DEBUG, BEAM_CHECK, BEAM_PROGRESS, IGNORE_BEAM_CACHE, PARALLEL  # noqa: F401

# ***** the moves *****

def _thread_counts() -> list[int]:
  # the core count and its halvings: an axis that the core count doesn't divide may still split over half the cores
  n, ret = cpu_threads(), list[int]()
  while n > 1: ret, n = ret + [n], n // 2
  return ret

actions: list[Opt] = [Opt(op, axis, amt) for op in (OptOps.UPCAST, OptOps.UNROLL) for amt in (0, 2, 3, 4, 5, 7, 8, 16) for axis in range(6)]
# two vector registers of lanes (the register tiles of AVX-512 and AVX2 machines) and cache blocks of the global loops
actions += [Opt(OptOps.UPCAST, axis, 32) for axis in range(4)] + [Opt(OptOps.BLOCK, axis, amt) for amt in (2, 4, 8) for axis in range(4)]
actions += [Opt(OptOps.THREAD, 0, n) for n in _thread_counts()]
# padding lets a later split divide an odd axis; swapping reorders the global loops
actions += [Opt(OptOps.PADTO, axis, amt) for amt in (8, 16, 32) for axis in range(3)]
actions += [Opt(OptOps.SWAP, axis, other) for axis in range(3) for other in range(axis+1, 3)]
# a reduce's loads of one input also prefetch what they read a few steps later (a GEMM's packed B panel, which L2 feeds too late)
actions += [Opt(OptOps.PREFETCH, None, (buf, ahead)) for buf in (1, 2) for ahead in (4, 8, 16)]
# workgroup opts, only offered to renderers with locals (illegal ones raise KernelOptError and are skipped)
local_actions: list[Opt] = [Opt(OptOps.LOCAL, axis, amt) for amt in (2, 3, 4, 8, 13, 16, 29) for axis in range(6)]
local_actions += [Opt(op, axis, amt) for op in (OptOps.GROUP, OptOps.GROUPTOP) for amt in (0, 4, 8, 16) for axis in range(3)]
local_actions += [Opt(OptOps.NOLOCALS)]

def _state(k:Kernel) -> tuple:
  # two opt lists that leave the same shape, axis kinds and views make the same program (NOLOCALS only closes off the workgroup opts)
  return (k.full_shape, tuple(k.axis_types), tuple(k.sts), k.dont_use_locals, k.prefetch)

def _spills(k:Kernel) -> bool:
  # a reduce's upcast outputs are its accumulators: more than the machine model's vector registers hold (less a loaded row and a
  # broadcast) spill to the stack in the inner loop, and are never the fastest
  if (m := k.opts.machine) is None or not k.reduceops or not k.opts.vector_alu_lanes: return False
  return prod(k.full_shape[a] for a in k.axes_of(AxisType.UPCAST)) * max(r.dtype.itemsize for r in k.reduceops) > (m.vector_regs - 2) * m.simd_bytes

def _variants(k:Kernel, opts:list[Opt]) -> list[Kernel]:
  """The heuristic's opt list with one UPCAST, UNROLL or BLOCK amount halved or doubled: register tiles and cache blocks of other sizes,
  which opts added to the heuristic's kernel can't reach. A tile halved along one axis also comes doubled along the innermost global axis
  some input is broadcast on: as many accumulators in another shape (a GEMM's 8 rows x 32 lanes as 4 rows x 64 lanes: two B panels)."""
  ret: list[Kernel] = []
  for i, o in enumerate(opts):
    # (and a prefetch's distance halved or doubled, or no prefetch)
    if o.op is OptOps.PREFETCH and isinstance(o.arg, tuple):
      for v in (_rebuild(k, k.applied_opts + opts[:i] + ([replace(o, arg=(o.arg[0], d))] if d else []) + opts[i+1:]) for d in
                (o.arg[1] // 2, o.arg[1] * 2, 0)):
        if v is not None: ret.append(v)
    if o.op not in (OptOps.UPCAST, OptOps.UNROLL, OptOps.BLOCK) or not isinstance(o.arg, int) or o.arg < 2: continue
    for arg in (o.arg // 2, o.arg * 2):
      if (v := _rebuild(k, base := k.applied_opts + opts[:i] + ([replace(o, arg=arg)] if arg > 1 else []) + opts[i+1:])) is None: continue
      if not _spills(v): ret.append(v)
      glb = v.axes_of(AxisType.GLOBAL)
      for j in reversed(range(len(glb)) if o.op is OptOps.UPCAST and arg < o.arg else []):
        if any(st.real_strides()[glb[j]] == 0 for st in v.sts) and (w := _rebuild(k, base + [Opt(OptOps.UPCAST, j, 2)])) is not None:
          if not _spills(w): ret.append(w)
          break
  return ret

def get_kernel_actions(k:Kernel, include_0:bool=True) -> dict[int, Kernel]:
  """Every kernel one legal action away from k, keyed by 1 + the action's index in `actions` (+ `local_actions` where the renderer has
  locals); with include_0, key 0 is k itself. Kernels over the BEAM_UPCAST_MAX / BEAM_LOCAL_MAX limits and duplicates are left out."""
  ret: dict[int, Kernel] = {0: k} if include_0 else {}
  seen = {_state(k)}
  for i, a in enumerate(actions + (local_actions if k.opts.has_local else [])):
    k2 = k.copy()
    try: k2.apply_opt(a)
    except KernelOptError: continue
    # vector code holds a register's width of lanes in one register, so its register tiles may have that many times more upcast lanes
    if k2.upcast_size > BEAM_UPCAST_MAX.value * (max(1, k2.opts.simd_bytes // 32) if k2.opts.vector_alu_lanes else 1) or _spills(k2): continue
    # padding that adds more than a quarter of the work (a GEMM's 4 panels padded to 8) is never the fastest: not worth a compile
    if a.op is OptOps.PADTO and 4 * cast(int, prod(k2.full_shape)) > 5 * cast(int, prod(k.full_shape)): continue
    local_sizes = [k2.full_shape[j] for j in k2.axes_of(AxisType.LOCAL, AxisType.GROUP_REDUCE)]   # lidx0 is the innermost
    if prod(local_sizes) > BEAM_LOCAL_MAX.value: continue
    if k2.opts.local_max is not None and any(s > m for s, m in zip(reversed(local_sizes), k2.opts.local_max)): continue
    if (st := _state(k2)) in seen: continue
    seen.add(st)
    ret[i+1] = k2
  return ret

# ***** compiling candidates (in worker processes) *****

def _flatten(ast:UOp) -> list[tuple]:
  # a flat node list pickles without recursion, however deep the graph: for the workers and for the cache key
  idx: dict[UOp, int] = {}
  for u in ast.toposort(): idx[u] = len(idx)
  return [(u.op, u.dtype, tuple(idx[s] for s in u.src), u.arg) for u in idx]

def _unflatten(nodes:list[tuple]) -> UOp:
  built: list[UOp] = []
  for op, dtype, src, arg in nodes: built.append(UOp(op, dtype, tuple(built[s] for s in src), arg))
  return built[-1]

class _CompileTimeout(Exception): pass
def _on_alarm(*_:Any): raise _CompileTimeout()
_in_worker = False

def _compile(task:tuple[int, list[tuple], tuple[Opt, ...], Any, Compiler, dict[str, Any]]) -> tuple[int, ProgramSpec|None, bytes|None, str]:
  """Render and compile one candidate. Pure: runs in a worker process (or in-process with PARALLEL=0) and never touches a buffer."""
  i, nodes, opts, renderer, compiler, ctx = task
  # the workers see the parent's flags as they are now (a Context may have changed them), not as the environment had them
  for key, val in ctx.items():
    if key in ContextVar._cache: ContextVar._cache[key].value = val
  if _in_worker: signal.alarm(max(1, int(BEAM_COMPILE_TIMEOUT.value)))
  try:
    k = Kernel(_unflatten(nodes), renderer)
    for o in opts: k.apply_opt(o)
    p = to_program(k.get_optimized_ast(), renderer, opts, k.ast)
    lib = compiler.compile(p.src)
    # the ast and uops stay behind: the parent has the ast, and a deep graph could break the pickler on the way back
    return i, replace(p, ast=UOp(Ops.NOOP), uops=None), lib, ""
  except _CompileTimeout: return i, None, None, "timeout"
  except Exception as e: return i, None, None, f"{type(e).__name__}: {e}"
  finally:
    if _in_worker: signal.alarm(0)

def _init_worker():
  global _in_worker
  # ^C belongs to the parent, which tears the pool down; SIGALRM bounds one compile
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  if hasattr(signal, "SIGALRM"): signal.signal(signal.SIGALRM, _on_alarm)
  _in_worker = hasattr(signal, "SIGALRM")

def _portable(c:Compiler) -> Compiler|None:
  # the workers get a copy without the libs compiled so far; a compiler that holds a driver handle can't travel: compile in-process
  ret = copy.copy(c)
  ret._mem_cache = {}
  try: pickle.dumps(ret)
  except Exception: return None
  return ret

@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
  # spawn/forkserver children re-import the parent's __main__ script: a script without an `if __name__ == "__main__"` guard would run
  # again in every worker. The workers only need tinygrad, so they are started without it.
  main = sys.modules.get("__main__")
  saved = (getattr(main, "__spec__", None), getattr(main, "__file__", None))
  if main is not None:
    main.__spec__ = None
    if saved[1] is not None: del main.__file__
  try: yield
  finally:
    if main is not None:
      main.__spec__ = saved[0]
      if saved[1] is not None: main.__file__ = saved[1]

_pool: multiprocessing.pool.Pool|None = None
_pool_size = 0
def _get_pool(n:int) -> multiprocessing.pool.Pool:
  global _pool, _pool_size
  if _pool is None or _pool_size != n:
    _close_pool()
    # never fork: the CPU runtime's thread pool (and a GPU driver) don't survive it. forkserver starts workers fast with tinygrad preloaded.
    ctx: Any = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn")
    if hasattr(ctx, "set_forkserver_preload"): ctx.set_forkserver_preload(["tinygrad.opt.search"])
    with _main_hidden(): _pool, _pool_size = ctx.Pool(n, initializer=_init_worker), n
  return _pool

def _close_pool():
  global _pool
  if _pool is not None: _pool.terminate()
  _pool = None
atexit.register(_close_pool)

# ***** timing candidates (in this process, on the device) *****

@dataclass
class BeamStats:
  """What the last beam_search did. Failures are counted, never raised."""
  rounds: int = 0
  candidates: int = 0
  timed: int = 0
  compile_errors: int = 0
  run_errors: int = 0
  timeouts: int = 0
  mismatches: int = 0
  cache_hit: bool = False
  seconds: float = 0.0
  start_time: float = math.inf    # seconds, the kernel passed in
  best_time: float = math.inf     # seconds, the kernel returned
  @property
  def failures(self) -> int: return self.compile_errors + self.run_errors + self.timeouts + self.mismatches
last_stats = BeamStats()

def _scratch(b:Buffer) -> Buffer:
  # same size, dtype and kind of memory, but never the user's: a kernel that writes what it reads must not see its own output
  opts = replace(b.options, external_ptr=None) if b.options is not None else None
  ret = Buffer(b.device, b.size, b.dtype, options=opts).allocate()
  if b.is_allocated(): ret.copyin(b.as_buffer())
  else: ret.copyin(memoryview(bytearray(ret.nbytes)))
  return ret

def _buffers_of(ast:UOp, device:str) -> list[Buffer]:
  globs = sorted([u for u in ast.toposort() if u.op is Ops.DEFINE_GLOBAL], key=lambda u: u.arg)
  return [Buffer(device, u.dtype.size, u.dtype.base) for u in globs]  # type: ignore[attr-defined]

def _values(mv:memoryview, dtype:DType) -> list|None:
  if dtype.scalar() == dtypes.bfloat16: return list(memoryview(array("I", [x << 16 for x in cast(Any, mv).cast("H")]).tobytes()).cast("f"))
  if (fmt := dtype.fmt) is None: return None
  try: return list(cast(Any, mv).cast(fmt))
  except ValueError: return [x for (x,) in struct.iter_unpack(fmt, mv)]   # memoryview can't read half, struct can

def _matches(got:memoryview, ref:bytes, dtype:DType, ref_vals:list|None, scale:float) -> bool:
  if got == ref: return True
  # a reordered float sum rounds differently; anything else must be bit exact
  if not dtypes.is_float(dtype): return False
  if ref_vals is None or (vals := _values(got, dtype)) is None: return True   # fp8 has no host format to compare in
  tol = 1e-3 * scale
  return all(a == b or (a != a and b != b) or abs(a - b) <= tol + 1e-3 * abs(b) for a, b in zip(vals, ref_vals))

def _test_global_size(global_size:list[int], max_size:int) -> tuple[list[int], float]:
  # fewer workgroups run the same code: time a slice of the grid and scale it up
  ret, factor = global_size[:], 1.0
  while prod(ret) > max_size:
    j = max(range(len(ret)), key=lambda x: ret[x])
    factor, ret[j] = factor * ret[j] / (ret[j] // 2), ret[j] // 2
  return ret, factor

def _program(p:ProgramSpec, lib:bytes, device:str) -> Program:
  # the device's own launcher: timing needs nothing from the engine
  if (factory := Device[device].program) is None: raise RuntimeError(f"{device} runs no kernels")
  return factory(p.function_name, lib)
# tinygrad's names, for tools written against it
def bufs_from_lin(lin:Kernel, allocate:bool=True) -> list[Buffer]:
  """One Buffer per global of the kernel, in argument order, on the kernel's device; allocated unless allocate=False."""
  bufs = _buffers_of(lin.ast, lin.opts.device or Device.DEFAULT)
  return [b.allocate() for b in bufs] if allocate else bufs
def get_test_global_size(global_size:list[sint], max_global_size:int, var_vals:dict[UOp, int]|None=None) -> tuple[list[int], float]:
  """A grid of at most max_global_size work items for timing, and how much bigger the real one is."""
  return _test_global_size([int(sym_infer(s, var_vals or {})) for s in global_size], max_global_size)

class _Bench:
  """Scratch buffers and a reference output for one search; times programs on them."""
  def __init__(self, ast:UOp, rawbufs:list[Buffer], var_vals:dict[UOp, int], allow_test_size:bool, has_local:bool):
    self.bufs, self.var_vals, self.allow_test_size, self.has_local = [_scratch(b) for b in rawbufs], var_vals, allow_test_size, has_local
    self.outs = sorted({u.src[0].arg for u in ast.src if u.op is Ops.STORE})
    self.initial = {i: bytes(self.bufs[i].as_buffer()) for i in self.outs}
    self.ref: dict[int, tuple[bytes, list|None, float]]|None = None

  def set_reference(self) -> None:
    # the first program timed (the kernel the search starts from) defines the right answer
    self.ref = {}
    for i in self.outs:
      out = self.bufs[i].as_buffer()
      vals = _values(out, self.bufs[i].dtype) if dtypes.is_float(self.bufs[i].dtype) else None
      scale = max([abs(v) for v in vals if v == v and abs(v) != math.inf] or [1.0]) if vals is not None else 1.0
      self.ref[i] = (bytes(out), vals, max(scale, 1.0))

  def time(self, p:ProgramSpec, lib:bytes, early_stop:float|None, runs:int=3) -> tuple[float, str]:
    """(min time of up to `runs` runs in seconds, "") or (inf, why it failed)."""
    try:
      prg = _program(p, lib, self.bufs[0].device)
      vv = {v: self.var_vals.get(v, (v.arg[1] + v.arg[2]) // 2) for v in p.vars}
      bufs, var_args = [self.bufs[i]._buf for i in p.globals], tuple(vv[v] for v in p.vars)
      for i in self.outs: self.bufs[i].copyin(memoryview(self.initial[i]))
      gs, ls = p.launch_dims(vv)
      tgs, factor = gs, 1.0
      if self.allow_test_size and self.has_local and prod(gs) > BEAM_TEST_GLOBAL.value: tgs, factor = _test_global_size(gs, BEAM_TEST_GLOBAL.value)
      def run(g:list[int]) -> float:
        return prg(*bufs, global_size=tuple(g), local_size=tuple(ls) if ls is not None else None, vals=var_args, wait=True) or 0.0
      tms: list[float] = []
      if BEAM_CHECK and tgs is not gs: run(gs)   # the check (and the reference) needs the whole grid once
      for j in range(runs):
        tms.append(run(tgs) * factor)
        if j == 0 and BEAM_CHECK and self.ref is not None:
          for i, (ref, vals, scale) in self.ref.items():
            if not _matches(self.bufs[i].as_buffer(), ref, self.bufs[i].dtype, vals, scale): return math.inf, f"mismatch in buffer {i}"
        # the first run of a fresh program pays for page faults and symbol binding, so early_stop judges the second; a run of 0.1 s or
        # more is long enough not to need another look
        if (j >= 1 and early_stop is not None and min(tms) > early_stop) or tms[-1] >= 0.1: break
      return min(tms), ""
    except Exception as e: return math.inf, f"{type(e).__name__}: {e}"

# ***** the search *****

def _cache_key(k:Kernel, amt:int, device:str) -> tuple:
  # the text of the flat node list: pickled bytes would depend on which equal objects happen to be shared
  ast_hash = hashlib.sha256("\n".join(repr(n) for n in _flatten(k.ast)).encode()).hexdigest()
  return (ast_hash, tuple(k.applied_opts), device, repr(k.opts), k.opts.machine, amt, program_flags())

def _rebuild(k:Kernel, opts:list[Opt]) -> Kernel|None:
  ret = k.copy()
  try:
    for o in opts[len(k.applied_opts):]: ret.apply_opt(o)
  except KernelOptError: return None   # a cache entry from older code that no longer applies: search again
  return ret

def _compile_iter(kernels:list[Kernel], device:str, deadline:float, st:BeamStats, show:bool) -> Iterator[tuple[int, ProgramSpec, bytes]]:
  """(index, program, lib) of each kernel that compiles, as the workers finish them: the caller times one while the rest compile."""
  ctx = {key: cv.value for key, cv in ContextVar._cache.items()}
  nodes, compiler, workers = _flatten(kernels[0].ast), Device[device].compiler, int(PARALLEL.value)
  portable = _portable(compiler) if workers >= 2 and len(kernels) >= 2 else None
  tasks = [(i, nodes, tuple(k.applied_opts), k.opts, portable or compiler, ctx) for i, k in enumerate(kernels)]
  def got(i:int, p:ProgramSpec|None, lib:bytes|None, err:str) -> tuple[int, ProgramSpec, bytes]|None:
    if p is not None and lib is not None: return i, replace(p, ast=kernels[i].ast), lib
    if err == "timeout": st.timeouts += 1
    else: st.compile_errors += 1
    if BEAM_DEBUG: print(f"BEAM: {kernels[i].applied_opts} failed to compile: {err.splitlines()[0] if err else ''}")
    return None
  bar: tqdm = tqdm(total=len(tasks), desc="compile", disable=not show)
  try:
    if portable is not None:
      it = _get_pool(workers).imap_unordered(_compile, tasks)
      for done in range(len(tasks)):
        # every compile is bounded by the workers' alarm, so a long silence means a worker died with its task
        try: ret = got(*it.next(timeout=max(min(deadline - time.perf_counter(), 2 * BEAM_COMPILE_TIMEOUT.value + 5), 0.05)))
        except multiprocessing.TimeoutError:
          # out of time (or a worker died): what compiled is timed, the rest are timeouts, and the stale queue goes with the pool
          st.timeouts += len(tasks) - done
          _close_pool()
          break
        bar.update(1)
        if ret is not None: yield ret
    else:
      for t in tasks:
        if time.perf_counter() > deadline:
          st.timeouts += 1
          continue
        ret = got(*_compile(t))
        bar.update(1)
        if ret is not None: yield ret
  except BaseException:
    # an error, ^C, or a caller that stops early: the queued compiles go with the pool
    if portable is not None: _close_pool()
    raise
  finally: bar.close()

def _compile_all(kernels:list[Kernel], device:str, deadline:float, st:BeamStats, show:bool) -> dict[int, tuple[ProgramSpec, bytes]]:
  return {i: (p, lib) for i, p, lib in _compile_iter(kernels, device, deadline, st, show)}

# a finalist replaces the kernel the search started from (the heuristic's) only when it is this much faster in the playoff; the playoff and a
# round's confirmation run each kernel up to PLAYOFF_ROUNDS times, interleaved, and for at least 3 rounds or PLAYOFF_SECONDS
PLAYOFF_MARGIN, PLAYOFF_ROUNDS, PLAYOFF_SECONDS = 0.03, 7, 3.0

_Entry = tuple[Kernel, float, tuple[ProgramSpec, bytes]|None]   # a kernel, its screening time, its program
def _rerun(bench:_Bench, entries:list[_Entry], rounds:int) -> list[list[float]]:
  """Each entry's times of up to `rounds` more runs, interleaved (round by round), so a slow spell of the machine hits them all alike."""
  ret: list[list[float]] = [[] for _ in entries]
  t0 = time.perf_counter()
  for r in range(rounds):
    for i, (_, _, prog) in enumerate(entries):
      assert prog is not None
      tm, err = bench.time(*prog, None, runs=1)
      ret[i].append(math.inf if err else tm)
    if r >= 2 and time.perf_counter() - t0 > PLAYOFF_SECONDS: break
  return ret

def _speedup(base:list[float], other:list[float]) -> float:
  """How much faster `other` ran than `base` in the same rounds: the median of the rounds' ratios. A machine whose speed drifts (another
  process on the core's sibling, a VM's neighbours) slows both runs of a round alike, and one unlucky run moves a median little: the best
  of each instead compared single lucky runs, and equal kernels differed by 25% on a loaded machine."""
  ratios = sorted(b / o if o > 0 else math.inf for b, o in zip(base, other))
  return ratios[len(ratios) // 2] if ratios else 0.0

def _playoff(bench:_Bench, beam:list[_Entry], start:_Entry) -> tuple[Kernel, float]:
  """The finalists (the beam and the kernel the search started from) run again: on a loaded machine one screening run can lose a time
  slice to another process, and the beam's front runner is the luckiest of many such runs."""
  has_start = start[2] is not None
  entries = [e for e in ([start] if has_start else []) + [e for e in beam if e[0] is not start[0]] if e[2] is not None]
  if len(entries) < 2: return beam[0][0], beam[0][1]
  times = _rerun(bench, entries, PLAYOFF_ROUNDS)
  if not has_start: i = min(range(len(entries)), key=lambda j: min(times[j]))
  else:
    i = max(range(1, len(entries)), key=lambda j: _speedup(times[0], times[j]))
    if _speedup(times[0], times[i]) <= 1 + PLAYOFF_MARGIN: i = 0
  return entries[i][0], min(times[i])

def beam_search(k:Kernel, rawbufs:list[Buffer]|None, amt:int, allow_test_size:bool=True, var_vals:dict[UOp, int]|None=None) -> Kernel:
  """The fastest kernel found by a beam search of width amt over opt lists that extend k's, timed on rawbufs' device with scratch copies
  of rawbufs (None: buffers sized from the ast). The winner's opts are cached on disk per (ast, opts, device, renderer, amt)."""
  global last_stats
  last_stats = st = BeamStats()
  t0 = time.perf_counter()
  device = rawbufs[0].device if rawbufs else Device.canonicalize(k.opts.device or None)
  key = _cache_key(k, amt, device)
  if not IGNORE_BEAM_CACHE and CACHELEVEL >= 1 and (opts := diskcache_get("beam_search", key)) is not None:
    if (ret := _rebuild(k, opts)) is not None:
      st.cache_hit, st.seconds = True, time.perf_counter() - t0
      return ret

  hk = _rebuild(k, k.applied_opts + hand_coded_optimizations(k))
  # a copy (loads and stores, no arithmetic: the packing of a GEMM's operands) is memory bound: the heuristic's layout is as good as a search
  # would find, in no time
  if hk is not None and not any(u.op in GroupOp.ALU or u.op is Ops.REDUCE_AXIS for u in k.ast.toposort()):
    st.seconds = time.perf_counter() - t0
    return hk
  show = DEBUG >= 1 or bool(BEAM_PROGRESS)
  deadline = t0 + BEAM_TIMEOUT_SEC.value
  bench = _Bench(k.ast, rawbufs if rawbufs else _buffers_of(k.ast, device), var_vals or {}, allow_test_size, k.opts.has_local)
  # the search starts from the heuristic's kernel where there is one: on a big kernel the bare one, and anything one opt away from it, takes
  # seconds a run (a GEMM 1024 without a register tile), so it is timed only where BEAM_CHECK needs its output as the reference
  starts = [k] if hk is None or _state(hk) == _state(k) else [hk, k] if BEAM_CHECK else [hk]
  compiled = _compile_all(starts, device, math.inf, st, False)
  beam: list[_Entry] = []
  for i in reversed(range(len(starts))):
    if i not in compiled: continue
    tm, err = bench.time(*compiled[i], None)
    if err and BEAM_DEBUG: print(f"BEAM: the start kernel {starts[i].applied_opts} failed to run: {err}")
    if not err and BEAM_CHECK and starts[i] is k: bench.set_reference()
    if not err: beam.append((starts[i], tm, compiled[i]))
  beam = sorted(beam, key=lambda x: x[1])[:1] or [(k, math.inf, None)]
  start, st.start_time = beam[0], beam[0][1]
  seen = {_state(x) for x in starts}
  min_progress, per_cand = BEAM_MIN_PROGRESS.value / 1e3, 0.0
  # the first round also tries the heuristic's tile and blocks at other sizes
  cands = [v for v in (_variants(k, hk.applied_opts[len(k.applied_opts):]) if hk is not None else []) if _state(v) not in seen]
  seen |= {_state(v) for v in cands}
  while time.perf_counter() < deadline:
    st.rounds += 1
    for bk, _, _ in beam:
      for k2 in get_kernel_actions(bk, include_0=False).values():
        if (s := _state(k2)) in seen: continue
        seen.add(s)
        cands.append(k2)
    if not cands: break
    # a round that wouldn't finish by the deadline (at the last round's pace per candidate) isn't started: half a round is compiles wasted
    if per_cand and time.perf_counter() + per_cand * len(cands) > deadline: break
    st.candidates, round_start = st.candidates + len(cands), time.perf_counter()
    timed: list[_Entry] = []
    # each candidate is timed as soon as it compiles, while the workers compile the rest (CPU time doesn't count their share of the cores)
    bar: tqdm = tqdm(total=len(cands), desc=f"beam round {st.rounds}", disable=not show)
    for i, p, lib in _compile_iter(cands, device, deadline, st, False):
      bar.update(1)
      if time.perf_counter() > deadline: st.timeouts += 1; continue
      tm, err = bench.time(p, lib, early_stop=beam[0][1] * 3 if beam[0][1] < math.inf else None)
      if err:
        if err.startswith("mismatch"): st.mismatches += 1
        else: st.run_errors += 1
        if BEAM_DEBUG: print(f"BEAM: {cands[i].applied_opts} {err}")
        continue
      st.timed += 1
      timed.append((cands[i], tm, (p, lib)))
    bar.close()
    per_cand = (time.perf_counter() - round_start) / len(cands)
    timed.sort(key=lambda x: x[1])
    # a faster kernel is always kept; the search goes on only while a round gains more than BEAM_MIN_PROGRESS and 2%: the best of many
    # noisy timings is biased low, so a smaller gain is as likely luck as a better kernel
    gain = beam[0][1] - timed[0][1] if timed else 0.0
    if DEBUG >= 2 and timed:
      print(f"beam round {st.rounds:2d} {time.perf_counter()-t0:6.2f}s: {timed[0][1]*1e6:10.2f} us {len(cands):4d} candidates "
            f"{st.failures} failed {timed[0][0].colored_shape()} {timed[0][0].applied_opts}")
    if gain <= max(min_progress, 0.02 * beam[0][1]):
      if gain > 0: beam = beam[:1] + timed[:amt]   # the playoff decides between them
      break
    # the round's winner against the beam's best again, side by side: a gain that doesn't hold up ends the search, and the playoff decides
    if beam[0][2] is not None and (r := _rerun(bench, [beam[0], timed[0]], PLAYOFF_ROUNDS)) and \
       (min(r[0]) - min(r[1]) <= min_progress or _speedup(r[0], r[1]) <= 1.02):
      beam = beam[:1] + timed[:amt]
      break
    beam, cands = timed[:amt], []
  best, st.best_time = _playoff(bench, beam, start)
  st.seconds = time.perf_counter() - t0
  if DEBUG >= 1:
    print(colored(f"beam {amt}: {st.best_time*1e6:.2f} us (start {st.start_time*1e6:.2f} us) in {st.seconds:.2f}s, {st.candidates} candidates, "
                  f"{st.failures} failed: {best.applied_opts}", "green"))
  diskcache_put("beam_search", key, list(best.applied_opts))
  return best
