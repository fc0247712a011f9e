# dtypes against torch: cast, bitcast and the shorthands, fp8 storage and casts bit for bit; data access and tensor meta (data, item,
# tolist, numpy, sizes, repr, bool), realization (schedule, kernelize, realize, contiguous, clone, to, replace), autograd flags,
# Tensor.training, symbolic shapes with Variable, and the names other code imports
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, Variable, Device
from tinygrad.uop import Ops

torch = pytest.importorskip("torch")

TORCH_DT = {dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
            dtypes.int8: torch.int8, dtypes.uint8: torch.uint8, dtypes.int16: torch.int16, dtypes.uint16: torch.uint16, dtypes.int32: torch.int32,
            dtypes.uint32: torch.uint32, dtypes.int64: torch.int64, dtypes.uint64: torch.uint64, dtypes.bool: torch.bool,
            dtypes.fp8e4m3: torch.float8_e4m3fn, dtypes.fp8e5m2: torch.float8_e5m2}
ALL = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64, dtypes.float16,
       dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.fp8e4m3, dtypes.fp8e5m2]

def values_for(dt) -> list:
  # values every other dtype can hold too (casts of out-of-range values are undefined in C and differ across torch's kernels)
  if dt == dtypes.bool: return [True, False, True]
  if dtypes.is_float(dt): return [0.0, 1.0, -2.5, 3.75, 100.0, -0.0, 7.0]
  return [0, 1, 100, 7, 42] + ([] if dtypes.is_unsigned(dt) else [-3, -100])

def as_torch_list(t:"torch.Tensor") -> list:
  return t.float().tolist() if t.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float16) else t.tolist()

@pytest.mark.parametrize("dst", ALL, ids=str)
@pytest.mark.parametrize("src", ALL, ids=str)
def test_cast(device, src, dst):
  vals = values_for(src)
  if not dtypes.is_float(src) and src != dtypes.bool and dtypes.is_unsigned(dst): vals = [v for v in vals if v >= 0]
  if dtypes.is_float(src) and (dtypes.is_unsigned(dst) or dst == dtypes.int8): vals = [v for v in vals if v >= 0 and v < 128]
  if dst in dtypes.fp8s or src in dtypes.fp8s: vals = [v for v in vals if not isinstance(v, int) or abs(v) <= 42]
  t = Tensor(vals, dtype=src).cast(dst)
  tt = torch.tensor(vals).to(TORCH_DT[src]).to(TORCH_DT[dst])
  assert t.dtype == dst
  got, ref = t.tolist(), as_torch_list(tt)
  if dst in (dtypes.float16, dtypes.bfloat16) or dst in dtypes.fp8s: got = [float(x) for x in got]
  assert got == ref

@pytest.mark.parametrize("dt", [dtypes.fp8e4m3, dtypes.fp8e5m2], ids=str)
def test_fp8_casts_bit_exact(device, dt):
  # rounding to nearest even, subnormals, e4m3fn saturating at 448 (inf too) and e5m2 overflowing to inf, nan: all of torch's bits
  rng = np.random.default_rng(0)
  vals = [0.0, -0.0, 448.0, 464.0, 465.0, 500.0, 57344.0, 61439.0, 61440.0, 1e10, 2.0**-10, 3 * 2.0**-11, 2.0**-17, 2.0**-16, math.inf, -math.inf, math.nan]
  vals += (rng.standard_normal(64) * np.exp(rng.uniform(-20, 12, 64))).tolist()
  t = Tensor(vals, dtype=dtypes.float32).cast(dt)
  assert t.bitcast(dtypes.uint8).tolist() == torch.tensor(vals).to(TORCH_DT[dt]).view(torch.uint8).tolist()
  back = t.cast(dtypes.float32).numpy()
  np.testing.assert_array_equal(back, torch.tensor(vals).to(TORCH_DT[dt]).float().numpy())
  # every one of the 256 bit patterns decodes like torch's
  bits = np.arange(256, dtype=np.uint8)
  got = Tensor(bits).bitcast(dt).cast(dtypes.float32).numpy()
  np.testing.assert_array_equal(got, torch.tensor(bits).view(TORCH_DT[dt]).float().numpy())

