# Tensor creation, data access, dtype rules, errors and laziness
import math, struct
import numpy as np
import pytest
from tinygrad.tensor import Tensor, _to_np_dtype, all_tensors
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.helpers import GlobalCounters
from tinygrad.uop import Ops

# ***** construction *****

@pytest.mark.parametrize("data,dtype,shape", [
  ([1, 2, 3], dtypes.int32, (3,)),
  ([1.0, 2, 3], dtypes.float32, (3,)),
  ([True, False], dtypes.bool, (2,)),
  ([True, 2], dtypes.int32, (2,)),
  ([[1, 2], [3, 4], [5, 6]], dtypes.int32, (3, 2)),
  ([[[1.5]]], dtypes.float32, (1, 1, 1)),
  ((1, 2), dtypes.int32, (2,)),
  ([], dtypes.float32, (0,)),
  ([[], []], dtypes.float32, (2, 0)),
])
def test_from_list(device, data, dtype, shape):
  t = Tensor(data)
  assert t.dtype == dtype and t.shape == shape and t.device == device
  # list data lands in a buffer right away, no kernel needed to read it back
  assert t.uop.is_realized
  np.testing.assert_equal(t.numpy(), np.array(data, dtype=_to_np_dtype(dtype)).reshape(shape))
  assert t.tolist() == np.array(data, dtype=_to_np_dtype(dtype)).reshape(shape).tolist()

def test_from_list_with_dtype(device):
  assert Tensor([1.7, -1.7, 300.0], dtype=dtypes.int32).tolist() == [1, -1, 300]
  assert Tensor([1, 255, 255.9], dtype=dtypes.uint8).tolist() == [1, 255, 255]
  with pytest.raises(ValueError, match="out of range"): Tensor([1, 256], dtype=dtypes.uint8)
  with pytest.raises(ValueError, match="out of range"): Tensor([-1], dtype=dtypes.uint32)
  with pytest.raises(ValueError, match="out of range"): Tensor(2**31, dtype=dtypes.int32)
  with pytest.raises(ValueError, match="nan"): Tensor([math.nan], dtype=dtypes.int32)
  assert Tensor([0, 2.5, 0.0], dtype="bool").tolist() == [False, True, False]
  assert Tensor([1, 2], dtype="float16").tolist() == [1.0, 2.0]
  assert Tensor([1e6], dtype=dtypes.float16).tolist() == [math.inf]
  assert Tensor([1, 2, 3], dtype=dtypes.int64).tolist() == [1, 2, 3]

def test_bfloat16_and_fp8(device):
  t = Tensor([1.0, 3.140625, -2.5, 1e-3], dtype=dtypes.bfloat16)
  assert t.dtype == dtypes.bfloat16
  assert t.tolist() == [1.0, 3.140625, -2.5, 0.00099945068359375]
  assert t.numpy().dtype == np.float32
  assert Tensor([0.5, 448, 1000], dtype=dtypes.fp8e4m3).tolist() == [0.5, 448.0, 448.0]

@pytest.mark.parametrize("data", [[[1, 2], [3]], [1, [2, 3]], [[[1, 2]], [[1, 2], [3, 4]]]])
def test_ragged_list(device, data):
  with pytest.raises(ValueError, match="ragged"): Tensor(data)

def test_ragged_message_names_shapes(device):
  with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)|\(3,\).*\(2,\)"): Tensor([[1, 2], [1, 2, 3]])

@pytest.mark.parametrize("npdtype", [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.bool_])
def test_from_numpy_keeps_dtype(device, npdtype):
  arr = (np.arange(12).reshape(3, 4) % 5).astype(npdtype)
  t = Tensor(arr)
  assert _to_np_dtype(t.dtype) == np.dtype(npdtype) and t.shape == (3, 4)
  out = t.numpy()
  assert out.dtype == np.dtype(npdtype)
  np.testing.assert_equal(out, arr)

def test_from_numpy_non_contiguous_and_0d(device):
  arr = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_equal(Tensor(arr.T).numpy(), arr.T)
  np.testing.assert_equal(Tensor(arr[::2, ::-1]).numpy(), arr[::2, ::-1])
  t = Tensor(np.array(3.5, dtype=np.float32))
  assert t.shape == () and t.item() == 3.5
  assert Tensor(np.float32(2.5)).item() == 2.5 and Tensor(np.float32(2.5)).dtype == dtypes.float32
  assert Tensor(np.arange(4, dtype=np.int32), dtype=dtypes.float32).dtype == dtypes.float32
  assert Tensor(np.array([1.0, 2.0]), dtype=dtypes.bfloat16).tolist() == [1.0, 2.0]

