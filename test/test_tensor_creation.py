# creation and randomness: from_blob, from_uop, linspace, the Threefry generator and everything built on it, against torch and numpy
import math
import numpy as np
import pytest
from tinygrad.tensor import Tensor, _from_np_dtype
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.engine.jit import TinyJit
from tinygrad.uop.ops import UOp

torch = pytest.importorskip("torch")

@pytest.fixture(autouse=True)
def fresh_seed():
  # every test starts from the same generator state, whatever ran before it on this worker
  Tensor.manual_seed(1234)
  yield

# ***** arange *****

@pytest.mark.parametrize("args", [(100,), (3, 103), (0.5, 100.5), (5, -7, -3), (0, 10, 1, dtypes.float16), (2**31 - 3, 2**31 + 2)])
def test_arange_builds_a_few_uops(args):
  # Tensor.arange's index is built once per (length, device): a repeated call makes one Tensor and a handful of UOps, not one per digit
  from tinygrad.uop.ops import UOpMetaClass
  Tensor.arange(*args[:3], dtype=args[3] if len(args) > 3 else None)
  made, make = [0], UOpMetaClass.__call__
  def counting(*a, **kw):
    made[0] += 1
    return make(*a, **kw)
  UOpMetaClass.__call__ = counting   # type: ignore[method-assign]
  try: t = Tensor.arange(*args[:3], dtype=args[3] if len(args) > 3 else None)
  finally: UOpMetaClass.__call__ = make   # type: ignore[method-assign]
  assert made[0] <= 16, made[0]
  want = torch.arange(*args[:3], dtype=torch.float16 if len(args) > 3 else None)
  np.testing.assert_allclose(t.numpy(), want.numpy())
  assert dtypes.is_int(t.dtype) == (not want.is_floating_point())   # ints as ints (tinygrad's int32 where they fit, not torch's int64)

# ***** from_blob, from_uop, linspace *****

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float64])
def test_from_blob_reads_and_writes_host_memory(device, dtype):
  if device == "WEBGPU": pytest.skip("WebGPU buffers can't wrap host memory")
  arr = np.arange(12).astype(dtype).reshape(3, 4)
  t = Tensor.from_blob(arr.ctypes.data, (3, 4), _from_np_dtype(dtype))
  np.testing.assert_equal(t.numpy(), arr)
  np.testing.assert_equal((t * 2).numpy(), arr * 2)
  # a write into the tensor lands in the numpy array: no copy was made
  t[1, 2] = 99
  assert arr[1, 2] == 99
  t.assign(Tensor(np.full((3, 4), 7, dtype=dtype)))
  t.realize()
  np.testing.assert_equal(arr, np.full((3, 4), 7, dtype=dtype))

def test_from_blob_errors():
  arr = np.zeros(4, np.float32)
  with pytest.raises(ValueError, match="from_blob: ptr must be a positive int"): Tensor.from_blob(0, (4,), dtypes.float32)
  with pytest.raises(ValueError, match="negative size"): Tensor.from_blob(arr.ctypes.data, (-1, 4), dtypes.float32)

def test_from_uop(device):
  assert Tensor.from_uop(UOp.const(dtypes.float32, 2.5)).item() == 2.5
  v = UOp.variable("i", 1, 10)
  assert Tensor.from_uop(v.bind(4)).item() == 4
  assert Tensor.from_uop(v.bind(3) * 2 + 1).item() == 7
  # a bound variable is a kernel argument: another value runs the same kernel with a new argument
  assert (Tensor.from_uop(v.bind(7)) + Tensor([1, 2])).tolist() == [8, 9]
  t = Tensor([1.0, 2.0])
  assert Tensor.from_uop(t.uop).tolist() == [1.0, 2.0]

@pytest.mark.parametrize("args", [(0, 1, 5), (-3.5, 7.25, 11), (2, 2, 4), (1, 0, 7), (0, 1, 1), (3, 9, 0), (-1e3, 1e3, 101)])
@pytest.mark.parametrize("dtype", [None, "float64", "int32", "float16"])
def test_linspace(device, args, dtype):
  if device == "PYTHON" and args[2] > 20: pytest.skip("small shapes on PYTHON")
  want = torch.linspace(*args, dtype=getattr(torch, dtype) if dtype else None).numpy()
  got = Tensor.linspace(*args, dtype=dtype).numpy()
  assert got.dtype == want.dtype and got.shape == want.shape
  # torch computes float16 in float16 steps; this computes in float32 and rounds once, so they can differ by a few float16 ulps
  tol = dict(rtol=5e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-6, atol=1e-4)
  np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tol)

