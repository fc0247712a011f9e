# Ops.PREFETCH, the cache hint for a late ResNet conv's weight panels: which kernels the heuristic gives it (OptOps.PREFETCH: one operand over
# half of L2 streamed past small ones), how the C and LLVM renderers print it and the rest drop it, that every prefetched address is inside
# its buffer (IGNORE_OOB=0 proves it, the PYTHON emulator checks each one it runs), and that the results still match torch on CPU, LLVM and
# PYTHON, with and without threads
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device, Context
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.opt.kernel import Kernel, Opt, OptOps, KernelOptError
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.codegen import full_rewrite, to_program
from tinygrad.runtime.support.cpu_model import PROFILES
from tinygrad.runtime.ops_python import PythonRenderer, PythonProgram, PythonCompiler
from tinygrad.renderer.cstyle import ClangRenderer, CUDARenderer, OpenCLRenderer, MetalRenderer
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.renderer.wgsl import WGSLRenderer
from tinygrad.renderer.llvmir import AMDLLVMRenderer
from test.test_search import run, _device
from test.test_cpu_model import _cpu_renderer_posing_as

AVX512 = _cpu_renderer_posing_as(PROFILES["avx512-2fma"])   # L2 2 MB: weights over 1 MB are prefetched

@pytest.fixture(autouse=True)
def _avx512_plans(pose_cpu): pose_cpu("avx512-2fma")   # the schedules' packing too (panel widths), whatever the host is

def _conv(cin:int, cout:int, size:int, stride:int=1, dev:str="CPU", seed:int=0) -> tuple[Tensor, np.ndarray, np.ndarray]:
  rng = np.random.default_rng(seed)
  x, w = rng.standard_normal((1, cin, size, size), dtype=np.float32), rng.standard_normal((cout, cin, 3, 3), dtype=np.float32) / 3
  wt = Tensor(w, device=dev).pack_conv_weight().realize()   # as the ONNX runner does for constant weights
  return Tensor(x, device=dev).relu().conv2d(wt, stride=stride, padding=1), x, w

def _ref(x:np.ndarray, w:np.ndarray, stride:int=1) -> np.ndarray:
  return torch.nn.functional.conv2d(torch.from_numpy(x).relu(), torch.from_numpy(w), stride=stride, padding=1).numpy()

def _weights(ast:UOp) -> int:
  # the conv's weight buffer: the biggest one it loads
  return max(((u.src[0].arg, u.src[0].dtype.size) for u in ast.toposort() if u.op is Ops.LOAD), key=lambda t: t[1])[0]

def _opts(ast:UOp, ren=AVX512) -> list[Opt]: return [o for o in hand_coded_optimizations(Kernel(ast, ren)) if o.op is not OptOps.THREAD]

def _blocked_to_nchw(out:np.ndarray, ast:UOp) -> np.ndarray:
  # a conv's sums as its kernel stores them, blocked (panels, rows, columns, lanes; pack_conv), as the (1, c, h, w) the tensor reads
  p, h, w, lanes = [d for d in next(u for u in ast.toposort() if u.op is Ops.STORE).src[1].arg.shape if d != 1]
  return out.reshape(p, h, w, lanes).transpose(0, 3, 1, 2).reshape(1, p * lanes, h, w)

def _run(sched:list, dev:str, opts:list[Opt]|None) -> np.ndarray:
  # a schedule on dev, its last kernel (the conv) with opts, the earlier ones (the relu) unoptimized
  *pre, si = [si for si in sched if si.ast.op is Ops.SINK]
  for p in pre: CompiledRunner(get_program(p.ast, Device[dev].renderer, []))([b.ensure_allocated() for b in p.bufs], {}, wait=True)
  return run(CompiledRunner(get_program(si.ast, Device[dev].renderer, opts)), si.ast, [b.ensure_allocated() for b in si.bufs])[0]

# ***** which kernels get it *****

@pytest.mark.parametrize("cin,cout,size,stride", [(512, 512, 7, 1), (256, 512, 14, 2), (256, 256, 14, 1), (128, 256, 28, 2)])
def test_late_convs_prefetch_their_weights(cin, cout, size, stride):
  ast = _conv(cin, cout, size, stride)[0].schedule()[-1].ast
  opts = _opts(ast)
  assert Opt(OptOps.PREFETCH, None, _weights(ast)) in opts
  assert "__builtin_prefetch(" in get_program(ast, AVX512, opts).src