def test_from_bytes(device):
  t = Tensor(b"\x01\x02\xff")
  assert t.dtype == dtypes.uint8 and t.shape == (3,)
  assert t.tolist() == [1, 2, 255]
  f = Tensor(struct.pack("<2f", 1.5, -2.0), dtype=dtypes.float32)
  assert f.shape == (2,) and f.tolist() == [1.5, -2.0]
  with pytest.raises(ValueError, match="whole number"): Tensor(b"abc", dtype=dtypes.int32)

@pytest.mark.parametrize("value,dtype", [(3, dtypes.int32), (2.5, dtypes.float32), (True, dtypes.bool), (-7, dtypes.int32)])
def test_from_scalar(device, value, dtype):
  t = Tensor(value)
  assert t.shape == () and t.dtype == dtype and t.ndim == 0
  assert t.uop.base.op is Ops.CONST  # a scalar is a constant, not a buffer
  assert t.item() == value and t.tolist() == value

def test_scalar_with_dtype(device):
  assert Tensor(3, dtype=dtypes.float32).item() == 3.0
  assert Tensor(2.9, dtype=dtypes.int32).item() == 2
  assert Tensor(255, dtype=dtypes.uint8).item() == 255
  assert Tensor(1.0, dtype=dtypes.bfloat16).item() == 1.0

def test_none_is_empty(device):
  t = Tensor(None)
  assert t.shape == (0,) and t.dtype == dtypes.float32 and t.numel() == 0
  assert t.numpy().shape == (0,) and t.tolist() == []

def test_from_uop_and_tensor(device):
  t = Tensor([1, 2, 3])
  assert Tensor(t.uop).uop is t.uop
  assert Tensor(t).uop is t.uop
  assert Tensor(t, dtype=dtypes.float32).dtype == dtypes.float32
  with pytest.raises(ValueError, match="dtype"): Tensor(t.uop, dtype=dtypes.float32)

def test_range_and_numpy_scalars(device):
  assert Tensor(range(4)).tolist() == [0, 1, 2, 3] and Tensor(range(4)).dtype == dtypes.int32
  t = Tensor([1.0, 2.0])
  assert (np.float32(2) * t).tolist() == [2.0, 4.0] and (t * np.float32(2)).tolist() == [2.0, 4.0]
  assert (np.int64(3) - t).tolist() == [2.0, 1.0] and (t[np.int64(1)]).item() == 2.0

def test_bad_data():
  with pytest.raises(TypeError, match="dict"): Tensor({"a": 1})
  with pytest.raises(ValueError, match="unknown dtype"): Tensor([1], dtype="float7")

def test_device_canonicalized():
  dev = Device.DEFAULT
  assert Tensor([1], device=dev.lower()).device == dev
  assert Tensor([1], device=f"{dev}:0").device == dev

# ***** creation functions *****

def test_zeros_ones_full_empty(device):
  z = Tensor.zeros(2, 3)
  assert z.shape == (2, 3) and z.dtype == dtypes.float32
  np.testing.assert_equal(z.numpy(), np.zeros((2, 3), np.float32))
  np.testing.assert_equal(Tensor.ones((3,), dtype=dtypes.int32).numpy(), np.ones(3, np.int32))
  f = Tensor.full((2, 2), 7)
  assert f.dtype == dtypes.int32 and f.tolist() == [[7, 7], [7, 7]]
  assert Tensor.full((2,), 1.5).dtype == dtypes.float32 and Tensor.full(2, True).tolist() == [True, True]
  e = Tensor.empty(4, 5, dtype=dtypes.int16)
  assert e.shape == (4, 5) and e.dtype == dtypes.int16 and not e.uop.is_realized
  assert Tensor.zeros(0, 3).numpy().shape == (0, 3)
  assert Tensor.ones().shape == ()
  with pytest.raises(ValueError, match="negative"): Tensor.zeros(2, -1)

def test_like_functions(device):
  t = Tensor([[1, 2], [3, 4]])
  for fn, val in [(t.zeros_like, 0), (t.ones_like, 1)]:
    r = fn()
    assert r.shape == t.shape and r.dtype == t.dtype and r.tolist() == [[val]*2]*2
  assert t.full_like(2.5).dtype == dtypes.int32 and t.full_like(2.5).tolist() == [[2, 2], [2, 2]]
  assert t.full_like(2.5, dtype=dtypes.float32).tolist() == [[2.5, 2.5], [2.5, 2.5]]
  e = t.empty_like()
  assert e.shape == (2, 2) and e.dtype == dtypes.int32 and e.device == t.device

