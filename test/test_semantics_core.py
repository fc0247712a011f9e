# wrong results and unsafe kernels from the IR / codegen / scheduler layers, each checked against numpy or torch
import math
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.engine.realize import get_program, run_schedule
from tinygrad.uop import Ops
from tinygrad.codegen import oob_accesses

# ***** every load carries its view's validity *****

def assert_in_bounds(t:Tensor) -> Tensor:
  """the static check on every kernel that realizes t: each LOAD/STORE address is gated or provably inside its buffer; then t is realized"""
  sched = t.schedule()
  for si in sched:
    if si.ast.op is Ops.SINK: assert not (errs := oob_accesses(get_program(si.ast, Device[Device.DEFAULT].renderer).uops)), errs
  run_schedule(sched)
  return t

EXP_OPS = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "cos": torch.cos, "softplus": torch.nn.functional.softplus,
           "silu": torch.nn.functional.silu, "elu": torch.nn.functional.elu, "gelu": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
           "erf": torch.erf, "exp": torch.exp, "logsigmoid": torch.nn.functional.logsigmoid}
AFTER = {
  "pad": (lambda t: t.pad(((1, 2), (0, 1))), lambda t: torch.nn.functional.pad(t, (0, 1, 1, 2))),
  "cat": (lambda t: t.cat(t * 2, dim=1), lambda t: torch.cat([t, t * 2], dim=1)),
  "stack": (lambda t: Tensor.stack(t, t + 1, dim=0), lambda t: torch.stack([t, t + 1], dim=0)),
  "cumsum": (lambda t: t.cumsum(1), lambda t: t.cumsum(1)),
  "conv": (lambda t: t.reshape(1, 1, 3, 4).conv2d(Tensor.full((1, 1, 2, 2), 0.5), padding=1),
           lambda t: torch.nn.functional.conv2d(t.reshape(1, 1, 3, 4), torch.full((1, 1, 2, 2), 0.5), padding=1)),
  "avgpool": (lambda t: t.reshape(1, 1, 3, 4).avg_pool2d(kernel_size=2, stride=1, padding=1),
              lambda t: torch.nn.functional.avg_pool2d(t.reshape(1, 1, 3, 4), 2, stride=1, padding=1)),
  "maxpool": (lambda t: t.reshape(1, 1, 3, 4).max_pool2d(kernel_size=2, stride=1, padding=1),
              lambda t: torch.nn.functional.max_pool2d(t.reshape(1, 1, 3, 4), 2, stride=1, padding=1)),
}

@pytest.mark.parametrize("op", list(EXP_OPS))
@pytest.mark.parametrize("after", list(AFTER))
def test_exp_op_then_padded(device, op, after):
  x = np.linspace(-2.5, 2.5, 12, dtype=np.float32).reshape(3, 4)
  tiny = AFTER[after][0](Tensor(x).gelu(approximate="tanh") if op == "gelu" else getattr(Tensor(x), op)())
  assert_in_bounds(tiny)
  ref = AFTER[after][1](EXP_OPS[op](torch.tensor(x))).numpy()
  np.testing.assert_allclose(tiny.numpy(), ref, atol=1e-5, rtol=1e-4)

def test_sigmoid_pad_python_device():
  # read out of bounds at -1 on PYTHON (an IndexError) and as *(data1+ridx0-1) in C
  assert Tensor([1., 2.], device="PYTHON").sigmoid().pad(((1, 1),)).tolist() == pytest.approx([0, 0.7310586, 0.8807971, 0])
  assert_in_bounds(Tensor([1., 2.]).sigmoid().pad(((1, 1),)))

def test_logsumexp_cat(device):
  x = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
  tiny = Tensor(x).logsumexp(1).reshape(2, 1).cat(Tensor(x), dim=1).pad(((1, 1), (1, 0)))
  assert_in_bounds(tiny)
  ref = torch.nn.functional.pad(torch.cat([torch.tensor(x).logsumexp(1).reshape(2, 1), torch.tensor(x)], 1), (1, 0, 1, 1))
  np.testing.assert_allclose(tiny.numpy(), ref.numpy(), atol=1e-5, rtol=1e-5)

def test_python_device_fails_masked_oob_access():
  # the PYTHON device's check: an access outside the buffer fails even if its value is masked afterwards
  from tinygrad.runtime.ops_python import _Mem
  mem = _Mem([1.0, 2.0], 2, None, None, "buffer 1 of test")
  with pytest.raises(IndexError, match="out of bounds"): mem.load([0, -1], 1, None)
  with pytest.raises(IndexError, match="out of bounds"): mem.store([2], [0.0], 1, None)
  assert mem.load([0, -1], 1, [True, False]) == [1.0]   # a gated-off lane does no access

