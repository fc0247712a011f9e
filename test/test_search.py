# BEAM search: every legal opt keeps a kernel's result, the search finds fast kernels, caches them, survives broken candidates
import ctypes, functools, os, pathlib, subprocess, sys, time
from dataclasses import replace
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, Device, TinyJit
from tinygrad.helpers import Context, dedup, prod
import tinygrad.helpers as helpers
from tinygrad.uop import Ops
from tinygrad.device import CompileError
from tinygrad.tensor import _to_np_dtype
from tinygrad.renderer import ProgramSpec
from tinygrad.engine import realize
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.opt.kernel import Kernel, Opt, OptOps, AxisType, KernelOptError
from tinygrad.opt import search
from tinygrad.codegen import program
from tinygrad.opt.search import beam_search, get_kernel_actions

@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
  # searches and compiles land in a throwaway cache, never in the user's; every search checks its candidates' results
  monkeypatch.setattr(helpers, "CACHEDB", str(tmp_path / "cache.db"))
  # the kernels here are small: BEAM searches them anyway (by default it leaves kernels under BEAM_MIN_WORK to the heuristic)
  with Context(BEAM_CHECK=1, BEAM_MIN_WORK=0): yield

def _device(name:str) -> str:
  try: Device[name]
  except Exception as e: pytest.skip(f"device {name} is not available: {e}")
  return name

# ***** the corpus: small kernels of every shape of loop nest *****

def _t(rng, shape, dev, dtype=np.float32) -> Tensor: return Tensor(rng.standard_normal(shape).astype(dtype), device=dev)

def conv_like(rng, dev):
  # out[c, i] = sum_k x[c, i+k] * w[k], the sliding window made of movement ops only
  c, k, n = 4, 3, 12
  x, w = _t(rng, (c, n+k-1), dev), _t(rng, (k,), dev)
  win = x.reshape(c, 1, n+k-1).expand(c, k, n+k-1).reshape(c, k*(n+k-1)).pad(((0, 0), (0, k))).reshape(c, k, n+k).shrink(((0, c), (0, k), (0, n)))
  return [(win * w.reshape(1, k, 1)).sum(1)]

def softmax_pieces(rng, dev):
  x = _t(rng, (6, 10), dev)
  e = (x - x.max(1, keepdim=True)).exp()
  return [e / e.sum(1, keepdim=True)]

def layernorm_rows(rng, dev):
  # a row kernel on CPU: the variance's loop reads the mean's, the output loop reads both (grouper.row_reduce)
  x = _t(rng, (6, 12), dev)
  m = x - x.mean(1, keepdim=True)
  return [m * ((m * m).mean(1, keepdim=True) + 1e-5).rsqrt()]

def gather(rng, dev):
  table = _t(rng, (10, 8), dev)
  idx = Tensor(rng.integers(0, 10, (6,)).astype(np.int32), device=dev)
  return [(Tensor.arange(10, device=dev).reshape(1, 10, 1) == idx.reshape(6, 1, 1)).where(table.reshape(1, 10, 8), 0).sum(1)]

CORPUS = {
  "elementwise": lambda rng, dev: [(_t(rng, (8, 12), dev) * _t(rng, (8, 12), dev) + 1).relu()],
  "broadcast_int": lambda rng, dev: [Tensor(rng.integers(-50, 50, (6, 8)).astype(np.int32), device=dev) * Tensor.arange(8, device=dev) + 3],
  "reduce_axis0": lambda rng, dev: [_t(rng, (6, 4, 8), dev).sum(0)],
  "reduce_axis1": lambda rng, dev: [_t(rng, (6, 4, 8), dev).sum(1)],
  "reduce_axis2": lambda rng, dev: [_t(rng, (6, 4, 8), dev).max(2)],
  "matmul": lambda rng, dev: [_t(rng, (16, 16), dev) @ _t(rng, (16, 16), dev)],
  "conv_like": conv_like,
  "softmax_pieces": softmax_pieces,
  "layernorm_rows": layernorm_rows,
  "gather": gather,
  # CPU: the row sum's loop stores the exps into the output, which the output loop scales (two stores); cross entropy: a row kernel reduced again
  "softmax_rows": lambda rng, dev: [_t(rng, (4, 48), dev).softmax(-1)],
  "cross_entropy": lambda rng, dev: [_t(rng, (8, 24), dev).cross_entropy(Tensor(rng.integers(0, 24, (8,)).astype(np.int32), device=dev))],
  # odd sizes: nothing divides them until PADTO rounds them up
  "matmul_odd": lambda rng, dev: [_t(rng, (7, 13), dev) @ _t(rng, (13, 11), dev)],
  "sum_odd": lambda rng, dev: [_t(rng, (5, 13), dev).sum(1)],
}

