# kernel AST -> linear program: lower views to index maths, simplify, decompose what the device lacks, add accumulators, order
from __future__ import annotations
import itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite, graph_rewrite_map
from tinygrad.helpers import TRANSCENDENTAL, IGNORE_OOB
from tinygrad.renderer import Renderer
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

def full_rewrite_to_sink(ast:UOp, opts:Renderer) -> UOp:
  from tinygrad.uop.symbolic import sym
  from tinygrad.codegen.decompositions import get_late_rewrite_patterns
  sink = lower_group_reduces(expand(lower(ast, opts), opts.vector_alu_lanes))
  sink = graph_rewrite(sink, sym + pm_cleanup_gates)
  # accumulators before the device rewrites, so acc + a*b can become one MULACC (and acc + WMMA the WMMA's own accumulate)
  sink = graph_rewrite(sink, pm_reduce_to_acc + pm_wmma_acc, itertools.count())
  supported = set(opts.code_for_op) if opts.code_for_op else set()
  # IGNORE_OOB=0 checks the addresses here, before div/mod become shifts whose bounds are loose, and those the late rewrites make after
  if not IGNORE_OOB: bad = oob_accesses(topo := sink.toposort())
  late = graph_rewrite_map(sink, sym + get_late_rewrite_patterns(supported, TRANSCENDENTAL >= 2))
  if not IGNORE_OOB:
    proven = {late.get(ix) for ix in topo if ix.op is Ops.INDEX and ix not in bad}
    _raise_oob(x for x in late[sink].toposort() if x not in proven or x.op is not Ops.INDEX)
  sink = late[sink]
  if opts.extra_matcher is not None: sink = graph_rewrite(sink, opts.extra_matcher)
  # stores that can never happen leave NOOPs: drop them from the sink
  return sink.replace(src=tuple(s for s in sink.src if s.op is not Ops.NOOP))

def full_rewrite(ast:UOp, opts:Renderer) -> list[UOp]:
  return linearize(full_rewrite_to_sink(ast, opts))
