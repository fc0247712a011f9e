from __future__ import annotations
import time
from dataclasses import dataclass, field, replace
from typing import Generator
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sym_infer
from tinygrad.device import Device, Buffer, Program
from tinygrad.helpers import DEBUG, BEAM, PACK_REUSE, GlobalCounters, colored, ansilen, Metadata, program_flags, getenv, temp
from tinygrad.renderer import Renderer, ProgramSpec, Estimates
from tinygrad.engine.schedule import ScheduleItem, schedule_item
from tinygrad.codegen.program import get_program, program_key, load_program, save_program
from tinygrad.engine.cross import cross_compile
__all__ = ["Runner", "CompiledRunner", "ExecItem", "BufferCopy", "get_program", "lower_schedule", "run_schedule"]

# ***** runners *****

class Runner:
  def __init__(self, display_name:str, device:str, estimates:Estimates=Estimates()):
    self.display_name, self.device, self.estimates = display_name, device, estimates
  @property
  def dev(self): return Device[self.device]
  def exec(self, rawbufs:list[Buffer], var_vals:dict[UOp, int]|None=None) -> float|None: return self(rawbufs, {} if var_vals is None else var_vals)
  def __call__(self, rawbufs:list[Buffer], var_vals:dict[UOp, int], wait=False) -> float|None: raise NotImplementedError("override this")

class CompiledRunner(Runner):
  def __init__(self, p:ProgramSpec, precompiled:bytes|None=None):
    if DEBUG >= 4: print(p.src)
    self.p = p
    dev = Device[p.device]
    self.lib = precompiled if precompiled is not None else dev.compiler.compile_cached(p.src)
    if DEBUG >= 6: dev.compiler.disassemble(self.lib)
    if dev.program is None: raise RuntimeError(f"device {p.device} runs no kernels")
    self._prg: Program = dev.program(p.function_name, self.lib)
    # launch dimensions without variables (the kernel may still take some) are the same on every call: worked out once
    self._dims: tuple[tuple[int, ...], tuple[int, ...]|None]|None = None
    if all(isinstance(s, int) for s in (p.global_size or []) + (p.local_size or [])): self._dims = self._launch_dims({})
    # GlobalCounters' figures for one run when they don't depend on variables (run_schedule adds them without a call)
    self._counts = (p.estimates.ops, p.estimates.mem) if type(p.estimates.ops) is int and type(p.estimates.mem) is int else None
    # the arguments the kernel stores to (all of them if a store's target isn't plainly one): each call counts a write to them
    stores = [u.src[0] for u in p.ast.toposort() if u.op is Ops.STORE] if p.ast is not None else [None]
    outs = {u.arg for u in stores} if all(u is not None and u.op is Ops.DEFINE_GLOBAL for u in stores) else set(p.globals)
    self.outs = [j for j, g in enumerate(p.globals) if g in outs]
    super().__init__(p.name, p.device, p.estimates)
  def __reduce__(self): return self.__class__, (self.p, self.lib)
  def _launch_dims(self, var_vals:dict[UOp, int]) -> tuple[tuple[int, ...], tuple[int, ...]|None]:
    global_size, local_size = self.p.launch_dims(var_vals)
    return tuple(global_size), tuple(local_size) if local_size else None
  def __call__(self, rawbufs:list[Buffer], var_vals:dict[UOp, int], wait=False) -> float|None:
    global_size, local_size = self._dims if self._dims is not None else self._launch_dims(var_vals)
    for j in self.outs: rawbufs[j].written()
    return self._prg(*[x._buf for x in rawbufs], global_size=global_size, local_size=local_size,
                     vals=tuple(var_vals[k] for k in self.p.vars) if self.p.vars else (), wait=wait)