def test_static_check_finds_ungated_load():
  from tinygrad.uop.ops import UOp
  buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float.ptr(4), (), 0)
  r = UOp.range(dtypes.int32, 5, 0)
  assert oob_accesses([buf.index(r)]) and not oob_accesses([buf.index(r, r < 4)]) and not oob_accesses([buf.index(r + -1, r < 4)])
  assert not oob_accesses([buf.index(UOp.range(dtypes.int32, 4, 0))])
  with Context(IGNORE_OOB=0):
    assert Tensor([3., 4.]).exp().pad(((2, 2),)).tolist() == pytest.approx([0, 0, math.exp(3), math.exp(4), 0, 0])

# ***** NaN and wrap-around in bounds *****

def test_nan_bounds_comparison(device):
  # the where(x!=x, nan, ...) in exp2 had bounds (nan, nan) and the comparison folded to False
  assert (Tensor([0.5, 2., -3.]).exp2() > 0.25).pad(((0, 1),)).tolist() == [True, True, False, False]
  assert (Tensor([0.5, 2., -3.]).exp() < 1.5).pad(((1, 0),)).tolist() == [False, False, False, True]

def test_nan_through_clamp(device):
  if device == "WEBGPU": pytest.xfail("WGSL lets shader compilers assume finite floats and ignore signed zeros (x-x is 0, x+0 is x)")
  x = Tensor([math.nan, 1., 10., -math.inf, math.inf])
  np.testing.assert_equal((x.relu().minimum(6) < 7).pad(((0, 1),)).numpy(), np.array([False, True, True, True, True, False]))
  np.testing.assert_equal(((x - x) < 1).pad(((0, 1),)).numpy(), np.array([False, True, True, False, False, False]))   # inf-inf is nan

def test_float_range_with_nan_unknown():
  from tinygrad.uop.ops import UOp
  x = UOp.variable("x", -10.0, 10.0, dtypes.float)
  w = x.ne(x).where(UOp.const(dtypes.float, math.nan), x)
  assert (w.vmin, w.vmax) == (-math.inf, math.inf) and (w < 20.0).vmin is False and (w < 20.0).vmax is True
  inf = UOp.variable("y", 0.0, math.inf, dtypes.float)
  assert math.isinf((inf + inf * -1).vmax) and (inf.maximum(0.0).minimum(6.0) < 7.0).vmin is False