@functools.cache
def corpus_kernels(name:str, dev:str) -> list[tuple]:
  """(ast, bufs, reference outputs) for every kernel of the entry's schedule; earlier kernels run (unoptimized) to fill later ones' inputs."""
  with Context(NOOPT=1):
    outs = CORPUS[name](np.random.default_rng(0), dev)
    ret = []
    for si in Tensor.schedule(*outs):
      if si.ast.op is not Ops.SINK: continue
      bufs = [b.ensure_allocated() for b in si.bufs]
      ret.append((si.ast, bufs, run(CompiledRunner(get_program(si.ast, Device[dev].renderer, [])), si.ast, bufs)))
  return ret

def run(prg:CompiledRunner, ast, bufs) -> list[np.ndarray]:
  outs = [u.src[0].arg for u in ast.src if u.op is Ops.STORE]
  # poisoned outputs: an element the kernel forgets to write shows up as nan (or -1)
  for i in outs: bufs[i].copyin(memoryview(b"\xff" * bufs[i].nbytes))
  prg([bufs[i] for i in prg.p.globals], {}, wait=True)
  return [np.frombuffer(bufs[i].as_buffer(), dtype=_to_np_dtype(bufs[i].dtype)).copy() for i in outs]

def compile_batch(progs:list[ProgramSpec], dev:str) -> list[CompiledRunner]:
  # one clang call for many kernels (renamed apart) keeps the suite fast; a prelude that isn't typedefs compiles alone
  if dev != "CPU": return [CompiledRunner(p) for p in progs]
  pre: list[str] = []
  bodies: list[str] = []
  named: list[ProgramSpec] = []
  for i, p in enumerate(progs):
    at = p.src.index(f"void {p.name}(")
    pre += [ln for ln in p.src[:at].splitlines() if ln.strip()]
    bodies.append(p.src[at:].replace(f"void {p.name}(", f"void {p.name}_b{i}(", 1))
    named.append(replace(p, name=f"{p.name}_b{i}"))
  if not all(ln.startswith("typedef ") for ln in pre): return [CompiledRunner(p) for p in progs]
  lib = Device["CPU"].compiler.compile_cached("\n".join(dedup(pre) + bodies))
  return [CompiledRunner(p, precompiled=lib) for p in named]

def check_opts(name:str, dev:str, kernel_opts:list[tuple[int, list[Opt]]]):
  kernels = corpus_kernels(name, dev)
  renderer = Device[dev].renderer
  progs = [get_program(kernels[ki][0], renderer, opts) for ki, opts in kernel_opts]
  for (ki, opts), prg in zip(kernel_opts, compile_batch(progs, dev)):
    ast, bufs, ref = kernels[ki]
    for got, want in zip(run(prg, ast, bufs), ref):
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} kernel {ki} on {dev} with {opts}")

# ***** every legal action, and random legal sequences, keep the result *****

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("name", list(CORPUS))
def test_every_action(name, dev):
  _device(dev)
  todo = []
  for ki, (ast, _, _) in enumerate(corpus_kernels(name, dev)):
    acts = get_kernel_actions(Kernel(ast, Device[dev].renderer), include_0=False)
    assert acts, f"no legal action for {name} kernel {ki}"
    todo += [(ki, list(k.applied_opts)) for k in acts.values()]
  check_opts(name, dev, todo)

def _draw_sequence(data, name:str, dev:str) -> tuple[int, list[Opt]]:
  kernels = corpus_kernels(name, dev)
  ki = data.draw(st.integers(0, len(kernels)-1), label="kernel")
  k = Kernel(kernels[ki][0], Device[dev].renderer)
  for _ in range(data.draw(st.integers(1, 4), label="length")):
    if not (acts := get_kernel_actions(k, include_0=False)): break
    # the few PADTO/SWAP/NOLOCALS/BLOCK/PREFETCH actions would be drawn rarely among a hundred splits: half the draws pick among them
    new = [i for i, a in acts.items() if a.applied_opts[-1].op in (OptOps.PADTO, OptOps.SWAP, OptOps.NOLOCALS, OptOps.BLOCK, OptOps.PREFETCH)]
    k = acts[data.draw(st.sampled_from(new if new and data.draw(st.booleans(), label="new op") else sorted(acts)), label="action")]
  return ki, list(k.applied_opts)

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_sequences_cpu(data):
  _device("CPU")
  # a batch of sequences per example: one compile for all of them
  for name in data.draw(st.lists(st.sampled_from(list(CORPUS)), min_size=3, max_size=3), label="kernels"):
    check_opts(name, "CPU", [_draw_sequence(data, name, "CPU") for _ in range(2)])

@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_sequences_python(data):
  _device("PYTHON")
  name = data.draw(st.sampled_from(list(CORPUS)), label="name")
  check_opts(name, "PYTHON", [_draw_sequence(data, name, "PYTHON")])

# ***** get_kernel_actions *****

