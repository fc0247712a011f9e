# processing: convolutions, pooling, interpolation, sorting, normalization, attention, losses and small linear algebra, against torch
import math
import numpy as np
import pytest
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.helpers import GlobalCounters, Context
from tinygrad.engine.realize import run_schedule

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

def _np(x): return x.detach().numpy() if isinstance(x, torch.Tensor) else x.numpy()

def compare(tiny_fn, torch_fn, inputs:list, grad:tuple[int, ...]|None=None, atol=1e-5, rtol=1e-4, grad_tol=None):
  """Run both on the same inputs (numpy arrays become tensors, anything else passes through). Compare the values, and the gradients of
  the float inputs named in grad (all float inputs by default) through a random weighting of the output, built before anything is
  realized. Tuple results compare element by element; gradients flow from the first."""
  if grad is None: grad = tuple(i for i, x in enumerate(inputs) if isinstance(x, np.ndarray) and x.dtype.kind == "f")
  tin = [Tensor(x, requires_grad=i in grad) if isinstance(x, np.ndarray) else x for i, x in enumerate(inputs)]
  tor = [torch.tensor(x, requires_grad=i in grad) if isinstance(x, np.ndarray) else x for i, x in enumerate(inputs)]
  want, got = torch_fn(*tor), tiny_fn(*tin)
  wants, gots = (list(want), list(got)) if isinstance(want, tuple) else ([want], [got])
  check_grad = bool(grad) and wants[0].requires_grad
  if check_grad:
    w = np.random.default_rng(0).standard_normal(tuple(wants[0].shape)).astype(_np(wants[0]).dtype)
    (gots[0] * Tensor(w)).sum().backward()
    (wants[0] * torch.tensor(w)).sum().backward()
  for g, wt in zip(gots, wants):
    gv, wv = _np(g), _np(wt)
    assert gv.shape == wv.shape, f"shape {gv.shape} != torch's {wv.shape}"
    np.testing.assert_allclose(gv.astype(np.float64), wv.astype(np.float64), atol=atol, rtol=rtol)
  if not check_grad: return
  gt = grad_tol if grad_tol is not None else (atol * 10, rtol * 10)
  for i in grad:
    tg = tor[i].grad if tor[i].grad is not None else torch.zeros_like(tor[i])
    assert tin[i].grad is not None, f"input {i} got no gradient"
    np.testing.assert_allclose(tin[i].grad.numpy(), tg.numpy(), atol=gt[0], rtol=gt[1], err_msg=f"gradient of input {i}")

def rnd(*shape, seed=0, dtype=np.float32): return np.random.default_rng(seed).standard_normal(shape).astype(dtype)

# ***** convolution *****

CONV_CASES = [  # (input shape, weight shape, kwargs)
  ((2, 4, 7, 6), (6, 2, 3, 3), dict(groups=2, stride=(2, 1), padding=1, dilation=(1, 2))),
  ((1, 3, 5, 5), (4, 3, 2, 2), dict(padding="same")),
  ((2, 2, 6, 5), (2, 1, 3, 1), dict(groups=2, padding="valid", stride=2)),
  ((1, 2, 9), (3, 2, 4), dict(stride=2, padding=2)),
  ((1, 2, 4, 3, 5), (2, 2, 2, 2, 3), dict(padding=(1, 0, 1))),
  ((4, 5, 5), (2, 4, 3, 3), dict(padding=1)),  # an unbatched input
  ((0, 2, 4, 4), (3, 2, 3, 3), dict()),
  ((1, 1, 1, 1), (1, 1, 1, 1), dict()),
]

@pytest.mark.parametrize("xs,ws,kw", CONV_CASES, ids=[f"{c[0]}-{c[1]}" for c in CONV_CASES])
def test_conv2d(device, xs, ws, kw):
  torch_conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(ws)]
  bias = rnd(ws[0], seed=2)
  compare(lambda x, w, b: x.conv2d(w, b, **kw), lambda x, w, b: torch_conv(x, w, b, **kw), [rnd(*xs, seed=0), rnd(*ws, seed=1), bias])

def test_conv2d_noncontiguous_and_asym_padding(device):
  compare(lambda x, w: x.permute(0, 1, 3, 2).conv2d(w, padding=(1, 0, 2, 1)),
          lambda x, w: F.conv2d(F.pad(x.permute(0, 1, 3, 2), (1, 0, 2, 1)), w), [rnd(1, 2, 5, 4), rnd(3, 2, 2, 3, seed=1)])

