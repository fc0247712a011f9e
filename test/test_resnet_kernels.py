# the CPU heuristics for ResNet's non-conv kernels: a 3x3 stride-2 max pool (its taps unrolled, rows of outputs side by side) and the
# padded copies of conv inputs (rows nothing divides, vectorized through PADTO): which opts they get, and that the results are right on CPU
# and in the PYTHON emulator (which checks every load and store against its buffer), against torch and numpy
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.opt.kernel import Kernel, Opt, OptOps
from tinygrad.opt.heuristic import hand_coded_optimizations
from tinygrad.engine.realize import get_program, CompiledRunner
from tinygrad.runtime.support.cpu_model import PROFILES
from tinygrad.renderer import MachineModel
from test.test_search import run, _device
from test.test_cpu_model import _cpu_renderer_posing_as

AVX512 = _cpu_renderer_posing_as(PROFILES["avx512-2fma"])
def _opts(ast) -> list[Opt]: return [o for o in hand_coded_optimizations(Kernel(ast, AVX512)) if o.op is not OptOps.THREAD]

def _run_with_heuristic(t:Tensor, dev:str) -> tuple[np.ndarray, list[Opt]]:
  # t's schedule run on dev, its last kernel with the opts the heuristics give it on an AVX-512 machine (the earlier ones unoptimized)
  *pre, si = [si for si in t.schedule() if si.ast.op is Ops.SINK]
  for p in pre: CompiledRunner(get_program(p.ast, Device[dev].renderer, None))([b.ensure_allocated() for b in p.bufs], {}, wait=True)
  opts = _opts(si.ast)
  bufs = [b.ensure_allocated() for b in si.bufs]
  return run(CompiledRunner(get_program(si.ast, Device[dev].renderer, opts)), si.ast, bufs)[0], opts

def test_maxpool_3x3_stride2_gets_rows_and_unrolled_taps():
  ast = Tensor.empty(1, 64, 112, 112, device="CPU").max_pool2d(3, 2, padding=1).schedule()[-1].ast
  opts = _opts(ast)
  # (axes: channels, output rows, output columns; taps ky, kx) both taps whole, 8 output rows side by side, nothing on the strided columns
  assert opts == [Opt(OptOps.UNROLL, 1, 0), Opt(OptOps.UNROLL, 0, 0), Opt(OptOps.UPCAST, 1, 8)]

@pytest.mark.parametrize("kernel,stride", [(2, 2), (2, 1), (3, 3)])
def test_windows_that_share_nothing_stay_plain(kernel, stride):
  # non-overlapping windows (or rows nothing divides): plain loops, which the C compiler vectorizes
  t = Tensor.empty(1, 16, 112 if stride == 1 else 36, 112 if stride == 1 else 36, device="CPU").max_pool2d(kernel, stride)
  assert _opts(t.schedule()[-1].ast) == []

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("pool", ["max", "avg"])
def test_pool_with_heuristic_opts_is_right(dev, pool):
  _device(dev)
  x = np.random.default_rng(0).standard_normal((1, 3, 20, 14)).astype(np.float32)
  t = Tensor(x, device=dev)
  out = (t.max_pool2d(3, 2, padding=1) if pool == "max" else t.avg_pool2d(3, 2, padding=1)).relu()
  xt = torch.from_numpy(x)
  ref = (torch.nn.functional.max_pool2d(xt, 3, 2, 1) if pool == "max" else torch.nn.functional.avg_pool2d(xt, 3, 2, 1))
  got, opts = _run_with_heuristic(out, dev)
  np.testing.assert_allclose(got.reshape(ref.shape), ref.relu().numpy(), rtol=1e-6, atol=1e-6)
  if pool == "max": assert Opt(OptOps.UPCAST, 1, 2) in opts   # 10 output rows: 2 side by side

def test_padded_copy_is_vector_code():
  x = Tensor.empty(1, 64, 56, 56, device="CPU")
  ast = (x.pad((1, 1, 1, 1)) + 1).contiguous().schedule()[-1].ast
  # a 58-wide row: padded to 64 (gated off past 58), 16 lanes at a time
  assert _opts(ast) == [Opt(OptOps.PADTO, 2, 16), Opt(OptOps.UPCAST, 2, 16)]
  # a row narrower than a register goes whole
  ast = (Tensor.empty(1, 8, 7, 7, device="CPU").pad((1, 1, 1, 1)) + 1).contiguous().schedule()[-1].ast
  assert _opts(ast) == [Opt(OptOps.UPCAST, 2, 9)]

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
@pytest.mark.parametrize("hw,pad", [(19, (1, 1, 1, 1)), (5, (3, 3, 3, 3)), (12, (0, 5, 2, 1))])
def test_padded_copy_with_heuristic_opts_is_right(dev, hw, pad):
  _device(dev)
  x = np.random.default_rng(1).standard_normal((2, 3, hw, hw)).astype(np.float32)
  out = (Tensor(x, device=dev).pad(pad) * 2).contiguous()
  got, opts = _run_with_heuristic(out, dev)
  assert any(o.op is OptOps.UPCAST for o in opts)
  np.testing.assert_array_equal(got.reshape(out.shape), np.pad(x, ((0, 0), (0, 0), pad[2:], pad[:2])) * 2)

