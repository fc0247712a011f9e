# reductions against torch: sum/prod/max/min/any/all/mean/var/std (+ _mean), softmax family, logsumexp, logcumsumexp, arg reductions,
# isclose, einsum, cumulative ops, Keccak / tinygrad's tensor hash, and kernel counts of softmax and Linear+ReLU
import hashlib, math, os, random
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_schedule

torch = pytest.importorskip("torch")

TORCH_DT = {dtypes.float16: torch.float16, dtypes.bfloat16: torch.bfloat16, dtypes.float32: torch.float32, dtypes.float64: torch.float64,
            dtypes.int8: torch.int8, dtypes.uint8: torch.uint8, dtypes.int16: torch.int16, dtypes.int32: torch.int32, dtypes.int64: torch.int64,
            dtypes.bool: torch.bool}

def rand(shape, lo=-3.0, hi=3.0, seed=0) -> np.ndarray: return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)

def to_np(t) -> np.ndarray:
  if isinstance(t, Tensor): return t.cast(dtypes.float64).numpy() if dtypes.is_float(t.dtype) else t.numpy()
  return t.double().numpy() if t.is_floating_point() else t.numpy()

def close(got, ref, rtol=1e-5, atol=1e-6):
  assert tuple(got.shape) == tuple(ref.shape), f"shape {got.shape}, torch gives {tuple(ref.shape)}"
  np.testing.assert_allclose(to_np(got), to_np(ref), rtol=rtol, atol=atol, equal_nan=True)

def noncontig(a:np.ndarray) -> tuple[Tensor, "torch.Tensor"]:
  # the transpose of a contiguous buffer, flipped: the reduce reads a permuted, flipped view
  b = np.ascontiguousarray(np.swapaxes(a, 0, -1))
  x, tx = Tensor(b).transpose(0, -1), torch.tensor(b).transpose(0, -1)
  return x.flip(0), tx.flip(0)

def kernels(*ts:Tensor) -> int:
  # schedule, count the kernels, and run them (a schedule points the tensors at the buffers its items fill)
  sched, var_vals = Tensor.schedule_with_vars(*ts)
  run_schedule(list(sched), var_vals)
  return len([si for si in sched if si.ast.op is Ops.SINK])

AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]

# ***** basic reductions *****

REDUCE = {
  "sum": (lambda x, ax, kd: x.sum(ax, keepdim=kd), lambda x, ax, kd: x.sum(ax if ax is not None else tuple(range(x.ndim)), keepdim=kd)),
  "prod": (lambda x, ax, kd: x.prod(ax, keepdim=kd), lambda x, ax, kd: _tprod(x, ax, kd)),
  "max": (lambda x, ax, kd: x.max(ax, keepdim=kd), lambda x, ax, kd: x.amax(ax if ax is not None else tuple(range(x.ndim)), keepdim=kd)),
  "min": (lambda x, ax, kd: x.min(ax, keepdim=kd), lambda x, ax, kd: x.amin(ax if ax is not None else tuple(range(x.ndim)), keepdim=kd)),
  "mean": (lambda x, ax, kd: x.mean(ax, keepdim=kd), lambda x, ax, kd: x.mean(ax if ax is not None else tuple(range(x.ndim)), keepdim=kd)),
  "any": (lambda x, ax, kd: x.any(ax, keepdim=kd), lambda x, ax, kd: _tbool(torch.any, x, ax, kd)),
  "all": (lambda x, ax, kd: x.all(ax, keepdim=kd), lambda x, ax, kd: _tbool(torch.all, x, ax, kd)),
  "var": (lambda x, ax, kd: x.var(ax, keepdim=kd), lambda x, ax, kd: torch.var(x, ax, keepdim=kd)),
  "std": (lambda x, ax, kd: x.std(ax, keepdim=kd, correction=0), lambda x, ax, kd: torch.std(x, ax, keepdim=kd, correction=0)),
  "logsumexp": (lambda x, ax, kd: x.logsumexp(ax, keepdim=kd), lambda x, ax, kd: torch.logsumexp(x, ax if ax is not None else tuple(range(x.ndim)), kd)),
}
def _tprod(x, ax, kd):
  axes = tuple(range(x.ndim)) if ax is None else ((ax,) if isinstance(ax, int) else ax)
  for a in sorted((a % x.ndim for a in axes), reverse=True): x = x.prod(a, keepdim=True)
  return x if kd else x.reshape([s for i, s in enumerate(x.shape) if i not in {a % x.ndim for a in axes}])