def test_linspace_errors():
  with pytest.raises(RuntimeError, match="linspace: steps must be >= 0, got -1"): Tensor.linspace(0, 1, -1)
  with pytest.raises(TypeError, match="linspace: steps must be an int, got 2.5"): Tensor.linspace(0, 1, 2.5)  # type: ignore[arg-type]

# ***** the generator *****

def test_same_seed_same_numbers(device):
  Tensor.manual_seed(42)
  a, b = Tensor.rand(3, 5).numpy(), Tensor.randn(7).numpy()
  Tensor.manual_seed(42)
  np.testing.assert_equal(Tensor.rand(3, 5).numpy(), a)
  np.testing.assert_equal(Tensor.randn(7).numpy(), b)
  Tensor.manual_seed(43)
  assert not np.array_equal(Tensor.rand(3, 5).numpy(), a)

def test_consecutive_calls_differ(device):
  draws = [Tensor.rand(16).numpy() for _ in range(4)]
  for i in range(4):
    for j in range(i):
      assert not np.array_equal(draws[i], draws[j])
  # the counter advances per call, not per element: a later lazy realize reads the numbers of its own call
  a, b = Tensor.rand(8), Tensor.rand(8)
  bn, an = b.numpy(), a.numpy()
  assert not np.array_equal(an, bn)

@pytest.mark.parametrize("make", [lambda: Tensor.rand(37), lambda: Tensor.rand(2, 3, dtype="float16"), lambda: Tensor.rand(5, dtype="float64"),
                                  lambda: Tensor.rand(4, dtype="bfloat16"), lambda: Tensor.randint(-5, 1000, (33,)),
                                  lambda: Tensor.randint(0, 2**40, (5,), dtype="int64"), lambda: Tensor.randn(11), lambda: Tensor.randperm(9),
                                  lambda: Tensor.normal(3, mean=2.0, std=0.5), lambda: Tensor.kaiming_uniform(4, 3)])
def test_cpu_and_python_bit_exact(make):
  # the numbers are computed by kernels from the seed alone, so every device gives the same bits
  out = []
  for dev in ("CPU", "PYTHON"):
    Tensor.manual_seed(7)
    old, Device.DEFAULT = Device.DEFAULT, dev
    try: out.append(make().numpy())
    finally: Device.DEFAULT = old
  assert out[0].dtype == out[1].dtype
  np.testing.assert_array_equal(out[0], out[1])

def test_devices_have_their_own_counters():
  Tensor.manual_seed(5)
  a = Tensor.rand(6, device="CPU").numpy()
  b = Tensor.rand(6, device="PYTHON").numpy()
  np.testing.assert_array_equal(a, b)

def test_random_under_jit_advances():
  @TinyJit
  def step(x:Tensor) -> Tensor: return (x + Tensor.rand(8)).realize()
  Tensor.manual_seed(9)
  jitted = [step(Tensor.zeros(8).contiguous()).numpy().copy() for _ in range(5)]
  Tensor.manual_seed(9)
  plain = [Tensor.rand(8).numpy() for _ in range(5)]
  for j, p in zip(jitted, plain): np.testing.assert_array_equal(j, p)

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_rand_range_and_moments(dtype):
  x = Tensor.rand(100_000, dtype=dtype, device="CPU")
  assert x.dtype == dtypes.fields()[dtype] if dtype in dtypes.fields() else True
  v = x.numpy().astype(np.float64)
  assert v.min() >= 0.0 and v.max() < 1.0
  assert abs(v.mean() - 0.5) < 0.01 and abs(v.std() - math.sqrt(1/12)) < 0.01
  # all the mantissa bits are random: float32 hits far more than 2**16 distinct values
  if dtype == "float32": assert len(np.unique(v)) > 90_000