def test_conv2d_half(device):
  x, w = rnd(1, 2, 5, 5).astype(np.float16), rnd(2, 2, 3, 3, seed=1).astype(np.float16)
  got = Tensor(x).conv2d(Tensor(w)).numpy()
  assert got.dtype == np.float16
  np.testing.assert_allclose(got, F.conv2d(torch.tensor(x).float(), torch.tensor(w).float()).numpy(), atol=2e-2, rtol=2e-2)

def test_conv2d_kernel_count():
  # the window is a view of the padded input, so pad + windows + multiply + sum + bias are ONE kernel (the bound is 3)
  x, w, b = Tensor(rnd(2, 4, 16, 16)).realize(), Tensor(rnd(8, 4, 3, 3, seed=1)).realize(), Tensor(rnd(8, seed=2)).realize()
  GlobalCounters.reset()
  out = x.conv2d(w, b, padding=1, stride=1).realize()
  assert GlobalCounters.kernel_count == 1
  np.testing.assert_allclose(out.numpy(), F.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()), torch.tensor(b.numpy()), padding=1).numpy(),
                             atol=1e-4, rtol=1e-4)
  GlobalCounters.reset()
  x.conv2d(w, b, padding=2, stride=2, dilation=2).realize()
  assert GlobalCounters.kernel_count <= 3

def test_conv2d_backward_kernels():
  # the gradients are convolutions themselves: the input's one kernel (no im2col-sized buffer, no col2im reduce), the weight's a sum of
  # per-chunk partial sums (plus, on a CPU, copies of x and g with the channels innermost)
  x, w, g = Tensor(rnd(8, 4, 9, 9), requires_grad=True).realize(), Tensor(rnd(16, 4, 3, 3, seed=1)).realize(), Tensor(rnd(8, 16, 9, 9, seed=2)).realize()
  dx, dw = x.conv2d(w, padding=1).gradient(x, w, gradient=g)
  sched = dx.schedule()
  assert len(sched) <= 3   # the transposed conv, and on a CPU copies of the padded g and the weight
  assert max(si.bufs[0].size for si in sched) <= 8 * 16 * 11 * 11   # the padded g at most: nothing the size of the windows (x 9 times)
  assert len(dw.schedule()) <= 4
  dx, dw = x.conv2d(w, padding=1).gradient(x, w, gradient=g)
  tx, tw = torch.tensor(x.numpy(), requires_grad=True), torch.tensor(w.numpy(), requires_grad=True)
  F.conv2d(tx, tw, padding=1).backward(torch.tensor(g.numpy()))
  np.testing.assert_allclose(dx.numpy(), tx.grad.numpy(), atol=1e-4, rtol=1e-4)
  np.testing.assert_allclose(dw.numpy(), tw.grad.numpy(), atol=1e-3, rtol=1e-4)

@pytest.mark.parametrize("chunk", [1, 3000, 1 << 30])
def test_conv2d_weight_grad_chunks(chunk):
  # the weight gradient sums the batch in chunks of about CONV_GRAD_CHUNK bytes: 1 image, 2 of 6, or all of them
  with Context(CONV_GRAD_CHUNK=chunk):
    compare(lambda x, w: x.conv2d(w, stride=2, dilation=(1, 2), padding=(1, 2), groups=2),
            lambda x, w: F.conv2d(x, w, stride=2, dilation=(1, 2), padding=(1, 2), groups=2), [rnd(6, 4, 7, 8), rnd(6, 2, 3, 2, seed=1)])

def test_conv2d_second_order():
  # the custom backward is made of convs, so it has gradients too: d/dw of |dL/dx|^2 like torch
  x, w, g = rnd(2, 3, 6, 6), rnd(4, 3, 3, 3, seed=1), rnd(2, 4, 4, 4, seed=2)
  tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  dx, = tx.conv2d(tw).gradient(tx, gradient=Tensor(g))
  got, = dx.square().sum().gradient(tw)
  px, pw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  pdx, = torch.autograd.grad(F.conv2d(px, pw), px, torch.tensor(g), create_graph=True)
  want, = torch.autograd.grad(pdx.square().sum(), pw)
  np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-3, rtol=1e-4)