def test_kernel_actions_limits():
  ast = corpus_kernels("matmul", "CPU")[0][0]
  k = Kernel(ast, Device["CPU"].renderer)
  acts = get_kernel_actions(k)
  assert acts[0] is k and all(i == 0 or search.actions[i-1] == a.applied_opts[-1] for i, a in acts.items())
  states = [search._state(a) for a in acts.values()]
  assert len(states) == len(set(states)), "duplicate kernels"
  assert not any(a.applied_opts for a in get_kernel_actions(k, include_0=True).values() if a is k)
  with Context(BEAM_UPCAST_MAX=4):
    two = [k2 for k1 in get_kernel_actions(k, include_0=False).values() for k2 in get_kernel_actions(k1, include_0=False).values()]
    # vector code may hold a register's worth more lanes (the limit is per 256-bit register)
    r = Device["CPU"].renderer
    assert two and all(x.upcast_size <= 4 * (max(1, r.simd_bytes // 32) if r.vector_alu_lanes else 1) for x in two)
  # the CPU has no workgroups: no LOCAL, and at most one THREAD split
  assert not any(a.axes_of(AxisType.LOCAL) for a in acts.values())
  assert all(len(x.axes_of(AxisType.THREAD)) <= 1 for x in two)

# ***** PADTO, SWAP, NOLOCALS *****

def _kernel(name:str, dev:str, ki:int=0) -> Kernel: return Kernel(corpus_kernels(name, dev)[ki][0], Device[dev].renderer)

def _raises(k:Kernel, opt:Opt, reason:str):
  with pytest.raises(KernelOptError, match=f"{opt.op}.*{reason}"): k.copy().apply_opt(opt)

def test_new_opts_are_actions():
  kinds = {a.applied_opts[-1].op for a in get_kernel_actions(_kernel("matmul_odd", "CPU"), include_0=False).values()}
  assert {OptOps.PADTO, OptOps.SWAP} <= kinds and OptOps.NOLOCALS not in kinds
  assert OptOps.NOLOCALS in {a.applied_opts[-1].op for a in get_kernel_actions(_kernel("matmul_odd", _device("PYTHON")), include_0=False).values()}

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_padto_then_split(dev):
  _device(dev)
  k = _kernel("matmul_odd", dev)
  assert k.full_shape == (7, 11, 13) and k.axis_types == [AxisType.GLOBAL, AxisType.GLOBAL, AxisType.REDUCE]
  _raises(k, Opt(OptOps.UPCAST, 0, 4), "divide")
  _raises(k, Opt(OptOps.UNROLL, 0, 4), "divide")
  k.apply_opt(Opt(OptOps.PADTO, 0, 8))
  k.apply_opt(Opt(OptOps.PADTO, 2, 16))
  k.apply_opt(Opt(OptOps.PADTO, 1, 4))
  assert k.full_shape == (8, 12, 16)
  for o in (Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 1, 4), Opt(OptOps.UNROLL, 0, 4)): k.apply_opt(o)
  k2 = k.copy()
  assert k2.applied_opts == k.applied_opts and k2.full_shape == k.full_shape
  check_opts("matmul_odd", dev, [(0, k.applied_opts), (0, [Opt(OptOps.PADTO, 2, 16), Opt(OptOps.UNROLL, 0, 16)])])
  check_opts("sum_odd", dev, [(0, [Opt(OptOps.PADTO, 1, 16), Opt(OptOps.PADTO, 0, 8), Opt(OptOps.UNROLL, 0, 8), Opt(OptOps.UPCAST, 0, 8)])])

def _odd_kernel(f) -> Kernel:
  # ROW_FUSE=0: the max of (x + max).sum(1) is its own kernel, read back through a load (a row kernel computes it in the loop instead)
  with Context(NOOPT=1, ROW_FUSE=0):
    out = f(Tensor(np.random.default_rng(1).standard_normal((5, 13)).astype(np.float32)))
    ast = [si.ast for si in out.schedule() if si.ast.op is Ops.SINK][-1]
  return Kernel(ast, Device["CPU"].renderer)

def test_padto_refused():
  k = _kernel("matmul_odd", "CPU")
  _raises(k, Opt(OptOps.PADTO, 0, 32), "more than doubles")
  _raises(k, Opt(OptOps.PADTO, 0, 7), "already a multiple")
  _raises(k, Opt(OptOps.PADTO, 0, 1), "int > 1")
  _raises(k, Opt(OptOps.PADTO, 3, 8), "out of range")
  k.apply_opt(Opt(OptOps.PADTO, 0, 8))
  k.apply_opt(Opt(OptOps.UPCAST, 0, 4))
  _raises(k, Opt(OptOps.PADTO, 3, 8), "only global and reduce axes pad, axis 3 is UPCAST")
  # a padded 0 must add nothing: a max reduce, and exp(0) = 1, refuse
  # (x + m).sum(1) pads: m's load is expanded along the reduce axis, so it reads 0 in the padding too
  for f in (lambda x: x.sum(1), lambda x: (x + x.max(1, keepdim=True)).sum(1)): _odd_kernel(f).apply_opt(Opt(OptOps.PADTO, 1, 16))
  for f in (lambda x: x.max(1), lambda x: x.exp().sum(1), lambda x: (1 / x).sum(1)):
    k = _odd_kernel(f)
    assert k.axis_types[-1] is AxisType.REDUCE and k.full_shape[-1] == 13
    _raises(k, Opt(OptOps.PADTO, k.shape_len-1, 16), "0 in the padding")
    k.apply_opt(Opt(OptOps.PADTO, 0, 8))   # a global axis always pads: its padding is never stored

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_swap(dev):
  _device(dev)
  k = _kernel("matmul_odd", dev)
  _raises(k, Opt(OptOps.SWAP, 0, 2), "doesn't name a global axis")
  _raises(k, Opt(OptOps.SWAP, 1, 1), "itself")
  _raises(k, Opt(OptOps.SWAP, 0, None), "doesn't name a global axis")
  _raises(_kernel("sum_odd", dev), Opt(OptOps.SWAP, 0, 1), "doesn't name a global axis")   # axis 1 is the reduce
  k2 = k.copy()
  k2.apply_opt(Opt(OptOps.SWAP, 0, 1))
  assert k2.full_shape == (11, 7, 13) and k.full_shape == (7, 11, 13) and k2.applied_opts == [Opt(OptOps.SWAP, 0, 1)]
  # the swap survives later opts (their axes sort stably), and the loops nest the other way round
  k2.apply_opt(Opt(OptOps.UPCAST, 0, 11))
  assert k2.full_shape == (1, 7, 13, 11)
  renderer = Device[dev].renderer
  assert get_program(k.ast, renderer, []).src != get_program(k.ast, renderer, [Opt(OptOps.SWAP, 0, 1)]).src
  check_opts("matmul_odd", dev, [(0, [Opt(OptOps.SWAP, 0, 1)]), (0, [Opt(OptOps.SWAP, 1, 0), Opt(OptOps.UPCAST, 0, 11)])])

def test_nolocals():
  k = _kernel("matmul_odd", _device("PYTHON"))
  assert k.opts.has_local
  k2 = k.copy()
  k2.apply_opt(Opt(OptOps.NOLOCALS))
  k3 = k2.copy()
  assert k3.dont_use_locals and not k.dont_use_locals and k3.applied_opts == [Opt(OptOps.NOLOCALS)]
  for o in (Opt(OptOps.LOCAL, 0, 7), Opt(OptOps.GROUP, 0, 13), Opt(OptOps.GROUPTOP, 0, 13)): _raises(k3, o, "NOLOCALS")
  _raises(k3, Opt(OptOps.NOLOCALS), "already applied")
  k3.apply_opt(Opt(OptOps.UPCAST, 0, 7))   # the other opts still apply
  k.apply_opt(Opt(OptOps.LOCAL, 0, 7))
  _raises(k, Opt(OptOps.NOLOCALS), "already has local dims")
  # the CPU has no workgroups anyway: a legal marker
  k4 = _kernel("matmul_odd", "CPU")
  k4.apply_opt(Opt(OptOps.NOLOCALS))
  check_opts("matmul_odd", "PYTHON", [(0, [Opt(OptOps.NOLOCALS), Opt(OptOps.UPCAST, 0, 7)])])

# ***** beam_search *****

# (the search starts from the heuristic's kernel: SWAP and BLOCK still apply to its register tile)
SMALL_ACTIONS = [Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UPCAST, 1, 4), Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UNROLL, 0, 4),
                 Opt(OptOps.THREAD, 0, 2), Opt(OptOps.SWAP, 0, 1), Opt(OptOps.BLOCK, 1, 2)]