def test_unsigned_wraparound_bruteforce(device):
  v = np.arange(256, dtype=np.uint8)
  t = Tensor(v)
  for c, d in [(64, 64), (10, 5), (200, 100), (0, 1)]:
    np.testing.assert_equal(((c - t) < d).numpy(), (np.uint8(c) - v) < d, err_msg=f"{c} - x < {d}")
    np.testing.assert_equal(((t + c) < d).numpy(), (v + np.uint8(c)) < d, err_msg=f"x + {c} < {d}")
    np.testing.assert_equal(((t * 3 + c) // 7).numpy(), (v * np.uint8(3) + np.uint8(c)) // 7)
  u = Tensor([0, 1, 63, 64, 65, 2**40], dtype=dtypes.uint64)
  assert ((64 - u) < 64).tolist() == [False, True, True, True, False, False]

def test_signed_wraparound(device):
  # C gets -fwrapv and LLVM IR adds without nsw; OpenCL C has no such option, signed overflow stays undefined there
  if device == "GPU": pytest.skip("OpenCL C leaves signed int overflow undefined")
  a = np.array([2**31-1, 0, -100, -2**31], dtype=np.int32)
  with np.errstate(over="ignore"):
    np.testing.assert_equal(((Tensor(a) + 10) < 5).numpy(), (a + 10) < 5)
    np.testing.assert_equal(((Tensor(a) * 2) < 0).numpy(), (a * 2) < 0)

# ***** empty tensors *****

def test_empty_data():
  assert Tensor([]).data().tolist() == [] and Tensor.empty(0, 3).data().tolist() == []
  assert Tensor.empty(0, 3).numpy().shape == (0, 3) and Tensor.empty(0, 3).tolist() == torch.empty(0, 3).tolist()
  assert Tensor.empty(2, 0).tolist() == torch.empty(2, 0).tolist()

def test_empty_reductions(device):
  x, tx = Tensor.empty(0, 3), torch.empty(0, 3)
  for f in ["sum", "mean", "prod"]:
    for args in [(), (0,), (1,)]:
      np.testing.assert_equal(getattr(x, f)(*args).numpy(), getattr(tx, f)(*args).numpy(), err_msg=f"{f}{args}")
  np.testing.assert_equal(x.max(1).numpy(), tx.amax(1).numpy())
  with pytest.raises(Exception): x.max().numpy()
  with pytest.raises(Exception): x.max(0).numpy()

# ***** in-place ops on views: one realize, results as torch computes them step by step *****

def _mat(): return np.arange(12, dtype=np.float32).reshape(3, 4)
def _vec(): return np.arange(8, dtype=np.float32)
def _iadd_half(a): a[::2] += a[1::2]
def _imul_tail(a): a[1:] *= 2
def _col(a): a[:, 0] = a[:, 1]
def _isum(a): a += a.sum()
def _slice2d(a): a[1:, :2] += a[:-1, 2:]
INPLACE = {
  "a[1:] *= 2": (_vec, _imul_tail, _imul_tail),
  "a[::2] += a[1::2]": (_vec, _iadd_half, _iadd_half),
  "a[:, 0] = a[:, 1]": (_mat, _col, _col),
  "x += x.sum()": (_vec, _isum, _isum),
  "x.assign(x - x.mean())": (_vec, lambda a: a.assign(a - a.mean()).realize(), lambda a: a.sub_(a.mean())),
  # torch refuses overlapping copies; the result is numpy's (and torch's clone-then-assign)
  "a[1:] = a[:-1]": (_vec, lambda a: a.__setitem__(slice(1, None), a[:-1]), lambda a: a.__setitem__(slice(1, None), a[:-1].clone())),
  "a[:-1] = a[1:]": (_vec, lambda a: a.__setitem__(slice(None, -1), a[1:]), lambda a: a.__setitem__(slice(None, -1), a[1:].clone())),
  "a[1:, :2] += a[:-1, 2:]": (_mat, _slice2d, lambda a: a[1:, :2].add_(a[:-1, 2:].clone())),
  "two reduce paths": (_mat, lambda a: a.assign(a - a.mean(0) - a.max(1, keepdim=True)).realize(), lambda a: a.copy_(a - a.mean(0) - a.amax(1, keepdim=True))),
  "transpose": (lambda: _mat()[:3, :3].copy(), lambda a: a.assign(a.T).realize(), lambda a: a.copy_(a.T.clone())),
  "two assigns, one realize": (_vec, lambda a: (a.assign(a + 1), a.assign(a * a.sum()), a.realize()), lambda a: (a.add_(1), a.mul_(a.sum()))),
}

@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_views(device, name):
  init, tiny_fxn, torch_fxn = INPLACE[name]
  a = Tensor(init()).contiguous().realize()
  tiny_fxn(a)
  ta = torch.tensor(init())
  torch_fxn(ta)
  np.testing.assert_allclose(a.numpy(), ta.numpy(), rtol=1e-6)

def test_read_assign_through_other_view(device):
  # a kernel that reads an earlier ASSIGN into its own target through another view computes the value first
  a = Tensor(_vec()).contiguous().realize()
  b = a[1:]
  b.assign(b * 2)
  a.assign(b.pad(((1, 0),)).flip(0)).realize()
  ta = torch.tensor(_vec())
  ta[1:] *= 2
  ta.copy_(torch.nn.functional.pad(ta[1:], (1, 0)).flip(0).clone())
  np.testing.assert_equal(a.numpy(), ta.numpy())

def test_read_before_assign_and_after_in_one_kernel(device):
  # old = a*3 is taken before the assign, a after it; one kernel reads both: the old value is copied before the ASSIGN overwrites it
  a = Tensor(_vec()).contiguous().realize()
  old = a * 3
  a.assign(a * a + 1)
  new = old * 10 + a
  ta = torch.tensor(_vec())
  told = ta * 3
  ta.mul_(ta).add_(1)
  np.testing.assert_allclose(new.numpy(), (told * 10 + ta).numpy())
  np.testing.assert_allclose(a.numpy(), ta.numpy())

ALIAS_VIEWS = {"slice": lambda x: x[:, 1:3], "T": lambda x: x.T, "reshape_slice": lambda x: x.reshape(3, 2)[1:], "row": lambda x: x[1]}
ALIAS_UPDATES = {"assign": lambda x, lib: x.copy_(x * x + 100) if lib is torch else x.assign(x * x + 100), "+=": lambda x, lib: x.__iadd__(1),
                 "setitem": lambda x, lib: x.__setitem__((slice(None), 1), 7.0), "view+=": lambda x, lib: x[:, 1:].__iadd__(5),
                 "two": lambda x, lib: (x.__iadd__(1), x.__imul__(3))}

@pytest.mark.parametrize("view", list(ALIAS_VIEWS))
@pytest.mark.parametrize("update", list(ALIAS_UPDATES))
def test_reads_through_a_view_of_a_buffer_updated_in_place(view, update):
  # v aliases x's buffer: a value computed from v before x's update keeps the old contents, a read through v after it sees the update (torch)
  def run(lib, x):
    v = ALIAS_VIEWS[view](x)
    before = v * 2
    ALIAS_UPDATES[update](x, lib)
    return [before, v * 1, v, x[1:] + 0, x]
  want = run(torch, torch.arange(6.0).reshape(2, 3))
  got = run(Tensor, Tensor.arange(6.0).reshape(2, 3).contiguous().realize())
  for g, w in zip(got, want): np.testing.assert_equal(g.numpy(), w.numpy())

def test_view_of_a_pending_update_sees_the_next_one():
  def run(x):
    x += 1
    v = x[:, 1:]
    before = v * 1
    x *= 3
    return [v, before, v + 0, x]
  for g, w in zip(run(Tensor.arange(6.0).reshape(2, 3).contiguous().realize()), run(torch.arange(6.0).reshape(2, 3))):
    np.testing.assert_equal(g.numpy(), w.numpy())

DETACH_ALIASES = {"detach": lambda x: x.detach(), "detach_slice": lambda x: x.detach()[1:], "slice_detach": lambda x: x[:, 1:].detach(),
                  "detach_T": lambda x: x.detach().T}
DETACH_UPDATES = {"x+=": lambda x, d, lib: x.__iadd__(1), "d+=": lambda x, d, lib: d.__imul__(3), "d[0]=": lambda x, d, lib: d.__setitem__(0, 9.0),
                  "d.assign": lambda x, d, lib: d.copy_(d + 10) if lib is torch else d.assign(d + 10)}

@pytest.mark.parametrize("alias", list(DETACH_ALIASES))
@pytest.mark.parametrize("update", list(DETACH_UPDATES))
@pytest.mark.parametrize("pending", [False, True])
def test_detach_shares_the_buffer(alias, update, pending):
  # torch: x.detach() (and its views) share x's storage: an update through either is seen through the other; values read before keep it
  def run(lib, x):
    if pending: x += 1
    d = DETACH_ALIASES[alias](x)
    before = d * 2
    DETACH_UPDATES[update](x, d, lib)
    return [before, d, d * 1, x]
  want = run(torch, torch.arange(6.0).reshape(2, 3))
  got = run(Tensor, Tensor.arange(6.0).reshape(2, 3).contiguous().realize())
  for g, w in zip(got, want): np.testing.assert_equal(g.numpy(), w.numpy())

def test_update_through_a_long_view_chain_over_detach():
  # 2,000 views over a detach (deeper than Python's recursion limit): the update still reaches x's buffer, as in torch
  x, tx = Tensor.arange(8, dtype=dtypes.float32).realize(), torch.arange(8, dtype=torch.float32)
  v, tv = x.detach(), tx.detach()
  for _ in range(1000): v, tv = v.reshape(2, 4).reshape(8), tv.reshape(2, 4).reshape(8)
  v += 1
  tv += 1
  np.testing.assert_equal(x.numpy(), tx.numpy())
  np.testing.assert_equal(v.numpy(), tv.numpy())

def test_detach_of_a_parameter_follows_its_updates():
  # an EMA-style copy: d = w.detach() sees the optimizer's in-place step, a write through d changes w; grads stay as torch's and d needs none
  def run(lib, w):
    d = w.detach()
    loss = (w * w * d).sum()
    loss.backward()
    g1 = w.grad * 1
    with lib.no_grad(): w -= 0.1 * w.grad
    seen = d * 1
    d += 1
    w.grad = None
    (w * w).sum().backward()
    return [g1, seen, d, w, w.grad], (d * w).requires_grad
  want, wr = run(torch, torch.arange(4.0, requires_grad=True))
  got, gr = run(Tensor, Tensor.arange(4.0).contiguous().realize().requires_grad_())
  assert wr == gr
  for g, w in zip(got, want): np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-6)

# torch makes copies here (flip, pad, repeat, a reshape that strides can't express) and views there (steps, diagonal, unfold, expand)
COPIES = {"flip": (lambda x: x.flip(0), lambda x: x.flip(0)), "pad": (lambda x: x.pad(((0, 0), (1, 1))), lambda x: torch.nn.functional.pad(x, (1, 1))),
          "repeat": (lambda x: x.repeat(2, 1), lambda x: x.repeat(2, 1)), "T.reshape": (lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1)),
          "T.flatten": (lambda x: x.T.flatten(), lambda x: x.T.flatten())}