def test_fp8_storage_and_names():
  from tinygrad.dtype import to_dtype
  assert to_dtype("float8_e4m3fn") == dtypes.fp8e4m3 and to_dtype("float8_e5m2") == dtypes.fp8e5m2
  t = Tensor([0.5, 448, 1000, -3.3], dtype="float8_e4m3fn")
  assert t.dtype == dtypes.fp8e4m3 and t.element_size() == 1 and t.nbytes() == 4
  assert t.tolist() == torch.tensor([0.5, 448, 1000, -3.3]).to(torch.float8_e4m3fn).float().tolist()
  assert (t.cast(dtypes.float32) * 2).tolist() == [1.0, 896.0, 896.0, -6.5]
  assert (t + t).dtype == dtypes.fp8e4m3   # fp8 arithmetic rounds to fp8 (torch has none)

@pytest.mark.parametrize("src, dst, shape", [(dtypes.float32, dtypes.int32, (2, 3)), (dtypes.float32, dtypes.uint8, (2, 3)),
                                             (dtypes.uint8, dtypes.float32, (2, 8)), (dtypes.int16, dtypes.float16, (3,)),
                                             (dtypes.float16, dtypes.int32, (4,)), (dtypes.int64, dtypes.float64, (2,)), (dtypes.int32, dtypes.int8, (2, 2)),
                                             (dtypes.bfloat16, dtypes.int16, (3,)), (dtypes.float64, dtypes.uint16, (1, 2))], ids=str)
def test_bitcast(device, src, dst, shape):
  # a dtype of another size changes the last dim, like torch's view(dtype)
  a = np.random.default_rng(1).integers(0, 120, shape)
  t, tt = Tensor(a).cast(src), torch.tensor(a).to(TORCH_DT[src])
  got, ref = t.bitcast(dst), tt.view(TORCH_DT[dst])
  assert got.shape == tuple(ref.shape) and got.dtype == dst
  np.testing.assert_array_equal(np.array(got.tolist(), dtype=np.float64), np.array(as_torch_list(ref), dtype=np.float64))
  assert t.view(dst).tolist() == got.tolist()

def test_bitcast_errors():
  with pytest.raises(ValueError, match=r"can't bitcast shape \(3,\) from dtypes.uchar to dtypes.float: the last dim times 1 must be a multiple of 4"):
    Tensor([1, 2, 3], dtype=dtypes.uint8).bitcast(dtypes.float32)
  with pytest.raises(TypeError, match="bool has no bit layout"): Tensor([True, False]).bitcast(dtypes.int16)

def test_shorthands():
  t = Tensor([1.7, -2.2, 0.0])
  for name, dt in [("float", dtypes.float32), ("half", dtypes.float16), ("double", dtypes.float64), ("bfloat16", dtypes.bfloat16),
                   ("int", dtypes.int32), ("long", dtypes.int64), ("short", dtypes.int16), ("char", dtypes.int8), ("bool", dtypes.bool)]:
    got = getattr(t, name)()
    assert got.dtype == dt
    assert [float(x) for x in got.tolist()] == [float(x) for x in as_torch_list(getattr(torch.tensor([1.7, -2.2, 0.0]), name)())], name

# ***** data access and meta *****

def test_data_access():
  a = np.arange(6, dtype=np.int32).reshape(2, 3)
  t = Tensor(a)
  mv = t.data()
  assert isinstance(mv, memoryview) and mv.format == "i" and mv.shape == (2, 3) and mv.tolist() == a.tolist()
  assert t.tolist() == a.tolist() and t[1, 2].item() == 5 and isinstance(t[0, 0].item(), int)
  np.testing.assert_array_equal(t.numpy(), a)
  assert t.numpy().dtype == np.int32 and Tensor([1.5], dtype=dtypes.bfloat16).numpy().dtype == np.float32
  assert Tensor(2.5).item() == 2.5 and Tensor([True]).item() is True and Tensor(3).tolist() == 3
  assert Tensor.zeros(0, 3).tolist() == [] and Tensor.zeros(0, 3).numpy().shape == (0, 3)
  with pytest.raises(ValueError, match=r"item\(\) needs a tensor with exactly one element, got shape \(2, 3\)"): t.item()
  with pytest.raises(TypeError, match="memoryview has no format for dtypes.bfloat16"): Tensor([1.0], dtype=dtypes.bfloat16).data()

