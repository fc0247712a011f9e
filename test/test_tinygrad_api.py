# where tinygrad extends PyTorch's API (gelu, n-linear interpolate, asymmetric pool padding, sdpa with mask and is_causal, einops
# patterns, bound Variables as scalars) and the names tinygrad-era scripts import: each against torch, numpy or the real tqdm
import io, math
import numpy as np
import pytest
from tinygrad import Tensor, Variable, dtypes
from tinygrad.engine.realize import method_cache

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

def rnd(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
def close(got:Tensor, want, atol=1e-5, rtol=1e-4): np.testing.assert_allclose(got.numpy(), np.asarray(want), atol=atol, rtol=rtol)

# ***** gelu *****

def test_gelu_default_is_tanh(device):
  x = rnd(64) * 3
  close(Tensor(x).gelu(), F.gelu(torch.tensor(x), approximate="tanh"))
  close(Tensor(x).gelu(approximate="none"), F.gelu(torch.tensor(x)))
  assert not np.allclose(Tensor(x).gelu().numpy(), F.gelu(torch.tensor(x)).numpy(), atol=1e-6, rtol=0)   # the two really differ
  assert "tanh approximation" in (Tensor.gelu.__doc__ or "") and 'approximate="none"' in (Tensor.gelu.__doc__ or "")

# ***** interpolate *****

@pytest.mark.parametrize("shape,size,torch_mode", [((1, 2, 4, 5), (7, 3), "bilinear"), ((2, 1, 3, 4, 2), (5, 2, 3), "trilinear"),
                                                   ((1, 2, 6), (9,), "linear"), ((1, 1, 2, 2, 2, 3), None, None)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_linear_is_n_linear(device, shape, size, torch_mode, align_corners):
  x = rnd(*shape)
  got = Tensor(x).interpolate(size=size or (3, 4, 5, 2), mode="linear", align_corners=align_corners)
  if torch_mode is not None:
    close(got, F.interpolate(torch.tensor(x), size=size, mode=torch_mode, align_corners=align_corners))
  else:
    # 4 spatial dims (torch has no quadlinear): n-linear is separable, so torch's linear along one dim at a time is the reference
    t = torch.tensor(x)
    for d, o in enumerate((3, 4, 5, 2)):
      t = t.movedim(2 + d, -1)
      t = F.interpolate(t.reshape(-1, 1, t.shape[-1]), size=o, mode="linear", align_corners=align_corners).reshape(*t.shape[:-1], o).movedim(-1, 2 + d)
    close(got, t)

# ***** pooling with (begin, end) padding *****

@pytest.mark.parametrize("pads", [((1, 0), (0, 2)), ((0, 1), (2, 1)), ((2, 2), (0, 0))])
def test_pool_asymmetric_padding(device, pads):
  x = rnd(2, 3, 6, 7)
  flat = tuple(p for pair in reversed(pads) for p in pair)   # torch's F.pad order: last dim first
  t = torch.tensor(x)
  close(Tensor(x).max_pool2d(3, stride=2, padding=pads), F.max_pool2d(F.pad(t, flat, value=-math.inf), 3, stride=2))
  close(Tensor(x).avg_pool2d(3, stride=2, padding=pads), F.avg_pool2d(F.pad(t, flat), 3, stride=2))
  # without the padding in the divisor: the sums over the windows divided by how many real elements each window covers
  ones = F.pad(torch.ones_like(t), flat)
  want = F.avg_pool2d(F.pad(t, flat), 3, stride=2, divisor_override=1) / F.avg_pool2d(ones, 3, stride=2, divisor_override=1)
  close(Tensor(x).avg_pool2d(3, stride=2, padding=pads, count_include_pad=False), want)
  close(Tensor(x).max_pool2d(3, stride=2, padding=flat), F.max_pool2d(F.pad(t, flat, value=-math.inf), 3, stride=2))   # tinygrad's flat form
  vals, idx = Tensor(x).max_pool2d(3, stride=2, padding=pads, return_indices=True)
  np.testing.assert_equal(np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), -1), vals.numpy().reshape(2, 3, -1))

def test_pool_asymmetric_padding_1d_and_ceil(device):
  x = rnd(1, 2, 9)
  t = torch.tensor(x)
  close(Tensor(x).max_pool2d((2,), padding=((1, 0),), ceil_mode=True), F.max_pool1d(F.pad(t, (1, 0), value=-math.inf), 2, ceil_mode=True))
  with pytest.raises(ValueError, match="padding pair"): Tensor(x).max_pool2d((2,), padding=((1, -1),))

# ***** scaled_dot_product_attention with attn_mask and is_causal *****

@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_sdpa_mask_and_causal(device, mask_kind):
  q, k, v = rnd(2, 3, 5, 4), rnd(2, 3, 5, 4, seed=1), rnd(2, 3, 5, 6, seed=2)
  causal = torch.ones(5, 5, dtype=torch.bool).tril()
  if mask_kind == "bool":
    m = np.random.default_rng(3).random((5, 5)) > 0.3
    np.fill_diagonal(m, True)   # every row keeps a position (torch gives nan for a fully masked row)
    want_mask = torch.tensor(m) & causal
  else:
    m = rnd(5, 5, seed=4)
    want_mask = torch.tensor(m).masked_fill(~causal, -math.inf)
  want = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), attn_mask=want_mask)
  close(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(m), is_causal=True), want)