@pytest.mark.parametrize("cin,cout,size", [(64, 64, 56), (128, 128, 28)])
def test_early_convs_dont(cin, cout, size):
  # weights of 147 KB / 590 KB stay in a 2 MB L2 (and they are under twice the input)
  ast = _conv(cin, cout, size)[0].schedule()[-1].ast
  opts = _opts(ast)
  assert not any(o.op is OptOps.PREFETCH for o in opts)
  assert "__builtin_prefetch" not in get_program(ast, AVX512, opts).src

def test_small_l2_prefetches_smaller_weights():
  # a 256 KB L2: the 64->128 conv's 295 KB of weights (4.5x its 64 KB input) are over a quarter of it (of a 2 MB L2, under)
  ast = _conv(64, 128, 14)[0].schedule()[-1].ast
  assert not any(o.op is OptOps.PREFETCH for o in _opts(ast))
  assert any(o.op is OptOps.PREFETCH for o in _opts(ast, _cpu_renderer_posing_as(PROFILES["avx2-1fma"])))

def test_gemm_and_matvec_dont():
  # two big operands (a GEMM), or nothing that reuses a panel (a batch-1 linear layer): no prefetch of the next panel
  for a, b in (((1024, 1024), (1024, 1024)), ((1, 512), (512, 1000))):
    ast = (Tensor.empty(*a, device="CPU") @ Tensor.empty(*b, device="CPU")).schedule()[-1].ast
    assert not any(o.op is OptOps.PREFETCH and not isinstance(o.arg, tuple) for o in _opts(ast))

def _packed_b(ast:UOp) -> int:
  # the GEMM's packed B: the input the reduce (the last axis) walks a panel's width at a time, where A's row is contiguous
  return next(u.src[0].arg for u in ast.toposort() if u.op is Ops.LOAD and u.src[1].arg.real_strides()[-1] not in (0, 1))

def test_gemm_prefetches_packed_b_ahead():
  # a packed B panel of 128 KB (1024 deep x 32 lanes) streams from L2 through the reduce loop: its loads also ask for the lines 8 steps
  # (2 KB) ahead, into L1; an unpacked B (128: under PACKED_DOT_MIN) and a panel that fits L1 (K=128) don't
  ast = (Tensor.empty(1024, 1024, device="CPU") @ Tensor.empty(1024, 1024, device="CPU")).schedule()[-1].ast
  assert Opt(OptOps.PREFETCH, None, (_packed_b(ast), 8)) in _opts(ast)
  pf = _prefetches(ast, AVX512, _opts(ast))
  # a step of the unrolled loop reads 2 x 32 floats of B: four 64-byte lines, each asked for once, ungated, into L1
  assert len(pf) == 4 and all(p.arg == 1 and len(p.src) == 1 and p.src[0].src[0].arg == _packed_b(ast) for p in pf)
  with Context(IGNORE_OOB=0): assert get_program(ast, AVX512, _opts(ast)).src.count("__builtin_prefetch(") == 4
  for a, b in (((128, 128), (128, 128)), ((1024, 128), (128, 1024)), ((1024, 1024), (1024, 1024))):
    ast = (Tensor.empty(*a, device="CPU") @ Tensor.empty(*b, device="CPU")).schedule()[-1].ast
    ren = AVX512 if a[1] != 1024 else _cpu_renderer_posing_as(PROFILES["avx2-1fma"])   # (an AVX2 tile's 16-lane panel: 64 KB, over L1 too)
    assert any(o.op is OptOps.PREFETCH for o in _opts(ast, ren)) == (a[1] == 1024), (a, b)

