# a conv's kernel stores its result (its bias, relu, residual add: the epilogue) straight into the next conv's padded, channels-last input,
# zero border included (kernelize.padded_store), where a copy kernel used to pad it; other readers (the residual add) read it from there.
# Checked by kernel counts and against torch, also under TinyJit replay, where the memory planner hands buffers to other kernels.
import numpy as np
import torch
from tinygrad import Tensor, TinyJit, Device
from tinygrad.uop import Ops
from tinygrad.helpers import Context
from tinygrad.engine.realize import run_schedule

def _data(*shape, seed=0, scale=1.0):
  return (np.random.default_rng(seed).standard_normal(shape, dtype=np.float32) * scale)

def _kernels(sched): return [si for si in sched if si.ast.op is Ops.SINK]
def _has_reduce(si) -> bool: return any(u.op is Ops.REDUCE_AXIS for u in si.ast.toposort())

def test_conv_relu_conv_has_no_pad_copy():
  xn, w1n, b1n, w2n = _data(1, 32, 20, 20), _data(32, 32, 3, 3, seed=1, scale=0.1), _data(32, seed=2), _data(32, 32, 3, 3, seed=3, scale=0.1)
  with Context(PACKED_CONV_MIN=1):
    x, w1, b1, w2 = (Tensor(a).realize() for a in (xn, w1n, b1n, w2n))
    out = x.conv2d(w1, b1, padding=1).relu().conv2d(w2, padding=1)
    sched = out.schedule()
    ks = _kernels(sched)
    convs = [k for k in ks if _has_reduce(k)]
    assert len(convs) == 2
    if Device["CPU"].renderer.packs_operands:
      # the two convs, their weights' panels and x's padded copy (x is a plain buffer); no copy pads the relu's output
      assert len(ks) == 5
      # the first conv's buffer is the second's padded input: (20+2)^2 positions of 32 channels, border and all stored by the conv
      assert convs[0].bufs[0].size == 22 * 22 * 32 and convs[0].bufs[0] in convs[1].bufs[1:]
      assert len([u for u in convs[0].ast.src if u.op is Ops.STORE]) > 1
    run_schedule(sched)
    got = out.numpy()
  t = torch.from_numpy
  ref = torch.nn.functional.conv2d(torch.nn.functional.conv2d(t(xn), t(w1n), t(b1n), padding=1).relu(), t(w2n), padding=1)
  np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)

def test_padded_input_pixels_skewed_off_cache_set_period():
  # 256 channels are 1 KB a pixel: the padded copy gets one more block of lanes per pixel (zeros no load reads), so a window's pixels
  # don't all fall in the same few L1 sets (packing.SKEW_PITCH); the conv storing into it and the conv reading it see the same values
  xn, w1n, w2n = _data(1, 256, 6, 6), _data(256, 256, 3, 3, seed=1, scale=0.05), _data(256, 256, 3, 3, seed=2, scale=0.05)
  x, w1, w2 = (Tensor(a).realize() for a in (xn, w1n, w2n))
  out = x.conv2d(w1, padding=1).relu().conv2d(w2, padding=1)
  sched = out.schedule()
  convs = [k for k in _kernels(sched) if _has_reduce(k)]
  if Device["CPU"].renderer.packs_operands:
    per_pixel = convs[0].bufs[0].size // (8 * 8)
    assert len(convs) == 2 and 256 < per_pixel <= 256 + 16 and convs[0].bufs[0] in convs[1].bufs[1:]
  run_schedule(sched)
  t = torch.from_numpy
  ref = torch.nn.functional.conv2d(torch.nn.functional.conv2d(t(xn), t(w1n), padding=1).relu(), t(w2n), padding=1)
  np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-3)

def test_residual_chain_under_jit_replay():
  # three residual blocks: every block's output is the next block's padded input and its residual. Buffers of equal sizes, which the
  # memory planner reuses; new inputs every call (the border must be zero each time, whatever wrote the buffer before)
  ws = [Tensor(_data(32, 32, 3, 3, seed=10+i, scale=0.05)).realize() for i in range(6)]
  bs = [Tensor(_data(32, seed=20+i)).realize() for i in range(6)]
  def blocks(x:Tensor) -> Tensor:
    for i in range(0, 6, 2):
      y = x.conv2d(ws[i], bs[i], padding=1).relu()
      x = (y.conv2d(ws[i+1], bs[i+1], padding=1) + x).relu()
    return x.sum(axis=1)
  def ref(xn:np.ndarray) -> np.ndarray:
    x = torch.from_numpy(xn)
    for i in range(0, 6, 2):
      y = torch.nn.functional.conv2d(x, torch.from_numpy(ws[i].numpy()), torch.from_numpy(bs[i].numpy()), padding=1).relu()
      x = (torch.nn.functional.conv2d(y, torch.from_numpy(ws[i+1].numpy()), torch.from_numpy(bs[i+1].numpy()), padding=1) + x).relu()
    return x.sum(dim=1).numpy()
  with Context(PACKED_CONV_MIN=1):
    f = TinyJit(lambda x: blocks(x).realize())
    for call in range(5):
      xn = _data(2, 32, 12, 12, seed=100+call) + (3.0 if call % 2 else -1.0)
      np.testing.assert_allclose(f(Tensor(xn)).numpy(), ref(xn), rtol=1e-4, atol=1e-3)

def test_padded_contiguous_of_a_reduce_on_every_device():
  # written out by hand, any device: a sum's relu, padded (unevenly, one side zero) and made contiguous is stored by the sum's kernel,
  # border and all; the relu's other reader (an add) reads it back from there
  xn, wn = _data(2, 8, 9, 7, seed=4), _data(16, 8, 3, 3, seed=5, scale=0.2)
  for dev in ("CPU", "PYTHON"):
    x, w = Tensor(xn, device=dev), Tensor(wn, device=dev)
    y = x.conv2d(w).relu()
    p = y.pad(((0, 0), (0, 0), (2, 0), (1, 3))).contiguous()
    out = (p.sum(axis=1), y * 2)
    sched = out[0].schedule(out[1])
    # three kernels: the conv's writes p (y's 7x5 positions padded to 9x9), border and all; the sum and the doubling read p
    ks = _kernels(sched)
    assert len(ks) == 3 and [k.bufs[0].size for k in ks if _has_reduce(k) and len(k.bufs) == 3] == [2 * 16 * 9 * 9]
    run_schedule(sched)
    ty = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn)).relu()
    tp = torch.nn.functional.pad(ty, (1, 3, 2, 0))
    np.testing.assert_allclose(out[0].numpy(), tp.sum(dim=1).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[1].numpy(), (ty * 2).numpy(), rtol=1e-5, atol=1e-5)
