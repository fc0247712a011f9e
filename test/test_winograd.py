# Winograd F(2x2, 3x3) convolutions (Tensor._winograd_conv): stride-1 3x3 convs as an input transform, a GEMM per transformed point and an
# output transform. Values and gradients against torch, which convs take the path (WINO=1 every one, WINO=-1 none, the default a model's
# constant weights: the ONNX runner's Conv), and the weight transformed once
import numpy as np
import pytest
import torch
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_schedule
from extra import onnx_ops

def _data(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
def _close(a, b, rel=1e-5): np.testing.assert_allclose(a, b, atol=rel * max(1.0, float(np.abs(b).max())), rtol=0)

def _reduces(t:Tensor) -> int:
  # the kernels of t's schedule that reduce (a direct conv is one, a Winograd conv six: the weight's transform, the input's in two passes,
  # the GEMM and the output's in two passes)
  # the graph's kernels (the schedule, run: t is realized)
  run_schedule(sched := t.schedule())
  return sum(any(u.op is Ops.REDUCE_AXIS for u in si.ast.toposort()) for si in sched if si.ast.op is Ops.SINK)

@pytest.mark.parametrize("bs,cin,cout,h,w,pad,bias", [(1, 16, 16, 8, 8, 1, False), (2, 5, 7, 9, 11, 1, True), (1, 3, 10, 8, 7, 0, True),
                                                      (3, 12, 20, 6, 6, 1, False), (1, 40, 48, 7, 7, 1, True), (2, 9, 3, 5, 4, 2, True),
                                                      # F(4x4, 3x3): outputs of 14 or more
                                                      (1, 8, 12, 16, 17, 1, True), (2, 5, 3, 19, 14, 0, False), (1, 64, 64, 28, 28, 1, True)])
def test_forward_matches_torch(bs, cin, cout, h, w, pad, bias):
  x, wt, b = _data(bs, cin, h, w), _data(cout, cin, 3, 3, seed=1), _data(cout, seed=2)
  ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b) if bias else None, padding=pad).numpy()
  with Context(WINO=1):
    out = Tensor(x).conv2d(Tensor(wt), Tensor(b) if bias else None, padding=pad)
    assert _reduces(out) == 6
    # (F(4x4, 3x3)'s transforms have entries up to 8 and 1/24: errors up to some 1e-5 of the largest output, F(2x2)'s 1e-6)
    _close(out.numpy(), ref, 1e-5 if min(ref.shape[2:]) < 14 else 5e-5)

@pytest.mark.parametrize("bs,cin,cout,h,w,pad", [(2, 5, 7, 9, 11, 1), (1, 8, 4, 6, 7, 0), (1, 4, 6, 16, 18, 1)])
def test_grads_match_torch(bs, cin, cout, h, w, pad):
  x, wt, b, g = _data(bs, cin, h, w), _data(cout, cin, 3, 3, seed=1), _data(cout, seed=2), _data(bs, cout, h + 2*pad - 2, w + 2*pad - 2, seed=3)
  tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, wt, b))
  (torch.nn.functional.conv2d(tx, tw, tb, padding=pad) * torch.tensor(g)).sum().backward()
  with Context(WINO=1):
    gx, gw, gb = (Tensor(a, requires_grad=True) for a in (x, wt, b))
    (gx.conv2d(gw, gb, padding=pad) * Tensor(g)).sum().backward()
    for t, r in ((gx, tx), (gw, tw), (gb, tb)): _close(t.grad.numpy(), r.grad.numpy())

def test_conv_transpose_through_winograd():
  # a stride-1 transposed conv is a conv with the flipped weight (padding 2 - p): padding 3 crops one pixel (a negative pad), whose gradient
  # is the Winograd graph's own
  x, wt = _data(1, 6, 9, 8), _data(6, 4, 3, 3, seed=1)
  tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(wt, requires_grad=True)
  ref = torch.nn.functional.conv_transpose2d(tx, tw, padding=3)
  ref.square().sum().backward()
  with Context(WINO=1):
    gx, gw = Tensor(x, requires_grad=True), Tensor(wt, requires_grad=True)
    out = gx.conv_transpose2d(gw, padding=3)
    out.square().sum().backward()
    _close(out.numpy(), ref.detach().numpy())
    _close(gx.grad.numpy(), tx.grad.numpy(), 1e-4)
    _close(gw.grad.numpy(), tw.grad.numpy(), 1e-4)