def _tbool(f, x, ax, kd):
  axes = tuple(range(x.ndim)) if ax is None else ((ax,) if isinstance(ax, int) else ax)
  for a in sorted((a % x.ndim for a in axes), reverse=True): x = f(x, a, keepdim=True)
  return x if kd else x.reshape([s for i, s in enumerate(x.shape) if i not in {a % x.ndim for a in axes}])

@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op", list(REDUCE))
def test_reduce(device, op, axis, keepdim):
  f, tf = REDUCE[op]
  x, tx = noncontig(rand((2, 3, 4), seed=1) * (0.5 if op == "prod" else 1))
  if op in ("any", "all"): x, tx = x > 0, tx > 0
  close(f(x, axis, keepdim), tf(tx, axis, keepdim), rtol=2e-5)

@pytest.mark.parametrize("shape, axis", [((0,), 0), ((0, 3), 1), ((0, 3), 0), ((1,), 0), ((), None), ((1, 1, 5), (0, 1))], ids=str)
@pytest.mark.parametrize("op", ["sum", "prod", "mean", "any", "all", "max", "logsumexp"])
def test_reduce_shapes(op, shape, axis):
  f, tf = REDUCE[op]
  a = rand(shape, seed=2)
  x, tx = Tensor(a), torch.tensor(a)
  if op in ("any", "all"): x, tx = x > 0, tx > 0
  if op == "max" and 0 in [shape[i] for i in ((axis,) if isinstance(axis, int) else axis or range(len(shape)))]:
    with pytest.raises(ValueError, match=r"max of a tensor of shape \(0.*a dim of size 0 has no max"): f(x, axis, False)
    return
  if op == "logsumexp" and a.size == 0: return   # torch: -inf for an empty reduction; ours too, checked in test_logsumexp_edges
  close(f(x, axis, False), tf(tx, axis, False))

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64, dtypes.bool, dtypes.float16, dtypes.bfloat16, dtypes.float64],
                         ids=str)
def test_reduce_dtypes(dt):
  a = np.random.default_rng(3).integers(0 if dt in (dtypes.uint8, dtypes.bool) else -5, 6 if dt != dtypes.bool else 2, (3, 5))
  x, tx = Tensor(a).cast(dt), torch.tensor(a).to(TORCH_DT[dt])
  # DESIGN: sums of small ints accumulate in and return int32 (uint32 for unsigned); torch returns int64
  exp_sum = {dtypes.int8: dtypes.int32, dtypes.uint8: dtypes.uint32, dtypes.int32: dtypes.int32, dtypes.int64: dtypes.int64, dtypes.bool: dtypes.int32}
  assert x.sum().dtype == exp_sum.get(dt, dt) and x.prod(1).dtype == exp_sum.get(dt, dt)
  close(x.sum(1), tx.sum(1)); close(x.prod(0), tx.prod(0)); close(x.max(1), tx.amax(1)); close(x.min(0), tx.amin(0))
  assert x.max().dtype == dt and x.min().dtype == dt
  if dt != dtypes.bool: close(x.mean(1), tx.mean(1, dtype=torch.float32) if not dtypes.is_float(dt) else tx.mean(1), rtol=2e-3)

def test_sum_half_accumulates_in_float32():
  x = Tensor.ones(4096, dtype=dtypes.float16)
  assert x.sum().item() == 4096 and x.sum().dtype == dtypes.float16   # a half accumulator would stop at 2048
  assert x.sum(dtype=dtypes.float32).dtype == dtypes.float32

@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")
@pytest.mark.parametrize("correction", [0, 1, 2, 5])
def test_var_std_mean(correction):
  a = rand((3, 4), seed=4)
  x, tx = Tensor(a), torch.tensor(a)
  for ax in (None, 1, (0, 1)):
    v, m = x.var_mean(ax, correction=correction)
    tv, tm = torch.var_mean(tx, ax, correction=correction)
    close(v, tv); close(m, tm)
    s, m = x.std_mean(ax, keepdim=True, correction=correction)
    ts, tm = torch.std_mean(tx, ax, keepdim=True, correction=correction)
    close(s, ts); close(m, tm)
  close(Tensor([1.0]).var(), torch.tensor([1.0]).var())   # no degrees of freedom: nan (0/0) ...
  close(Tensor([1.0, 2.0]).var(correction=2), torch.tensor([1.0, 2.0]).var(correction=2))   # ... or inf