# ***** rearrange *****

X = np.arange(2*3*4*5, dtype=np.float32).reshape(2, 3, 4, 5)

@pytest.mark.parametrize("pattern,sizes,ref", [
  ("b c h w -> b (c h w)", {}, lambda x: x.reshape(2, 60)),
  ("b ... -> b (...)", {}, lambda x: x.reshape(2, 60)),
  ("b … w -> w b …", {}, lambda x: x.transpose(3, 0, 1, 2)),
  ("b c ... -> (c b) ...", {}, lambda x: x.transpose(1, 0, 2, 3).reshape(6, 4, 5)),
  ("... h w -> ... (w h)", {}, lambda x: x.transpose(0, 1, 3, 2).reshape(2, 3, 20)),
  ("b c (h1 h2) w -> b (c h1) h2 w", {"h1": 2}, lambda x: x.reshape(2, 3, 2, 2, 5).reshape(2, 6, 2, 5)),
  ("b c h w -> b () c h w 1", {}, lambda x: x.reshape(2, 1, 3, 4, 5, 1)),
  ("b_x c_1 h w -> w h c_1 b_x", {}, lambda x: x.transpose(3, 2, 1, 0)),
  ("b c h (w2 w1) -> b c (w1 h) w2", {"w1": 5}, lambda x: x.reshape(2, 3, 4, 1, 5).transpose(0, 1, 4, 2, 3).reshape(2, 3, 20, 1)),
])
def test_rearrange_patterns(device, pattern, sizes, ref):
  np.testing.assert_equal(Tensor(X).rearrange(pattern, **sizes).numpy(), ref(X))

@pytest.mark.parametrize("pattern,msg", [
  ("b c h w", "one '->'"), ("b c h w -> b c -> h w", "one '->'"), ("b (c h w -> b c h w", r"unbalanced '\('"),
  ("b c h) w -> b c h w", r"unbalanced '\)'"), ("b ((c h)) w -> b c h w", "nested parentheses"), ("b c h w -> b c h", "the same axes"),
  ("b c h h -> b c h", "the same axes"), ("b ... -> b", "'...' must be once"), ("... b ... -> b", "'...' must be once"),
  ("b (c ...) -> b c ...", "inside parentheses on the left"), ("b c h w -> b c h w-1", "bad axis name"), ("b c 2 w -> b c w", "bad axis name"),
  ("b c h -> b c h", "has 3 axes, the tensor has 4 dims"),
])
def test_rearrange_errors(pattern, msg):
  with pytest.raises(ValueError, match=msg): Tensor(X).rearrange(pattern)

# ***** bound Variables as scalars, in arange and in mean: one compiled kernel for every value *****

def test_variable_scalars_arange_mean(device):
  x = Tensor(np.arange(40, dtype=np.float32).reshape(4, 10)).realize()
  iv, sv = Variable("i", 1, 10), Variable("s", 0, 5)
  compiles = []
  for k in (2, 3, 5, 7):
    i, s = iv.bind(k), sv.bind(k - 2)
    before = len(method_cache)
    assert (Tensor([1, 2]) + i).tolist() == [1 + k, 2 + k] and (Tensor([1, 2]) + i).dtype == dtypes.int32
    assert (Tensor([1.5, 2.0]) * i).tolist() == [1.5 * k, 2.0 * k] and (Tensor([10.0]) - i).tolist() == [10.0 - k]
    assert (Tensor([True]) + i).dtype == dtypes.int32
    a = Tensor.arange(i)
    assert a.shape == (i,) and (a == Tensor.arange(10).shrink(((0, i),))).all().item() and a.sum().item() == sum(range(k))
    assert Tensor.arange(s, i + 4).sum().item() == sum(range(k - 2, k + 4)) and Tensor.arange(s, 6).sum().item() == sum(range(k - 2, 6))
    np.testing.assert_allclose(x.shrink((None, (0, i))).mean(1).numpy(), np.arange(40).reshape(4, 10)[:, :k].mean(1))
    compiles.append(len(method_cache) - before)
  assert compiles[0] > 0 and compiles[1:] == [0, 0, 0], f"new kernels per bound value: {compiles}"
  with pytest.raises(NotImplementedError, match="step 1"): Tensor.arange(0, iv.bind(3), 2)