class BufferCopy(Runner):
  def __init__(self, total_sz:int, dest_device:str, src_device:str):
    name = f"{type(self).__name__[6:].lower()} {total_sz:8d}, {dest_device[:7]:>7s} <- {src_device[:7]:7s}"
    super().__init__(colored(name, "yellow"), dest_device, Estimates(lds=total_sz, mem=total_sz))
  def copy(self, dest:Buffer, src:Buffer):
    # device to device where the pair of allocators allows it, else through host memory (zero-copy views where the allocators allow it)
    if dest.allocator.can_transfer(src.allocator):
      dest.allocator._transfer(dest._buf, src._buf, dest.nbytes, src_dev=Device[src.device], dest_dev=Device[dest.device])  # type: ignore[attr-defined]
    elif hasattr(src.allocator, "_as_buffer"): dest.copyin(src.as_buffer(allow_zero_copy=True, keep=False))
    elif hasattr(dest.allocator, "_as_buffer"): src.copyout(dest.as_buffer(allow_zero_copy=True, force_zero_copy=True, keep=False))
    else:
      mv = memoryview(bytearray(src.nbytes))
      src.copyout(mv)
      dest.copyin(mv)
  def __call__(self, rawbufs:list[Buffer], var_vals:dict[UOp, int], wait=False) -> float|None:
    dest, src = rawbufs[0:2]
    if dest.size != src.size or dest.dtype != src.dtype: raise ValueError(f"copy of {src.size} {src.dtype} into {dest.size} {dest.dtype}")
    st = time.perf_counter()
    dest.written()
    self.copy(dest, src)
    if wait:
      Device[dest.device].synchronize()
      return time.perf_counter() - st
    return None

method_cache: dict[tuple, CompiledRunner] = {}
def get_runner(device:str, ast:UOp, rawbufs:list[Buffer]|None=None, schedule:list[ScheduleItem]|None=None) -> CompiledRunner:
  # UOps are hash-consed, so the same kernel (shape, dtypes, ops) is the same key. The renderer (with its options) and every flag the
  # optimizer and codegen read (helpers.PROGRAM_FLAGS) are in it too: a kernel compiles once per process and per way of making it
  renderer = Device[device].renderer
  if (ret := method_cache.get(key := (device, ast, renderer, program_flags()))) is not None: return ret
  # the first new kernel of a schedule starts the compiles of all its new kernels (a schedule of known kernels never looks)
  if schedule: compile_ahead(schedule)
  # the program runs where it was asked for (CPU:1 or NULL share the CPU's renderer, whose device says CPU)
  p = programs_ahead.pop(key, None) or _program(ast, renderer, rawbufs)
  method_cache[key] = ret = CompiledRunner(replace(p, device=device))
  # CROSS_COMPILE=CUDA:sm_80,...: the kernel is also compiled (never run) for those targets, and the results logged (engine/cross.py)
  if (spec := getenv("CROSS_COMPILE", "")): cross_compile(ast, spec, getenv("CROSS_COMPILE_LOG", temp("cross_compile.jsonl")))
  return ret

def _program(ast:UOp, renderer:Renderer, rawbufs:list[Buffer]|None) -> ProgramSpec:
  # a kernel made in an earlier process is on disk (CACHELEVEL=0: not)
  if (p := load_program(pkey := program_key(ast, renderer), ast, renderer)) is not None: return p
  return save_program(pkey, get_program(ast, renderer, rawbufs=rawbufs))

programs_ahead: dict[tuple, ProgramSpec] = {}
def compile_ahead(schedule:list[ScheduleItem]) -> None:
  """Lower a schedule's new kernels before the first one runs, and start their compiles on threads where the device's compiler allows
  (Compiler.threaded): compiles overlap with the Python that lowers the rest, and with each other. A kernel that fails here is lowered
  again in its turn, and raises there. Not under BEAM, which times candidates on inputs that the earlier kernels fill."""
  if BEAM >= 1: return
  flags = program_flags()
  for si in schedule:
    if si.ast.op is not Ops.SINK or not (dev := Device[si.bufs[0].device]).compiler.threaded: continue
    if (key := (si.bufs[0].device, si.ast, dev.renderer, flags)) in method_cache or key in programs_ahead: continue
    try: programs_ahead[key] = p = _program(si.ast, dev.renderer, None)
    except Exception: continue
    dev.compiler.compile_ahead(p.src)