def test_conv2d_errors():
  x = Tensor(rnd(1, 3, 5, 5))
  with pytest.raises(ValueError, match="conv2d: input has 3 channels but weight expects 4"): x.conv2d(Tensor(rnd(2, 4, 3, 3)))
  with pytest.raises(ValueError, match=r"conv2d: input has 3 channels but weight expects 4 \(2 x groups=2\)"): x.conv2d(Tensor(rnd(2, 2, 3, 3)), groups=2)
  with pytest.raises(ValueError, match="conv2d: weight has 4 output channels, which groups=3 doesn't divide"):
    Tensor(rnd(1, 3, 5, 5)).conv2d(Tensor(rnd(4, 1, 3, 3)), groups=3)
  with pytest.raises(ValueError, match=r"conv2d: bias must have shape \(2,\), got \(3,\)"): x.conv2d(Tensor(rnd(2, 3, 3, 3)), Tensor(rnd(3)))
  with pytest.raises(ValueError, match=r"conv2d: kernel \(7, 7\) \(dilation \(1, 1\)\) is bigger than the padded input \(5, 5\)"):
    x.conv2d(Tensor(rnd(2, 3, 7, 7)))
  with pytest.raises(ValueError, match=r"conv2d: input of shape \(3, 5\) doesn't match weight \(2, 3, 3, 3\)"): Tensor(rnd(3, 5)).conv2d(Tensor(rnd(2, 3, 3, 3)))
  with pytest.raises(ValueError, match="conv2d: padding='same' needs stride 1"): x.conv2d(Tensor(rnd(2, 3, 3, 3)), padding="same", stride=2)
  with pytest.raises(ValueError, match="conv2d: padding must be an int, a tuple, 'same' or 'valid', got 'full'"):
    x.conv2d(Tensor(rnd(2, 3, 3, 3)), padding="full")
  with pytest.raises(ValueError, match=r"stride must be an int or 2 ints, each >= 1; got 0"): x.conv2d(Tensor(rnd(2, 3, 3, 3)), stride=0)
  with pytest.raises(ValueError, match="conv2d: groups must be an int >= 1, got 0"): x.conv2d(Tensor(rnd(2, 3, 3, 3)), groups=0)

CONVT_CASES = [
  ((2, 4, 3, 4), (4, 3, 3, 2), dict(groups=2, stride=2, padding=1, output_padding=1)),
  ((1, 4, 3, 3), (4, 3, 3, 2), dict(stride=(1, 3), padding=(0, 1), dilation=2)),
  ((1, 2, 5), (2, 3, 3), dict(stride=3, output_padding=2)),
  ((3, 3, 4), (3, 1, 2, 2), dict()),  # an unbatched input
]

@pytest.mark.parametrize("xs,ws,kw", CONVT_CASES, ids=[f"{c[0]}-{c[1]}" for c in CONVT_CASES])
def test_conv_transpose2d(device, xs, ws, kw):
  torch_conv = {3: F.conv_transpose1d, 4: F.conv_transpose2d}[len(ws)]
  compare(lambda x, w, b: x.conv_transpose2d(w, b, **kw), lambda x, w, b: torch_conv(x, w, b, **kw),
          [rnd(*xs), rnd(*ws, seed=1), rnd(ws[1] * kw.get("groups", 1), seed=2)])

def test_conv_transpose2d_errors():
  x = Tensor(rnd(1, 3, 4, 4))
  with pytest.raises(ValueError, match="conv_transpose2d: input has 3 channels but weight expects 2"): x.conv_transpose2d(Tensor(rnd(2, 3, 3, 3)))
  with pytest.raises(ValueError, match=r"conv_transpose2d: output_padding \(2, 2\) must be smaller than stride \(2, 2\) or dilation \(1, 1\)"):
    x.conv_transpose2d(Tensor(rnd(3, 2, 3, 3)), stride=2, output_padding=2)

# ***** pooling *****

POOL_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(2, 3), stride=(3, 1), padding=(1, 0), ceil_mode=True),
              dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=(3, 2), stride=1, padding=1)]

@pytest.mark.parametrize("kw", POOL_CASES, ids=[str(k) for k in POOL_CASES])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(device, kw, count_include_pad):
  compare(lambda x: x.avg_pool2d(**kw, count_include_pad=count_include_pad), lambda x: F.avg_pool2d(x, **kw, count_include_pad=count_include_pad),
          [rnd(2, 3, 7, 6)])

def test_avg_pool_1d_3d_and_divisor(device):
  compare(lambda x: x.avg_pool2d((3,), 2, 1), lambda x: F.avg_pool1d(x, 3, 2, 1), [rnd(2, 3, 8)])
  compare(lambda x: x.avg_pool2d((2, 2, 2)), lambda x: F.avg_pool3d(x, 2), [rnd(1, 2, 4, 4, 5)])
  compare(lambda x: x.avg_pool2d(2, divisor_override=3), lambda x: F.avg_pool2d(x, 2, divisor_override=3), [rnd(1, 2, 4, 4)])

@pytest.mark.parametrize("kw", POOL_CASES + [dict(kernel_size=2, stride=1, dilation=2), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)],
                         ids=[str(k) for k in POOL_CASES] + ["dilation2", "dilation2-ceil"])