def test_which_convs_take_it():
  x, w = Tensor(_data(1, 32, 14, 14)), Tensor(_data(32, 32, 3, 3))
  assert _reduces(x.conv2d(w, padding=1)) == 1   # plain conv2d by default: direct
  with Context(WINO=1):
    assert _reduces(x.conv2d(w, padding=1)) == 6
    # not 3x3 stride 1, grouped, float16: direct
    assert _reduces(x.conv2d(w, padding=1, stride=2)) == 1
    assert _reduces(x.conv2d(Tensor(_data(32, 16, 3, 3)), padding=1, groups=2)) == 1
    assert _reduces(x.conv2d(Tensor(_data(32, 32, 5, 5)), padding=2)) == 1
    assert _reduces(x.half().conv2d(w.half(), padding=1)) == 1

@pytest.mark.parametrize("cout,size", [(48, 10), (40, 10), (32, 16)])
def test_onnx_conv_constant_weight_transformed_once(cout, size):
  # the ONNX Conv of a constant weight: transformed (and where the GEMM packs its operand, in its panels, 48 = 3 panels of 16) once;
  # F(4x4, 3x3) for an output of 16
  x, wt, b = _data(1, 32, size, size), _data(cout, 32, 3, 3, seed=1), _data(cout, seed=2)
  ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(wt), torch.tensor(b), padding=1).numpy()
  W, B = Tensor(wt).realize(), Tensor(b).realize()
  outs = [onnx_ops.Conv(Tensor(x), W, B, pads=[1, 1, 1, 1]) for _ in range(2)]
  u = onnx_ops._packed_weights[id(W)][2]
  p = 16 if size < 16 else 36
  assert u.uop.is_realized and u.shape[0] == p and np.prod(u.shape) == p * 32 * cout
  for out in outs:
    assert _reduces(out) == 5   # the weight's transform is done
    _close(out.numpy(), ref)
  with Context(WINO=-1): assert _reduces(onnx_ops.Conv(Tensor(x), Tensor(wt).realize(), B, pads=[1, 1, 1, 1])) == 1

def test_python_emulator_bounds():
  # the PYTHON device checks every load and store against its buffer: the tiles' views, paddings and crops stay inside
  x, wt = _data(2, 3, 5, 6), _data(4, 3, 3, 3, seed=1)
  ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(wt), padding=1).numpy()
  with Context(WINO=1):
    _close(Tensor(x, device="PYTHON").conv2d(Tensor(wt, device="PYTHON"), padding=1).numpy(), ref)
    u = Tensor(wt, device="PYTHON").winograd_conv_weight()
    _close(Tensor(x, device="PYTHON").pad((1, 1, 1, 1))._winograd_conv(u).numpy(), ref)

def test_gemm_reads_channels_contiguously():
  # the GEMM's A, the input transform's output (16 points, tiles, cin), is stored with the channels contiguous even where the scheduler
  # packs big convs (at batch 8 it stored the points innermost, and the GEMM read A 16 floats apart: 3x slower)
  x, w = Tensor.empty(8, 64, 56, 56), Tensor.empty(64, 64, 3, 3).winograd_conv_weight()
  sched = [si for si in x.pad((1, 1, 1, 1))._winograd_conv(w).schedule() if si.ast.op is Ops.SINK]
  gemm = next(si for si in sched if si.bufs[-1].size == 16 * 64 * 64)   # (out, A, the weight's panels)
  a = [u.src[1].arg.real_strides() for u in gemm.ast.toposort() if u.op is Ops.LOAD and u.src[0].arg == 1]
  assert a and all(st[-1] == 1 for st in a), a   # the reduce axis (cin), last