# ***** running *****

def _count_kernel(prg:Runner, var_vals:dict[UOp, int]) -> tuple[int, int]:
  # one kernel run in GlobalCounters: its estimated ops and bytes (symbolic ones at var_vals), which it returns
  op_est, mem_est = (e if type(e := (est := prg.estimates).ops) is int else sym_infer(e, var_vals),
                     e if type(e := est.mem) is int else sym_infer(e, var_vals))
  GlobalCounters.kernel_count += 1
  GlobalCounters.global_ops += op_est
  GlobalCounters.global_mem += mem_est
  return op_est, mem_est

@dataclass
class ExecItem:
  prg: Runner
  bufs: list[Buffer|None]
  metadata: tuple[Metadata, ...]|None = None
  fixedvars: dict[UOp, int] = field(default_factory=dict)
  def run(self, _var_vals:dict[UOp, int]|None=None, wait=False, jit=False, do_update_stats=True) -> float|None:
    var_vals = self.fixedvars if not _var_vals else {**_var_vals, **self.fixedvars} if self.fixedvars else _var_vals
    bufs = [x if hasattr(x, "_buf") else x.ensure_allocated() for x in self.bufs if x is not None]
    et = self.prg(bufs, var_vals, wait=(debug := DEBUG.value) >= 2 or wait)
    if do_update_stats:
      op_est, mem_est = _count_kernel(self.prg, var_vals)
      if et is not None: GlobalCounters.time_sum_s += et
      if debug >= 2:
        ptm = colored(f"{et*1e3:9.2f}ms", "yellow" if et > 0.01 else None) if et is not None else ""
        shape = self.prg.p.ast.arg.name if isinstance(self.prg, CompiledRunner) and self.prg.p.ast.arg is not None else ""
        color = 'magenta' if jit else ('green' if isinstance(self.prg, CompiledRunner) else None)
        head = colored(f'*** {self.prg.device[:7]:7s} {GlobalCounters.kernel_count:4d}', color)
        print(f"{head}"
              f" {self.prg.display_name+' '*(41-ansilen(self.prg.display_name))} arg {len(bufs):2d} mem {GlobalCounters.mem_used/1e9:5.2f} GB " +
              (f"tm {ptm}/{GlobalCounters.time_sum_s*1e3:9.2f}ms ({op_est/((et or 1e-20)*1e9):9.2f} GFLOPS {mem_est/((et or 1e-20)*1e9):6.1f} GB/s)"
               if et is not None else "") + f" {shape}")
    return et

def lower_schedule_item(si:ScheduleItem, schedule:list[ScheduleItem]|None=None) -> ExecItem:
  """The runner of one item; schedule: the items it is run with, whose new kernels compile ahead (compile_ahead) when this one is new."""
  if si.ast.op is Ops.COPY:
    return ExecItem(BufferCopy(si.bufs[0].nbytes, si.bufs[0].device, si.bufs[1].device), list(si.bufs), si.metadata)
  # BEAM sizes its scratch buffers from these (and copies the inputs' contents); it never writes them
  runner = get_runner(si.bufs[0].device, si.ast, list(si.bufs), schedule)
  # the kernel's arguments are the buffers its globals name, in their order
  return ExecItem(runner, [si.bufs[i] for i in runner.p.globals], si.metadata, dict(si.var_vals))

def lower_schedule(schedule:list[ScheduleItem]) -> Generator[tuple[ScheduleItem, ExecItem], None, None]:
  while schedule:
    si = schedule.pop(0)
    try: yield (si, lower_schedule_item(si))
    except Exception as e:
      if DEBUG >= 2: print(f"error lowering {si.ast.op}: {e}")
      raise

# while a TinyJit captures, every ExecItem run is appended to the innermost list here
capturing: list[list[ExecItem]] = []
capturing_inputs: list[list[Buffer]] = []   # the input buffers of each jit that captures

class JitError(RuntimeError):
  """A TinyJit call that a replay would get wrong; the message says what changed."""

