# a CPU conv's sums stored blocked (panels, *spatial, lanes: schedule/packing.pack_conv) and the kernels that read them: the epilogue (bias,
# residual, relu) stored blocked by the conv's kernel, a pool or mean computed blocked too (block_reduce), the next conv's padded input
# copied channels last. Each reads the blocked buffer through one plain view, and every result matches torch.
import re
import numpy as np
import pytest
import torch
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.helpers import Context, prod
from tinygrad.engine.realize import get_program
from tinygrad import Device

pytestmark = pytest.mark.skipif(Tensor.empty(1, device="CPU").device != "CPU", reason="CPU layouts")

def _data(*shape, seed=0, scale=1.0) -> np.ndarray: return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)

def _kernels(t:Tensor) -> list:
  return [si.ast for si in t.schedule() if si.ast.op is Ops.SINK]

def _stores(ast) -> list: return [u.src[1].arg for u in ast.toposort() if u.op is Ops.STORE]
def _loads(ast) -> list: return [u.src[1].arg for u in ast.toposort() if u.op is Ops.LOAD]

def _stem(x:Tensor, w:Tensor, b:Tensor) -> Tensor: return x.conv2d(w, b, stride=2, padding=3).relu().max_pool2d(3, 2, padding=1)

def test_stem_conv_and_maxpool_blocked():
  xn, wn, bn = _data(1, 3, 112, 112), _data(64, 3, 7, 7, seed=1, scale=0.1), _data(64, seed=2)
  ref = torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(*map(torch.from_numpy, (xn, wn, bn)), stride=2, padding=3).relu(), 3, 2, 1)
  ks = _kernels(_stem(Tensor(xn), Tensor(wn), Tensor(bn)))   # (scheduling a tensor makes it its buffers: a second one is run)
  out = _stem(Tensor(xn), Tensor(wn), Tensor(bn))
  conv = next(k for k in ks if any(u.op is Ops.REDUCE_AXIS and u.arg[0] is Ops.ADD for u in k.toposort()) and len(_loads(k)) >= 3)
  pool = next(k for k in ks if any(u.op is Ops.REDUCE_AXIS and u.arg[0] is Ops.MAX for u in k.toposort()))
  # the conv stores its lanes innermost, contiguously (its store's view is the buffer itself, lanes last)
  (st,) = _stores(conv)
  assert st.contiguous and st.shape[st.shape.index(56) + 2] in (8, 16, 32)
  # the pool reads the conv's buffer with plain index maths (where a view through the conv's permute would divide the channel by the lanes)
  # and stores blocked too: its lanes innermost, contiguously
  src = get_program(pool, Device["CPU"].renderer).src
  assert not any(op in src for op in ("/", "%", ">>", "long")), src
  (pst,) = _stores(pool)
  assert pst.contiguous and pst.shape[-3] == st.shape[st.shape.index(56) + 2]
  # the pool's output is a view of its blocked buffer: read back as the plain (1, 64, 28, 28)
  np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)

def test_residual_block_blocked_matches_torch():
  # conv, relu, conv, + residual, relu: the residual add and relus are epilogues of the conv kernels, the padded inputs copied channels last
  xn = _data(1, 64, 28, 28)
  w1, w2, b1, b2 = _data(64, 64, 3, 3, seed=1, scale=0.05), _data(64, 64, 3, 3, seed=2, scale=0.05), _data(64, seed=3), _data(64, seed=4)
  def block() -> Tensor:
    x0 = Tensor(xn).conv2d(Tensor(_data(64, 64, 3, 3, seed=5, scale=0.05)), padding=1)   # the block's input: itself a conv's blocked sums
    return (x0.conv2d(Tensor(w1), Tensor(b1), padding=1).relu().conv2d(Tensor(w2), Tensor(b2), padding=1) + x0).relu()
  ks, y = _kernels(block()), block()
  # 3 convs, 1 padded copy (of the first conv's input, a plain buffer), 3 weight panels; no other kernel: the first two convs' kernels store
  # their results straight into the next conv's padded, channels-last input, zero border included, which the residual add reads too
  assert len(ks) == 7, [len(_loads(k)) for k in ks]
  copies = [k for k in ks if not any(u.op is Ops.REDUCE_AXIS for u in k.toposort()) and prod(_stores(k)[0].shape) == 64 * 30 * 30]
  assert len(copies) == 1 and all(len(v.views) == 1 for k in copies for v in _loads(k))
  padded = [k for k in ks if any(u.op is Ops.REDUCE_AXIS for u in k.toposort()) and len(_stores(k)) > 1]
  # (each: the 28x28 values, whole runs of channels, and the border's slabs)
  assert len(padded) == 2 and all([n for n in _stores(k)[0].shape if n != 1][-1] in (8, 16, 32) for k in padded)
  t = lambda a: torch.from_numpy(a)  # noqa: E731
  r0 = torch.nn.functional.conv2d(t(xn), t(_data(64, 64, 3, 3, seed=5, scale=0.05)), padding=1)
  r = torch.nn.functional.conv2d(torch.nn.functional.conv2d(r0, t(w1), t(b1), padding=1).relu(), t(w2), t(b2), padding=1)
  np.testing.assert_allclose(y.numpy(), (r + r0).relu().numpy(), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("op", ["mean", "max", "avg_pool"])
def test_reduce_of_blocked_conv(op):
  xn, wn = _data(1, 32, 30, 30), _data(128, 32, 3, 3, seed=1, scale=0.1)
  y = Tensor(xn).conv2d(Tensor(wn), padding=1)
  r = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn), padding=1)
  if op == "mean": got, want = y.mean((2, 3)), r.mean((2, 3))
  elif op == "max": got, want = y.max(3), r.amax(3)
  else: got, want = y.avg_pool2d(2), torch.nn.functional.avg_pool2d(r, 2)
  np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)