def test_max_pool2d(device, kw):
  compare(lambda x: x.max_pool2d(**kw), lambda x: F.max_pool2d(x, **kw), [rnd(2, 3, 7, 6)])
  compare(lambda x: x.max_pool2d(**kw, return_indices=True), lambda x: F.max_pool2d(x, **kw, return_indices=True), [rnd(1, 2, 7, 6, seed=3)])

def test_max_pool2d_backward_is_one_kernel():
  # a small window's ties are counted by adding its elements (elementwise views), so the input gradient is one kernel after the forward's
  # (its max, its nan sum and the pick of the two), not a count reduce and then the gradient; ties (a relu's zeros) still share it equally
  xn = np.maximum(rnd(2, 3, 8, 8), 0)
  x, g = Tensor(xn, requires_grad=True), Tensor(rnd(2, 3, 4, 4, seed=1))
  y = x.max_pool2d()
  dx, = y.gradient(x, gradient=g)
  assert len(sched := Tensor.schedule(y, dx)) == 4
  run_schedule(sched)
  windows = xn.reshape(2, 3, 4, 2, 4, 2)
  hit = windows == windows.max((3, 5), keepdims=True)
  want = hit * (g.numpy() / hit.sum((3, 5))).reshape(2, 3, 4, 1, 4, 1)
  np.testing.assert_allclose(dx.numpy(), want.reshape(2, 3, 8, 8), atol=1e-6)

def test_pool_one_element(device):
  compare(lambda x: x.max_pool2d(1), lambda x: F.max_pool2d(x, 1), [rnd(1, 1, 1, 1)])
  compare(lambda x: x.avg_pool2d(1), lambda x: F.avg_pool2d(x, 1), [rnd(1, 1, 1, 1)])
  compare(lambda x: x.avg_pool2d(2, ceil_mode=True), lambda x: F.avg_pool2d(x, 2, ceil_mode=True), [rnd(1, 2, 3, 3)])
  compare(lambda x: x.max_pool2d(2), lambda x: F.max_pool2d(x, 2), [rnd(0, 2, 4, 4)])

def test_max_pool_ints_and_1d(device):
  xi = np.random.default_rng(0).integers(-50, 50, (1, 2, 6, 6)).astype(np.int32)
  np.testing.assert_equal(Tensor(xi).max_pool2d(2).numpy(), F.max_pool2d(torch.tensor(xi).float(), 2).numpy().astype(np.int32))
  compare(lambda x: x.max_pool2d((3,), 2, 1), lambda x: F.max_pool1d(x, 3, 2, 1), [rnd(2, 3, 9)])

def test_max_unpool2d(device):
  x = rnd(2, 3, 6, 4)
  for kw in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)]:
    tv, ti = F.max_pool2d(torch.tensor(x), **kw, return_indices=True)
    gv, gi = Tensor(x).max_pool2d(**kw, return_indices=True)
    # with padding the default output size is too small for the indices (torch refuses it too): then only output_size
    if "padding" not in kw: compare(lambda v: v.max_unpool2d(gi, **kw), lambda v: F.max_unpool2d(v, ti, **kw), [tv.numpy()])
    compare(lambda v: v.max_unpool2d(gi, **kw, output_size=(6, 4)), lambda v: F.max_unpool2d(v, ti, **kw, output_size=(6, 4)), [tv.numpy()])

def test_pool_errors():
  x = Tensor(rnd(1, 2, 4, 4))
  with pytest.raises(ValueError, match=r"max_pool2d: padding \(2, 2\) must be at most half the \(dilated\) kernel size \(2, 2\)"): x.max_pool2d(2, padding=2)
  with pytest.raises(ValueError, match=r"avg_pool2d: kernel \(5, 5\) \(dilation \(1, 1\)\) is bigger than the padded input \(4, 4\)"): x.avg_pool2d(5)
  with pytest.raises(ValueError, match="kernel_size must be an int or 2 ints, each >= 1; got 0"): x.avg_pool2d(0)
  with pytest.raises(ValueError, match=r"max_pool2d: a 2-d kernel needs an input of at least 3 dims, got shape \(4,\)"): Tensor(rnd(4)).max_pool2d(2)
  with pytest.raises(ValueError, match=r"max_unpool2d: indices of shape \(1,\) must match the input \(1, 2, 4, 4\)"): x.max_unpool2d(Tensor([1]))

# ***** triu/tril, interpolate *****

def test_triu_tril(device):
  for k in (0, 1, -2, 7):
    compare(lambda x, k=k: x.triu(k), lambda x, k=k: x.triu(k), [rnd(2, 4, 5)])
    compare(lambda x, k=k: x.tril(k), lambda x, k=k: x.tril(k), [rnd(4, 3)])
  b = np.random.default_rng(0).random((3, 3)) > 0.5
  np.testing.assert_equal(Tensor(b).triu().numpy(), np.triu(b))
  np.testing.assert_equal(Tensor(np.arange(9, dtype=np.int32).reshape(3, 3)).tril(-1).numpy(), np.tril(np.arange(9).reshape(3, 3), -1))
  with pytest.raises(ValueError, match=r"triu: expected a tensor of at least 2 dims, got shape \(3,\)"): Tensor([1, 2, 3]).triu()

