# the codegen entry: optimize (heuristic, BEAM or given opts), lower, render. The engine asks here for a program and never imports opt.
from __future__ import annotations
from tinygrad.uop.ops import UOp
from tinygrad.device import Buffer
from tinygrad.helpers import DEBUG, NOOPT, BEAM
from tinygrad.renderer import Renderer, ProgramSpec
from tinygrad.opt.kernel import Kernel, Opt
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.opt.search import beam_search
from tinygrad.codegen import to_program

def get_program(ast:UOp, renderer:Renderer, opts:list[Opt]|None=None, rawbufs:list[Buffer]|None=None) -> ProgramSpec:
  """Optimize, lower, render one kernel AST for a device. With BEAM>=1 the opts are searched for, timed on scratch copies of rawbufs
  (or of buffers sized from the ast)."""
  k = Kernel(ast, renderer)
  if opts is not None:
    for o in opts: k.apply_opt(o)
  elif BEAM >= 1 and not NOOPT: k = beam_search(k, rawbufs, BEAM.value)
  elif not NOOPT:
    for o in hand_coded_optimizations(k): k.apply_opt(o)
  if DEBUG >= 3: print(f"{k.colored_shape()}  opts: {k.applied_opts}")
  return to_program(k.get_optimized_ast(), renderer, tuple(k.applied_opts), ast)
