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

def test_residual_conv_gets_its_peers_tile_and_reads_the_residual_once_per_output():
  # ResNet-18's second block (64 channels, 56x56; its input x the first block's output, stored channels-last and padded for conv1): conv2's
  # kernel, which also adds x, gets the same opts (tile, loop order) as conv1's, its peer without a residual, and reads x where it stores each
  # output: one vector load of the store's width at the store's own index, outside the reduce loops. (The residual kernels ran 0.4-0.6 ms
  # slower than their peers in best-of-10 runs on a loaded Zen 3; with the code identical but for that load, best-of-40 runs put them within
  # 3%: the gap was the extra 860 KB the residual reads, under contention for the caches)
  from tinygrad.engine.realize import get_program
  from tinygrad.opt.kernel import Kernel, OptOps
  from tinygrad.opt.heuristic import hand_coded_optimizations
  x0n, w0n, b0n, w1n, b1n, w2n, b2n, w3n = _data((1, 64, 56, 56), *[(64, 64, 3, 3), (64,)] * 3, (64, 64, 3, 3), seed=3)
  w0n, w1n, w2n, w3n = (w / np.float32(np.sqrt(64 * 9)) for w in (w0n, w1n, w2n, w3n))
  ren = Device["CPU"].renderer
  x0, w0, b0, w1, b1, w2, b2, w3 = (Tensor(a, device="CPU").realize() for a in (x0n, w0n, b0n, w1n, b1n, w2n, b2n, w3n))
  w0, w1, w2, w3 = (w.pack_conv_weight().realize() for w in (w0, w1, w2, w3))   # as the ONNX runner packs constant weights
  x = x0.conv2d(w0, b0, padding=1).relu()
  out = (x.conv2d(w1, b1, padding=1).relu().conv2d(w2, b2, padding=1) + x).relu().conv2d(w3, padding=1)
  sched = out.schedule()
  kernels = [si for si in sched if si.ast.op is Ops.SINK]
  first, peer, resid = (kernels[i] for i in _reduces(sched)[:3])
  res_arg = next(i for i, b in enumerate(resid.bufs) if i > 0 and b is first.bufs[0])
  assert len(resid.bufs) == len(peer.bufs) + 1
  opts = [[o for o in hand_coded_optimizations(Kernel(si.ast, ren)) if o.op is not OptOps.THREAD] for si in (peer, resid)]
  assert opts[0] == opts[1]
  progs = [get_program(si.ast, ren, o) for si, o in zip((peer, resid), opts)]
  uops = progs[1].uops
  assert progs[0].uops is not None and uops is not None
  assert [u.src[0].arg for u in progs[0].uops if u.op is Ops.RANGE] == [u.src[0].arg for u in uops if u.op is Ops.RANGE]
  res_loads = [u for u in uops if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and u.src[0].src[0].arg == res_arg]
  # the stores of computed values (not the padding border's zeros)
  stores = [u for u in uops if u.op is Ops.STORE and u.src[0].src[0].arg == 0 and
            not all(s.op is Ops.CONST for s in (u.src[1].src if u.src[1].op is Ops.VECTORIZE else (u.src[1],)))]
  assert res_loads and len(res_loads) == len(stores)
  assert {(ld.src[0].src[1], ld.dtype.count) for ld in res_loads} == {(st.src[0].src[1], st.src[1].dtype.count) for st in stores}
  assert min(ld.dtype.count for ld in res_loads) * 4 >= ren.simd_bytes   # vector loads, a SIMD register's width or more
  # no loop its address doesn't walk (a reduce loop) is open where the residual is read
  open_loops: set = set()
  for u in uops:
    if u.op is Ops.RANGE: open_loops.add(u)
    elif u.op is Ops.ENDRANGE: open_loops.discard(u.src[0])
    elif u in res_loads: assert open_loops <= set(u.toposort())
  run_schedule(sched)
  got = out.numpy()
  t, conv = (lambda a: torch.tensor(a)), torch.nn.functional.conv2d  # noqa: E731
  tx = conv(t(x0n), t(w0n), t(b0n), padding=1).relu()
  tz = (conv(conv(tx, t(w1n), t(b1n), padding=1).relu(), t(w2n), t(b2n), padding=1) + tx).relu()
  np.testing.assert_allclose(got, conv(tz, t(w3n), padding=1).numpy(), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("channels,size,panels_inside", [(64, 56, True), (128, 28, False)])
def test_conv_panel_loop_goes_inside_when_its_weight_fits_half_of_l2(monkeypatch, channels, size, panels_inside):
  # posing as a Zen 3 (16 AVX2 registers, 8 FMA chains, 512 KB L2): a 64-channel 3x3 conv's packed weight (147 KB, 36 KB panels that stream
  # from L2 anyway) fits half of L2, so its panel loop goes inside the output positions' loops; a 128-channel one's (590 KB) doesn't
  import dataclasses
  from tinygrad.engine.realize import get_program
  from tinygrad.helpers import SCHEDULE_CACHE
  from tinygrad.opt.kernel import Kernel, OptOps
  from tinygrad.opt.heuristic import hand_coded_optimizations
  from tinygrad.runtime.support.cpu_model import PROFILES
  ren, m = Device["CPU"].renderer, dataclasses.replace(PROFILES["avx2-1fma"], fma_chains=8, l2=512 * 1024)
  monkeypatch.setattr(ren, "machine", m)
  monkeypatch.setattr(ren, "simd_bytes", m.simd_bytes)
  monkeypatch.setattr(SCHEDULE_CACHE, "value", 0)
  xn, wn, bn = _data((1, channels, size, size), (channels, channels, 3, 3), (channels,), seed=4)
  wn /= np.float32(np.sqrt(channels * 9))
  x, w, b = (Tensor(a, device="CPU").realize() for a in (xn, wn, bn))
  out = (x.conv2d(w.pack_conv_weight().realize(), b, padding=1) + x).relu()
  sched = out.schedule()
  conv = [si for si in sched if si.ast.op is Ops.SINK][_reduces(sched)[0]]
  opts = [o for o in hand_coded_optimizations(Kernel(conv.ast, ren)) if o.op is not OptOps.THREAD]
  uops = get_program(conv.ast, ren, opts).uops
  assert uops is not None
  bounds = [u.src[0].arg for u in uops if u.op is Ops.RANGE]
  # the panel loop: output channels / the tile's 16 lanes; the output rows' loop: the output's height
  assert (bounds.index(channels // 16) > bounds.index(size)) == panels_inside
  assert any(o.op is OptOps.SWAP for o in opts) == panels_inside
  run_schedule(sched)
  ref = (torch.nn.functional.conv2d(*map(torch.tensor, (xn, wn, bn)), padding=1) + torch.tensor(xn)).relu()
  np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