@pytest.fixture
def small_search(monkeypatch):
  # the full action list is right for real use, but each CPU compile costs a clang run: a handful keeps the search mechanics and the suite fast
  monkeypatch.setattr(search, "actions", SMALL_ACTIONS)

def matmul_item(n:int, seed:int=0):
  rng = np.random.default_rng(seed)
  a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
  si = (Tensor(a) @ Tensor(b)).schedule()[-1]
  return si, [x.ensure_allocated() for x in si.bufs], a @ b

def test_beam_matmul_correct_cached(small_search):
  _device("CPU")
  si, bufs, want = matmul_item(64)
  renderer = Device["CPU"].renderer
  with Context(BEAM_CHECK=1, PARALLEL=0):
    k = beam_search(Kernel(si.ast, renderer), bufs, 2)
  stats = search.last_stats
  assert not stats.cache_hit and stats.candidates > 0 and stats.timed > 0 and stats.failures == 0
  # which kernel wins is a timing (the unoptimized start may, on a loaded machine): only that one was timed and is right is asserted
  assert 0 < stats.best_time < float('inf') and 0 < stats.start_time < float('inf')
  best = CompiledRunner(get_program(si.ast, renderer, k.applied_opts))
  np.testing.assert_allclose(run(best, si.ast, bufs)[0].reshape(64, 64), want, rtol=1e-4, atol=1e-4)
  # the second search of the same kernel is a cache lookup
  k2 = beam_search(Kernel(si.ast, renderer), bufs, 2)
  assert search.last_stats.cache_hit and search.last_stats.candidates == 0
  assert k2.applied_opts == k.applied_opts
  # another width is another entry; IGNORE_BEAM_CACHE searches again
  with Context(IGNORE_BEAM_CACHE=1, PARALLEL=0):
    beam_search(Kernel(si.ast, renderer), bufs, 2)
  assert not search.last_stats.cache_hit and search.last_stats.candidates > 0

