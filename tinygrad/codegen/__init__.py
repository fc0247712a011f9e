# kernel AST -> linear program: lower views to index maths, simplify, decompose what the device lacks, add accumulators, order
from __future__ import annotations
import itertools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, UPat, graph_rewrite
from tinygrad.helpers import TRANSCENDENTAL
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

def full_rewrite_to_sink(ast:UOp, opts:Renderer|None=None) -> UOp:
  if opts is None: opts = Renderer()   # as in tinygrad: no renderer means the generic one (no device ops beyond the basics)
  from tinygrad.uop.symbolic import sym
  from tinygrad.codegen.decompositions import get_late_rewrite_patterns
  sink = lower_group_reduces(expand(lower(ast, opts), opts.vector_alu_lanes))
  sink = graph_rewrite(sink, sym + pm_cleanup_gates)
  # accumulators before the device rewrites, so acc + a*b can become one MULACC (and acc + WMMA the WMMA's own accumulate)
  sink = graph_rewrite(sink, pm_reduce_to_acc + pm_wmma_acc, itertools.count())
  supported = set(opts.code_for_op) if opts.code_for_op else set()
  sink = graph_rewrite(sink, sym + get_late_rewrite_patterns(supported, TRANSCENDENTAL >= 2))
  if opts.extra_matcher is not None: sink = graph_rewrite(sink, opts.extra_matcher)
  # stores that can never happen leave NOOPs: drop them from the sink
  return sink.replace(src=tuple(s for s in sink.src if s.op is not Ops.NOOP))

def full_rewrite(ast:UOp, opts:Renderer|None=None) -> list[UOp]:
  return linearize(full_rewrite_to_sink(ast, opts))
