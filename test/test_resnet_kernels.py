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