def test_max_min_ties_and_infinities():
  a = np.array([[1.0, 3.0, 3.0, -math.inf], [math.inf, 0.0, math.inf, 2.0]], dtype=np.float32)
  close(Tensor(a).max(1), torch.tensor(a).amax(1)); close(Tensor(a).min(), torch.tensor(a).amin())

def test_max_nan_like_torch():
  assert math.isnan(Tensor([1.0, math.nan, 2.0]).max().item())

# ***** arg reductions *****

@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin(device, axis, keepdim):
  a = np.random.default_rng(5).integers(-3, 4, (3, 5)).astype(np.float32)   # many ties: the first one wins
  x, tx = Tensor(a), torch.tensor(a)
  for f, tf in [(Tensor.argmax, torch.argmax), (Tensor.argmin, torch.argmin)]:
    got, ref = f(x, axis, keepdim), tf(tx, axis, keepdim)
    assert got.dtype == dtypes.int32 and got.shape == tuple(ref.shape)   # DESIGN: index results are int32
    np.testing.assert_array_equal(got.numpy(), ref.numpy())

def test_argmax_nan_and_ints():
  a = np.array([[1.0, math.nan, 5.0, math.nan], [-math.inf, -math.inf, -1.0, 0.0]], dtype=np.float32)
  np.testing.assert_array_equal(Tensor(a).argmax(1).numpy(), torch.tensor(a).argmax(1).numpy())
  np.testing.assert_array_equal(Tensor(a).argmin(1).numpy(), torch.tensor(a).argmin(1).numpy())
  i = np.array([[-128, 127, 127], [5, -128, 3]], dtype=np.int8)
  np.testing.assert_array_equal(Tensor(i).argmin(1).numpy(), torch.tensor(i).argmin(1).numpy())
  np.testing.assert_array_equal(Tensor(i).argmax(0, keepdim=True).numpy(), torch.tensor(i).argmax(0, keepdim=True).numpy())
  assert Tensor(3.0).argmax().item() == 0

# ***** softmax family *****

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_log_softmax(device, axis):
  x, tx = noncontig(rand((3, 5), -20, 20, seed=6))
  close(x.softmax(axis), torch.softmax(tx, axis))
  close(x.log_softmax(axis), torch.log_softmax(tx, axis), atol=1e-5)
  close(x.softmax(axis, dtype=dtypes.float64), torch.softmax(tx, axis, dtype=torch.float64), rtol=1e-12)

def test_softmax_dtypes_and_extremes():
  a = np.array([[1000.0, 1000.0, -1000.0], [-math.inf, 0.0, -math.inf], [88.0, 89.0, 90.0]], dtype=np.float32)
  close(Tensor(a).softmax(1), torch.softmax(torch.tensor(a), 1)); close(Tensor(a).log_softmax(1), torch.log_softmax(torch.tensor(a), 1))
  h = Tensor(a).cast(dtypes.float16).softmax(1)
  assert h.dtype == dtypes.float16
  close(h, torch.softmax(torch.tensor(a).half(), 1), rtol=1e-3, atol=1e-3)
  assert Tensor([1, 2, 3]).softmax().dtype == dtypes.float32   # ints give the default float
  close(Tensor(2.0).softmax(), torch.tensor(2.0).softmax(0))

def test_logsumexp_edges():
  a = np.array([[-math.inf, -math.inf], [math.inf, 1.0], [1e4, 1e4], [-1e4, 0.0]], dtype=np.float32)
  close(Tensor(a).logsumexp(1), torch.logsumexp(torch.tensor(a), 1))
  close(Tensor(a).logsumexp(1, keepdim=True), torch.logsumexp(torch.tensor(a), 1, keepdim=True))
  close(Tensor.zeros(0, 3).logsumexp(0), torch.logsumexp(torch.zeros(0, 3), 0))

@pytest.mark.parametrize("axis", [0, 1])
def test_logcumsumexp(device, axis):
  a = rand((4, 6), -30, 30, seed=7)
  close(Tensor(a).logcumsumexp(axis), torch.logcumsumexp(torch.tensor(a), axis), atol=1e-5)
  # a big dynamic range: a single shift for the whole row would underflow the early prefixes
  b = np.array([-1000.0, 0.0, -math.inf, 3.0, 1000.0, -math.inf], dtype=np.float32)
  close(Tensor(b).logcumsumexp(), torch.logcumsumexp(torch.tensor(b), 0))
  close(Tensor([-math.inf, -math.inf]).logcumsumexp(), torch.logcumsumexp(torch.tensor([-math.inf, -math.inf]), 0))