VIEWS = {"step": (lambda x: x[:, ::2], lambda x: x[:, ::2]), "diagonal": (lambda x: x.diagonal(), lambda x: x.diagonal()),
         "unfold": (lambda x: x.unfold(1, 2, 1), lambda x: x.unfold(1, 2, 1)), "T.step": (lambda x: x.T[::2, 1], lambda x: x.T[::2, 1]),
         "expand": (lambda x: x[None].expand(2, 2, 3), lambda x: x[None].expand(2, 2, 3))}
MAKE_UPDATES = {"x+=": lambda x, y: x.__iadd__(10), "y+=": lambda x, y: y.__iadd__(1), "y[0]=": lambda x, y: y.__setitem__(0, 5.0),
                "x.setitem": lambda x, y: x.__setitem__((slice(None), 0), -1.0)}

@pytest.mark.parametrize("make", list(COPIES) + list(VIEWS))
@pytest.mark.parametrize("update", list(MAKE_UPDATES))
def test_copies_and_views_as_torch(make, update):
  if make == "expand" and update in ("y+=", "y[0]="): pytest.skip("torch refuses writes through an expanded view")
  def run(lib, x):
    y = (COPIES | VIEWS)[make][lib is torch](x)
    before = y * 1
    MAKE_UPDATES[update](x, y)
    return [before, y, x, y + 0]
  want = run(torch, torch.arange(6.0).reshape(2, 3))
  got = run(Tensor, Tensor.arange(6.0).reshape(2, 3).contiguous().realize())
  for g, w in zip(got, want): np.testing.assert_equal(g.numpy(), w.numpy())