def test_randn_moments():
  v = Tensor.randn(100_000, device="CPU").numpy().astype(np.float64)
  assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
  # a normal has 68.3% within one std and 95.4% within two
  assert abs((np.abs(v) < 1).mean() - 0.6827) < 0.01 and abs((np.abs(v) < 2).mean() - 0.9545) < 0.01
  assert np.isfinite(v).all()

def test_rand_shapes(device):
  assert Tensor.rand(2, 3).shape == (2, 3) and Tensor.rand((4,)).shape == (4,) and Tensor.rand().shape == ()
  assert Tensor.rand(0, 3).numpy().shape == (0, 3) and Tensor.randn(1).numpy().shape == (1,)
  assert Tensor.rand(3, requires_grad=True).requires_grad
  t = Tensor.zeros(2, 5, dtype=dtypes.float16)
  assert t.rand_like().shape == (2, 5) and t.rand_like().dtype == dtypes.float16
  assert t.randn_like(dtype=dtypes.float32).dtype == dtypes.float32

def test_randint(device):
  torch_style = Tensor.randint(3, 9, (50,)).numpy()
  assert torch_style.dtype == np.int32 and torch_style.min() >= 3 and torch_style.max() < 9
  assert Tensor.randint(5, (2, 2)).numpy().max() < 5
  tiny_style = Tensor.randint(4, 5, low=-2, high=2).numpy()
  assert tiny_style.shape == (4, 5) and tiny_style.min() >= -2 and tiny_style.max() < 2
  assert Tensor.randint(0, 1, (3,)).tolist() == [0, 0, 0]
  assert Tensor.randint(0, 10, (3,), dtype=dtypes.uint8).dtype == dtypes.uint8
  assert Tensor.randint(-2**40, 2**40, (3,), dtype=dtypes.int64).dtype == dtypes.int64

def test_randint_distribution():
  v = Tensor.randint(0, 10, (100_000,), device="CPU").numpy()
  counts = np.bincount(v, minlength=10)
  assert counts.min() > 9_500 and counts.max() < 10_500

def test_randint_errors():
  with pytest.raises(ValueError, match=r"randint: high must be greater than low, got low=5, high=5"): Tensor.randint(5, 5, (3,))
  with pytest.raises(ValueError, match=r"randint: \[0, 300\) doesn't fit dtypes.uchar"): Tensor.randint(0, 300, (3,), dtype=dtypes.uint8)
  with pytest.raises(TypeError, match=r"randint: low and high must be ints, got 0.5"): Tensor.randint(0.5, 3, (3,))  # type: ignore[arg-type]
  with pytest.raises(TypeError, match=r"randint: expected \(high, size\) or \(low, high, size\)"): Tensor.randint(1, 2, 3, (3,))

def test_random_errors():
  with pytest.raises(TypeError, match="rand: dtype must be a float dtype, got dtypes.int"): Tensor.rand(3, dtype=dtypes.int32)
  with pytest.raises(TypeError, match="randn: dtype must be a float dtype"): Tensor.randn(3, dtype=dtypes.bool)
  with pytest.raises(ValueError, match="negative size"): Tensor.rand(-1, 3)
  with pytest.raises(TypeError, match=r"rand: shape must be ints, got \(2.5,\)"): Tensor.rand(2.5)
  with pytest.raises(TypeError, match="manual_seed: seed must be an int, got str"): Tensor.manual_seed("1")  # type: ignore[arg-type]
  with pytest.raises(ValueError, match="normal: std must be >= 0, got -1"): Tensor.normal(3, std=-1)