# ***** isclose *****

def test_isclose():
  a = np.array([1.0, 1.0, math.inf, -math.inf, math.nan, 0.0, 1e-9, 100.0], dtype=np.float32)
  b = np.array([1.0 + 1e-6, 1.1, math.inf, math.inf, math.nan, 1e-9, 0.0, 100.001], dtype=np.float32)
  x, y, tx, ty = Tensor(a), Tensor(b), torch.tensor(a), torch.tensor(b)
  for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}, {"rtol": 1e-3, "atol": 0.0}, {"rtol": 0.0, "atol": 1e-8}):
    np.testing.assert_array_equal(x.isclose(y, **kw).numpy(), torch.isclose(tx, ty, **kw).numpy(), err_msg=str(kw))
  np.testing.assert_array_equal(Tensor([1, 2, 3]).isclose(Tensor([1, 2, 4])).numpy(), torch.isclose(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4])).numpy())
  np.testing.assert_array_equal(x.isclose(1.0).numpy(), torch.isclose(tx, torch.tensor(1.0)).numpy())

# ***** einsum *****

EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,kj", [(3, 4), (5, 4)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ii->i", [(4, 4)]),
          ("ii", [(4, 4)]), ("ij->ji", [(2, 3)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk", [(2, 3, 4), (4, 5)]),
          ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]), ("iij->j", [(3, 3, 2)]), ("ijk,ikl,j->il", [(2, 3, 4), (2, 4, 5), (3,)]), ("ij->", [(3, 4)]),
          ("...", [(2, 3)]), ("ba", [(2, 3)]), ("i,j,k->ijk", [(2,), (3,), (1,)]), ("ij,ij->ij", [(1, 4), (3, 1)]), ("...i,i", [(0, 2, 3), (3,)])]
@pytest.mark.parametrize("formula, shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum(device, formula, shapes):
  arrs = [rand(s, seed=i) for i, s in enumerate(shapes)]
  close(Tensor.einsum(formula, *[Tensor(a) for a in arrs]), torch.einsum(formula, *[torch.tensor(a) for a in arrs]), rtol=1e-5, atol=1e-5)
  close(Tensor.einsum(formula, [Tensor(a) for a in arrs]), torch.einsum(formula, [torch.tensor(a) for a in arrs]), rtol=1e-5, atol=1e-5)

def test_einsum_dtypes_and_errors():
  a, b = Tensor([[1, 2], [3, 4]]), Tensor([[1, 0], [0, 1]], dtype=dtypes.int64)
  assert Tensor.einsum("ij,jk->ik", a, b).dtype == dtypes.int64 and Tensor.einsum("ij,jk", a, b).tolist() == [[1, 2], [3, 4]]
  assert Tensor.einsum("ij,jk", a.half(), a.half()).dtype == dtypes.float16
  with pytest.raises(ValueError, match=r"einsum 'ij,jk->ik' names 2 operands, got 1"): Tensor.einsum("ij,jk->ik", a)
  with pytest.raises(ValueError, match=r"subscript 'ijk' doesn't fit an operand of shape \(2, 2\)"): Tensor.einsum("ijk->i", a)
  with pytest.raises(ValueError, match=r"output 'q' is invalid"): Tensor.einsum("ij->q", a)
  with pytest.raises(ValueError, match=r"subscripts must be letters"): Tensor.einsum("i1->i", a)
  with pytest.raises(ValueError, match=r"repeated subscript needs equal concrete dims"): Tensor.einsum("ii->i", Tensor.ones(2, 3))

# ***** cumulative ops *****

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_cumprod(device, axis):
  x, tx = noncontig(rand((3, 5), -1.5, 1.5, seed=8))
  close(x.cumsum(axis), torch.cumsum(tx, axis)); close(x.cumprod(axis), torch.cumprod(tx, axis))
  i = np.random.default_rng(9).integers(-4, 5, (3, 5))
  np.testing.assert_array_equal(Tensor(i).cumsum(axis).numpy(), torch.tensor(i).cumsum(axis).numpy())
  np.testing.assert_array_equal(Tensor(i).cumprod(axis).numpy(), torch.tensor(i).cumprod(axis).numpy())

def test_cumulative_shapes_dtypes():
  assert Tensor([1, 2, 3], dtype=dtypes.int8).cumsum().dtype == dtypes.int32   # DESIGN: like sum (torch: int64)
  assert Tensor([1, 2], dtype=dtypes.float16).cumsum().dtype == dtypes.float16
  for t in (Tensor.zeros(0), Tensor.zeros(2, 0), Tensor(2.5), Tensor.ones(1)):
    tt = torch.zeros(t.shape) if t.ndim else torch.tensor(2.5)
    if t.shape == (1,): tt = torch.ones(1)
    close(t.cumsum(-1 if t.ndim else 0), tt.cumsum(-1 if t.ndim else 0))
    close(t.cumprod(-1 if t.ndim else 0), tt.cumprod(-1 if t.ndim else 0))

@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(device, op):
  a = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, math.nan, 7.0, math.nan], [4.0, 4.0, -1.0, -math.inf, 9.0, 9.0, 0.0, 1.0]], dtype=np.float32)
  for axis in (0, 1):
    v, i = getattr(Tensor(a), op)(axis)
    tv, ti = getattr(torch, op)(torch.tensor(a), axis)
    close(v, tv)
    assert i.dtype == dtypes.int32   # DESIGN: index results are int32 (torch: int64)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
  n = np.random.default_rng(10).integers(-3, 4, (4, 6)).astype(np.int32)
  v, i = getattr(Tensor(n), op)(1)
  tv, ti = getattr(torch, op)(torch.tensor(n), 1)
  np.testing.assert_array_equal(v.numpy(), tv.numpy()); np.testing.assert_array_equal(i.numpy(), ti.numpy())