def test_update_through_a_view_of_a_pending_update():
  def run(x):
    x += 1
    v = x[:, 1:]
    v += 10
    return [v, x]
  for g, w in zip(run(Tensor.arange(6.0).reshape(2, 3).contiguous().realize()), run(torch.arange(6.0).reshape(2, 3))):
    np.testing.assert_equal(g.numpy(), w.numpy())

LAZY_VIEWS = {"slice": lambda x: x[1:], "detach": lambda x: x.detach(), "T": lambda x: x.T, "detach_row": lambda x: x.detach()[0]}
LAZY_UPDATES = {"x+=": lambda x, v: x.__iadd__(1), "v+=": lambda x, v: v.__imul__(3), "x[0]=": lambda x, v: x.__setitem__(0, -1.0),
                "v.fill": lambda x, v: v.__setitem__(..., 5.0)}

@pytest.mark.parametrize("view", list(LAZY_VIEWS))
@pytest.mark.parametrize("update", list(LAZY_UPDATES))
def test_views_of_a_lazy_tensor_alias_it(view, update):
  # x = y * 2 is still a graph: torch computed it, and v = x[1:] (or x.detach()) shares its storage; x is put in a buffer at the update
  def run(lib, y):
    x = y * 2
    v = LAZY_VIEWS[view](x)
    before = v + 0
    LAZY_UPDATES[update](x, v)
    return [before, v, x]
  want = run(torch, torch.arange(6.0).reshape(2, 3))
  got = run(Tensor, Tensor.arange(6.0).reshape(2, 3).contiguous().realize())
  for g, w in zip(got, want): np.testing.assert_equal(g.numpy(), w.numpy())

TWINS = {"x*2": lambda x, lib: x * 2, "clone": lambda x, lib: x.clone(), "zeros.contiguous": lambda x, lib: lib.zeros(2, 3).contiguous(),
         "exp": lambda x, lib: x.exp()}
TWIN_REALIZE = {"a": lambda a, b: a.realize(), "both": lambda a, b: Tensor.realize(a, b), "b": lambda a, b: b.realize(), "a.numpy": lambda a, b: a.numpy()}