INTERP_CASES = [("nearest", None, dict(size=(5, 13))), ("nearest", None, dict(scale_factor=1.7)), ("nearest", None, dict(size=(3, 2))),
                ("nearest-exact", None, dict(size=(5, 13))), ("nearest-exact", None, dict(scale_factor=(0.5, 2.5))),
                ("bilinear", False, dict(size=(5, 13))), ("bilinear", True, dict(size=(9, 3))), ("bilinear", False, dict(scale_factor=1.7)),
                ("bilinear", True, dict(scale_factor=(2, 0.6))), ("linear", False, dict(size=7)), ("linear", True, dict(size=1)),
                ("trilinear", False, dict(size=(3, 5, 2))), ("nearest", None, dict(size=(2, 3, 4)))]

@pytest.mark.parametrize("mode,align_corners,kw", INTERP_CASES, ids=[f"{m}-{a}-{k}" for m, a, k in INTERP_CASES])
def test_interpolate(device, mode, align_corners, kw):
  three_d = isinstance(kw.get("size"), tuple) and len(kw["size"]) == 3
  shape = {"linear": (2, 3, 5), "trilinear": (1, 2, 4, 3, 3)}.get(mode, (1, 2, 3, 4, 5) if three_d else (2, 3, 4, 6))
  compare(lambda x: x.interpolate(mode=mode, align_corners=align_corners, **kw),
          lambda x: F.interpolate(x, mode=mode, align_corners=align_corners, **kw), [rnd(*shape)])

def test_interpolate_errors():
  x = Tensor(rnd(1, 2, 4, 4))
  with pytest.raises(ValueError, match="interpolate: mode must be one of"): x.interpolate(size=(2, 2), mode="bicubic")
  with pytest.raises(ValueError, match=r"interpolate: mode 'bilinear' needs a 4-D input, got shape \(2, 4, 4\)"): x[0].interpolate(size=3, mode="bilinear")
  with pytest.raises(ValueError, match="interpolate: give exactly one of size and scale_factor"): x.interpolate()
  with pytest.raises(ValueError, match="interpolate: align_corners can only be set with the interpolating modes"):
    x.interpolate(size=(2, 2), align_corners=True)

# ***** sort, argsort, topk *****

def _with_ties_and_nan(shape, seed=0):
  x = np.round(rnd(*shape, seed=seed) * 2) / 2  # many ties
  x.flat[1] = np.nan
  return x

@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(device, dim, descending):
  x = _with_ties_and_nan((3, 7, 4))
  compare(lambda t: t.sort(dim, descending=descending), lambda t: t.sort(dim=dim, descending=descending, stable=True), [x], grad=())
  xg = rnd(3, 7, 4)  # no ties: the gradient of the values is a permutation
  compare(lambda t: t.sort(dim, descending=descending)[0], lambda t: t.sort(dim=dim, descending=descending)[0], [xg])
  compare(lambda t: t.argsort(dim, descending=descending), lambda t: t.argsort(dim=dim, descending=descending, stable=True), [x], grad=())

def test_sort_dtypes_and_edge_shapes(device):
  for dt in (np.int32, np.uint8, np.bool_, np.float16, np.int64):
    x = (np.random.default_rng(1).random((2, 9)) * 20).astype(dt)
    compare(lambda t: t.sort(), lambda t: t.sort(stable=True), [x], grad=())
  compare(lambda t: t.sort(), lambda t: t.sort(stable=True), [np.zeros((2, 0), np.float32)], grad=())
  compare(lambda t: t.sort(0), lambda t: t.sort(dim=0, stable=True), [rnd(1, 3)], grad=())
  v, i = Tensor(3.0).sort()
  assert v.item() == 3.0 and i.item() == 0 and i.dtype == dtypes.int32

@pytest.mark.parametrize("k,dim,largest", [(3, -1, True), (1, 0, False), (7, 1, True), (0, -1, True), (2, 1, False)])
def test_topk(device, k, dim, largest):
  x = rnd(3, 7, 4)
  compare(lambda t: t.topk(k, dim, largest), lambda t: t.topk(k, dim, largest), [x])
  # with ties the values still agree, and the indices pick those values
  xt = np.round(x * 2) / 2
  v, i = Tensor(xt).topk(k, dim, largest)
  np.testing.assert_equal(v.numpy(), torch.tensor(xt).topk(k, dim, largest)[0].numpy())
  np.testing.assert_equal(np.take_along_axis(xt, i.numpy().astype(np.int64), dim), v.numpy())