@pytest.mark.parametrize("dev", ["CPU", "LLVM", "PYTHON"])
@pytest.mark.parametrize("ahead", [1, 8, 300])
def test_prefetch_ahead_matches_numpy(dev, ahead):
  # any distance, even past the loop's end (clamped to its last step), with the heuristic's tile or none: the same product, every address in
  # bounds (IGNORE_OOB=0 proves it; the PYTHON emulator checks each prefetch it runs)
  _device(dev)
  rng = np.random.default_rng(ahead)
  an, bn = rng.standard_normal((64, 96), dtype=np.float32), rng.standard_normal((96, 64), dtype=np.float32)
  with Context(PACKED_DOT_MIN=1): sched = (Tensor(an, device=dev) @ Tensor(bn, device=dev)).schedule()
  si, ren = sched[-1], Device[dev].renderer
  for pre in sched[:-1]: CompiledRunner(get_program(pre.ast, ren, []))([b.ensure_allocated() for b in pre.bufs], {}, wait=True)
  b_buf = _packed_b(si.ast)
  lanes = len(Kernel(si.ast, ren).full_shape) - 2   # the innermost global axis: B's panel lanes (PYTHON packs nothing: B's row)
  for base in ([], [Opt(OptOps.UPCAST, lanes, 16), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UNROLL, 0, 2)]):
    k = Kernel(si.ast, ren)
    if not ren.supports_prefetch:
      with pytest.raises(KernelOptError): k.apply_opt(Opt(OptOps.PREFETCH, None, (b_buf, ahead)))
      continue
    # (and with B's next panel prefetched too: both kinds on one buffer)
    for opts in (base + [Opt(OptOps.PREFETCH, None, (b_buf, ahead))], base + [Opt(OptOps.PREFETCH, None, (b_buf, ahead)), Opt(OptOps.PREFETCH, None, b_buf)]):
      with Context(IGNORE_OOB=0): prg = CompiledRunner(get_program(si.ast, ren, opts))
      if dev != "PYTHON": assert "prefetch" in prg.p.src
      np.testing.assert_allclose(run(prg, si.ast, [b.ensure_allocated() for b in si.bufs])[0].reshape(64, 64), an @ bn, rtol=1e-4, atol=1e-4)
    if base and dev != "PYTHON":   # (PYTHON's global axes are launch dimensions, no loops: no next panel to ask for)
      k1, k2 = Kernel(si.ast, ren), Kernel(si.ast, ren)
      for o in opts[:-1]: k1.apply_opt(o)
      for o in opts: k2.apply_opt(o)
      pf1, pf2 = ([u for u in full_rewrite(k.get_optimized_ast(), ren) if u.op is Ops.PREFETCH] for k in (k1, k2))
      assert pf1 and len(pf2) > len(pf1) and {p.arg for p in pf2} == {1, 2}   # into L1 ahead in the loop, into L2 the next panel

def test_row_kernels_dont():
  # a row kernel (layernorm, log_softmax: several reduces over a 16 MB row-major input) streams each row once: no panel to fetch ahead, and
  # a prefetch gated on the output's row axis put that axis' loop around the reduces (each row's reduce recomputed 64 times: 42 vs 3.6 ms)
  x = Tensor.empty(4096, 1024, device="CPU")
  for t in (x.layernorm(), x.log_softmax(), x.softmax()):
    ast = t.schedule()[-1].ast
    assert len([u for u in ast.toposort() if u.op is Ops.REDUCE_AXIS]) >= 2
    assert not any(o.op is OptOps.PREFETCH for o in _opts(ast))

def test_skinny_gemm_streams_b():
  # 64 rows of A (256 KB) against a 4 MB B: B is streamed like weights (8-row passes over each 32-column panel)
  ast = (Tensor.empty(64, 1024, device="CPU") @ Tensor.empty(1024, 1024, device="CPU")).schedule()[-1].ast
  assert Opt(OptOps.PREFETCH, None, _weights(ast)) in _opts(ast)

def test_batch_conv_input_not_prefetched():
  # issue 14's conv2d b32 64->64 3x3 32x32: its 8 MB input is the big operand, but it is broadcast across the output channels (the SIMD lanes)
  # and walked by every loop but the panels': no panel of it is reused by passes inside, and prefetching the next column tile at every
  # step asked for lines the kernel mostly reads already (a dozen prefetch instructions per tap row). The weights are small: nothing is
  x, w = Tensor.empty(32, 64, 32, 32, device="CPU"), Tensor.empty(64, 64, 3, 3, device="CPU")
  ast = next(si.ast for si in x.conv2d(w).schedule() if any(u.op is Ops.REDUCE_AXIS for u in si.ast.toposort()))
  opts = _opts(ast)
  assert not any(o.op is OptOps.PREFETCH for o in opts) and any(o.op is OptOps.UPCAST for o in opts), opts