@pytest.mark.parametrize("make", list(TWINS))
@pytest.mark.parametrize("realize", list(TWIN_REALIZE))
def test_equal_graphs_computed_apart_are_two_tensors(make, realize):
  # hash-consing makes a = x*2 and b = x*2 one graph; a realize gave them one buffer, so a += 1 changed b too (torch: two tensors)
  def run(lib, x):
    a, b = TWINS[make](x, lib), TWINS[make](x, lib)
    if lib is Tensor: TWIN_REALIZE[realize](a, b)
    a += 1
    b[0] = 7.0
    return [a, b]
  want = run(torch, torch.arange(6.0).reshape(2, 3))
  got = run(Tensor, Tensor.arange(6.0).reshape(2, 3).contiguous().realize())
  for g, w in zip(got, want): np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)

EXPANDED_WRITES = {"+=": lambda x, lib: x[None].expand(2, 3).__iadd__(1), "assign": lambda x, lib: x[None].expand(2, 3).copy_(torch.ones(2, 3))
                   if lib is torch else x[None].expand(2, 3).assign(Tensor.ones(2, 3)), "row*=": lambda x, lib: x[:1].expand(3).__imul__(2),
                   "setitem col": lambda x, lib: x[None].expand(2, 3).__setitem__((slice(None), 0), 5.0),
                   "setitem row (fine)": lambda x, lib: x[None].expand(2, 3).__setitem__(0, 5.0)}

@pytest.mark.parametrize("write", list(EXPANDED_WRITES))
def test_writes_through_an_expanded_view_raise_as_torch(write):
  # torch refuses a write where several elements of the view are one element of memory; a write that touches each once is fine
  def run(lib, x):
    try: EXPANDED_WRITES[write](x, lib)
    except RuntimeError as e: return "more than one element" in str(e), x.tolist()
    return False, x.tolist()
  assert run(Tensor, Tensor.arange(3.0).contiguous().realize()) == run(torch, torch.arange(3.0))

def test_update_of_an_aliased_buffer_runs_one_kernel():
  from tinygrad import GlobalCounters
  x = Tensor.arange(6.0).reshape(2, 3).contiguous().realize()
  v = x.T
  for update in [lambda: x.__iadd__(1), lambda: x.assign(x * 2), lambda: x[0].assign(x[0] * 3)]:
    GlobalCounters.reset()
    update()
    assert GlobalCounters.kernel_count == 1   # the update runs now (v sees it), its value isn't computed apart
  np.testing.assert_equal(v.numpy(), np.array([[6.0, 8.0], [12.0, 10.0], [18.0, 12.0]]))

# ***** more than 2**31 elements: index maths in int64, nothing big allocated *****

def _kernels(t:Tensor) -> list:
  return [get_program(si.ast, Device["CPU"].renderer) for si in t.schedule() if si.ast.op is Ops.SINK]

def _loop_dtypes(p) -> set: return {u.dtype for u in p.uops if u.op in (Ops.RANGE, Ops.SPECIAL)}

def test_arange_past_int32():
  t = Tensor.arange(2**31 + 5, dtype=dtypes.int64)
  assert t.shape == (2**31 + 5,) and t.dtype == dtypes.int64
  assert Tensor.arange(2**31 + 5).dtype == dtypes.int64   # ints that don't fit int32 are int64, like torch's
  # a shrink of a huge arange computes only the elements asked for
  tail = Tensor.arange(2**31 + 5, dtype=dtypes.int64)[-3:]
  (p,) = _kernels(tail)
  assert all(u.src[0].arg <= 3 for u in p.uops if u.op is Ops.RANGE)   # one loop of 3 (or none: the heuristic may unroll it whole)
  assert Tensor.arange(2**31 + 5, dtype=dtypes.int64)[-3:].tolist() == [2**31 + 2, 2**31 + 3, 2**31 + 4]
  assert Tensor.arange(0, 3 * 2**31, 2**31, dtype=dtypes.int64).tolist() == [0, 2**31, 2**32]
  assert Tensor.arange(-2**31 - 4, -2**31 + 2, 3).tolist() == list(range(-2**31 - 4, -2**31 + 2, 3))

def test_rand_huge_graph_uses_int64_indices():
  r = Tensor.rand(10**6, 10**6)
  assert r.shape == (10**6, 10**6)
  progs = _kernels(r)
  assert progs and all(_loop_dtypes(p) <= {dtypes.int64} and _loop_dtypes(p) for p in progs)
  assert all("long" in p.src for p in progs)