@pytest.mark.parametrize("args,kwargs", [((10,), {}), ((2, 10), {}), ((10, 2, -3), {}), ((0,), {}), ((5, 1), {}), ((1,), {}), ((1000,), {}),
                                         ((0.5, 3.0, 0.25), {}), ((3,), {"dtype": dtypes.float32}), ((-5, 5, 2), {"dtype": dtypes.int64}),
                                         ((2.5,), {}), ((1, 2, 0.1), {})])
def test_arange(device, args, kwargs):
  t = Tensor.arange(*args, **kwargs)
  expected = np.arange(*args, dtype=_to_np_dtype(kwargs["dtype"]) if "dtype" in kwargs else None)
  assert t.shape == expected.shape
  assert t.dtype == kwargs.get("dtype", dtypes.int32 if all(isinstance(a, int) for a in args) else dtypes.float32)
  np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-6)

def test_arange_errors():
  with pytest.raises(ValueError, match="step"): Tensor.arange(0, 5, 0)

@pytest.mark.parametrize("n,m", [(1, None), (3, None), (4, 2), (2, 5), (0, None)])
def test_eye(device, n, m):
  t = Tensor.eye(n, m)
  assert t.dtype == dtypes.float32
  np.testing.assert_equal(t.numpy(), np.eye(n, m, dtype=np.float32))
  assert Tensor.eye(3, dtype=dtypes.int32).tolist() == np.eye(3, dtype=np.int32).tolist()

# ***** dtype promotion (DESIGN.md) *****

@pytest.mark.parametrize("a,b,expected", [
  (dtypes.int32, dtypes.float32, dtypes.float32), (dtypes.int8, dtypes.uint8, dtypes.int16), (dtypes.uint8, dtypes.uint16, dtypes.uint16),
  (dtypes.float16, dtypes.bfloat16, dtypes.float32), (dtypes.bool, dtypes.int8, dtypes.int8), (dtypes.int64, dtypes.float16, dtypes.float16),
  (dtypes.uint32, dtypes.int32, dtypes.int64), (dtypes.float32, dtypes.float64, dtypes.float64), (dtypes.bool, dtypes.bool, dtypes.bool),
])
def test_tensor_tensor_promotion(a, b, expected):
  x, y = Tensor.ones(2, dtype=a), Tensor.ones(2, dtype=b)
  assert (x + y).dtype == expected and (y * x).dtype == expected and x.maximum(y).dtype == expected

@pytest.mark.parametrize("tdtype,scalar,expected", [
  (dtypes.float16, 2.5, dtypes.float16), (dtypes.float16, 2, dtypes.float16), (dtypes.int8, 3, dtypes.int8), (dtypes.int32, 2.5, dtypes.float32),
  (dtypes.int64, 2.5, dtypes.float32), (dtypes.bool, 1, dtypes.int32), (dtypes.bool, True, dtypes.bool), (dtypes.bool, 1.5, dtypes.float32),
  (dtypes.uint8, True, dtypes.uint8), (dtypes.bfloat16, 1.0, dtypes.bfloat16),
])
def test_scalar_promotion(tdtype, scalar, expected):
  t = Tensor.ones(2, dtype=tdtype)
  assert (t + scalar).dtype == expected and (scalar + t).dtype == expected and (t * scalar).dtype == expected