def test_prefetch_opt_is_checked():
  ast = _conv(8, 16, 6)[0].schedule()[-1].ast
  k = Kernel(ast, AVX512)
  with pytest.raises(KernelOptError, match="loads no buffer 7"): k.apply_opt(Opt(OptOps.PREFETCH, None, 7))
  k.apply_opt(Opt(OptOps.PREFETCH, None, _weights(ast)))
  with pytest.raises(KernelOptError, match="already prefetched"): k.apply_opt(Opt(OptOps.PREFETCH, None, _weights(ast)))
  for ren in (CUDARenderer("sm_80"), OpenCLRenderer(), MetalRenderer(), PTXRenderer("sm_80"), WGSLRenderer(), AMDLLVMRenderer("gfx1100")):
    with pytest.raises(KernelOptError, match="renders no prefetch"): Kernel(ast, ren).apply_opt(Opt(OptOps.PREFETCH, None, _weights(ast)))

# ***** what codegen makes *****

def _prefetches(ast:UOp, ren, opts:list[Opt]) -> list[UOp]:
  k = Kernel(ast, ren)
  for o in opts: k.apply_opt(o)
  return [u for u in full_rewrite(k.get_optimized_ast(), ren) if u.op is Ops.PREFETCH]

def test_next_panel_one_line_at_a_time_in_every_pass():
  # 512 -> 512 at 7x7: 16 panels of 32 output channels, 7 row passes over each. Each 32-float weight load (3 taps unrolled) asks for its two
  # 64-byte lines of the next panel, each line in one pass of the seven (the gate), into L2
  ast = _conv(512, 512, 7)[0].schedule()[-1].ast
  pf = _prefetches(ast, AVX512, _opts(ast))
  assert len(pf) == 6 and all(p.arg == 2 and len(p.src) == 2 and p.src[1].dtype == dtypes.bool for p in pf)
  assert all(p.src[0].src[0].arg == _weights(ast) for p in pf)

def test_every_prefetch_address_is_proven_inside_its_buffer():
  # IGNORE_OOB=0 checks every ungated address: a prefetch's address is ungated (its gate is the PREFETCH's own), so it is checked too
  for cin, cout, size, stride in ((512, 512, 7, 1), (256, 512, 14, 2), (256, 256, 14, 1)):
    ast = _conv(cin, cout, size, stride)[0].schedule()[-1].ast
    with Context(IGNORE_OOB=0): assert "__builtin_prefetch(" in get_program(ast, AVX512, _opts(ast) + [Opt(OptOps.THREAD, 0, 2)]).src

def test_renderers_without_prefetch_drop_it():
  # a kernel that asks for prefetches (KernelInfo.prefetch) rendered for devices without them: no PREFETCH is made, the source renders
  ast = _conv(8, 16, 6)[0].schedule()[-1].ast
  k = Kernel(ast, AVX512)
  k.apply_opt(Opt(OptOps.PREFETCH, None, _weights(ast)))
  opt_ast = k.get_optimized_ast()
  assert opt_ast.arg.prefetch == (_weights(ast),)
  for ren in (CUDARenderer("sm_80"), OpenCLRenderer(), MetalRenderer(), PTXRenderer("sm_80"), WGSLRenderer(), AMDLLVMRenderer("gfx1100")):
    src = to_program(opt_ast, ren).src
    assert "prefetch" not in src.lower() and not any(u.op is Ops.PREFETCH for u in full_rewrite(opt_ast, ren))
  # and the C-family renderers print a PREFETCH they are handed as nothing
  ix = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0).index(UOp.const(dtypes.int, 3))
  assert OpenCLRenderer().render("k", [ix.src[0], ix.src[1], ix, UOp(Ops.PREFETCH, dtypes.void, (ix,), 2)]).count("prefetch") == 0
  assert "__builtin_prefetch((data0+3), 0, 2);" in ClangRenderer().render("k", [ix.src[0], ix.src[1], ix, UOp(Ops.PREFETCH, dtypes.void, (ix,), 2)])

def test_python_emulator_checks_a_prefetch_address():
  # a PREFETCH past its buffer's end is an out-of-bounds access there, like a load
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(16), (), 0)
  for at, ok in ((15, True), (16, False)):
    ix = buf.index(UOp.const(dtypes.int, at))
    uops = [buf, ix.src[1], ix, UOp(Ops.PREFETCH, dtypes.void, (ix,), 2)]
    prg = PythonProgram("k", PythonCompiler().compile(PythonRenderer().render("k", uops)))
    mem = Device["PYTHON"].allocator.alloc(64)
    if ok: prg(mem)
    else:
      with pytest.raises(Exception, match="(?i)out of bounds|outside"): prg(mem)