# ***** names tinygrad-era code imports *****

def test_helpers_names():
  from tinygrad.helpers import IGNORE_OOB, FUSE_ARANGE, SPLIT_REDUCEOPS, WINO, TRACK_MATCH_STATS, Context, is_numpy_ndarray
  from tinygrad.helpers import cdiv, cmod, getbits, polyN, to_mv, mv_address, from_mv, word_wrap, strip_parens, time_to_str, merge_dicts, fully_flatten
  assert IGNORE_OOB.value == 0 and WINO.value == 0   # conftest turns the bounds check on (IGNORE_OOB=0)
  assert FUSE_ARANGE.value == 1 and TRACK_MATCH_STATS.value == 0
  with Context(SPLIT_REDUCEOP=0): assert SPLIT_REDUCEOPS.value == 0   # one flag under both names
  assert is_numpy_ndarray(np.zeros(2)) and not is_numpy_ndarray([0]) and not is_numpy_ndarray(np.float32(1))
  assert [cdiv(a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2), (3, 0))] == [3, -3, -3, 3, 0]
  assert [cmod(a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2))] == [1, -1, 1, -1]
  assert getbits(0b101100, 2, 4) == 0b011 and polyN(2.0, [1.0, 0.0, -3.0]) == 1.0
  buf = bytearray(b"abcd")
  mv = memoryview(buf)
  assert bytes(to_mv(mv_address(mv), 4)) == b"abcd" and bytes(from_mv(mv)) == b"abcd"
  assert word_wrap("a" * 10, 4) == "aaaa\naaaa\naa" and strip_parens("(a+b)") == "a+b" and strip_parens("(a)+(b)") == "(a)+(b)"
  assert time_to_str(12.5) == "   12.50s " and time_to_str(0.5) == "  500.00ms" and time_to_str(2e-6, 5) == " 2.00us"
  assert merge_dicts([{1: 2}, {3: 4}]) == {1: 2, 3: 4} and fully_flatten([[1, [2, 3]], 4, np.array([[5, 6]])]) == [1, 2, 3, 4, 5, 6]
  with pytest.raises(ValueError, match="different values for the same key"): merge_dicts([{1: 2}, {1: 3}])

def test_dtype_names():
  from tinygrad.dtype import AddrSpace, truncate_fp16, truncate_bf16, _to_np_dtype, _from_torch_dtype
  assert dtypes.float32.ptr().addrspace is AddrSpace.GLOBAL and dtypes.float32.ptr(local=True).addrspace is AddrSpace.LOCAL and len(AddrSpace) == 3
  assert truncate_fp16(1.0 + 2**-12) == 1.0 and truncate_fp16(70000.0) == math.inf and truncate_fp16(-1e6) == -math.inf
  assert truncate_bf16(1.0 + 2**-9) == 1.0 and truncate_bf16(1e39) == math.inf and truncate_bf16(3.0) == 3.0
  assert truncate_fp16(0.1) == float(np.float16(0.1)) and truncate_bf16(0.1) == float(torch.tensor(0.1, dtype=torch.bfloat16).float())
  assert _to_np_dtype(dtypes.int16) == np.int16 and _to_np_dtype(dtypes.bfloat16) is None
  for td, want in ((torch.float32, dtypes.float32), (torch.bfloat16, dtypes.bfloat16), (torch.bool, dtypes.bool), (torch.uint64, dtypes.uint64),
                   (torch.float8_e4m3fn, dtypes.fp8e4m3), (torch.int8, dtypes.int8)):
    assert _from_torch_dtype(td) == want
  with pytest.raises(TypeError, match="complex64"): _from_torch_dtype(torch.complex64)