# ***** Keccak and the tensor hash *****

def _digest(name:str, d:bytes) -> bytes: return hashlib.shake_128(d).digest(16) if name == "shake_128" else getattr(hashlib, name)(d).digest()

def test_keccak_vectors():
  # https://www.di-mgt.com.au/sha_testvectors.html, plus the empty message (one block of pure padding)
  assert bytes(Tensor(b"abc").keccak().tolist()) == bytes.fromhex("3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532")
  assert bytes(Tensor(b"", dtype=dtypes.uint8).keccak().tolist()) == hashlib.sha3_256(b"").digest()

@pytest.mark.parametrize("name, n", [("sha3_256", 135), ("sha3_256", 136), ("shake_128", 167), ("sha3_224", 143), ("sha3_512", 72)])
def test_keccak_batched(name, n):
  # the block edges: rate-1 bytes leave one padding byte (dsbyte | 0x80 together), rate bytes need a whole padding block
  random.seed(n)
  msgs = [random.randbytes(n) for _ in range(3)]
  out = Tensor([list(m) for m in msgs], dtype=dtypes.uint8).reshape(3, 1, n).keccak(name)
  assert out.shape == (3, 1, len(_digest(name, b""))) and out.dtype == dtypes.uint8
  for m, o in zip(msgs, out.reshape(3, -1).tolist()): assert bytes(o) == _digest(name, m)

def test_keccak_other_dtypes():
  # any dtype hashes the little-endian bytes of its last dim
  a = np.arange(12, dtype=np.int32).reshape(3, 4)
  out = Tensor(a).keccak()
  for row, o in zip(a, out.tolist()): assert bytes(o) == hashlib.sha3_256(row.tobytes()).digest()
  with pytest.raises(ValueError, match=r"keccak: unknown cfg 'md5'"): Tensor(b"abc").keccak("md5")