def test_beam_never_writes_user_buffers(small_search):
  _device("CPU")
  si, bufs, _ = matmul_item(16, seed=1)
  before = [bytes(b.as_buffer()) for b in bufs]
  with Context(IGNORE_BEAM_CACHE=1, PARALLEL=0): beam_search(Kernel(si.ast, Device["CPU"].renderer), bufs, 2)
  assert [bytes(b.as_buffer()) for b in bufs] == before

def test_beam_broken_candidates_are_skipped_and_counted(small_search, monkeypatch):
  _device("CPU")
  si, bufs, want = matmul_item(32, seed=2)
  comp = Device["CPU"].compiler
  real_compile = comp.compile
  def flaky_compile(src:str) -> bytes:
    # every kernel with 16 accumulator lanes or more (scalars or one vector)
    if "acc15 " in src or "float16 acc" in src: raise CompileError("injected failure")
    return real_compile(src)
  real_program = search._program
  def flaky_program(p, lib, device):
    prg = real_program(p, lib, device)
    def call(*bufs, **kw):
      if any(o.op is OptOps.THREAD for o in p.applied_opts): raise RuntimeError("injected crash")
      ret = prg(*bufs, **kw)
      if any(o.op is OptOps.UNROLL for o in p.applied_opts): ctypes.memset(bufs[0], 0, ctypes.sizeof(bufs[0]))   # wrong answers
      return ret
    return call
  # (patched on the class, in a context of its own: an instance attribute would outlive undo() as the bound method it replaced, and
  # shadow later tests' patches of the class; undo() would also drop the private cache)
  with monkeypatch.context() as mp, Context(IGNORE_BEAM_CACHE=1, BEAM_CHECK=1, PARALLEL=0):
    mp.setattr(type(comp), "compile", lambda self, src: flaky_compile(src))
    mp.setattr(search, "_program", flaky_program)
    k = beam_search(Kernel(si.ast, Device["CPU"].renderer), bufs, 3)
  stats = search.last_stats
  assert stats.compile_errors > 0 and stats.run_errors > 0 and stats.mismatches > 0, stats
  assert "compile" not in vars(comp)
  prg = CompiledRunner(get_program(si.ast, Device["CPU"].renderer, k.applied_opts))
  assert k.applied_opts and "acc15 " not in prg.p.src and "float16 acc" not in prg.p.src and not any(o.op in (OptOps.THREAD, OptOps.UNROLL) for o in k.applied_opts)
  np.testing.assert_allclose(run(prg, si.ast, bufs)[0].reshape(32, 32), want, rtol=1e-4, atol=1e-4)

def test_parallel_compile_pool():
  _device("CPU")
  si, _, _ = matmul_item(16, seed=3)
  k = Kernel(si.ast, Device["CPU"].renderer)
  cands = list(get_kernel_actions(k, include_0=False).values())[:3]
  bad = k.copy()
  bad.applied_opts = [Opt(OptOps.UPCAST, 5, 4)]   # illegal: it fails in the worker, and is counted there
  stats = search.BeamStats()
  with Context(PARALLEL=2):
    got = search._compile_all(cands + [bad], "CPU", time.perf_counter() + 60, stats, False)
  assert sorted(got) == [0, 1, 2] and stats.compile_errors == 1
  assert all(got[i][0].ast is cands[i].ast and got[i][1] for i in got)

def test_beam_timeout_returns_a_kernel(small_search):
  _device("CPU")
  si, bufs, _ = matmul_item(16, seed=4)
  with Context(IGNORE_BEAM_CACHE=1, PARALLEL=0, BEAM_TIMEOUT_SEC=0.0):
    k = beam_search(Kernel(si.ast, Device["CPU"].renderer), bufs, 2)
  # out of time before any candidate: the start, the faster of the bare kernel (timed for BEAM_CHECK's reference) and the heuristic's
  assert k.applied_opts in ([], hand_coded_optimizations(Kernel(si.ast, Device["CPU"].renderer))) and search.last_stats.timed == 0

# ***** through the whole stack *****