def test_reduce_over_channels_of_blocked_conv():
  # a reduce over the channels themselves isn't computed blocked; still right
  xn, wn = _data(1, 32, 30, 30), _data(128, 32, 3, 3, seed=1, scale=0.1)
  got = Tensor(xn).conv2d(Tensor(wn), padding=1).sum(1)
  want = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn), padding=1).sum(1)
  np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-3)

def test_blocked_conv_realized_and_trained():
  # the conv's realized output is a view of its blocked buffer; gradients through it (and through a max pool) match torch
  xn, wn = _data(2, 16, 32, 32), _data(64, 16, 3, 3, seed=1, scale=0.1)
  x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
  y = x.conv2d(w, padding=1).realize()
  tx, tw = torch.from_numpy(xn).requires_grad_(), torch.from_numpy(wn).requires_grad_()
  ty = torch.nn.functional.conv2d(tx, tw, padding=1)
  np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-4)
  with Context(PACKED_CONV_MIN=1):
    x.conv2d(w, padding=1).relu().max_pool2d(2).sum().backward()
  torch.nn.functional.max_pool2d(ty.relu(), 2).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-3)
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-3)

def test_batch32_conv_forward_is_one_conv_kernel():
  # issue 14's case, conv2d b32 64->64 3x3 32x32 (no padding): the weight is copied into panels and the conv stores its sums blocked, whole
  # vectors of lanes; no other kernel (no copy of the input, and no un-blocking copy: a reader sees the blocked buffer through a view)
  xn, wn = _data(32, 64, 32, 32), _data(64, 64, 3, 3, seed=1, scale=0.05)
  ks = _kernels(Tensor(xn).conv2d(Tensor(wn)))
  assert len(ks) == 2, [len(_loads(k)) for k in ks]
  conv = next(k for k in ks if any(u.op is Ops.REDUCE_AXIS for u in k.toposort()))
  (st,) = _stores(conv)
  shape = tuple(s for s in st.shape if s != 1)   # (batch, panels, 30, 30, lanes), the reduce's axes 1 after them
  assert st.contiguous and shape[-1] in (8, 16, 32) and shape == (32, 64 // shape[-1], 30, 30, shape[-1]), st.shape
  src = get_program(conv, Device["CPU"].renderer).src
  assert re.search(r"\*\(\(float(8|16|32)\*\)\(data0\+", src) and not re.search(r"\*\(data0\+", src), "the sums are stored as vectors only"
  want = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn))
  np.testing.assert_allclose(Tensor(xn).conv2d(Tensor(wn)).numpy(), want.numpy(), rtol=1e-4, atol=1e-4)

