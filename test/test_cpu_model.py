# the CPU machine model: what it reads and measures, the CPU_MODEL override, and that the register tiles, cache blocks and packing the
# heuristics derive from it give the unoptimized kernel's results on every machine profile, on CPU and in the PYTHON emulator
import dataclasses, json, os, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, Context
from tinygrad.helpers import prod
from tinygrad.uop import Ops
from tinygrad.renderer import MachineModel
from tinygrad.opt.kernel import Kernel, Opt, OptOps, KernelOptError, AxisType
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.renderer import register_tile as _register_tile
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.runtime.support.cpu_model import PROFILES, host_model, KB, MB
from test.test_search import run, _device

# a machine with a tiny L2: every GEMM here is "bigger than the cache", so the heuristics block it
TINY_L2 = dataclasses.replace(PROFILES["avx2-1fma"], name="tiny-l2", l2=8192, l1=1024)
MODELS = [PROFILES["avx512-2fma"], PROFILES["avx2-1fma"], PROFILES["neon"], TINY_L2]

def test_profiles_and_json_override(tmp_path, monkeypatch):
  monkeypatch.setenv("CPU_MODEL", "avx2-1fma")
  assert host_model(None, ()) == PROFILES["avx2-1fma"]
  (f := tmp_path / "mine.json").write_text(json.dumps({"simd_bytes": 64, "vector_regs": 32, "fma_chains": 8, "l2": 1 << 20}))
  monkeypatch.setenv("CPU_MODEL", str(f))
  m = host_model(None, ())
  assert (m.name, m.simd_bytes, m.vector_regs, m.fma_chains, m.l2, m.l1) == ("mine", 64, 32, 8, 1 << 20, PROFILES["avx2-1fma"].l1)
  monkeypatch.setenv("CPU_MODEL", "pentium-pro")
  with pytest.raises(ValueError, match="avx2-1fma"): host_model(None, ())
  (f := tmp_path / "bad.json").write_text(json.dumps({"simd_byte": 64}))
  monkeypatch.setenv("CPU_MODEL", str(f))
  with pytest.raises(ValueError, match="simd_byte"): host_model(None, ())

def test_host_model_is_measured_and_cached():
  r = Device["CPU"].renderer
  if os.environ.get("CPU_MODEL"): pytest.skip("CPU_MODEL poses as another machine")
  m = r.machine
  assert isinstance(m, MachineModel) and r.simd_bytes == m.simd_bytes and m.simd_bytes in (16, 32, 64) and m.vector_regs in (16, 32)
  assert 2 <= m.fma_chains <= m.vector_regs and m.fma_gflops > 0 and m.cores == os.cpu_count()
  assert 0 < m.l1 < m.l2 and m.l3 > 0
  # a second process reads the disk cache: the same model as a lookup here (this process's device may have measured its own while another
  # test file pointed the cache at a private one)
  from tinygrad.runtime.ops_cpu import find_cc, CFLAGS
  out = subprocess.run([sys.executable, "-c", "from tinygrad import Device; print(repr(Device['CPU'].renderer.machine))"], capture_output=True,
                       text=True, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()}).stdout.strip()
  assert out == repr(host_model(find_cc(), CFLAGS))

@pytest.mark.parametrize("m", MODELS, ids=lambda m: m.name)
def test_register_tile_fits_the_register_file(m):
  width = m.simd_bytes // 4
  tile = _register_tile(m, width, 32, 1024, 1024)
  assert tile is not None
  rows, lanes = tile
  vecs = lanes // width
  # enough independent accumulators for latency x pipes, and room for a row of B vectors and a broadcast
  assert rows * vecs >= m.fma_chains and rows * vecs + vecs + 1 <= m.vector_regs and 1024 % rows == 0 and 1024 % lanes == 0
  if m.name == "avx512-2fma": assert tile == (8, 32)   # 16 zmm accumulators, two B vectors per row
  # sizes nothing divides get no tile (the old choices take over)
  assert _register_tile(m, width, 32, 1024, 7) is None

