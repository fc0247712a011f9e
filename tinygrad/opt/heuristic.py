# the optimizations chosen without search (NOOPT=1 turns them off, BEAM=n searches instead)
from __future__ import annotations
import os
from tinygrad.opt.kernel import Kernel, Opt, OptOps, AxisType, KernelOptError
from tinygrad.uop import Ops
from tinygrad.helpers import prod, CPU_THREADS, getenv

def cpu_threads() -> int: return CPU_THREADS.value or os.cpu_count() or 1

def _try(k:Kernel, opt:Opt, opts:list[Opt]) -> bool:
  try: k.apply_opt(opt)
  except KernelOptError: return False
  opts.append(opt)
  return True

def _largest_divisor(n:int, choices:tuple[int, ...]) -> int|None: return next((c for c in choices if n % c == 0), None)

def hand_coded_optimizations(k:Kernel) -> list[Opt]:
  k = k.copy()
  opts: list[Opt] = []
  if not all(isinstance(s, int) for s in k.full_shape): return opts
  reduce_axes = k.axes_of(AxisType.REDUCE)
  global_axes = k.axes_of(AxisType.GLOBAL)
  # a reduce with broadcast inputs (matmul, conv): a register tile of outputs, each input value used by several accumulators
  loads = [u for u in k.ast.toposort() if u.op is Ops.LOAD]
  view_of = {v.arg: i for i, v in enumerate(k.view_uops)}
  load_sts = [k.sts[view_of[u.src[1].arg]] for u in loads if u.src[1].arg in view_of]
  if reduce_axes and len(global_axes) >= 1:
    broadcast_axes = [j for j, ax in enumerate(global_axes) if any(st.real_strides()[ax] == 0 for st in load_sts)]
    tiles = 0
    for j in reversed(broadcast_axes):
      if tiles >= 2: break
      s = k.full_shape[k.axes_of(AxisType.GLOBAL)[j]]
      if isinstance(s, int) and (amt := _largest_divisor(s, (4, 3, 2))) is not None and _try(k, Opt(OptOps.UPCAST, j, amt), opts): tiles += 1
    rs = k.full_shape[k.axes_of(AxisType.REDUCE)[-1]]
    if tiles and isinstance(rs, int) and (amt := _largest_divisor(rs, (4, 2))) is not None and rs > amt:
      _try(k, Opt(OptOps.UNROLL, len(k.axes_of(AxisType.REDUCE))-1, amt), opts)
  # a reduce over many elements with few outputs: unroll it so the loop body adds many loaded values at once
  if reduce_axes and not opts:
    rs = k.full_shape[k.axes_of(AxisType.REDUCE)[-1]]
    if isinstance(rs, int) and rs >= 32 and (amt := _largest_divisor(rs, (16, 8, 4))) is not None:
      _try(k, Opt(OptOps.UNROLL, len(k.axes_of(AxisType.REDUCE))-1, amt), opts)
  # big kernels run their outermost global axis on every core
  if k.opts.has_threads and (threads := cpu_threads()) > 1 and prod(k.full_shape) >= getenv("THREAD_MIN_WORK", 1 << 17):
    if (g := k.axes_of(AxisType.GLOBAL)):
      s = k.full_shape[g[0]]
      if isinstance(s, int) and s % threads == 0 and s >= threads: _try(k, Opt(OptOps.THREAD, 0, threads), opts)
  return opts