def test_ir_and_tool_names():
  from tinygrad.tensor import _METADATA
  from tinygrad.uop.ops import UOp, Ops, UPat, TrackedPatternMatcher, RewriteContext, _substitute, graph_rewrite
  from tinygrad.uop.spec import ast_spec
  from tinygrad.shape.view import merge_dims
  from tinygrad.codegen.devectorizer import sym
  from tinygrad.uop.transcendental import xexp2, xlog2, xsin, payne_hanek_reduction, cody_waite_reduction, polyN  # noqa: F401
  from tinygrad.codegen import full_rewrite_to_sink, full_rewrite
  assert _METADATA.get() is None
  a, b = UOp.variable("a", 0, 9), UOp.variable("b", 0, 9)
  assert graph_rewrite(a + 1, _substitute, ctx={a: b}, bottom_up=True) is b + 1
  double = TrackedPatternMatcher([(UPat(Ops.ADD, src=(UPat.var("x"), UPat.var("x"))), lambda x: x * 2)])
  assert RewriteContext(double).unified_rewrite((a + a) + 3) is (a * 2) + 3 and ast_spec is not None
  assert merge_dims((2, 3, 4), (12, 4, 1)) == ((24, 1, 24),) and merge_dims((2, 3), (0, 0)) == ((6, 0, 0),)
  assert merge_dims((2, 1, 3), (1, 0, 2)) == ((2, 1, 2), (3, 2, 3)) and merge_dims((3, 4), (4, 1), ((0, 1), (0, 4))) == ((12, 1, 4),)
  assert graph_rewrite((a * 1) + 0, sym) is a
  # the polynomial helpers build float UOps
  assert graph_rewrite(polyN(UOp.const(dtypes.float32, 2.0), [1.0, 0.0, -3.0]), sym).arg == 1.0
  assert xexp2(UOp.const(dtypes.float32, 3.0)).dtype == dtypes.float32 and xsin(UOp.const(dtypes.float16, 1.0)).dtype == dtypes.float16
  # full_rewrite_to_sink without a renderer: a real kernel from the scheduler lowers and linearizes
  t = Tensor([1.0, 2.0]) + 1
  ast = t.schedule()[-1].ast
  assert full_rewrite_to_sink(ast).op is Ops.SINK and any(u.op is Ops.STORE for u in full_rewrite(ast))

def test_search_names(device):
  from tinygrad.opt.search import bufs_from_lin, get_test_global_size
  from tinygrad.opt.kernel import Kernel
  from tinygrad.device import Device
  ast = (Tensor(rnd(3, 4)) @ Tensor(rnd(4, 5))).schedule()[-1].ast
  bufs = bufs_from_lin(Kernel(ast, Device[device].renderer))
  assert [b.size for b in bufs] == [15, 12, 20] and all(b.is_allocated() for b in bufs)
  assert not bufs_from_lin(Kernel(ast, Device[device].renderer), allocate=False)[0].is_allocated()
  size, factor = get_test_global_size([64, 64, 4], 1024, {})
  assert math.prod(size) <= 1024 and factor * math.prod(size) == 64 * 64 * 4
  v = Variable("n", 1, 100)
  assert get_test_global_size([v, 2], 1000, {v: 8}) == ([8, 2], 1.0)

# ***** tqdm: tqdm's own format *****

@pytest.mark.parametrize("n,total,elapsed,unit_scale,unit", [(0, None, 0, True, "it"), (0, None, 0, False, "it"), (5, 10, 1.0, False, "it"),
  (1234567, None, 3.5, True, "B"), (3, 10, 7200.0, False, "it"), (0, 10, 0, False, "it"), (10, 10, 2, True, "img"), (7, 9, 100.0, True, "it"),
  (123456789, 10**9, 12.0, True, "B")])
def test_tqdm_format_matches_tqdm(n, total, elapsed, unit_scale, unit):
  real = pytest.importorskip("tqdm")
  from tinygrad.helpers import tqdm
  ours = tqdm(total=total, desc="Test", unit=unit, unit_scale=unit_scale, disable=True)
  for ncols in (80, 120):
    assert ours.format_meter(n, elapsed, ncols) == real.tqdm.format_meter(n, total, elapsed, ncols=ncols, prefix="Test", unit=unit,
                                                                          unit_scale=unit_scale)
  assert tqdm(total=total, unit_scale=unit_scale, disable=True).format_meter(0, 0, 80) == \
    real.tqdm.format_meter(0, total, 0, ncols=80, unit_scale=unit_scale)

def test_tqdm_output(capsys, monkeypatch):
  from tinygrad.helpers import tqdm, trange
  monkeypatch.setenv("COLUMNS", "80")
  t = tqdm(desc="Test", unit_scale=True)
  assert capsys.readouterr().err == "\rTest: 0.00it [00:00, ?it/s]"
  t.set_description("Other")
  t.update(3, close=True)
  assert capsys.readouterr().err.startswith("\rOther: 3.00it [00:00, ")
  assert list(trange(4, desc="r")) == [0, 1, 2, 3]
  err = capsys.readouterr().err
  assert err.endswith("\n") and "\rr: 100%|" in err and "| 4/4 [00:00<00:00, " in err and len(err.split("\r")[-1]) == 81
  tqdm.write("hello")
  out = io.StringIO()
  tqdm.write("there", file=out)
  assert capsys.readouterr().out == "hello\n" and out.getvalue() == "there\n"