def test_op_result_dtypes():
  i, f, b, h = Tensor([1, 2]), Tensor([1.0, 2.0]), Tensor([True, False]), Tensor([1, 2], dtype=dtypes.float16)
  assert (i / i).dtype == dtypes.float32 and (i / 2).dtype == dtypes.float32 and (2 / i).dtype == dtypes.float32
  assert (h / 2).dtype == dtypes.float16 and (i // 2).dtype == dtypes.int32 and (i % 2).dtype == dtypes.int32
  assert (i < f).dtype == dtypes.bool and (i == 1).dtype == dtypes.bool and (f != f).dtype == dtypes.bool
  assert (i ** 2).dtype == dtypes.int32 and (i ** i).dtype == dtypes.int32 and (2 ** i).dtype == dtypes.int32
  assert (i ** 0.5).dtype == dtypes.float32 and (i ** 2.0).dtype == dtypes.float32 and (h ** 2.0).dtype == dtypes.float16
  assert i.exp().dtype == dtypes.float32 and i.sqrt().dtype == dtypes.float32 and h.exp().dtype == dtypes.float16
  assert b.sum().dtype == dtypes.int32 and Tensor([1], dtype=dtypes.int8).sum().dtype == dtypes.int32
  assert Tensor([1], dtype=dtypes.uint8).sum().dtype == dtypes.uint32 and Tensor([1], dtype=dtypes.int64).sum().dtype == dtypes.int64
  assert h.sum().dtype == dtypes.float16 and Tensor([1.0], dtype=dtypes.bfloat16).sum().dtype == dtypes.bfloat16
  assert i.mean().dtype == dtypes.float32 and h.mean().dtype == dtypes.float16 and b.mean().dtype == dtypes.float32
  assert i.max().dtype == dtypes.int32 and b.max().dtype == dtypes.bool and b.min().dtype == dtypes.bool
  assert f.argmax().dtype == dtypes.int32 and i.argmin().dtype == dtypes.int32
  assert b.any().dtype == dtypes.bool and i.all().dtype == dtypes.bool
  assert (i @ i).dtype == dtypes.int32 and (i @ f).dtype == dtypes.float32
  assert (b & b).dtype == dtypes.bool and (i & 3).dtype == dtypes.int32 and (~i).dtype == dtypes.int32
  assert i.float().dtype == dtypes.float32 and i.half().dtype == dtypes.float16 and f.int().dtype == dtypes.int32
  assert f.long().dtype == dtypes.int64 and f.double().dtype == dtypes.float64 and f.bool().dtype == dtypes.bool
  assert f.bfloat16().dtype == dtypes.bfloat16 and f.cast("int8").dtype == dtypes.int8
  assert i.where(1.5, 2).dtype == dtypes.float32 and b.where(i, f).dtype == dtypes.float32 and b.where(1, 2).dtype == dtypes.int32

# ***** errors *****

def test_broadcast_error_names_shapes():
  with pytest.raises(ValueError, match=r"add.*\(2, 3\).*\(4,\)"): Tensor.ones(2, 3) + Tensor.ones(4)
  with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"): Tensor.ones(3) < Tensor.ones(2)
  with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"): Tensor.ones(3).where(Tensor.ones(2), 0)
  with pytest.raises(ValueError, match=r"sub.*\(3,\).*\(2,\)"): Tensor.ones(3) - Tensor.ones(2)
  with pytest.raises(ValueError, match=r"div.*\(3,\).*\(2,\)"): Tensor.ones(3) / Tensor.ones(2)

def test_matmul_errors():
  with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 5\)"): Tensor.ones(2, 3) @ Tensor.ones(4, 5)
  with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"): Tensor.ones(3) @ Tensor.ones(2)
  with pytest.raises(ValueError, match="1-D"): Tensor.ones(3) @ Tensor(2.0)

def test_index_errors():
  t = Tensor.ones(3, 4)
  with pytest.raises(IndexError, match=r"index 3 .*dimension 0 with size 3"): t[3]
  with pytest.raises(IndexError, match=r"index -5 .*dimension 1 with size 4"): t[0, -5]
  with pytest.raises(IndexError, match="too many"): t[0, 0, 0]
  with pytest.raises(IndexError, match="ellipsis"): t[..., ...]
  # advanced indexing and item assignment work now (test/test_tensor_indexing.py); their errors:
  with pytest.raises(IndexError, match=r"index 3 .*dimension 0 with size 3"): t[[0, 3]]
  with pytest.raises(IndexError, match="must be int or bool tensors"): t[Tensor([0.0, 1.0])]
  with pytest.raises(TypeError, match="invalid index"): t["a"]
  with pytest.raises(IndexError, match=r"index 3 .*dimension 0 with size 3"): t[3] = 1

def test_dim_errors():
  t = Tensor.ones(3, 4)
  with pytest.raises(IndexError, match="out of range"): t.sum(2)
  with pytest.raises(IndexError, match="out of range"): t.transpose(0, -3)
  with pytest.raises(ValueError, match="more than once"): t.sum((0, -2))
  with pytest.raises(ValueError, match="permutation"): t.permute(0, 0)