# every later use of a blocked conv output (small convs forced to pack: PACKED_CONV_MIN=1) matches torch: views, reduces over each axis,
# pools with odd windows, writes into it, copies to other devices, a jitted conv, a matmul, a concat, and the gradients through it
_F = torch.nn.functional
USES = {
  "view": lambda t, lib: t[:, 1::3, ::2, 1:].flip(3).permute(0, 2, 3, 1).reshape(t.shape[0], -1),
  "pad": lambda t, lib: _F.pad(t, (1, 2, 0, 1)) if lib is torch else t.pad((1, 2, 0, 1)),
  "sums": lambda t, lib: t.sum(0) + t.sum(1, keepdim=True) + t.sum(2, keepdim=True) + t.sum(3, keepdim=True),
  "maxpool": lambda t, lib: _F.max_pool2d(t, 3, 2, padding=1) if lib is torch else t.max_pool2d(3, 2, padding=1),
  "avgpool": lambda t, lib: _F.avg_pool2d(t, (3, 1), (1, 2)) if lib is torch else t.avg_pool2d((3, 1), (1, 2)),
  "matmul": lambda t, lib: t @ lib.ones(t.shape[3], 5) * 0.5,
  "cat": lambda t, lib: lib.cat([t, t[:, :3] * 2], 1) if lib is torch else t.cat(t[:, :3] * 2, dim=1),
  "residual": lambda t, lib: (t + t.flip(1) * 0.5).relu(),
}

@pytest.mark.parametrize("use", sorted(USES))
@pytest.mark.parametrize("cfg", [(2, 8, 32, 3, 1, (1, 2, 0, 1), 1), (1, 8, 32, 3, 2, 1, 2)], ids=["b2", "grp"])
def test_uses_of_blocked_conv(cfg, use):
  bs, cin, cout, k, s, pad, groups = cfg
  xn, wn, bn = _data(bs, cin, 9, 7), _data(cout, cin // groups, k, k, seed=1, scale=0.2), _data(cout, seed=2)
  x, w, b = (Tensor(a, requires_grad=True) for a in (xn, wn, bn))
  tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xn, wn, bn))
  with Context(PACKED_CONV_MIN=1):
    y = x.conv2d(w, b, stride=s, padding=pad, groups=groups).realize()
    ty = _F.conv2d(_F.pad(tx, pad) if isinstance(pad, tuple) else tx, tw, tb, stride=s, padding=0 if isinstance(pad, tuple) else pad, groups=groups)
    got, want = USES[use](y, Tensor), USES[use](ty, torch)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    gn = _data(*want.shape, seed=3)
    (got * Tensor(gn)).sum().backward()
  (want * torch.from_numpy(gn)).sum().backward()
  for a, ta in ((x, tx), (w, tw), (b, tb)): np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-3, atol=1e-3)

def test_writes_copies_and_jit_of_blocked_conv(tmp_path):
  from tinygrad import TinyJit
  from tinygrad.nn.state import safe_save, safe_load
  xn, wn = _data(2, 8, 9, 7), _data(32, 8, 3, 3, seed=1, scale=0.2)
  ref = torch.nn.functional.conv2d(torch.from_numpy(xn), torch.from_numpy(wn), padding=1).numpy()
  def conv(x:Tensor) -> Tensor:
    with Context(PACKED_CONV_MIN=1): return x.conv2d(Tensor(wn), padding=1).realize()
  y = conv(Tensor(xn))
  assert not y.uop.st.contiguous   # (a permuted view of the blocked buffer)
  np.testing.assert_allclose(np.array(y.tolist()), ref, rtol=1e-4, atol=1e-4)
  for dev in ("PYTHON", "LLVM"): np.testing.assert_allclose(y.to(dev).numpy(), ref, rtol=1e-4, atol=1e-4)
  safe_save({"y": y}, str(tmp_path / "y.safetensors"))
  np.testing.assert_allclose(safe_load(str(tmp_path / "y.safetensors"))["y"].numpy(), ref, rtol=1e-4, atol=1e-4)
  y[:, 16:] = y[:, :16]
  y[Tensor([0, 1]), Tensor([3, 31])] = 9.0
  r = ref.copy()
  r[:, 16:] = ref[:, :16]
  r[[0, 1], [3, 31]] = 9.0
  np.testing.assert_allclose(y.numpy(), r, rtol=1e-4, atol=1e-4)
  y.assign(y.flip(2) * 2 + 1).realize()
  np.testing.assert_allclose(y.numpy(), r[:, :, ::-1] * 2 + 1, rtol=1e-4, atol=1e-4)
  jf = TinyJit(lambda x: (conv(x) * 2).realize())
  for i in range(3):
    want = torch.nn.functional.conv2d(torch.from_numpy(xn + i), torch.from_numpy(wn), padding=1).numpy() * 2
    np.testing.assert_allclose(jf(Tensor(xn + i)).numpy(), want, rtol=1e-4, atol=1e-4)