def _tree_hash_ref(data:bytes, chunk:int, block:int) -> bytes:
  def hash_chunks(d:bytes) -> bytes:
    return b"".join(hashlib.shake_128(b"".join(hashlib.shake_128(d[i+j:i+j+block]).digest(16) for j in range(0, chunk, block))).digest(16)
                    for i in range(0, len(d), chunk))
  chunks = max(1, -(-len(data) // chunk))
  while chunks > 1:
    data = hash_chunks(data + b"\0" * (chunks * chunk - len(data)))
    chunks = -(-len(data) // chunk)
  return hash_chunks(data + b"\0" * (chunk - len(data)))[:16]

def test_tree_hash_scaled_down():
  # the structure of Tensor.hash with 512-byte chunks of 128-byte blocks: two chunks, so one extra level
  random.seed(0)
  d = random.randbytes(700)
  assert bytes(Tensor(d)._tree_hash(512, 128).tolist()) == _tree_hash_ref(d, 512, 128)

@pytest.mark.skipif(not os.getenv("RUN_SLOW"), reason="a MiB through shake_128 is ~2400 kernels: about a minute (RUN_SLOW=1 runs it)")
def test_hash_one_mib():
  d = b"Hello World!"
  assert bytes(Tensor(d).hash().tolist()) == _tree_hash_ref(d, 1 << 20, 4096)

# ***** kernel counts *****

def test_softmax_kernels():
  x = Tensor(rand((4, 16), seed=11))
  from tinygrad import Device, Context
  # a device whose global axes are loops (CPU) walks each row in one kernel: max, sum of exp, output (grouper.row_reduce)
  if not Device[Device.DEFAULT].renderer.has_local:
    assert kernels(x.softmax(1)) == 1 and kernels(x.log_softmax(1)) == 1 and kernels(x.logsumexp(1)) == 1
  # else: max, then exp and its sum, then exp again divided by the sum: exp is recomputed rather than stored
  with Context(ROW_FUSE=0):
    assert kernels(x.softmax(1)) == 3 and kernels(x.log_softmax(1)) == 3
    assert kernels(x.logsumexp(1)) == 2   # max, then the sum of exp with log and + max fused behind it

def test_linear_relu_kernels():
  x = Tensor(rand((4, 16), seed=12))
  w, b = Tensor(rand((16, 8), seed=13), requires_grad=True), Tensor(rand((8,), seed=14), requires_grad=True)
  # forward: the matmul's reduce with bias add and relu fused behind it
  assert kernels(x.linear(w, b).relu()) == 1
  x.linear(w, b).relu().sum().backward()
  # backward: the forward matmul again (relu's mask needs its output), then one reduce each for the weight and the bias gradients
  assert kernels(w.grad, b.grad) == 3
  tx, tw, tb = torch.tensor(x.numpy()), torch.tensor(w.numpy(), requires_grad=True), torch.tensor(b.numpy(), requires_grad=True)
  torch.relu(tx @ tw + tb).sum().backward()
  close(w.grad, tw.grad, atol=1e-5); close(b.grad, tb.grad, atol=1e-5)

def test_reduce_errors():
  # the op, the argument, what was given and what is allowed
  t = Tensor.ones(2, 3)
  with pytest.raises(IndexError, match=r"sum: axis 2: dimension 2 is out of range for a tensor of 2 dims \(expected in \[-2, 1\]\)"): t.sum(2)
  with pytest.raises(ValueError, match=r"prod: axis \(0, 0\) names a dim more than once"): t.prod((0, 0))
  with pytest.raises(IndexError, match=r"softmax: axis -3: dimension -3 is out of range"): t.softmax(-3)
  with pytest.raises(IndexError, match=r"logsumexp: axis 5"): t.logsumexp(5)
  with pytest.raises(IndexError, match=r"mean: axis \(0, 4\)"): t.mean((0, 4))
  with pytest.raises(IndexError, match=r"cumsum: axis 2"): t.cumsum(2)
  with pytest.raises(ValueError, match=r"argmax of a tensor of shape \(0,\)"): Tensor.zeros(0).argmax()
  with pytest.raises(ValueError, match=r"unknown dtype 'float17'"): t.sum(dtype="float17")

def test_dim_keyword():
  # torch's keyword for the reduced dims is dim, tinygrad's axis: both work
  a = rand((3, 4), seed=15)
  x, tx = Tensor(a), torch.tensor(a)
  close(x.sum(dim=1, keepdim=True), tx.sum(dim=1, keepdim=True)); close(x.mean(dim=(0, 1)), tx.mean(dim=(0, 1)))
  close(x.softmax(dim=0), tx.softmax(dim=0)); close(x.log_softmax(dim=1), tx.log_softmax(dim=1)); close(x.logsumexp(dim=1), tx.logsumexp(dim=1))
  close(x.cumsum(dim=1), tx.cumsum(dim=1)); close(x.cumprod(dim=0), tx.cumprod(dim=0)); close(x.var(dim=1, correction=0), tx.var(dim=1, correction=0))
  close(x.max(dim=0), tx.amax(dim=0)); close(x.std(dim=0), tx.std(dim=0)); close(x.logcumsumexp(dim=1), tx.logcumsumexp(dim=1))
  np.testing.assert_array_equal(x.argmax(dim=1).numpy(), tx.argmax(dim=1).numpy())
  np.testing.assert_array_equal(x.cummax(dim=1)[1].numpy(), tx.cummax(dim=1)[1].numpy())
  with pytest.raises(TypeError, match="sum: give the dims as axis or as dim, not both"): x.sum(0, dim=1)