def test_sort_errors():
  with pytest.raises(ValueError, match=r"topk: k=8 is out of range for dim -1 of size 7: expected 0 <= k <= 7"): Tensor(rnd(3, 7)).topk(8)
  with pytest.raises(IndexError, match="dimension 2 is out of range for a tensor of 2 dims"): Tensor(rnd(3, 7)).sort(2)

# ***** sequential, norms, dropout *****

def test_sequential_layernorm_batchnorm(device):
  x = rnd(4, 3, 5)
  compare(lambda t: t.sequential([lambda a: a * 2, Tensor.relu, lambda a: a + 1]), lambda t: torch.relu(t * 2) + 1, [x])
  compare(lambda t: t.layernorm(), lambda t: F.layer_norm(t, (5,)), [x], atol=1e-4)
  compare(lambda t: t.layernorm((1, 2), eps=1e-3), lambda t: F.layer_norm(t, (3, 5), eps=1e-3), [x], atol=1e-4)
  w, b, m, v = rnd(3, seed=1), rnd(3, seed=2), rnd(3, seed=3), np.random.default_rng(4).random(3).astype(np.float32) + 0.5
  compare(lambda t, w, b: t.batchnorm(w, b, Tensor(m), Tensor(1 / np.sqrt(v + 1e-5))),
          lambda t, w, b: F.batch_norm(t, torch.tensor(m), torch.tensor(v), w, b, training=False), [x, w, b], atol=1e-4)
  compare(lambda t: t.batchnorm(None, None, Tensor(m), Tensor(1 / np.sqrt(v + 1e-5))),
          lambda t: F.batch_norm(t, torch.tensor(m), torch.tensor(v), training=False), [x], atol=1e-4)

def test_dropout(device):
  x = Tensor.ones(200 if device == "CPU" else 40, 50)
  assert x.dropout(0.5) is x  # not training: identity
  old = Tensor.training
  Tensor.training = True
  try:
    Tensor.manual_seed(0)
    y = x.dropout(0.3).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, float(np.float32(1 / 0.7))}
    assert abs((y == 0).mean() - 0.3) < 0.05
    assert (x.dropout(0.0).numpy() == 1).all() and (x.dropout(1.0).numpy() == 0).all()
    # gradient: the kept elements get 1/(1-p), the dropped ones 0
    p = Tensor.ones(4, 50, requires_grad=True)
    out = p.dropout(0.5)
    out.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), out.numpy())
    with pytest.raises(ValueError, match=r"dropout: p must be in \[0, 1\], got 1.5"): x.dropout(1.5)
  finally: Tensor.training = old

# ***** attention *****

SDPA_CASES = [dict(), dict(is_causal=True), dict(scale=0.3), dict(mask="bool"), dict(mask="float"), dict(is_causal=True, enable_gqa=True, kv_heads=1),
              dict(enable_gqa=True, kv_heads=2, mask="bool")]

@pytest.mark.parametrize("kw", SDPA_CASES, ids=[str(k) for k in SDPA_CASES])
def test_scaled_dot_product_attention(device, kw):
  kw = dict(kw)
  kv_heads, mask = kw.pop("kv_heads", 4), kw.pop("mask", None)
  q, k, v = rnd(2, 4, 5, 3), rnd(2, kv_heads, 6, 3, seed=1), rnd(2, kv_heads, 6, 2, seed=2)
  inputs = [q, k, v]
  if mask == "bool": inputs.append(np.random.default_rng(3).random((5, 6)) > 0.3)
  if mask == "float": inputs.append(rnd(5, 6, seed=4))
  compare(lambda *a: a[0].scaled_dot_product_attention(a[1], a[2], attn_mask=a[3] if len(a) > 3 else None, **kw),
          lambda *a: F.scaled_dot_product_attention(a[0], a[1], a[2], attn_mask=a[3] if len(a) > 3 else None, **kw), inputs, atol=1e-5)

def test_sdpa_dropout_and_errors():
  q = Tensor(rnd(1, 2, 4, 3))
  Tensor.manual_seed(0)
  out = q.scaled_dot_product_attention(q, q, dropout_p=0.5).numpy()
  assert out.shape == (1, 2, 4, 3) and not np.allclose(out, q.scaled_dot_product_attention(q, q).numpy())
  with pytest.raises(ValueError, match="scaled_dot_product_attention: query's last dim 3 != key's 2"): q.scaled_dot_product_attention(q[..., :2], q)
  with pytest.raises(ValueError, match="with enable_gqa the query heads 2 must be a multiple of the key heads 3"):
    q.scaled_dot_product_attention(Tensor(rnd(1, 3, 4, 3)), Tensor(rnd(1, 3, 4, 3)), enable_gqa=True)