def test_normal_uniform_and_inits():
  v = Tensor.normal(100_000, mean=3.0, std=0.5, device="CPU").numpy()
  assert abs(v.mean() - 3.0) < 0.01 and abs(v.std() - 0.5) < 0.01
  tv = Tensor.normal(3.0, 0.5, (10,)).numpy()  # torch's normal(mean, std, size)
  assert tv.shape == (10,)
  u = Tensor.uniform(100_000, low=-2.0, high=5.0, device="CPU").numpy()
  assert u.min() >= -2.0 and u.max() < 5.0 and abs(u.mean() - 1.5) < 0.05
  shape = (64, 32, 3, 3)
  fan_in = 32 * 9
  su = Tensor.scaled_uniform(*shape, device="CPU").numpy()
  assert np.abs(su).max() <= 1 / math.sqrt(math.prod(shape)) + 1e-7
  g = Tensor.glorot_uniform(*shape, device="CPU").numpy()
  bound = math.sqrt(6 / (64 + fan_in))
  assert np.abs(g).max() <= bound and np.abs(g).max() > 0.9 * bound
  ku = Tensor.kaiming_uniform(*shape, a=0.1, device="CPU").numpy()
  kb = math.sqrt(3) * math.sqrt(2 / 1.01) / math.sqrt(fan_in)
  assert np.abs(ku).max() <= kb and abs(ku.std() - kb / math.sqrt(3)) < 0.01 * kb * 3
  kn = Tensor.kaiming_normal(*shape, device="CPU").numpy()
  assert abs(kn.std() - math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(fan_in)) < 0.005
  assert Tensor.kaiming_uniform(4, 3, requires_grad=True).requires_grad

def test_randperm(device):
  n = 50 if device == "CPU" else 12
  p = Tensor.randperm(n).numpy()
  assert p.dtype == np.int32 and sorted(p.tolist()) == list(range(n))
  assert Tensor.randperm(0).shape == (0,) and Tensor.randperm(1).tolist() == [0]
  assert Tensor.randperm(5, dtype=dtypes.int64).dtype == dtypes.int64
  perms = {tuple(Tensor.randperm(4).tolist()) for _ in range(12)}
  assert len(perms) > 4
  with pytest.raises(ValueError, match="randperm: n must be an int >= 0, got -2"): Tensor.randperm(-2)

def test_multinomial_with_replacement():
  w = Tensor([0.1, 0.0, 0.6, 0.3], device="CPU")
  s = w.multinomial(40_000, replacement=True).numpy()
  assert s.dtype == np.int32 and s.shape == (40_000,)
  np.testing.assert_allclose(np.bincount(s, minlength=4) / 40_000, [0.1, 0.0, 0.6, 0.3], atol=0.01)
  # rows are independent distributions; weights need not add up to 1
  rows = Tensor([[0.0, 5.0, 0.0], [1.0, 0.0, 1.0]], device="CPU").multinomial(1000, replacement=True).numpy()
  assert (rows[0] == 1).all() and set(np.unique(rows[1])) == {0, 2}

def test_multinomial_without_replacement(device):
  w = Tensor([1.0, 0.0, 3.0, 2.0, 0.5])
  for _ in range(3):
    s = w.multinomial(4).tolist()
    assert len(set(s)) == 4 and 1 not in s
  firsts = np.array([Tensor([1.0, 0.0, 8.0]).multinomial(1).item() for _ in range(10 if device == "PYTHON" else 40)])
  assert (firsts != 1).all() and (firsts == 2).mean() > 0.6
  assert Tensor([[1.0, 1.0], [2.0, 1.0]]).multinomial(2).shape == (2, 2)

def test_multinomial_errors():
  with pytest.raises(ValueError, match=r"multinomial: weights must be 1-D or 2-D, got shape \(\)"): Tensor(1.0).multinomial()
  with pytest.raises(ValueError, match="multinomial: can't take 3 samples without replacement from 2 categories"): Tensor([1., 2.]).multinomial(3)
  with pytest.raises(ValueError, match="multinomial: num_samples must be an int > 0, got 0"): Tensor([1., 2.]).multinomial(0)

# numpy scalars and arrays inside a Python list: torch takes them, each keeping its dtype (np.float64 is a Python float too)
@pytest.mark.parametrize("data", [[np.float32(0.1)], [np.int64(3), 4], [np.float64(1.0), 2.5], [np.bool_(True), np.bool_(False)],
                                  [np.array([1.5, 2.0]), np.array([3.0, 4.0])], [[np.int8(-1), np.int8(5)]], [np.uint8(200), np.uint8(3)]])
def test_list_of_numpy_values(data):
  want = torch.tensor(data)
  got = Tensor(data).numpy()
  assert got.dtype == want.numpy().dtype, (got.dtype, want.dtype)
  np.testing.assert_equal(got, want.numpy())