# ***** results *****

def _cpu_program_in_python(sched:list, opts:list[Opt]) -> np.ndarray:
  # the CPU's program for the last kernel (loops, vectors and the prefetches it makes there) run by the PYTHON emulator, on copies of the
  # CPU buffers: it ignores the hints but checks each prefetched address against its buffer
  *pre, si = [si for si in sched if si.ast.op is Ops.SINK]
  for p in pre: CompiledRunner(get_program(p.ast, Device["CPU"].renderer, []))([b.ensure_allocated() for b in p.bufs], {}, wait=True)
  k = Kernel(si.ast, Device["CPU"].renderer)
  for o in opts: k.apply_opt(o)
  uops = full_rewrite(k.get_optimized_ast(), Device["CPU"].renderer)
  assert any(u.op is Ops.PREFETCH for u in uops)
  prg = PythonProgram("conv", PythonCompiler().compile(PythonRenderer().render("conv", uops)))
  mems = [memoryview(bytearray(b.ensure_allocated().as_buffer())) for b in si.bufs]
  prg(*[mems[arg] for arg, _ in prg.globals])
  return np.frombuffer(mems[0], np.float32)

@pytest.mark.parametrize("dev", ["CPU", "LLVM", "PYTHON"])
def test_prefetched_conv_matches_torch(dev):
  # a small conv forced to prefetch its weights: 4 panels of 8 output channels, 6 row passes each
  t, x, w = _conv(8, 32, 6, dev="CPU" if dev == "PYTHON" else _device(dev), seed=1)
  ast = (sched := t.schedule())[-1].ast
  opts = [Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UPCAST, 2, 6), Opt(OptOps.PREFETCH, None, _weights(ast))]
  if dev == "PYTHON": got = _cpu_program_in_python(sched, opts)
  else:
    src = get_program(ast, Device[dev].renderer, opts).src
    assert ("@llvm.prefetch.p0(" if dev == "LLVM" else "__builtin_prefetch(") in src
    got = _run(sched, dev, opts)
  np.testing.assert_allclose(got.reshape(1, 32, 6, 6), _ref(x, w), rtol=1e-4, atol=1e-4)

def test_every_line_of_the_weights_is_prefetched(monkeypatch):
  # the emulator's scalar loads of the weights are the prefetches (the conv loads them 8 lanes at a time): over the kernel every 64-byte
  # line is asked for, panel 0's during the last panel (the wrap), and each line in one row pass of six, not in all of them
  import tinygrad.runtime.ops_python as ops_python
  t, _, _ = _conv(8, 32, 6, seed=1)
  ast = (sched := t.schedule())[-1].ast
  asked: list[int] = []
  def load(self, idxs, cnt, act, _load=ops_python._Mem.load):
    if cnt == 1 and self.what.startswith(f"buffer {_weights(ast)} "): asked.extend(i for i, on in zip(idxs, act or [True] * len(idxs)) if on)
    return _load(self, idxs, cnt, act)
  monkeypatch.setattr(ops_python._Mem, "load", load)
  _cpu_program_in_python(sched, [Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.UPCAST, 2, 6), Opt(OptOps.PREFETCH, None, _weights(ast))])
  lines = 32 * 8 * 9 // 16
  assert {i // 16 for i in asked} == set(range(lines))
  assert len(asked) == 2 * lines   # one per 8-float load (two per line), where every pass would be 12 per line

@pytest.mark.parametrize("threads", [1, 2])
def test_late_conv_with_heuristic_opts_matches_torch(threads):
  # the 512-channel 7x7 conv as ResNet-18 runs it, its 16 panels split over threads or not
  t, x, w = _conv(512, 512, 7, seed=2)
  opts = _opts((sched := t.schedule())[-1].ast) + ([Opt(OptOps.THREAD, 0, threads)] if threads > 1 else [])
  assert any(o.op is OptOps.PREFETCH for o in opts)
  np.testing.assert_allclose(_blocked_to_nchw(_run(sched, "CPU", opts), sched[-1].ast), _ref(x, w), rtol=1e-3, atol=1e-3)