def test_conv_register_tile_leaves_room_for_its_taps():
  # a 3x3 conv's window row unrolls whole: its 3 taps' weight vectors are loaded together, so 16 AVX2 registers (8 chains: 2 FMA pipes x 4
  # cycles) take 4 rows x 16 lanes of a 56-wide output. Of a 14-wide one, short of 8 chains that way, 2 rows x 32 lanes with one tap's
  # vectors live at a time (8 chains, more FMAs per load than 7 x 8; not 14 x 8, which leaves no register to spare and spilled); a 7-wide
  # one has no such tile and takes the most chains, 7 rows x 8 lanes
  m = dataclasses.replace(PROFILES["avx2-1fma"], fma_chains=8)
  assert _register_tile(m, 8, 32, 56, 64, 3) == (4, 16)
  assert _register_tile(m, 8, 32, 14, 256, 3) == (2, 32) and _register_tile(m, 8, 32, 7, 512, 3) == (7, 8)
  # 10 chains: still 2 x 32 (14 x 8 has the chains but no register to spare); AVX-512's 32 registers hold every tap's vectors as before
  assert _register_tile(PROFILES["avx2-2fma"], 8, 32, 14, 256, 3) == (2, 32)
  assert _register_tile(PROFILES["avx512-2fma"], 16, 64, 14, 256, 3) == (7, 32)

def test_conv_register_tile_keeps_its_weight_panel_in_l1():
  # given the reduce (64 channels x 3 x 3 taps), of the tiles with enough chains the one whose weight panel fits L1 next to its input window:
  # 8 rows x 8 lanes (an 18 KB panel, 26 KB with the window, on a 32 KB L1), not 4 x 16 (37 KB, streamed from L2). Where no tile with the
  # chains fits (128 channels at 28 wide, 256 at 14, 512 at 7) the choice is the plain one
  m = dataclasses.replace(PROFILES["avx2-1fma"], fma_chains=8)
  assert _register_tile(m, 8, 32, 56, 64, 3, 64 * 9) == (8, 8) and _register_tile(m, 8, 32, 56, 64, 3) == (4, 16)
  for rows, cin, cout in ((28, 128, 128), (14, 256, 256), (14, 128, 256), (7, 512, 512)):
    assert _register_tile(m, 8, 32, rows, cout, 3, cin * 9) == _register_tile(m, 8, 32, rows, cout, 3)
  # a smaller L1 holds the 8-lane panel no more: 4 x 16 again
  assert _register_tile(dataclasses.replace(m, l1=16 * 1024), 8, 32, 56, 64, 3, 64 * 9) == (4, 16)

# ***** correctness: the heuristics of each machine profile, applied on CPU and PYTHON, against the unoptimized kernel *****

def _rng_t(rng, shape, dev) -> Tensor: return Tensor(rng.standard_normal(shape).astype(np.float32), device=dev)
CASES = {
  "matmul": lambda rng, dev: (_rng_t(rng, (24, 16), dev) @ _rng_t(rng, (16, 64), dev)),
  "matmul_packed": lambda rng, dev: (_rng_t(rng, (16, 12), dev) @ _rng_t(rng, (12, 128), dev)),
  "matmul_odd": lambda rng, dev: (_rng_t(rng, (7, 13), dev) @ _rng_t(rng, (13, 11), dev)),
  "batched": lambda rng, dev: (_rng_t(rng, (2, 8, 8), dev) @ _rng_t(rng, (2, 8, 32), dev)),
  "conv": lambda rng, dev: _rng_t(rng, (1, 4, 6, 6), dev).conv2d(_rng_t(rng, (32, 4, 3, 3), dev), padding=1),
  "conv_strided": lambda rng, dev: _rng_t(rng, (2, 3, 9, 9), dev).conv2d(_rng_t(rng, (16, 3, 3, 3), dev), stride=2, padding=1),
  # reduces, a row kernel, elementwise with vector transcendentals, an int kernel: the upcasts and thread splits of every profile
  "sum_rows": lambda rng, dev: _rng_t(rng, (16, 67), dev).sum(1),
  "sum_cols": lambda rng, dev: _rng_t(rng, (33, 40), dev).sum(0),
  "max_all": lambda rng, dev: _rng_t(rng, (24, 40), dev).max(),
  "softmax": lambda rng, dev: _rng_t(rng, (8, 48), dev).softmax(1),
  "layernorm": lambda rng, dev: _rng_t(rng, (8, 40), dev).layernorm(),
  "elementwise": lambda rng, dev: (_rng_t(rng, (16, 36), dev).exp() * _rng_t(rng, (36,), dev).sigmoid() + _rng_t(rng, (16, 1), dev).tanh()),
  "int_elementwise": lambda rng, dev: (Tensor(rng.integers(-99, 99, (12, 40)).astype(np.int32), device=dev) * 3 // 7 + 1).maximum(0),
}

def _kernels(name:str, dev:str) -> list[tuple]:
  with Context(NOOPT=1, PACKED_DOT_MIN=1 if name == "matmul_packed" else 1 << 62, PACKED_CONV_MIN=1):
    ret = []
    for si in CASES[name](np.random.default_rng(1), dev).schedule():
      if si.ast.op is not Ops.SINK: continue
      bufs = [b.ensure_allocated() for b in si.bufs]
      ret.append((si.ast, bufs, run(CompiledRunner(get_program(si.ast, Device[dev].renderer, [])), si.ast, bufs)))
  return ret

def _cpu_renderer_posing_as(m:MachineModel):
  from tinygrad.renderer.cstyle import ClangRenderer
  r = ClangRenderer()
  r.machine, r.simd_bytes = m, m.simd_bytes
  return r

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("name", list(CASES))
def test_heuristics_of_every_profile_are_correct(name, dev):
  _device(dev)
  kernels = _kernels(name, dev)
  seen_block = False
  for m in MODELS:
    for ast, bufs, ref in kernels:
      opts = hand_coded_optimizations(Kernel(ast, _cpu_renderer_posing_as(m)))
      seen_block |= any(o.op is OptOps.BLOCK for o in opts)
      # the emulator has no thread pool, and without vector code it holds fewer upcast lanes: those opts are left out there
      k = Kernel(ast, Device[dev].renderer)
      for o in opts:
        try: k.apply_opt(o)
        except KernelOptError as e:
          if dev == "CPU" or not (o.op is OptOps.THREAD or "too many registers" in str(e)): raise AssertionError(f"{m.name}: {opts} on {dev}") from e
      prg = CompiledRunner(get_program(ast, Device[dev].renderer, k.applied_opts))
      for got, want in zip(run(prg, ast, bufs), ref):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} on {dev} as {m.name} with {opts}")
  # a packed B (contiguous panels; the CPU packs, PYTHON doesn't) is cache blocked on the tiny-L2 machine
  if name == "matmul_packed" and dev == "CPU": assert seen_block