def test_beam_env_end_to_end(small_search, monkeypatch):
  _device("CPU")
  calls = []
  real = search.beam_search
  monkeypatch.setattr(program, "beam_search", lambda *a, **kw: calls.append(a[2]) or real(*a, **kw))
  rng = np.random.default_rng(5)
  a, b = rng.standard_normal((16, 24)).astype(np.float32), rng.standard_normal((24, 8)).astype(np.float32)
  with Context(BEAM=2):
    got = (Tensor(a) @ Tensor(b)).numpy()
  np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
  assert calls == [2]
  assert any(key[3][0] == 2 for key in realize.method_cache)   # the flags in the key, BEAM first

def test_jitbeam_searches_the_captured_kernels(monkeypatch):
  _device("CPU")
  calls = []
  monkeypatch.setattr(program, "beam_search", lambda k, rawbufs, amt, **kw: calls.append(amt) or k)
  @TinyJit
  def f(x:Tensor, y:Tensor) -> Tensor: return (x * y + 7).sum(1)
  rng = np.random.default_rng(6)
  with Context(JITBEAM=3):
    for i in range(4):
      x, y = rng.standard_normal((5, 11)).astype(np.float32), rng.standard_normal((5, 11)).astype(np.float32)
      np.testing.assert_allclose(f(Tensor(x), Tensor(y)).numpy(), (x * y + 7).sum(1), rtol=1e-5, atol=1e-5)
      if i == 0: assert calls == [], "the first (uncaptured) call isn't searched"
  assert calls and all(a == 3 for a in calls)

def test_beam_python_device_locals_and_test_size(small_search, monkeypatch, capsys):
  _device("PYTHON")
  # the emulator has workgroups: LOCAL joins the moves, and a big grid is timed on a slice of it
  monkeypatch.setattr(search, "local_actions", [Opt(OptOps.LOCAL, 0, 4), Opt(OptOps.LOCAL, 1, 4), Opt(OptOps.GROUP, 0, 4)])
  rng = np.random.default_rng(7)
  a, b = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal((8, 16)).astype(np.float32)
  si = (Tensor(a, device="PYTHON") @ Tensor(b, device="PYTHON")).schedule()[-1]
  renderer = Device["PYTHON"].renderer
  kinds = {a.applied_opts[-1].op for a in get_kernel_actions(Kernel(si.ast, renderer), include_0=False).values()}
  assert {OptOps.LOCAL, OptOps.GROUP} <= kinds and OptOps.THREAD not in kinds
  with Context(BEAM_CHECK=1, PARALLEL=0, BEAM_TEST_GLOBAL=16, DEBUG=2, BEAM_PROGRESS=1):
    k = beam_search(Kernel(si.ast, renderer), list(si.bufs), 2)
  assert search.last_stats.timed > 0 and search.last_stats.failures == 0 and "beam round" in capsys.readouterr().out
  bufs = [x.ensure_allocated() for x in si.bufs]
  np.testing.assert_allclose(run(CompiledRunner(get_program(si.ast, renderer, k.applied_opts)), si.ast, bufs)[0].reshape(16, 16), a @ b,
                             rtol=1e-5, atol=1e-5)

def test_workers_never_rerun_the_users_script(tmp_path):
  _device("CPU")
  # spawn/forkserver workers import the parent's __main__: a script without a main guard must still run once, not once per worker
  script = tmp_path / "script.py"
  script.write_text("from tinygrad import Tensor\nprint('RUN', flush=True)\nprint((Tensor([[1.0, 2.0, 3.0, 4.0]] * 8) * 2).sum(1).max().tolist())\n")
  env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1]), "BEAM": "1", "PARALLEL": "2", "BEAM_UPCAST_MAX": "2", "BEAM_MIN_WORK": "0",
         "CACHEDB": str(tmp_path / "cache.db"), "BEAM_TIMEOUT_SEC": "20"}
  ret = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
  assert ret.returncode == 0, ret.stderr
  assert ret.stdout.split() == ["RUN", "20.0"], ret.stdout + ret.stderr

# ***** the playoff: a lucky screening run never replaces the heuristic's kernel *****

class _FakeBench:
  """Times 'programs' (names here) from a table of run times, and counts the runs."""
  def __init__(self, times:dict[str, list[float]]): self.times, self.runs = {k: list(v) for k, v in times.items()}, []
  def time(self, p, lib, early_stop, runs=3):
    self.runs.append(p)
    return self.times[p].pop(0), ""

def _entry(name:str, screened:float): return (Kernel.__new__(Kernel), screened, (name, b""))