def test_meta():
  t, tt = Tensor.ones(2, 3, 4, dtype=dtypes.float16), torch.ones(2, 3, 4, dtype=torch.float16)
  assert t.ndim == tt.ndim and t.numel() == tt.numel() and t.element_size() == tt.element_size() and t.nbytes() == tt.nbytes
  assert t.size() == tuple(tt.size()) and t.size(1) == tt.size(1) and t.size(-1) == 4 and len(t) == len(tt)
  assert t.is_floating_point() and not Tensor([1]).is_floating_point() and Tensor([1]).shape == (1,)
  assert Tensor(1.0).ndim == 0 and Tensor(1.0).numel() == 1
  with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"): len(Tensor(1.0))
  with pytest.raises(IndexError, match="dimension 3 is out of range"): t.size(3)

def test_bool():
  assert bool(Tensor([1.0])) and not bool(Tensor(0)) and bool(Tensor([[True]]))
  with pytest.raises(ValueError, match=r"the truth value of a Tensor of shape \(2,\) is ambiguous; use .any\(\) or .all\(\)"): bool(Tensor([1, 2]))
  with pytest.raises(ValueError, match="ambiguous"):
    if Tensor([1, 2]) == Tensor([1, 2]): pass

def test_repr():
  r = repr(Tensor([1, 2]) + 1)
  assert r.startswith("<Tensor") and "(2,)" in r and "dtypes.int" in r and "CPU" in r or Device.DEFAULT in r
  assert "realized" in repr(Tensor([1.0]).realize())

# ***** realization *****

def kernels(sched:list) -> int:
  # count the kernels of a schedule and run it (a schedule points the tensors at the buffers its items fill)
  from tinygrad.engine.realize import run_schedule
  run_schedule(list(sched))
  return len([si for si in sched if si.ast.op is Ops.SINK])

def test_schedule_and_realize():
  a = Tensor([1.0, 2.0, 3.0])
  b = (a * 2 + 1).sum()
  sched = b.schedule()
  assert isinstance(sched, list) and kernels(sched) == 1 and b.item() == 15.0
  c = (a + 1)
  assert c.realize() is c and c.uop.is_realized and c.tolist() == [2.0, 3.0, 4.0]
  d, e = a * 3, a - 1
  Tensor.realize(d, e)
  assert d.uop.is_realized and e.uop.is_realized
  v = Variable("n", 1, 3).bind(2)
  s, var_vals = a.shrink(((0, v),)).sum().schedule_with_vars()
  assert list(var_vals.values()) == [2]
  with pytest.raises(ValueError, match=r"schedule\(\) has variables"): a.shrink(((0, v),)).sum().schedule()

def test_kernelize():
  a = Tensor([1.0, 2.0, 3.0])
  b = (a * 2).kernelize()
  assert isinstance(b, Tensor) and not b.uop.is_realized and b.uop.op is Ops.CONTIGUOUS   # grouped, nothing ran
  c = b.exp() + b
  assert kernels(c.schedule()) == 2   # b is its own kernel now, c reads its buffer
  np.testing.assert_allclose(c.numpy(), np.exp([2.0, 4.0, 6.0]) + [2.0, 4.0, 6.0], rtol=1e-6)
  r = Tensor([1.0]).realize()
  assert r.kernelize() is r and r.uop.is_realized

def test_contiguous_clone_to_replace():
  a = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).realize()
  t = a.T.contiguous()
  assert t.uop.op is Ops.CONTIGUOUS and t.tolist() == [[0, 3], [1, 4], [2, 5]]
  c = a.clone()
  c.realize()
  assert c.uop.base.buffer is not a.uop.base.buffer and c.tolist() == a.tolist()
  p = a.to("PYTHON")
  assert p.device == "PYTHON" and p.tolist() == a.tolist() and a.to(a.device) is a
  q = Tensor([1.0, 2.0])
  assert q.to_("PYTHON") is q and q.device == "PYTHON" and (q * 2).tolist() == [2.0, 4.0]
  r = Tensor([1.0, 2.0])
  assert r.replace(Tensor([5.0, 6.0])) is r and r.tolist() == [5.0, 6.0]
  with pytest.raises(ValueError, match=r"replace needs the same shape, got \(3,\) for a tensor of shape \(2,\)"): r.replace(Tensor([1.0, 2.0, 3.0]))