def test_block_opt():
  _device("CPU")
  ast = _kernels("matmul", "CPU")[-1][0]
  k = Kernel(ast, Device["CPU"].renderer)
  k.apply_opt(Opt(OptOps.BLOCK, 1, 16))
  # the column axis (64) is cut into 4 panels of 16, the panel loop goes outermost
  assert k.full_shape[:3] == (4, 24, 16)
  # (a block of the outermost loop, 24 rows in 2 x 12, would run in the same order: refused, so BEAM doesn't compile it)
  for bad in (Opt(OptOps.BLOCK, 1, 64), Opt(OptOps.BLOCK, 1, 5), Opt(OptOps.BLOCK, 3, 2), Opt(OptOps.BLOCK, 0, 2)):
    with pytest.raises(KernelOptError): Kernel(ast, Device["CPU"].renderer).apply_opt(bad)

def test_avx2_profile_end_to_end():
  # a fresh process posing as an AVX2 machine with one FMA pipe: its heuristics, compile flags and packing, every result right
  _device("CPU")
  code = """
import numpy as np
from tinygrad import Tensor, Device, Context
assert Device['CPU'].renderer.machine.name == 'avx2-1fma' and Device['CPU'].renderer.simd_bytes == 32
rng = np.random.default_rng(0)
for (m, k, n), packed in [((64, 48, 96), 1), ((256, 256, 256), 1), ((33, 17, 65), 1), ((128, 64, 128), 1 << 62)]:
  a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
  with Context(PACKED_DOT_MIN=packed): np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-4)
x, w = rng.standard_normal((2, 8, 10, 10), dtype=np.float32), rng.standard_normal((32, 8, 3, 3), dtype=np.float32)
with Context(PACKED_CONV_MIN=1): got = Tensor(x).conv2d(Tensor(w)).numpy()
ref = sum(np.einsum('bchw,oc->bohw', x[:, :, i:i+8, j:j+8], w[:, :, i, j]) for i in range(3) for j in range(3))
np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
print('ok')
"""
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.getcwd(), "CPU_MODEL": "avx2-1fma", "DEV": "CPU"})
  assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]

def _gemm_ast(n:int):
  # B's column panels are as wide as the host's model makes them (two AVX-512 registers here); the plans below are for those
  if (host := Device["CPU"].renderer.machine) is None or host.simd_bytes != 64: pytest.skip("the host (or CPU_MODEL) packs B for another width")
  with Context(PACKED_DOT_MIN=1): return (Tensor.empty(n, n, device="CPU") @ Tensor.empty(n, n, device="CPU")).schedule()[-1].ast