def test_movement_errors():
  t = Tensor.ones(3, 4)
  with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 2\)"): t.reshape(5, 2)
  with pytest.raises(ValueError, match="-1"): t.reshape(-1, -1)
  with pytest.raises(ValueError, match=r"\(3, 4\).*\(3, 5\)"): t.expand(3, 5)
  with pytest.raises(ValueError, match="out of bounds"): t.shrink(((0, 4), None))
  with pytest.raises(ValueError, match="one"): t.pad(((1, 1),))
  with pytest.raises(ValueError, match="pad mode must be"): t.pad(((1, 1), (0, 0)), mode="wrap")
  with pytest.raises(ValueError, match="cat"): t.cat(Tensor.ones(2, 3), dim=0)
  with pytest.raises(ValueError, match="unflatten"): t.unflatten(1, (3, 3))

def test_item_and_bool_errors():
  t = Tensor([1, 2])
  with pytest.raises(ValueError, match=r"exactly one element.*\(2,\)"): t.item()
  with pytest.raises(ValueError, match="ambiguous"): bool(t)
  with pytest.raises(TypeError): len(Tensor(1))
  with pytest.raises(TypeError): iter(Tensor(1))

def test_dtype_errors():
  f, b = Tensor([1.0]), Tensor([True])
  with pytest.raises(TypeError, match="bitwise_and"): f & f
  with pytest.raises(TypeError): f << 1
  with pytest.raises(TypeError): ~f
  with pytest.raises(TypeError, match="bool"): b - b
  with pytest.raises(TypeError): Tensor([1]) + "a"

def test_empty_max_raises():
  with pytest.raises(ValueError, match="max"): Tensor.ones(0, 3).max()
  with pytest.raises(ValueError, match="min"): Tensor.ones(0, 3).min(0)
  with pytest.raises(ValueError, match="argmax"): Tensor.ones(0, 3).argmax(0)

def test_assign_errors(device):
  t = Tensor([1, 2, 3]).realize()
  with pytest.raises(ValueError, match="shape"): t.assign(Tensor([1, 2]))
  with pytest.raises(TypeError, match="dtype"): t.assign(Tensor([1.0, 2.0, 3.0]))
  with pytest.raises(TypeError, match="dtype"): t += 1.5

# ***** laziness and realization *****

def test_lazy_until_data(device):
  GlobalCounters.reset()
  a = Tensor([1.0, 2.0, 3.0])
  b = Tensor.arange(3).float()
  c = ((a + b) * 2).sum() + Tensor.eye(3).sum()
  d = c.exp().reshape(1)
  assert GlobalCounters.kernel_count == 0
  assert not d.uop.is_realized
  out = d.numpy()
  assert GlobalCounters.kernel_count > 0
  np.testing.assert_allclose(out, np.exp([(1+2+3+0+1+2)*2 + 3.0]), rtol=1e-5)

def test_realize_replaces_graph(device):
  a = Tensor([1, 2, 3]) + 1
  b = a * 2
  assert a.realize() is a
  assert a.uop.is_realized and a.uop.base.op is Ops.BUFFER
  # b still depends on a and now reads a's buffer instead of recomputing it
  assert any(u.op is Ops.BUFFER and u is a.uop.base for u in b.uop.toposort())
  GlobalCounters.reset()
  assert b.tolist() == [4, 6, 8]
  assert GlobalCounters.kernel_count == 1

def test_realize_several(device):
  a, b = Tensor([1, 2]) + 1, Tensor([3.0]) * 2
  a.realize(b)
  assert a.uop.is_realized and b.uop.is_realized
  assert a.tolist() == [2, 3] and b.tolist() == [6.0]

def test_schedule(device):
  a = Tensor([1, 2, 3]) + 1
  sched = a.schedule()
  assert isinstance(sched, list) and len(sched) == 1
  s2, var_vals = (Tensor([1.0]) * 2).schedule_with_vars()
  assert len(s2) == 1 and var_vals == {}

def test_registry_drops_dead_tensors():
  n = len(all_tensors)
  t = Tensor([1, 2])
  assert len(all_tensors) == n + 1
  del t
  assert len(all_tensors) == n

# ***** data access *****