# ***** losses *****

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_binary_crossentropy(device, reduction):
  p, y = np.random.default_rng(0).random((3, 4)).astype(np.float32), (np.random.default_rng(1).random((3, 4)) > 0.5).astype(np.float32)
  compare(lambda a, b: a.binary_crossentropy(b, reduction), lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), [p, y], grad=(0,))
  p[0, 0], p[0, 1] = 0.0, 1.0  # the logs clamp at -100 like torch
  compare(lambda a, b: a.binary_crossentropy(b, reduction), lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), [p, y], grad=())
  x = rnd(3, 4) * 10
  pw = np.random.default_rng(2).random(4).astype(np.float32) + 0.5
  compare(lambda a, b: a.binary_crossentropy_logits(b, reduction), lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
          [x, y], grad=(0,))
  compare(lambda a, b, w: a.binary_crossentropy_logits(b, reduction, pos_weight=w),
          lambda a, b, w: F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=w), [x, y, pw], grad=(0,))

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_and_nll(device, reduction, smoothing):
  logits, w = rnd(4, 5, 3), np.random.default_rng(1).random(5).astype(np.float32) + 0.1
  y = np.random.default_rng(2).integers(0, 5, (4, 3))
  y[0, 0] = y[2, 1] = -100
  compare(lambda a, t: a.cross_entropy(t, reduction=reduction, label_smoothing=smoothing),
          lambda a, t: F.cross_entropy(a, t, reduction=reduction, label_smoothing=smoothing), [logits, y], atol=1e-5)
  compare(lambda a, t, w: a.cross_entropy(t, w, reduction=reduction, label_smoothing=smoothing),
          lambda a, t, w: F.cross_entropy(a, t, w, reduction=reduction, label_smoothing=smoothing), [logits, y, w], grad=(0,), atol=1e-5)
  probs = np.random.default_rng(3).dirichlet(np.ones(5), (4, 3)).transpose(0, 2, 1).astype(np.float32)
  compare(lambda a, t: a.cross_entropy(t, reduction=reduction, label_smoothing=smoothing),
          lambda a, t: F.cross_entropy(a, t, reduction=reduction, label_smoothing=smoothing), [logits, probs], grad=(0,), atol=1e-5)
  compare(lambda a, t, w: a.nll_loss(t, w, ignore_index=-100, reduction=reduction),
          lambda a, t, w: F.nll_loss(a, t, w, reduction=reduction), [logits, y, w], grad=(0,), atol=1e-5)
  # 1-D input with a 0-d target, and ignore_index that is a real class
  compare(lambda a, t: a.cross_entropy(t, reduction=reduction, ignore_index=2, label_smoothing=smoothing),
          lambda a, t: F.cross_entropy(a, t, reduction=reduction, ignore_index=2, label_smoothing=smoothing), [logits[0, :, 0].copy(), np.array(3)],
          atol=1e-5)

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_sparse_categorical_crossentropy(device, reduction):
  logits, y = rnd(2, 3, 6), np.random.default_rng(1).integers(0, 6, (2, 3)).astype(np.int32)
  y[1, 2] = -1
  for smoothing in (0.0, 0.1):
    compare(lambda a, t: a.sparse_categorical_crossentropy(t, label_smoothing=smoothing, reduction=reduction),
            lambda a, t: F.cross_entropy(a.reshape(-1, 6), t.reshape(-1).long(), ignore_index=-1, label_smoothing=smoothing,
                                         reduction=reduction).reshape((2, 3) if reduction == "none" else ()), [logits, y], atol=1e-5)
  compare(lambda a, t: a.sparse_categorical_crossentropy(t, ignore_index=3, reduction=reduction),
          lambda a, t: F.cross_entropy(a, t.long(), ignore_index=3, reduction=reduction), [logits[0], y[0]], atol=1e-5)

