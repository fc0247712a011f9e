# kernel AST -> linear program: lower views to index maths, simplify, decompose what the device lacks, add accumulators, order
from __future__ import annotations
import functools, itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite, graph_rewrite_map, sint, ThreadKind, KernelInfo
from tinygrad.helpers import TRANSCENDENTAL, IGNORE_OOB, to_function_name
from tinygrad.dtype import dtypes
from tinygrad.renderer import Renderer, ProgramSpec, Estimates
from tinygrad.codegen.lowerer import lower, lower_group_reduces
from tinygrad.codegen.expander import expand, pm_wmma_acc
from tinygrad.codegen.linearize import pm_reduce_to_acc, linearize

def _drop_true_gate(buf:UOp, idx:UOp, gate:UOp) -> UOp|None: return buf.index(idx) if gate.op is Ops.CONST and gate.arg is True else None

# after index simplification: gates that became always-true disappear, always-false loads become 0
pm_cleanup_gates = PatternMatcher([
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"), UPat.var("gate"))), _drop_true_gate),
  (UPat(Ops.LOAD, src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat.const(None, False))),), name="x"), lambda x: UOp.const(x.dtype, 0)),
  (UPat(Ops.STORE, src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat.const(None, False))), UPat())), lambda: UOp(Ops.NOOP)),
])

# IGNORE_OOB=0: every kernel is checked for memory accesses that are neither gated nor provably inside their buffer
def oob_accesses(uops) -> dict[UOp, str]:
  """the ungated INDEXes (LOAD/STORE addresses) among uops that are not provably inside their buffer: bounds of the index (and the width of
  a vector access) against the buffer's size. A gated access is the device's to guard; the PYTHON device checks every access it runs"""
  uops = list(uops)
  width = {u.src[0]: (u.dtype if u.op is Ops.LOAD else u.src[1].dtype).count for u in uops if u.op in (Ops.LOAD, Ops.STORE)}
  errs: dict[UOp, str] = {}
  for ix in uops:
    if ix.op is not Ops.INDEX or len(ix.src) > 2 or (size := getattr(ix.src[0].dtype, "size", -1)) < 0: continue
    idx, w = ix.src[1], width.get(ix, 1) // max(1, ix.dtype.base.count)
    if all(x.vmin >= 0 and x.vmax + w <= size for x in (idx.src if idx.op is Ops.VECTORIZE else (idx,))): continue
    if any(r.op is Ops.RANGE and r.src[0].vmax <= 0 for r in idx.toposort()): continue   # inside a loop that never runs
    errs[ix] = f"{ix.src[0].op.name} {ix.src[0].arg} of {size} elements accessed at {idx.render()} (+{w}), in [{idx.vmin}, {idx.vmax}], ungated"
  return errs
def _raise_oob(uops):
  if errs := oob_accesses(uops): raise RuntimeError("out-of-bounds access in a kernel:\n" + "\n".join(errs.values()))

# Prefetch (KernelInfo.prefetch, set by OptOps.PREFETCH): in a reduce, the loads of a named buffer (a conv's weights) also ask for the lines
# they will read at the next step of the global loops they walk (the next weight panel), so it streams into L2 while the global loops inside
# those (a conv's output rows: passes over one panel) reuse this one from cache. Line n of the next panel is asked for in pass n % passes
# only: an even trickle, not every pass's burst, which measured 25% faster at 512 channels. (Told by the outermost reduce loop the address
# walks, a conv's input channel, not by the line: n % passes of the address itself, worked out at every tap row, took the inner loop integer
# work, a branch per load and a spilled register: the 512-channel 7x7 convs 3.1-3.35 -> 2.95-3.05 ms on Zen 3.) The panel number wraps at the
# end, so each prefetched address is one the kernel itself reads: inside the buffer.
CACHE_LINE = 64
def _mixed_radix(loops:list[UOp]) -> tuple[UOp, UOp]:
  # (the loops' iteration as one number, how many there are), the last loop fastest
  num, count = UOp.const(loops[0].dtype, 0), UOp.const(loops[0].dtype, 1)
  for r in loops: num, count = num * r.src[0] + r, count * r.src[0]
  return num, count

