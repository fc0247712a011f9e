# the codegen entry: optimize (heuristic, BEAM or given opts), lower, render. The engine asks here for a program and never imports opt.
from __future__ import annotations
import hashlib, json, pathlib, re
from typing import Any
from tinygrad.uop.ops import UOp, PatternMatcher
from tinygrad.device import Buffer
from tinygrad.helpers import DEBUG, NOOPT, BEAM, BEAM_MIN_WORK, IGNORE_BEAM_CACHE, IGNORE_OOB, getenv, prod, program_flags
from tinygrad.helpers import diskcache_get, diskcache_put
from tinygrad.renderer import Renderer, ProgramSpec, Estimates
from tinygrad.opt.kernel import Kernel, Opt, OptOps
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.opt.search import beam_search, _flatten
from tinygrad.codegen import to_program

def get_program(ast:UOp, renderer:Renderer, opts:list[Opt]|None=None, rawbufs:list[Buffer]|None=None) -> ProgramSpec:
  """Optimize, lower, render one kernel AST for a device. With BEAM>=1 the opts are searched for, timed on scratch copies of rawbufs
  (or of buffers sized from the ast); a kernel of fewer than BEAM_MIN_WORK loop iterations takes the heuristic's opts instead."""
  k = Kernel(ast, renderer)
  if opts is not None:
    for o in opts: k.apply_opt(o)
  elif BEAM >= 1 and not NOOPT and prod(s if isinstance(s, int) else s.vmax for s in k.full_shape) >= BEAM_MIN_WORK.value:
    k = beam_search(k, rawbufs, BEAM.value)
  elif not NOOPT:
    for o in hand_coded_optimizations(k): k.apply_opt(o)
  if DEBUG >= 3: print(f"{k.colored_shape()}  opts: {k.applied_opts}")
  return to_program(k.get_optimized_ast(), renderer, tuple(k.applied_opts), ast)

# ***** the program cache on disk: a kernel made before, in any process, is a lookup instead of an optimize + lower + render *****
# An entry is JSON (never pickle: reading the cache runs no code) with a checksum; one that fails to parse or check is a miss, and rebuilt.
# Kernels with symbolic sizes are not stored. The key holds everything that changes the program: the AST, the renderer and its state
# (device, measured capabilities), the flags codegen reads (helpers.PROGRAM_FLAGS, IGNORE_OOB, DISABLE_FAST_IDIV), the library's source.

_source_hash: str|None = None
def source_version() -> str:
  global _source_hash
  if _source_hash is None:
    h, root = hashlib.sha256(), pathlib.Path(__file__).resolve().parents[1]
    for f in sorted(root.rglob("*.py")): h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    _source_hash = h.hexdigest()
  return _source_hash

def _plain(x:Any) -> Any:
  # a text form that is the same in every process: sets and dicts sorted (hash order varies), code and matchers left to the source hash
  if isinstance(x, (set, frozenset)): return sorted(repr(_plain(v)) for v in x)
  if isinstance(x, dict): return sorted((repr(_plain(k)), repr(_plain(v))) for k, v in x.items())
  if isinstance(x, (list, tuple)): return [_plain(v) for v in x]
  if callable(x) or isinstance(x, PatternMatcher): return type(x).__name__
  return re.sub(" at 0x[0-9a-f]+", "", repr(x))

def renderer_key(renderer:Renderer) -> str:
  attrs = {}
  for name in dir(renderer):
    if name.startswith("__"): continue
    try: v = getattr(renderer, name)
    except Exception: continue
    if not callable(v): attrs[name] = _plain(v)
  return f"{type(renderer).__module__}.{type(renderer).__qualname__}{attrs}"

def program_key(ast:UOp, renderer:Renderer) -> tuple:
  ast_hash = hashlib.sha256("\n".join(repr(n) for n in _flatten(ast)).encode()).hexdigest()
  return (ast_hash, renderer_key(renderer), program_flags(), IGNORE_OOB.value, getenv("DISABLE_FAST_IDIV", 0), source_version())

def _use_cache() -> bool: return not (BEAM >= 1 and IGNORE_BEAM_CACHE)

def save_program(key:tuple, p:ProgramSpec) -> ProgramSpec:
  nums = [*(p.global_size or ()), *(p.local_size or ()), p.estimates.ops, p.estimates.lds, p.estimates.mem]
  if p.vars or not all(isinstance(x, int) for x in nums) or not isinstance(p.src, str) or not _use_cache(): return p
  body = json.dumps({"name": p.name, "src": p.src, "global_size": p.global_size, "local_size": p.local_size, "globals": p.globals,
                     "outs": p.outs, "ins": p.ins, "estimates": [p.estimates.ops, p.estimates.lds, p.estimates.mem],
                     "opts": [[o.op.name, o.axis, o.arg] for o in p.applied_opts]})
  diskcache_put("program", key, json.dumps({"sha256": hashlib.sha256(body.encode()).hexdigest(), "body": body}).encode(), prepickled=True)
  return p

def _ints(x:Any, n:int|None=None) -> list:
  if not isinstance(x, list) or not all(type(v) is int for v in x) or (n is not None and len(x) != n): raise ValueError(f"not {n} ints: {x}")
  return x

def load_program(key:tuple, ast:UOp, renderer:Renderer) -> ProgramSpec|None:
  if not _use_cache() or (raw := diskcache_get("program", key, raw=True)) is None: return None
  try:
    entry = json.loads(raw)
    if hashlib.sha256(entry["body"].encode()).hexdigest() != entry["sha256"]: return None
    b = json.loads(entry["body"])
    if not isinstance(b["name"], str) or not isinstance(b["src"], str): return None
    opts = tuple(Opt(OptOps[op], axis, tuple(arg) if isinstance(arg, list) else arg) for op, axis, arg in b["opts"])
    return ProgramSpec(b["name"], b["src"], renderer.device, ast, None, _ints(b["global_size"], 3),
                       None if b["local_size"] is None else _ints(b["local_size"], 3), [], _ints(b["globals"]), _ints(b["outs"]),
                       _ints(b["ins"]), Estimates(*_ints(b["estimates"], 3)), opts)
  except Exception: return None   # corrupt or from another layout: build again (and overwrite it)