def _gemm_plan(n:int, m:MachineModel) -> list[Opt]:
  return hand_coded_optimizations(Kernel(_gemm_ast(n), _cpu_renderer_posing_as(m)))

def test_gemm_1024_plan_per_machine():
  if os.environ.get("CPU_MODEL"): pytest.skip("CPU_MODEL poses as another machine: the packing of the schedule follows it")
  # what the heuristics plan for a packed GEMM 1024 (scheduled, not run): AVX-512 keeps B panels in half of its 2 MB L2 less A's row block
  # (BLOCK: 4 panels of 128 KB, not 8), the AVX2 machine's 256 KB L2 holds one 64 KB panel with A's row block, so the panel loop goes
  # outside a block of A's rows (SWAP, then BLOCK of 4 row tiles: 64 KB of A, 16 rows, and the panel in half of L2)
  _device("CPU")
  # (the kernel's axes: rows m, B's column panels n/32, the 32 columns of a panel, k)
  big = _gemm_plan(1024, PROFILES["avx512-2fma"])
  assert {Opt(OptOps.UPCAST, 2, 32), Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.BLOCK, 1, 4)} <= set(big)
  small = _gemm_plan(1024, PROFILES["avx2-1fma"])
  assert {Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.SWAP, 0, 1), Opt(OptOps.BLOCK, 1, 4)} <= set(small), small

@pytest.mark.parametrize("n, block", [(512, 8), (1024, 4), (2048, 2)])
def test_gemm_panel_block_shares_l2_with_a(n, block):
  # the panels a row block of A passes over, plus that row block (8 rows of the whole reduce), fit in half of L2: at K=2048 two 256 KB
  # panels and A's 64 KB (four panels thrashed L2)
  _device("CPU")
  m = PROFILES["avx512-2fma"]
  plan = _gemm_plan(n, m)
  assert [o.arg for o in plan if o.op is OptOps.BLOCK] == [block], plan
  rows = next(o.arg for o in plan if o.op is OptOps.UPCAST and o.axis == 0)
  panel, a_rows = n * 32 * 4, rows * n * 4
  assert block * panel + a_rows <= m.l2 // 2 < 2 * block * panel + a_rows

def test_gemm_row_block_where_one_panel_fits():
  # at K=4096 (AVX-512: one 512 KB panel and A's 128 KB row block in half of the 2 MB L2, not two panels) the rows are blocked instead: the
  # panel loop goes outside a block of row tiles (here 4 tiles of 8 rows, 512 KB of A) that, with one panel, fills half of L2; and the
  # panels go in groups of twice L2 (8 of 512 KB) that every row block passes over before the next group
  _device("CPU")
  m = PROFILES["avx512-2fma"]
  plan = _gemm_plan(4096, m)
  assert Opt(OptOps.SWAP, 0, 1) in plan and [o.arg for o in plan if o.op is OptOps.BLOCK] == [4, 8], plan
  k = Kernel(_gemm_ast(4096), _cpu_renderer_posing_as(m))
  for o in plan: k.apply_opt(o)
  # (panel groups (over the threads), row blocks, panels of a group, row tiles of a block)
  shape = tuple(k.full_shape[a] for a in k.axes_of(AxisType.THREAD, AxisType.GLOBAL) if k.full_shape[a] != 1)
  assert prod(shape[:-3]) == 4096 // 32 // 8 and shape[-3:] == (4096 // 32, 8, 4), k.colored_shape()
  assert 4 * 8 * 4096 * 4 + 4096 * 32 * 4 <= m.l2 // 2 and 8 * 4096 * 32 * 4 <= 2 * m.l2

def test_gemm_2048_b_in_panel_groups():
  # an AVX2 machine with a 512 KB L2 (this Zen 3's model) blocks GEMM 2048's rows (one 128 KB panel of 16 columns and A's rows in half of
  # L2) and takes B's panels in groups of twice L2 (8 panels): all 16 MB of B for every row block ran 76-81 GFLOP/s against 92-94
  if (host := Device["CPU"].renderer.machine) is None or host.simd_bytes != 32: pytest.skip("the host (or CPU_MODEL) packs B for another width")
  with Context(PACKED_DOT_MIN=1): ast = (Tensor.empty(2048, 2048, device="CPU") @ Tensor.empty(2048, 2048, device="CPU")).schedule()[-1].ast
  m = MachineModel("zen3", simd_bytes=32, vector_regs=16, fma_chains=8, fma_gflops=93.0, l1=32*KB, l2=512*KB, l3=32*MB, cores=2)
  plan = hand_coded_optimizations(Kernel(ast, _cpu_renderer_posing_as(m)))
  assert Opt(OptOps.SWAP, 0, 1) in plan and [o.arg for o in plan if o.op is OptOps.BLOCK] == [4, 8], plan