def test_strided_1x1_conv_copies_only_the_pixels_it_reads():
  # a ResNet downsample: a 1x1 stride-2 conv of relu(x + r), the block's output, four weight panels. Its input is computed once into a
  # buffer: only the pixels the conv reads (a quarter), which the conv then reads contiguously
  rng = np.random.default_rng(3)
  xn, rn, wn = (rng.standard_normal(s, dtype=np.float32) for s in ((1, 16, 12, 12), (1, 16, 12, 12), (128, 16, 1, 1)))
  x, r, w = Tensor(xn, device="CPU").realize(), Tensor(rn, device="CPU").realize(), Tensor(wn, device="CPU").realize().pack_conv_weight()
  kernels = [si for si in (x + r).relu().conv2d(w, stride=2).schedule() if si.ast.op is Ops.SINK]
  out = (x + r).relu().conv2d(w, stride=2)
  assert len(kernels) == 2 and kernels[0].bufs[0].size == 16 * 6 * 6
  ref = torch.nn.functional.conv2d(torch.relu(torch.from_numpy(xn) + torch.from_numpy(rn)), torch.from_numpy(wn), stride=2)
  np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)

# a Zen 3 core as its machine model reads (16 AVX2 registers, 2 FMA pipes of latency 4, 32 KB L1, 512 KB L2)
ZEN3 = MachineModel("zen3", simd_bytes=32, vector_regs=16, fma_chains=8, fma_gflops=93.0, l1=32*1024, l2=512*1024, l3=32*1024*1024, cores=2)

@pytest.mark.parametrize("cin,cout,size,stride,tile", [(64, 64, 56, 1, (8, 8)), (64, 128, 56, 2, (4, 16)), (128, 128, 28, 1, (4, 16)),
                                                       (128, 256, 28, 2, (2, 32)), (256, 256, 14, 1, (2, 32)), (512, 512, 7, 1, (7, 8))])
def test_resnet18_conv_plans(cin, cout, size, stride, tile, monkeypatch):
  # ResNet-18's 3x3 convs (a packed weight, a bias and a relu, as the ONNX runner makes them) on a Zen 3: the register tile (output columns x
  # output channels), the weight's panels as wide as its lanes, and no panel blocks (a conv's weight is no GEMM's B). The 64-channel 56x56
  # conv's 8 x 8 tile keeps its 18 KB panel in L1; the stride-2 128 -> 256 one keeps 2 x 32 (its 4 ms regression would be a plan change)
  from tinygrad.helpers import SCHEDULE_CACHE
  ren = Device["CPU"].renderer
  monkeypatch.setattr(ren, "machine", ZEN3)
  monkeypatch.setattr(ren, "simd_bytes", ZEN3.simd_bytes)
  monkeypatch.setattr(SCHEDULE_CACHE, "value", 0)
  rng = np.random.default_rng(cin + stride)
  x = Tensor(rng.standard_normal((1, cin, size, size), dtype=np.float32), device="CPU").realize()
  wn = rng.standard_normal((cout, cin, 3, 3), dtype=np.float32) / (3 * cin ** 0.5)
  w = Tensor(wn, device="CPU").realize().pack_conv_weight(out_width=size // stride)
  b = Tensor(rng.standard_normal(cout, dtype=np.float32), device="CPU").realize()
  def make() -> Tensor: return x.relu().conv2d(w, b, stride=stride, padding=1).relu()
  conv = [si for si in make().schedule() if si.ast.op is Ops.SINK][-1]
  opts = hand_coded_optimizations(Kernel(conv.ast, ren))
  ups = [o.arg for o in opts if o.op is OptOps.UPCAST]
  assert ups == [tile[1], tile[0]] and Opt(OptOps.UNROLL, 2, 3) in opts and not any(o.op is OptOps.BLOCK for o in opts), opts
  if cout * cin <= 128 * 256:
    ref = torch.nn.functional.conv2d(torch.from_numpy(x.numpy()).relu(), torch.from_numpy(wn), torch.from_numpy(b.numpy()), stride=stride, padding=1)
    np.testing.assert_allclose(make().numpy(), ref.relu().numpy(), rtol=1e-4, atol=1e-4)