def run_schedule(schedule:list[ScheduleItem], var_vals:dict[UOp, int]|None=None, do_update_stats=True):
  # kernels compiled before run straight from the cache, without an ExecItem each, where nothing watches (a capture, DEBUG's lines, BEAM)
  flags = program_flags() if not capturing and DEBUG.value < 2 and BEAM.value < 1 else None
  opened = Device._opened   # (an open device by its name without a Python call; Device[] opens the others)
  swap: dict[Buffer, Buffer] = {}   # a pack item's output -> the cached copy the later items read instead
  for si in schedule:
    # (schedule_item(...) over dataclasses.replace, a list over a generator: a packed GEMM's reused pack takes this path on every call)
    if swap: si = schedule_item(si.ast, tuple([swap.get(b, b) for b in si.bufs]), si.metadata, si.var_vals, si.pack)
    if (pending := _cached_pack(si) if si.pack and not capturing and PACK_REUSE.value else None) is not None:
      swap[si.bufs[0]] = pending[0][1]
      if pending[1] < 0: continue
      si = schedule_item(si.ast, (pending[0][1],) + si.bufs[1:], si.metadata, si.var_vals, si.pack)
    if flags is not None and si.ast.op is Ops.SINK and \
       (prg := method_cache.get((dev := si.bufs[0].device, si.ast, (opened.get(dev) or Device[dev]).renderer, flags))) is not None:
      vv = {**var_vals, **si.var_vals} if var_vals and si.var_vals else si.var_vals or var_vals or {}
      # (CompiledRunner.__call__ unrolled: this runs for every kernel of every realize)
      gs, ls = prg._dims if prg._dims is not None else prg._launch_dims(vv)
      p, bufs = prg.p, si.bufs
      prg._prg(*[(b if hasattr(b := bufs[i], "_buf") else b.ensure_allocated())._buf for i in p.globals], global_size=gs, local_size=ls,
               vals=tuple(vv[k] for k in p.vars) if p.vars else ())
      for j in prg.outs: ((b := bufs[p.globals[j]])._base or b).writes += 1
      if do_update_stats:
        if (counts := prg._counts) is None: _count_kernel(prg, vv)
        else:
          GlobalCounters.kernel_count += 1
          GlobalCounters.global_ops += counts[0]
          GlobalCounters.global_mem += counts[1]
    else:
      try: ei = lower_schedule_item(si, schedule)
      except Exception as e:
        if DEBUG >= 2: print(f"error lowering {si.ast.op}: {e}")
        raise
      if capturing: capturing[-1].append(ei)
      ei.run(var_vals or {}, do_update_stats=do_update_stats)
    if pending is not None: pending[0][0] = pending[1]

def _cached_pack(si:ScheduleItem) -> tuple[list, int]|None:
  """A pack item (ScheduleItem.pack) reads one realized buffer: its output, made before from the same layout of the same source and kept
  in the source's packs, is reused while the source isn't written (Buffer.writes). Returns (the entry, -1) to reuse, or (a new entry, with
  a new buffer for this item to write, the source's writes to record once it has run); None where the source may change unseen."""
  # (only where the renderer packs operands: elsewhere the copies aren't packing's, and kept ones would only cost memory)
  # (attributes, not the properties and Device[] lookup: this runs for every packed GEMM call)
  if not isinstance(src := si.bufs[1], Buffer) or (base := src._base or src).escaped or not hasattr(src, "_buf") or \
     not getattr((Device._opened.get(src.device) or Device[src.device]).renderer, "packs_operands", False): return None
  if base.packs is None: base.packs = {}
  if (entry := base.packs.get(key := (si.ast, src.offset, src.size))) is not None and entry[0] == base.writes: return entry, -1
  # (a new buffer each time it is made, written only then: an older one may still be read by later items of this or a rerun schedule.
  # A few layouts per source.)
  if entry is None and len(base.packs) >= 4: base.packs.pop(next(iter(base.packs)))
  base.packs[key] = entry = [-1, Buffer((out := si.bufs[0]).device, out.size, out.dtype, options=out.options)]
  return entry, base.writes