def test_gemm_pack_reads_b_row_by_row():
  # the copy of B into column panels (n/32, k, 32) loops over B's rows outermost, a few rows at a time: each block of rows is read once, front
  # to back, and each panel gets its rows' vectors together (panel by panel for each row wrote one line per panel, a page apart; the
  # panel-major order read a 128-byte piece of every row, a page apart). As many rows as the L1 has ways, at most (rows a power of two
  # apart share a set): 12 on a 48 KB L1 where they divide the rows, else 8; 8 on a 32 KB one. Other copies keep their order or go in
  # source order.
  _device("CPU")
  for profile, n, rows in (("avx512-2fma", 256, 8), ("avx512-2fma", 384, 12), ("avx2-2fma", 384, 8)):
    r = _cpu_renderer_posing_as(PROFILES[profile])
    assert PROFILES[profile].l1_ways == PROFILES[profile].l1 // 4096
    with Context(PACKED_DOT_MIN=1):
      pack = (Tensor.empty(n, n, device="CPU") @ Tensor.empty(n, n, device="CPU")).schedule()[0].ast
    k = Kernel(pack, r)
    for o in hand_coded_optimizations(k): k.apply_opt(o)
    assert Opt(OptOps.BLOCK, 1, rows) in k.applied_opts, (profile, n, k.applied_opts)
    load = next(i for i, v in enumerate(k.view_uops) if any(u.op is Ops.LOAD and u.src[1] is v for u in pack.toposort()))
    strides = [k.sts[load].real_strides()[a] for a in k.axes_of(AxisType.GLOBAL)]
    # (blocks of rows, panels, the rows of a block, then a panel row's vectors)
    # (a panel's columns: as many as the host's packing makes them)
    assert strides[0] == rows * n and 0 < strides[1] < n and strides[2] == n, (profile, k.colored_shape(), strides)
  r = _cpu_renderer_posing_as(PROFILES["avx512-2fma"])
  # any copy of whole rows into another order is read in source order; arithmetic, and a transpose (a gather per vector), keep theirs
  x = Tensor(np.arange(8*16*32, dtype=np.float32).reshape(8, 16, 32), device="CPU")
  xn = x.numpy()
  for make, want, swapped in ((lambda: x.permute(1, 0, 2).contiguous(), xn.transpose(1, 0, 2), True),
                              (lambda: x.permute(1, 0, 2) * 2, xn.transpose(1, 0, 2) * 2, False),
                              (lambda: x.reshape(128, 32).T.contiguous(), xn.reshape(128, 32).T, False)):
    assert any(o.op is OptOps.SWAP for o in hand_coded_optimizations(Kernel(make().schedule()[-1].ast, r))) == swapped
    np.testing.assert_equal(make().numpy(), want)
  # a bigger transpose of whole vectors, blocked the same way, copies right
  y = Tensor(np.arange(64*48, dtype=np.float32).reshape(64, 48), device="CPU")
  def panels(): return y.reshape(64, 3, 16).permute(1, 0, 2).contiguous()
  assert any(o.op is OptOps.BLOCK for o in hand_coded_optimizations(Kernel(panels().schedule()[-1].ast, r)))
  np.testing.assert_equal(panels().numpy(), y.numpy().reshape(64, 3, 16).transpose(1, 0, 2))

def test_gemm_1024_beam_first_round_has_other_tiles_and_blocks():
  # BEAM's first round on the heuristic's GEMM 1024 kernel (AVX-512 profile, scheduled, not run) tries the tiles and panel blocks next to the
  # heuristic's: 4 rows x 64 lanes (two B panels, as many accumulators), 8 x 16, and half and twice as many panels per block
  from tinygrad.opt.search import _variants, _spills
  _device("CPU")
  k = Kernel(_gemm_ast(1024), _cpu_renderer_posing_as(PROFILES["avx512-2fma"]))
  variants = _variants(k, hand_coded_optimizations(k))
  def tile(v): return tuple(v.full_shape[a] for a in v.axes_of(AxisType.UPCAST))
  def blocks(v): return [o.arg for o in v.applied_opts if o.op is OptOps.BLOCK]
  assert {(2, 4, 32), (8, 16), (4, 32)} <= {tile(v) for v in variants}, [tile(v) for v in variants]
  assert {2, 8} <= {b for v in variants for b in blocks(v)}
  assert not any(_spills(v) for v in variants)