# An entry (buf, n) instead asks, in the innermost reduce loop, for the lines its loads of buf read n iterations later (a GEMM's packed B
# panel, too big for L1: the hardware's prefetchers bring it from L2 too late, 8-10% of the kernel at 1024 and 2048). The iteration is
# clamped to the loop's last (a scalar min; clamping each address instead made vector code on the FMA ports: 25% slower).
def add_prefetches(ctx:tuple[int|tuple[int, int], ...], sink:UOp) -> UOp|None:
  if any(s.op is Ops.PREFETCH for s in sink.src): return None
  topo = sink.toposort()
  reduce_ranges = {r for u in topo if u.op is Ops.REDUCE for r in u.src[1:]}
  loops = sorted((u for u in topo if u.op is Ops.RANGE and u not in reduce_ranges), key=lambda r: r.arg)   # the global loops, outermost first
  steps_ahead = {e[0]: e[1] for e in ctx if isinstance(e, tuple)}
  hints: list[UOp] = []
  for ld in topo:
    if ld.op is not Ops.LOAD or (ix := ld.src[0]).op is not Ops.INDEX or len(ix.src) != 2 or ix.src[0].op is not Ops.DEFINE_GLOBAL or \
       not reduce_ranges & (used := set(ix.src[1].toposort())): continue
    per_line = max(1, CACHE_LINE // ld.dtype.scalar().itemsize)
    if (n := steps_ahead.get(ix.src[0].arg)) is not None:
      later = ix.src[1].substitute({(inner := max(reduce_ranges & used, key=lambda r: r.arg)): (inner + n).minimum(inner.src[0] - 1)})
      # (64-bit offsets: an int32 line offset must wrap before it is widened, which costs the C compiler instructions in the inner loop)
      hints += [UOp(Ops.PREFETCH, dtypes.void, (ix.src[0].index(later.cast(dtypes.int64) + off),), 1) for off in range(0, ld.dtype.count, per_line)]
    if ix.src[0].arg not in ctx or not (walked := [r for r in loops if r in used]): continue
    panel, panels = _mixed_radix(walked)
    nxt, ahead = (panel + 1) % panels, dict[UOp, UOp]()
    for r in reversed(walked): ahead[r], nxt = nxt % r.src[0], nxt // r.src[0]
    step, passes = _mixed_radix(reuse) if (reuse := [r for r in loops if r.arg > walked[-1].arg and r not in used]) else (None, None)
    outer = min(reduce_ranges & used, key=lambda r: r.arg)
    gate = () if step is None or passes is None else ((outer % passes).eq(step),)
    hints += [UOp(Ops.PREFETCH, dtypes.void, (ix.src[0].index(ix.src[1].substitute(ahead) + off),) + gate, 2)
              for off in range(0, ld.dtype.count, per_line)]
  return sink.replace(src=sink.src + tuple(dict.fromkeys(hints))) if hints else None
pm_prefetch = PatternMatcher([(UPat(Ops.SINK, name="sink"), add_prefetches)])

@functools.cache
def _joined(*pms:PatternMatcher) -> PatternMatcher: return functools.reduce(lambda a, b: a + b, pms)   # one table per combination, made once

def full_rewrite_to_sink(ast:UOp, opts:Renderer|None=None) -> UOp:
  if opts is None: opts = Renderer()   # as in tinygrad: no renderer means the generic one (no device ops beyond the basics)
  from tinygrad.uop.symbolic import sym
  from tinygrad.codegen.decompositions import get_late_rewrite_patterns
  sink = lower_group_reduces(expand(lower(ast, opts), opts.vector_alu_lanes, opts.vector_alu_ops, opts.vector_alu_dtypes))
  sink = graph_rewrite(sink, _joined(sym, pm_cleanup_gates))
  if opts.supports_prefetch and isinstance(ast.arg, KernelInfo) and ast.arg.prefetch: sink = graph_rewrite(sink, pm_prefetch, ast.arg.prefetch)
  # accumulators before the device rewrites, so acc + a*b can become one MULACC (and acc + WMMA the WMMA's own accumulate)
  sink = graph_rewrite(sink, _joined(pm_reduce_to_acc, pm_wmma_acc), itertools.count())
  supported = set(opts.code_for_op) if opts.code_for_op else set()
  # IGNORE_OOB=0 checks the addresses here, before div/mod become shifts whose bounds are loose, and those the late rewrites make after
  if not IGNORE_OOB: bad = oob_accesses(topo := sink.toposort())
  late = graph_rewrite_map(sink, _joined(sym, get_late_rewrite_patterns(supported, TRANSCENDENTAL >= 2)))
  if not IGNORE_OOB:
    proven = {late.get(ix) for ix in topo if ix.op is Ops.INDEX and ix not in bad}
    _raise_oob(x for x in late[sink].toposort() if x not in proven or x.op is not Ops.INDEX)
  sink = late[sink]
  if opts.extra_matcher is not None: sink = graph_rewrite(sink, opts.extra_matcher)
  # stores that can never happen leave NOOPs: drop them from the sink
  return sink.replace(src=tuple(s for s in sink.src if s.op is not Ops.NOOP))

def full_rewrite(ast:UOp, opts:Renderer|None=None) -> list[UOp]:
  return linearize(full_rewrite_to_sink(ast, opts))

def _check_launch(name:str, kind:str, size:list[sint], limit:tuple[int, ...]|None) -> None:
  if limit is None: return
  for d, (s, m) in enumerate(zip(size, limit)):
    if (s if isinstance(s, int) else s.vmax) > m:
      raise RuntimeError(f"kernel {name}: {kind} size {s} in dim {d} is over the device's limit {m} (limits {limit}); "
                         f"this kernel can't launch there without other opts")

def loop_iterations(uops:list[UOp]) -> int:
  """The loop iterations one thread runs over all its loops, each loop's exit test counted (Renderer.loop_max)."""
  trips, total = [1], 0
  for u in uops:
    if u.op is Ops.RANGE:
      n = int(u.src[0].vmax)
      total, trips = total + trips[-1] * (n + 1), trips + [trips[-1] * n]
    elif u.op is Ops.ENDRANGE: trips.pop()
  return total

def to_program(opt_ast:UOp, renderer:Renderer, applied_opts:tuple=(), ast:UOp|None=None) -> ProgramSpec:
  """Lower and render an optimized kernel AST, made from ast (tinygrad.codegen.program.get_program optimizes first)."""
  uops = full_rewrite(opt_ast, renderer)
  name = to_function_name(opt_ast.arg.name) if opt_ast.arg is not None else "kernel"
  # a dtype the device doesn't compute is refused by name here, not by the device's compiler later
  if renderer.dtypes_supported is not None and (bad := {d for u in uops if (d := u.dtype.base.scalar()) != dtypes.void
                                                        and not renderer.supports_dtype(d)}):
    raise RuntimeError(f"kernel {name}: device {renderer.device} can't compute {', '.join(sorted(map(str, bad)))}; it supports "
                       f"{', '.join(sorted(map(str, renderer.dtypes_supported)))}")
  src = renderer.render(name, uops)
  # launch sizes come from the thread ids the lowerer made: a host thread index is launched like workgroup dim 0
  global_size: list[sint] = [1, 1, 1]
  local_size: list[sint] = [1, 1, 1]
  for u in uops:
    if u.op is Ops.SPECIAL: (local_size if u.arg.kind is ThreadKind.LOCAL else global_size)[u.arg.dim] = u.arg.size
  _check_launch(name, "global", global_size, renderer.global_max)
  if renderer.loop_max is not None and (n := loop_iterations(uops)) > renderer.loop_max:
    raise RuntimeError(f"kernel {name}: a thread runs {n} loop iterations, over device {renderer.device}'s limit {renderer.loop_max} "
                       f"(a longer loop silently stops there); make the reduce shorter or use another device")
  _check_launch(name, "local", local_size, renderer.local_max)
  gbufs = sorted([u for u in uops if u.op is Ops.DEFINE_GLOBAL], key=lambda u: u.arg)
  def buf_args(op:Ops) -> list[int]:
    return sorted({u.src[0].src[0].arg for u in uops if u.op is op and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.DEFINE_GLOBAL})
  vars_ = sorted([u for u in uops if u.op is Ops.DEFINE_VAR], key=lambda v: v.arg[0])
  return ProgramSpec(name, src, renderer.device, opt_ast if ast is None else ast, uops, global_size,
                     local_size if any(x != 1 for x in local_size) else None, vars_, [u.arg for u in gbufs], buf_args(Ops.STORE),
                     buf_args(Ops.LOAD), Estimates.from_uops(uops, ignore_indexing=True), applied_opts)