def test_empty_huge_ops_use_int64_indices():
  e = Tensor.empty(2**31 + 5)
  for t in (e * 2 + 1, e.pad(((1, 1),)), e[2**31:].exp(), Tensor.empty(3, 2**30).sum(0), Tensor.empty(2**16, 2**16).max(1), e.flip(0)[:10]):
    for p in _kernels(t):
      assert _loop_dtypes(p) <= {dtypes.int64}, p.src
      assert not oob_accesses(p.uops)

def test_signed_zero_plus_zero(device):
  if device == "WEBGPU": pytest.xfail("WGSL lets shader compilers assume finite floats and ignore signed zeros (x-x is 0, x+0 is x)")
  # x + 0.0 is not x for floats: -0.0 + 0.0 is 0.0
  x, tx = Tensor([-0.0, 1.0, -2.0]), torch.tensor([-0.0, 1.0, -2.0])
  np.testing.assert_equal(np.signbit((x + 0).numpy()), np.signbit((tx + 0).numpy()))
  np.testing.assert_equal((1 / (x + 0)).numpy(), (1 / (tx + 0)).numpy())
  np.testing.assert_equal(np.signbit((x - 0).numpy()), np.signbit((tx - 0).numpy()))

# ***** short fixed-seed random runs: view chains after exp-type ops, and in-place updates of slices, against torch / numpy *****

def _random_views(rng, t, tt):
  import random as _r
  assert isinstance(rng, _r.Random)
  for _ in range(rng.randint(1, 5)):
    k = rng.choice(["un", "pad", "shrink", "flip", "permute", "cat", "cumsum", "sum", "expand"])
    if k == "un": t, tt = getattr(t, n := rng.choice(["sigmoid", "tanh", "exp", "cos", "softplus", "erf"]))(), EXP_OPS[n](tt)
    elif k == "pad":
      p = [(rng.randint(0, 2), rng.randint(0, 2)) for _ in t.shape]
      t, tt = t.pad(tuple(p)), torch.nn.functional.pad(tt, [v for a in reversed(p) for v in a])
    elif k == "shrink":
      sh = [(a, rng.randint(a + 1, s)) for s in t.shape for a in (rng.randint(0, s - 1),)]
      t, tt = t.shrink(tuple(sh)), tt[tuple(slice(a, b) for a, b in sh)]
    elif k == "flip": t, tt = t.flip(ax := rng.randrange(t.ndim)), tt.flip(ax)
    elif k == "permute": t, tt = t.permute(*(p := rng.sample(range(t.ndim), t.ndim))), tt.permute(*p)
    elif k == "cat": t, tt = t.cat(t * 2, dim=(ax := rng.randrange(t.ndim))), torch.cat([tt, tt * 2], ax)
    elif k == "cumsum": t, tt = t.cumsum(ax := rng.randrange(t.ndim)), tt.cumsum(ax)
    elif k == "sum" and t.ndim > 1: t, tt = t.sum(ax := rng.randrange(t.ndim)), tt.sum(ax)
    elif k == "expand": t, tt = t.reshape(1, *t.shape).expand(2, *t.shape), tt.reshape(1, *tt.shape).expand(2, *tt.shape)
  return t, tt

@pytest.mark.parametrize("seed", range(2))
def test_random_view_chains(seed):
  import random
  rng = random.Random(seed)
  for i in range(15):
    x = np.random.default_rng(i).uniform(-2, 2, tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 3)))).astype(np.float32)
    t, tt = _random_views(rng, Tensor(x), torch.tensor(x))
    np.testing.assert_allclose(assert_in_bounds(t).numpy(), tt.numpy(), rtol=1e-3, atol=1e-4)