def test_loss_errors():
  x = Tensor(rnd(4, 5))
  with pytest.raises(ValueError, match="cross_entropy: reduction must be 'none', 'sum' or 'mean', got 'avg'"): x.cross_entropy(Tensor(rnd(4, 5)), reduction="avg")
  with pytest.raises(ValueError, match=r"nll_loss: target shape \(5,\) doesn't match the input \(4, 5\): expected \(4,\)"): x.nll_loss(Tensor([0] * 5))
  with pytest.raises(TypeError, match="nll_loss: class targets must be an int tensor, got dtypes.float"): x.nll_loss(Tensor(rnd(4)))
  with pytest.raises(ValueError, match=r"cross_entropy: probability targets of shape \(4, 4\) must match the input \(4, 5\)"): x.cross_entropy(Tensor(rnd(4, 4)))
  with pytest.raises(ValueError, match=r"cross_entropy: label_smoothing must be in \[0, 1\], got 1.5"): x.cross_entropy(Tensor([0] * 4), label_smoothing=1.5)
  with pytest.raises(ValueError, match=r"binary_crossentropy: input shape \(4, 5\) and target shape \(5,\) must match"): x.binary_crossentropy(Tensor(rnd(5)))
  with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy: target shape \(4, 5\) must be the input's"): x.sparse_categorical_crossentropy(Tensor([[0] * 5] * 4))
  with pytest.raises(ValueError, match=r"nll_loss: weight must have shape \(5,\), got \(4,\)"): x.nll_loss(Tensor([0] * 4), Tensor(rnd(4)))

# ***** qr, svd *****

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 3)])
def test_qr(device, shape):
  if device == "PYTHON" and len(shape) == 3: pytest.skip("small shapes on PYTHON")
  a = rnd(*shape)
  for mode in ("reduced", "complete"):
    q, r = (t.numpy() for t in Tensor(a).qr(mode))
    nq, nr = np.linalg.qr(a, mode=mode)
    assert q.shape == nq.shape and r.shape == nr.shape
    # unique up to the sign of each column of Q (row of R)
    k = min(shape[-2:])
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1)[..., :k]) * np.sign(np.diagonal(nr, axis1=-2, axis2=-1)[..., :k])
    np.testing.assert_allclose(q[..., :k] * signs[..., None, :], nq[..., :k], atol=1e-4)
    np.testing.assert_allclose(r[..., :k, :] * signs[..., :, None], nr[..., :k, :], atol=1e-4)
    np.testing.assert_allclose(q @ r, a, atol=1e-5)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-5)

def test_qr_matches_torch_with_gradient():
  # Householder with LAPACK's sign choice (alpha = -sign(x0) |x|) gives the same Q and R as torch, and it is differentiable
  compare(lambda a: a.qr()[0], lambda a: torch.linalg.qr(a)[0], [rnd(5, 3)], atol=1e-5)
  compare(lambda a: a.qr()[1], lambda a: torch.linalg.qr(a)[1], [rnd(4, 4, seed=1)], atol=1e-5)

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (1, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(shape, full_matrices):
  a = rnd(*shape)
  u, s, vh = (t.numpy() for t in Tensor(a).svd(full_matrices))
  nu, ns, nvh = np.linalg.svd(a, full_matrices=full_matrices)
  assert u.shape == nu.shape and s.shape == ns.shape and vh.shape == nvh.shape
  np.testing.assert_allclose(s, ns, atol=1e-5, rtol=1e-5)
  k = len(ns)
  np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], a, atol=1e-5)
  np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), atol=1e-5)
  np.testing.assert_allclose(vh @ vh.T, np.eye(vh.shape[0]), atol=1e-5)
  # the singular vectors match numpy's up to sign (distinct singular values)
  signs = np.sign(np.sum(u[:, :k] * nu[:, :k], 0))
  np.testing.assert_allclose(u[:, :k] * signs, nu[:, :k], atol=1e-4)
  np.testing.assert_allclose(vh[:k] * signs[:, None], nvh[:k], atol=1e-4)

def test_svd_rank_deficient_and_python():
  a = np.array([[1, 2], [2, 4], [0, 0]], np.float32)
  u, s, vh = (t.numpy() for t in Tensor(a).svd())
  np.testing.assert_allclose(s, np.linalg.svd(a)[1], atol=1e-5)
  np.testing.assert_allclose((u[:, :2] * s) @ vh, a, atol=1e-5)
  np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-5)
  u, s, vh = (t.numpy() for t in Tensor(rnd(2, 2), device="PYTHON").svd())
  np.testing.assert_allclose(s, np.linalg.svd(rnd(2, 2))[1], atol=1e-5)

def test_linalg_errors():
  with pytest.raises(ValueError, match=r"qr: expected a matrix of at least 2 dims, got shape \(3,\)"): Tensor(rnd(3)).qr()
  with pytest.raises(ValueError, match="qr: mode must be 'reduced' or 'complete', got 'r'"): Tensor(rnd(3, 3)).qr("r")
  with pytest.raises(RuntimeError, match=r"svd: expected a matrix of at least 2 dims, got shape \(3,\)"): Tensor(rnd(3)).svd()
  assert Tensor(rnd(2, 3, 3)).svd()[1].shape == (2, 3)   # batched
  assert math.isfinite(float(Tensor(rnd(3, 3)).svd()[1].sum().item()))