def test_autograd_flags():
  x = Tensor([1.0, 2.0])
  assert x.requires_grad is None and x.requires_grad_() is x and x.requires_grad is True
  assert x.requires_grad_(False).requires_grad is False
  w = Tensor([3.0, 4.0], requires_grad=True)
  (w * w.detach()).sum().backward()
  assert w.grad is not None and w.grad.tolist() == [3.0, 4.0]   # the detached factor is a constant
  assert w.detach().requires_grad is False
  y = Tensor([1.0, -2.0], requires_grad=True)
  (y.contiguous_backward() * 3).sum().backward()
  assert y.grad is not None and y.grad.tolist() == [3.0, 3.0]

def test_training_context():
  assert Tensor.training is False
  with Tensor.train():
    assert Tensor.training is True
    with Tensor.train(False): assert Tensor.training is False
    assert Tensor.training is True
  assert Tensor.training is False
  @Tensor.train()
  def f() -> bool: return Tensor.training
  assert f() is True and Tensor.training is False

# ***** symbolic shapes *****

def test_variable_shrink_reshape(device):
  a = Tensor(np.arange(30, dtype=np.float32).reshape(10, 3)).realize()
  for n in (1, 3, 7):
    v = Variable("i", 1, 10).bind(n)
    s = a.shrink(((0, v), None))
    assert s.shape[0] is v and s.shape[1] == 3
    assert s.sum().item() == np.arange(30).reshape(10, 3)[:n].sum()
    assert (s * 2).reshape(v * 3).sum().item() == 2 * np.arange(3 * n).sum()   # reshape between symbolic shapes of the same size
    assert s.reshape(v, 1, 3).sum().item() == np.arange(3 * n).sum()
  # a variable offset: one compiled program for every value
  for k in range(4):
    v = Variable("k", 0, 9).bind(k)
    assert a.shrink(((v, v + 1), None)).reshape(3).tolist() == [3.0 * k, 3.0 * k + 1, 3.0 * k + 2]

def test_variable_matmul_graph():
  # the front end builds a matmul with a variable dim (reshape checks compare 1*i*4 and i*4 after simplifying)
  v = Variable("i", 1, 10).bind(3)
  x = Tensor(np.arange(40, dtype=np.float32).reshape(10, 4)).realize().shrink(((0, v), None))
  out = x @ Tensor(np.ones((4, 5), dtype=np.float32))
  assert out.shape[0] is v and out.shape[1] == 5

@pytest.mark.parametrize("what", ["elementwise", "matmul"])
def test_variable_symbolic_output(what):
  v = Variable("i", 1, 10).bind(3)
  x = Tensor(np.arange(40, dtype=np.float32).reshape(10, 4)).realize().shrink(((0, v), None))
  out = (x * 2) if what == "elementwise" else (x @ Tensor(np.ones((4, 5), dtype=np.float32)))
  assert out.sum().item() == (2 * np.arange(12).sum() if what == "elementwise" else 5 * np.arange(12).sum())
  out.realize()

def test_reshape_errors():
  v = Variable("j", 1, 10).bind(3)
  with pytest.raises(ValueError, match=r"can't reshape \(12,\) \(12 elements\)"): Tensor.ones(12).reshape(v, 4)   # 12 == 4*j only for j=3

# ***** names other code imports *****

def test_names_import():
  from tinygrad.device import is_dtype_supported
  from tinygrad.tensor import _to_np_dtype
  from tinygrad.helpers import getenv, Context, DEBUG, CI, IMAGE, TRANSCENDENTAL, AMD_LLVM
  assert is_dtype_supported(dtypes.float16, "CPU") and is_dtype_supported(dtypes.fp8e4m3, "CPU") and is_dtype_supported(dtypes.bfloat16, "PYTHON")
  assert _to_np_dtype(dtypes.float32) == np.float32 and _to_np_dtype(dtypes.bfloat16) is None and _to_np_dtype(dtypes.uint16) == np.uint16
  assert getenv("SURELY_NOT_SET_ANYWHERE", 7) == 7 and isinstance(CI, bool)
  with Context(DEBUG=0, TRANSCENDENTAL=2):
    assert TRANSCENDENTAL.value == 2 and DEBUG.value == 0
  assert IMAGE.value == 0 and AMD_LLVM.value in (0, 1)
