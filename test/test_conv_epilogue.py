# a conv's bias, residual add and relu are its kernel's epilogue (grouper.epilogue_end): the conv's kernel stores relu(conv + b + x), where
# the readers (a padded copy for the next conv, a max pool) would each compute it again from the stored sums. Checked by which kernel
# reads the bias and the residual, kernel counts, and results against torch on CPU (operands packed, padded copies) and PYTHON (neither)
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.helpers import Context
from tinygrad.engine.realize import run_schedule

def _readers(sched, t:Tensor) -> list[int]:
  # the kernels (indices among the schedule's kernels) that read t's buffer
  buf = t.uop.base.buffer
  kernels = [si for si in sched if si.ast.op is Ops.SINK]
  return [i for i, si in enumerate(kernels) if any(b is buf for b in si.bufs[1:])]

def _reduces(sched) -> list[int]:
  kernels = [si for si in sched if si.ast.op is Ops.SINK]
  return [i for i, si in enumerate(kernels) if any(u.op is Ops.REDUCE_AXIS for u in si.ast.toposort())]

def _data(*shapes, seed=0):
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(s, dtype=np.float32) for s in shapes]

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_stem_conv_bias_relu_then_maxpool(dev):
  # ResNet's stem: 7x7 stride 2 padding 3, 3 -> 32 channels; the max pool reads the relu'd sums the conv's kernel stored
  xn, wn, bn = _data((1, 3, 38, 38), (32, 3, 7, 7), (32,))
  with Context(PACKED_CONV_MIN=1):
    x, w, b = (Tensor(a, device=dev).realize() for a in (xn, wn, bn))
    out = x.conv2d(w, b, stride=2, padding=3).relu().max_pool2d(3, 2, padding=1)
    sched = out.schedule()
    red = _reduces(sched)
    # the conv's kernel reads the bias; the pool (the last kernel) reads only the conv's output
    assert _readers(sched, b) == [red[0]] and len(red) == 2
    run_schedule(sched)
    got = out.numpy()
  ref = torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(*map(torch.tensor, (xn, wn, bn)), stride=2, padding=3).relu(), 3, 2, 1)
  np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_residual_block_add_and_relu_in_the_conv(dev):
  # relu(conv2(relu(conv1(x) + b1)) + b2 + x), then a conv of that: each conv's kernel reads its bias, conv2's the residual x too, and no
  # elementwise kernel is left between the convs but the padded copies the CPU's convs read
  xn, w1n, b1n, w2n, b2n, w3n = _data((1, 32, 12, 12), (32, 32, 3, 3), (32,), (32, 32, 3, 3), (32,), (32, 32, 3, 3), seed=1)
  # weights scaled by 1/sqrt(fan-in), as a trained net's are: unscaled, three convs grow values to ~5e3 and the summation order alone (torch's
  # AVX2 and AVX-512 kernels differ) moves them past 1e-4
  w1n, w2n, w3n = (w / np.float32(np.sqrt(32 * 9)) for w in (w1n, w2n, w3n))
  with Context(PACKED_CONV_MIN=1):
    x, w1, b1, w2, b2, w3 = (Tensor(a, device=dev).realize() for a in (xn, w1n, b1n, w2n, b2n, w3n))
    y = x.conv2d(w1, b1, padding=1).relu()
    z = (y.conv2d(w2, b2, padding=1) + x).relu()
    out = z.conv2d(w3, padding=1)
    sched = out.schedule()
    red = _reduces(sched)
    assert len(red) == 3 and _readers(sched, b1) == [red[0]] and _readers(sched, b2) == [red[1]]
    # x: read by the first conv (or its padded copy) and as the residual by the second conv's kernel
    assert red[1] in _readers(sched, x)
    kernels = [si for si in sched if si.ast.op is Ops.SINK]
    # CPU: the weights' panel copies and x's padded copy (conv1 and conv2 store into the next conv's padded input); PYTHON: the three convs
    assert len(kernels) == (3 + 3 + 1 if Device[dev].renderer.packs_operands else 3)
    run_schedule(sched)
    got = out.numpy()
  t = lambda a: torch.tensor(a)  # noqa: E731
  ty = torch.nn.functional.conv2d(t(xn), t(w1n), t(b1n), padding=1).relu()
  tz = (torch.nn.functional.conv2d(ty, t(w2n), t(b2n), padding=1) + t(xn)).relu()
  np.testing.assert_allclose(got, torch.nn.functional.conv2d(tz, t(w3n), padding=1).numpy(), rtol=1e-4, atol=1e-4)

def test_reduce_read_twice_stays_its_own_buffer():
  # a sum whose elementwise result is read through a view and also, elementwise, by another output: the epilogue stops where the two
  # readers part (one kernel for the sum and its +1, read by both)
  an = _data((16, 32))[0]
  a = Tensor(an).realize()
  s = a.sum(1) + 1
  out1, out2 = s.reshape(4, 4).permute(1, 0).contiguous(), s * 2
  sched = out1.schedule(out2)
  assert len([si for si in sched if si.ast.op is Ops.SINK]) == 3
  run_schedule(sched)
  np.testing.assert_allclose(out1.numpy(), (an.sum(1) + 1).reshape(4, 4).T, rtol=1e-5)
  np.testing.assert_allclose(out2.numpy(), (an.sum(1) + 1) * 2, rtol=1e-5)

def test_epilogue_loads_come_after_the_reduce_loops():
  # the residual the epilogue adds is loaded after the conv's reduce loops (linearize), not before them, where its tile of values would
  # be held (spilled) across the whole reduce
  from tinygrad.engine.realize import get_program
  xn, wn, bn = _data((1, 32, 12, 12), (32, 32, 3, 3), (32,), seed=2)
  with Context(PACKED_CONV_MIN=1):
    x, w, b = (Tensor(a, device="CPU").realize() for a in (xn, wn, bn))
    out = (x.conv2d(w, b, padding=1) + x).relu()
    sched = out.schedule()
    si = [si for si in sched if si.ast.op is Ops.SINK][_reduces(sched)[0]]
    resid = next(i for i, buf in enumerate(si.bufs) if buf is x.uop.base.buffer)
    uops = get_program(si.ast, Device["CPU"].renderer).uops
    assert uops is not None
    pos = {u: i for i, u in enumerate(uops)}
    loads = [i for i, u in enumerate(uops) if u.op is Ops.LOAD and any(g.op is Ops.DEFINE_GLOBAL and g.arg == resid for g in u.toposort())]
    assert loads
    # a loop the load doesn't depend on (a reduce loop), opened inside the load's innermost output loop, has ended before the load
    own = {u for u in uops[loads[0]].toposort() if u.op is Ops.RANGE}
    inner = max(pos[u] for u in own)
    assert any(u.op is Ops.ENDRANGE and u.src[0] not in own and pos[u.src[0]] > inner and i < loads[0] for i, u in enumerate(uops))
    run_schedule(sched)
    got = out.numpy()
  ref = (torch.nn.functional.conv2d(*map(torch.tensor, (xn, wn, bn)), padding=1) + torch.tensor(xn)).relu()
  np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4, atol=1e-4)