def test_playoff_keeps_start_unless_really_faster(monkeypatch):
  monkeypatch.setattr(search, "PLAYOFF_SECONDS", 1e9)   # every round runs: the fake times are the whole story
  start, lucky, better = _entry("start", 10.0), _entry("lucky", 5.0), _entry("better", 6.0)
  times = {"start": [10.0, 9.0, 9.5, 9.2, 9.1, 9.3, 9.4], "lucky": [9.6, 9.05, 9.4, 9.3, 9.2, 9.5, 9.3], "better": [8.0, 7.5, 7.9, 7.7, 7.6, 7.8, 8.1]}
  # "lucky" was screened at 5.0 but really runs as fast as the start: the start stays, after interleaved reruns of both
  bench = _FakeBench(times)
  k, t = search._playoff(bench, [lucky], start)   # type: ignore[arg-type]
  assert k is start[0] and t == 9.0 and bench.runs[:4] == ["start", "lucky", "start", "lucky"] and len(bench.runs) == 2 * search.PLAYOFF_ROUNDS
  # a finalist clearly faster in the reruns wins, with its best rerun time
  bench = _FakeBench(times)
  k, t = search._playoff(bench, [lucky, better], start)   # type: ignore[arg-type]
  assert k is better[0] and t == 7.5
  # one lucky run (or a slow spell in the start's runs) doesn't make a winner: the rounds' ratios are compared, not the best runs
  bench = _FakeBench({"start": [10.0, 14.0, 10.1, 9.9, 10.0, 10.2, 10.0], "lucky": [7.0, 10.2, 10.0, 10.1, 10.3, 10.0, 10.1]})
  k, _ = search._playoff(bench, [lucky], start)   # type: ignore[arg-type]
  assert k is start[0]
  # a machine that slows down halfway slows both kernels of a round: a kernel 10% faster in every round wins
  bench = _FakeBench({"start": [10.0, 10.0, 10.0, 15.0, 15.0, 15.0, 15.0], "better": [9.0, 9.0, 9.0, 13.5, 13.5, 13.5, 13.5]})
  assert search._playoff(bench, [better], start)[0] is better[0]   # type: ignore[arg-type]
  # nothing to compare: the beam is the start (no round gained), no reruns
  bench = _FakeBench({})
  assert search._playoff(bench, [start], start) == (start[0], 10.0) and bench.runs == []   # type: ignore[arg-type]

def _scripted_search(monkeypatch, timeout:float) -> tuple[search.BeamStats, list[tuple[float, int]]]:
  """A beam search of a GEMM whose compiles are free and whose runs are scripted: the start (the heuristic's kernel) runs 1.0 s, every
  other kernel 0.9 s, and each run advances a fake clock by its time. Round 1 gains 10% (confirmed side by side), so round 2 follows if it
  fits. Returns the stats and (clock, kernels) of each batch sent to compile: the start, then each round."""
  clock, batches = [0.0], []
  def fake_compile_iter(kernels, device, deadline, st, show):
    batches.append((clock[0], len(kernels)))
    for i, k in enumerate(kernels): yield i, k, b""
  class FakeBench:
    def __init__(self, *args): self.start = None
    def set_reference(self): pass
    def time(self, p, lib, early_stop, runs=3):
      if self.start is None: self.start = p
      clock[0] += (tm := 1.0 if p is self.start else 0.9)
      return tm, ""
  monkeypatch.setattr(search, "_compile_iter", fake_compile_iter)
  monkeypatch.setattr(search, "_Bench", FakeBench)
  monkeypatch.setattr(search, "time", type("FakeTime", (), {"perf_counter": staticmethod(lambda: clock[0])}))
  si, _, _ = matmul_item(64)
  with Context(IGNORE_BEAM_CACHE=1, BEAM_CHECK=0, BEAM_TIMEOUT_SEC=timeout): beam_search(Kernel(si.ast, Device["CPU"].renderer), None, 2)
  return search.last_stats, batches

def test_round_not_started_past_the_deadline(monkeypatch):
  _device("CPU")
  free, batches = _scripted_search(monkeypatch, 1e6)
  assert len(batches) >= 3 and free.timeouts == 0 and free.best_time == 0.9, batches
  (_, n1), (t2, n2) = batches[1], batches[2]
  # a deadline halfway through round 2 (at round 1's pace of 0.9 s a kernel): round 2 isn't started (before, it ran into the deadline and
  # its compiles were wasted as timeouts), and the search keeps round 1's winner
  tight, _ = _scripted_search(monkeypatch, t2 + 0.9 * n2 / 2)
  assert tight.candidates == n1 and tight.timeouts == 0 and tight.best_time == 0.9, tight

def test_speedup_is_the_median_of_paired_ratios():
  assert search._speedup([10.0, 20.0, 10.0], [5.0, 10.0, 10.0]) == 2.0
  assert search._speedup([10.0, 10.0, 10.0], [1.0, 10.0, 11.0]) == 1.0
  assert search._speedup([], []) == 0.0