def test_data_access(device):
  t = Tensor([[1, 2, 3], [4, 5, 6]], dtype=dtypes.int16)
  assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
  mv = t.data()
  assert mv.format == "h" and mv.shape == (2, 3) and mv.tolist() == [[1, 2, 3], [4, 5, 6]]
  assert Tensor(5.5).data().tolist() == 5.5
  assert (t.T + 0).tolist() == [[1, 4], [2, 5], [3, 6]]
  assert t.T.tolist() == [[1, 4], [2, 5], [3, 6]]
  assert t[1, 2].item() == 6 and isinstance(t[1, 2].item(), int)
  assert isinstance(Tensor([1.5]).item(), float) and isinstance(Tensor([True]).item(), bool)
  assert float(Tensor([2.5])) == 2.5 and int(Tensor([[7]])) == 7 and bool(Tensor([1])) is True and bool(Tensor(0.0)) is False
  with pytest.raises(TypeError, match="tolist"): Tensor([1.0], dtype=dtypes.float16).data()
  assert Tensor([1.0], dtype=dtypes.float16).tolist() == [1.0]

def test_numpy_dtypes(device):
  for dt in [dtypes.float32, dtypes.float16, dtypes.int8, dtypes.uint16, dtypes.int64, dtypes.bool, dtypes.float64]:
    t = (Tensor([1, 0, 3], dtype=dt) + 0) if dt != dtypes.bool else (Tensor([True, False]) & True)
    assert t.numpy().dtype == _to_np_dtype(dt)
  assert (Tensor([1.5], dtype=dtypes.bfloat16) * 2).numpy().dtype == np.float32

def test_shape_helpers(device):
  t = Tensor.ones(2, 3, 4)
  assert t.ndim == 3 and t.numel() == 24 and t.size() == (2, 3, 4) and t.size(-1) == 4 and len(t) == 2
  assert t.element_size() == 4 and t.nbytes() == 96 and t.is_floating_point() and not Tensor([1]).is_floating_point()
  assert Tensor.ones(2, dtype=dtypes.float16).element_size() == 2
  assert [x.shape for x in t] == [(3, 4), (3, 4)]
  assert [x.tolist() for x in Tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]
  assert t.lazydata is t.uop

def test_repr(device):
  r = repr(Tensor([1, 2]))
  assert r.startswith("<Tensor <UOp") and device in r and "grad None" in r and "\n" not in r

def test_hash_and_eq_elementwise():
  a = Tensor([1, 2])
  assert isinstance(a == a, Tensor) and isinstance(a != 1, Tensor)
  d = {a: 1}
  assert d[a] == 1 and hash(a) != hash(Tensor([1, 2]))

# ***** in place, assign, copies *****

def test_inplace_realized(device):
  t = Tensor([1, 2, 3]).realize()
  alias, buf = t, t.uop.base
  t += 1
  assert t is alias
  assert t.tolist() == [2, 3, 4]
  # the result went into the same buffer
  assert t.uop.base is buf
  t *= 2
  assert t.tolist() == [4, 6, 8] and t.uop.base is buf

def test_chained_inplace(device):
  t = Tensor([1, 2, 3]).realize()
  t += 1
  t *= 2
  assert t.tolist() == [4, 6, 8]
  assert t.tolist() == [4, 6, 8]

def test_inplace_unrealized(device):
  t = Tensor.arange(3)
  t += 1
  assert t.tolist() == [1, 2, 3]
  u = Tensor.arange(3).float()
  u /= 2
  assert u.tolist() == [0.0, 0.5, 1.0]

def test_assign_value_and_scalar(device):
  t = Tensor([1.0, 2.0]).realize()
  t.assign(Tensor([5.0, 6.0]))
  assert t.tolist() == [5.0, 6.0]
  t.assign([7, 8])
  assert t.tolist() == [7.0, 8.0]

def test_clone_and_contiguous(device):
  a = Tensor([1, 2, 3]).realize()
  c = a.clone()
  c += 1
  assert a.tolist() == [1, 2, 3] and c.tolist() == [2, 3, 4]
  assert (a + 0).detach().tolist() == [1, 2, 3]
  assert a.reshape(3, 1).flip(0).contiguous().tolist() == [[3], [2], [1]]

def test_contiguous_of_realized(device):
  a = Tensor([1, 2, 3]).realize()
  assert a.contiguous().tolist() == [1, 2, 3]
  assert a.reshape(3, 1).contiguous().tolist() == [[1], [2], [3]]
  assert a.detach().tolist() == [1, 2, 3]

def test_to_device(device):
  a = Tensor([1.5, 2.5], device="CPU")
  assert a.to("CPU") is a
  b = a.to(device)
  assert b.device == device and b.tolist() == [1.5, 2.5]
  c = Tensor([1, 2]) + 1
  c.to_(device)
  assert c.device == device and c.tolist() == [2, 3]