@pytest.mark.parametrize("seed", range(2))
def test_random_inplace_slices(seed):
  import random
  rng = random.Random(seed)
  def rs(n:int) -> slice: return slice(rng.randint(-n, n - 1), rng.randint(-n, n), rng.choice([1, 1, 2, 3, -1, -2]))
  for _ in range(15):
    shape = (rng.randint(2, 6), rng.randint(2, 6))
    a, n = Tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape)).contiguous().realize(), np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    for _ in range(rng.randint(1, 3)):
      s1, s2 = (rs(shape[0]), rs(shape[1])), (rs(shape[0]), rs(shape[1]))
      if n[s1].size == 0: continue
      k = rng.choice(["iadd", "set", "imul", "isum", "full"])
      if k == "full":
        ax1, ax2 = rng.randint(0, 1), rng.randint(0, 1)
        a.assign(a.flip(ax1) + a.sum(ax2, keepdim=True)).realize()
        n = np.flip(n, ax1) + n.sum(ax2, keepdims=True)
      elif k in ("iadd", "set") and n[s2].shape == n[s1].shape:
        if k == "iadd": a[s1] += a[s2]; n[s1] += n[s2].copy()
        else: a[s1] = a[s2]; n[s1] = n[s2].copy()
      elif k == "iadd": a[s1] += a[s1].flip(0); n[s1] += n[s1][::-1].copy()   # the target region read reversed
      elif k == "set": a[s1] = a[s1].flip(1); n[s1] = n[s1][:, ::-1].copy()
      elif k == "imul": a[s1] *= 3; n[s1] *= 3
      elif k == "isum": a[s1] += a.sum(); n[s1] += n.sum()
    np.testing.assert_allclose(a.numpy(), n, rtol=1e-6)

# ***** the same program under any PYTHONHASHSEED: no rewrite, schedule or render step may follow set/dict-of-hash order *****

_RENDER_EVERYWHERE = r'''
import hashlib, json
from tinygrad import Tensor, nn
from tinygrad.codegen.program import get_program
from tinygrad.uop import Ops
from tinygrad.renderer.cstyle import ClangRenderer, OpenCLRenderer
from tinygrad.renderer.ptx import PTXRenderer
x, w = Tensor.empty(64, 64), Tensor.empty(64, 32)
Tensor.training = True
img = Tensor.empty(4, 3, 10, 10, requires_grad=True)
loss = nn.BatchNorm(4)(img.conv2d(Tensor.empty(4, 3, 3, 3))).relu().max_pool2d().flatten(1).gelu().log_softmax().mean()
outs = {"tanh": x.tanh(), "tanh64": x.cast("float64").tanh(), "exp": x.exp(), "gelu": x.gelu(), "sin": x.sin(), "pow": x.pow(x @ x.T),
        "gemm": x @ w, "reduce": x.sum(1), "softmax": x.softmax(-1), "conv_bn_pool_step": loss.gradient(img)[0]}
res = {}
for name, t in outs.items():
  asts = [si.ast for si in t.schedule() if si.ast.op is Ops.SINK]
  for r in (ClangRenderer(), OpenCLRenderer(), PTXRenderer("sm_80")):
    res[f"{name}/{type(r).__name__}"] = hashlib.sha256("\n".join(get_program(a, r).src for a in asts).encode()).hexdigest()
print(json.dumps(res))
'''

def test_programs_independent_of_hash_seed():
  import json, os, subprocess, sys
  got = {}
  for seed in ("0", "1", "2", "3"):
    env = {**os.environ, "PYTHONHASHSEED": seed, "CACHELEVEL": "0"}
    proc = subprocess.run([sys.executable, "-c", _RENDER_EVERYWHERE], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got[seed] = json.loads(proc.stdout.strip().splitlines()[-1])
  assert len(got["0"]) == 30
  for seed in ("1", "2", "3"): assert got[seed] == got["0"], [k for k in got["0"] if got[seed][k] != got["0"][k]]

INPLACE_METHODS = {"add_": lambda v, lib: v.add_(2), "mul_": lambda v, lib: v.mul_(v), "clamp_": lambda v, lib: v.clamp_(0, 2), "relu_": lambda v, lib: v.relu_(),
                   "fill_": lambda v, lib: v.fill_(7), "zero_": lambda v, lib: v.zero_(), "copy_": lambda v, lib: v.copy_(lib.tensor([5.0, 6.0])
                   if lib is torch else Tensor([5.0, 6.0])), "neg_": lambda v, lib: v.neg_(), "div_": lambda v, lib: v.div_(4), "exp_": lambda v, lib: v.exp_()}

@pytest.mark.parametrize("name", list(INPLACE_METHODS))
def test_torch_inplace_methods_write_through_views(name):
  def run(lib, x):
    v = x[1:]
    r = INPLACE_METHODS[name](v, lib)
    return [r, v, x]
  want = run(torch, torch.tensor([1.0, -2.0, 3.0]))
  got = run(Tensor, Tensor([1.0, -2.0, 3.0]).realize())
  for g, w in zip(got, want): np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
  with pytest.raises(RuntimeError, match="leaf"): INPLACE_METHODS[name](Tensor([1.0, 2.0], requires_grad=True), Tensor)