def test_cpu_program_reports_cpu_time():
  _device("CPU")
  # the time a CPU kernel reports is the busiest thread's CPU time: never more than the wall time around the call, one thread or two
  si, bufs, want = matmul_item(128, seed=8)
  renderer = Device["CPU"].renderer
  for opts in ([], [Opt(OptOps.THREAD, 0, 2)]):
    prg = CompiledRunner(get_program(si.ast, renderer, opts))
    st = time.perf_counter()
    tm = prg([bufs[i] for i in prg.p.globals], {}, wait=True)
    wall = time.perf_counter() - st
    assert tm is not None and 0 < tm <= wall, (opts, tm, wall)
    np.testing.assert_allclose(np.frombuffer(bufs[0].as_buffer(), dtype=np.float32).reshape(128, 128), want, rtol=1e-4, atol=1e-4)

# ***** the first round: the heuristic's tile and blocks at other sizes; no tile that spills registers *****

def _avx512_renderer():
  import copy
  from tinygrad.runtime.support.cpu_model import PROFILES
  ren = copy.copy(Device[_device("CPU")].renderer)
  ren.machine, ren.simd_bytes = PROFILES["avx512-2fma"], 64   # 32 registers of 16 floats, whatever this host is
  return ren

def test_variants_and_spills():
  si, bufs, want = matmul_item(128, seed=9)
  k = Kernel(si.ast, _avx512_renderer())
  tile = [Opt(OptOps.UPCAST, 1, 32), Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UNROLL, 0, 2)]
  k8 = k.copy()
  for o in tile: k8.apply_opt(o)
  assert not search._spills(k8)   # 8 rows x 2 registers: 16 accumulators
  k16 = k8.copy()
  k16.apply_opt(Opt(OptOps.UPCAST, 0, 2))
  assert search._spills(k16)      # 16 x 2 = 32 accumulators: no room left for the loaded row
  assert not any(a.applied_opts[-1] == Opt(OptOps.UPCAST, 0, 2) for a in get_kernel_actions(k8, include_0=False).values())
  variants = search._variants(k, tile)
  got = sorted(tuple((o.op, o.arg) for o in v.applied_opts) for v in variants)
  # each changes one amount: lanes 16 (64 would be 8 x 4 = 32 accumulators: spills), rows 4 (16 spills), unroll off or 4; a tile halved
  # along one axis also comes doubled along the innermost broadcast axis (the columns): 8 x 2x16 lanes, and 4 rows x 64 lanes
  u, r = OptOps.UPCAST, OptOps.UNROLL
  assert got == sorted([((u, 16), (u, 8), (r, 2)), ((u, 16), (u, 8), (r, 2), (u, 2)), ((u, 32), (u, 4), (r, 2)), ((u, 32), (u, 4), (r, 2), (u, 2)),
                        ((u, 32), (u, 8)), ((u, 32), (u, 8), (r, 4))]), got
  assert any(v.applied_opts[-1] == Opt(u, 1, 2) and prod(v.full_shape[a] for a in v.axes_of(AxisType.UPCAST)) == 4 * 64 for v in variants)
  # and every one computes the product
  for v in variants:
    prg = CompiledRunner(get_program(si.ast, Device["CPU"].renderer, v.applied_opts))
    np.testing.assert_allclose(run(prg, si.ast, bufs)[0].reshape(128, 128), want, rtol=1e-4, atol=1e-4)

def test_prefetch_distance_variants_and_actions():
  # a prefetch ahead in the reduce loop comes at half and twice the distance, and not at all; the actions offer it on the inputs, and a
  # prefetch makes another kernel (not a duplicate of the one without)
  si, bufs, want = matmul_item(128, seed=3)
  k, b = Kernel(si.ast, _avx512_renderer()), _streamed_input(si.ast)
  tile = [Opt(OptOps.UPCAST, 1, 32), Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UNROLL, 0, 2), Opt(OptOps.PREFETCH, None, (b, 8))]
  got = {v.applied_opts[-1] for v in search._variants(k, tile) if v.applied_opts[:3] == tile[:3]}
  assert {Opt(OptOps.PREFETCH, None, (b, 4)), Opt(OptOps.PREFETCH, None, (b, 16)), tile[2]} <= got, got
  acts = get_kernel_actions(k, include_0=False)
  assert {a.applied_opts[-1].arg for a in acts.values() if a.applied_opts[-1].op is OptOps.PREFETCH} >= {(b, 4), (b, 8), (b, 16)}
  for v in [v for v in acts.values() if v.applied_opts[-1].op is OptOps.PREFETCH][:2] + search._variants(k, tile):
    prg = CompiledRunner(get_program(si.ast, Device["CPU"].renderer, v.applied_opts))
    np.testing.assert_allclose(run(prg, si.ast, bufs)[0].reshape(128, 128), want, rtol=1e-4, atol=1e-4)
  with pytest.raises(KernelOptError, match="distance"): k.copy().apply_opt(Opt(OptOps.PREFETCH, None, (b, 0)))

def _streamed_input(ast) -> int:
  # the input a matmul's reduce walks a row at a time (B, row-major): its stride on the reduce axis is not 0 or 1
  return next(u.src[0].arg for u in ast.toposort() if u.op is Ops.LOAD and u.src[1].arg.real_strides()[-1] not in (0, 1))
