# the front end's fast paths (matmul and elementwise ops built on UOps, numpy() realizing in place, the UOp cache, Ops member access)
# build the same graphs and give the same values as the general paths they shortcut
import gc, pickle, unittest, weakref
import numpy as np
from tinygrad import Tensor, dtypes, GlobalCounters
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UOpMetaClass
from tinygrad.tensor import _broadcast_shape

def _matmul_by_ops(x:Tensor, w:Tensor) -> Tensor:
  # numpy's matmul as elementwise mul and sum over Tensors: the graph Tensor.dot builds directly on UOps
  out_dt = dtypes.float32 if dtypes.is_float(x.dtype) or dtypes.is_float(w.dtype) else x.dtype
  nw = min(w.ndim, 2)
  one = (1,)*min(x.ndim-1, w.ndim-1, 1)
  xr = x.reshape(x.shape[:-1] + one + x.shape[-1:])
  wr = w.reshape(w.shape[:-2] + one + w.shape[-nw:]).transpose(-1, -nw)
  return xr.mul(wr).sum(-1, dtype=dtypes.float32 if dtypes.is_float(out_dt) else dtypes.int32).cast(out_dt)

class TestMatmulGraph(unittest.TestCase):
  def test_same_graph_and_values(self):
    rng = np.random.default_rng(0)
    for xs, ws in [((5, 7), (7, 3)), ((7,), (7,)), ((4, 7), (7,)), ((7,), (7, 3)), ((2, 1, 5, 7), (3, 7, 4)), ((3, 5, 7), (7, 2))]:
      xn, wn = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
      x, w = Tensor(xn), Tensor(wn)
      c = x @ w
      self.assertIs(c.uop, _matmul_by_ops(x, w).uop, f"{xs} @ {ws}")
      np.testing.assert_allclose(c.numpy(), xn @ wn, rtol=1e-5, atol=1e-5)
  def test_int_matmul(self):
    a, b = np.arange(12, dtype=np.int32).reshape(3, 4), np.arange(8, dtype=np.int32).reshape(4, 2)
    c = Tensor(a) @ Tensor(b)
    self.assertEqual(c.dtype, dtypes.int32)
    np.testing.assert_equal(c.numpy(), a @ b)
  def test_errors(self):
    with self.assertRaises(RuntimeError): Tensor.ones(3, 4) @ Tensor.ones(5, 2)
    with self.assertRaises(RuntimeError): Tensor.ones(2, 3, 4) @ Tensor.ones(5, 4, 2)   # batch dims that don't broadcast
    with self.assertRaises(RuntimeError): Tensor(2.0) @ Tensor.ones(2)
  def test_gradient(self):
    rng = np.random.default_rng(1)
    xn, wn = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
    (x @ w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones((3, 2), np.float32) @ wn.T, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), xn.T @ np.ones((3, 2), np.float32), rtol=1e-5)
  def test_no_grad_result(self):
    x = Tensor.ones(2, 2, requires_grad=True)
    with Tensor.no_grad(): self.assertFalse((x @ x).requires_grad)

class TestElementwiseGraph(unittest.TestCase):
  def test_scalar_same_graph(self):
    x = Tensor.rand(4, 5)
    for op in (lambda t, y: t * y, lambda t, y: t + y, lambda t, y: y - t, lambda t, y: t.maximum(y)):
      self.assertIs(op(x, 2.5).uop, op(x, Tensor(2.5)._broadcast_to((4, 5))).uop)
  def test_scalar_dtypes(self):
    i = Tensor([1, 2, 3])
    self.assertEqual((i + 2).dtype, dtypes.int32)
    self.assertEqual((i + 2.5).dtype, dtypes.float32)
    np.testing.assert_allclose((i + 2.5).numpy(), [3.5, 4.5, 5.5])
    np.testing.assert_equal((Tensor([True, False]) + 1).numpy(), [2, 1])
    np.testing.assert_equal((Tensor([1, 2], dtype=dtypes.uint8) - 3).numpy(), [254, 255])
  def test_broadcast_values(self):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3, 1), np.arange(4, dtype=np.float32)
    np.testing.assert_equal((Tensor(a) * Tensor(b)).numpy(), a * b)
    np.testing.assert_equal(Tensor(a).where(Tensor(b), 7.0).numpy(), np.where(a != 0, b, 7.0))
    np.testing.assert_equal(Tensor(a).relu().numpy(), np.maximum(a, 0))
  def test_broadcast_shape(self):
    self.assertEqual(_broadcast_shape("x", (3, 1, 4), (5, 1)), (3, 5, 4))
    self.assertEqual(_broadcast_shape("x", (), (2, 3)), (2, 3))
    self.assertEqual(_broadcast_shape("x", (2, 1), (2, 1), (1, 6)), (2, 6))
    with self.assertRaisesRegex(RuntimeError, "can't be broadcast"): _broadcast_shape("mul", (3,), (4,))
    with self.assertRaisesRegex(RuntimeError, "can't be broadcast"): _broadcast_shape("mul", (2, 1), (), (3, 1))
    v = UOp.variable("bcast_v", 1, 10).bind(3)
    self.assertIs(_broadcast_shape("x", (v, 1), (1, 4))[0], v)

class TestNumpyRead(unittest.TestCase):
  def test_computed_value_realized_once(self):
    a = Tensor.rand(8, 8).realize()
    c = a @ a
    GlobalCounters.reset()
    first = c.numpy()
    self.assertEqual(GlobalCounters.kernel_count, 1)
    np.testing.assert_equal(c.numpy(), first)
    self.assertEqual(GlobalCounters.kernel_count, 1)   # c holds its buffer now: the second read runs nothing
    first[0, 0] = 123.0   # the array is a copy: writing it leaves the tensor alone
    self.assertNotEqual(c.numpy()[0, 0], 123.0)
  def test_views_and_dtypes(self):
    n = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(n)
    np.testing.assert_equal((t + 1).T.numpy(), (n + 1).T)
    np.testing.assert_equal(t[1:, ::2].numpy(), n[1:, ::2])
    np.testing.assert_equal(Tensor(3.5).numpy(), np.float32(3.5))
    np.testing.assert_equal(Tensor([True, False]).numpy(), [True, False])
    np.testing.assert_equal(Tensor([1.5], dtype=dtypes.half).numpy(), np.array([1.5], np.float16))
    self.assertEqual(Tensor.zeros(0, 3).numpy().shape, (0, 3))
  def test_with_grad_stays_lazy(self):
    x = Tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    np.testing.assert_equal(y.numpy(), [3.0, 6.0])
    y.sum().backward()
    np.testing.assert_equal(x.grad.numpy(), [3.0, 3.0])

class TestUOpCache(unittest.TestCase):
  def test_dead_entries_dropped_and_rebuilt(self):
    x = UOp.variable("front_cache_v", 0, 100)
    u = (x * 5 + 3).simplify()
    key_count = len(UOpMetaClass.ucache)
    r = weakref.ref(u)
    del u
    gc.collect()
    self.assertIsNone(r())
    self.assertLess(len(UOpMetaClass.ucache), key_count)
    self.assertIs(x * 5, x * 5)
  def test_float_args_kept_apart(self):
    self.assertIsNot(UOp.const(dtypes.float, 0.0), UOp.const(dtypes.float, -0.0))
    self.assertIsNot(UOp(Ops.CONST, dtypes.int, arg=1), UOp(Ops.CONST, dtypes.int, arg=True))

  def test_many_generations(self):
    # keys die and come back: every UOp built is the live one for its key, and dead ones leave the cache
    n = len(UOpMetaClass.ucache)
    for i in range(50):
      u = UOp(Ops.CONST, dtypes.int, arg=987654)
      self.assertIs(UOp(Ops.CONST, dtypes.int, arg=987654), u)
      self.assertIs(UOpMetaClass.ucache[(Ops.CONST, dtypes.int._key, (), 987654)](), u)
      del u
    self.assertNotIn((Ops.CONST, dtypes.int._key, (), 987654), UOpMetaClass.ucache)
    self.assertLessEqual(len(UOpMetaClass.ucache), n + 5)

class TestBufferMemo(unittest.TestCase):
  def test_registry_and_memo_agree(self):
    from tinygrad.uop.ops import buffers
    t = Tensor([1.0, 2.0, 3.0]).realize()
    u = t.uop.base
    self.assertIn(u, buffers)
    self.assertIs(buffers[u], u.buffer)
    self.assertIs(buffers.get(u), u.buffer)
    self.assertIn(u.buffer, list(buffers.values()))   # TinyJit walks the registry
    fresh = UOp.new_buffer("CPU", 3, dtypes.float32)
    self.assertNotIn(fresh, buffers)
    self.assertIsNone(buffers.get(fresh))
    self.assertFalse(fresh.is_realized)
    b = fresh.buffer   # made on first use, and kept
    self.assertIs(buffers[fresh], b)
    self.assertIs(fresh.buffer, b)
    del buffers[fresh]
    self.assertNotIn(fresh, buffers)
    self.assertIsNot(fresh.buffer, b)

class TestShapeHashes(unittest.TestCase):
  def test_kept_hash_not_pickled(self):
    from tinygrad.shape.shapetracker import ShapeTracker
    st = ShapeTracker.from_shape((3, 4)).permute((1, 0))
    h = hash(st)
    self.assertEqual(hash(st), h)
    self.assertNotIn(b"_hash", pickle.dumps(st))
    back = pickle.loads(pickle.dumps(st))
    self.assertEqual(back, st)
    self.assertEqual(hash(back), h)
    self.assertEqual(hash(st.views[0]), hash(pickle.loads(pickle.dumps(st.views[0]))))

class TestPlanHitWork(unittest.TestCase):
  def test_hit_computes_no_shapes(self):
    # a plan hit copies the plan's shapes onto the buffers and views it makes: realizing and reading back works out no ShapeTracker
    from tinygrad.uop import ops
    a, b = Tensor(np.ones((8, 8), np.float32)).realize(), Tensor(np.full((8, 8), 2.0, np.float32)).realize()
    (a @ b).numpy()
    c = a @ b
    calls = []
    orig = ops._compute_st
    ops._compute_st = lambda u: calls.append(u.op) or orig(u)
    try: out = c.numpy()
    finally: ops._compute_st = orig
    np.testing.assert_equal(out, np.full((8, 8), 16.0, np.float32))
    self.assertEqual(calls, [])
  def test_new_kernels_compile_ahead(self):
    # the first new kernel of a schedule starts the compiles of the others (a schedule of known kernels starts none)
    from tinygrad import Device, Context
    comp = Device[Device.DEFAULT].compiler
    if not comp.threaded: self.skipTest("the device's compiler compiles in line")
    started = []
    orig = comp.compile_ahead
    comp.compile_ahead = lambda src: started.append(src) or orig(src)
    try:
      with Context(CACHELEVEL=0):
        x = Tensor(np.arange(24, dtype=np.float32).reshape(4, 6)).realize()
        y = (x * 1.7 + 0.3).exp2().sum(1).contiguous() + (x * 2.9).max(1).contiguous().exp2()   # three kernels of its own
        y.realize()
        n = len(started)
        (x * 1.7 + 0.3).exp2().sum(1).realize()   # known kernels
    finally: comp.compile_ahead = orig
    self.assertGreaterEqual(n, 2)
    self.assertEqual(len(started), n)
    xn = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_allclose(y.numpy(), np.exp2(xn * 1.7 + 0.3).sum(1) + np.exp2((xn * 2.9).max(1)), rtol=1e-5)

class TestStructureWalk(unittest.TestCase):
  def test_deep_graph_same_key(self):
    # a graph too deep for the recursive walk is walked bottom up instead, in the same order: the same structure, the same plan
    import sys
    from tinygrad.engine.schedule import _structure
    x = Tensor(np.ones(4, np.float32)).realize()
    def chain(n):
      y = x
      for i in range(n): y = (y * 1.5 + i) * x if i % 3 else y + x.exp2()   # x is shared all the way up
      return UOp.sink(y.uop)
    limit = sys.getrecursionlimit()
    shallow = _structure(chain(50))
    sys.setrecursionlimit(80)   # the walk of 50 ops now fails and falls back
    try: fallback = _structure(chain(50))
    finally: sys.setrecursionlimit(limit)
    self.assertEqual(shallow[2], fallback[2])
    self.assertEqual([u.op for u in shallow[0]], [u.op for u in fallback[0]])
    self.assertEqual(len(_structure(chain(3000))[0]), len(chain(3000).toposort(gate=lambda u: u.op is not Ops.BUFFER)) + 1)
  def test_graph_freed_without_gc(self):
    # the walk leaves no cycle behind: a realized graph dies by reference counting, with the garbage collector off
    x = Tensor(np.ones(8, np.float32)).realize()
    y = x * 3 + 1
    ref = weakref.ref(y.uop)
    gc.disable()
    try:
      y.realize()
      self.assertIsNone(ref())
    finally: gc.enable()

class TestLazyTensorRegistry(unittest.TestCase):
  # a realize visits the tensors whose graphs are still to compute, never the realized ones (a model's weights)
  def _lazy(self) -> set:
    from tinygrad.tensor import _lazy_tensors
    return {id(t) for r in _lazy_tensors if (t := r()) is not None}
  def test_realized_weights_not_visited(self):
    weights = [Tensor(np.full(4, i, np.float32)).realize() for i in range(50)]
    x = Tensor(np.ones(4, np.float32)).realize()
    y = x * 2 + weights[3]
    self.assertTrue(not {id(w) for w in weights} & self._lazy() and id(y) in self._lazy())
    y.realize()
    self.assertNotIn(id(y), self._lazy())
    np.testing.assert_equal(y.numpy(), np.full(4, 5, np.float32))
    del y
    self.assertTrue(all(id(w) not in self._lazy() for w in weights))
  def test_lazy_graphs_read_what_a_realize_computed(self):
    # z reads y: after y.realize(), z's graph reads y's buffer (y's kernel doesn't run again), and gives the same values
    x = Tensor(np.arange(6, dtype=np.float32)).realize()
    y = (x * 3).sum()
    z = (x + y).exp2()
    w = y.reshape(1)   # a view of the realized node
    y.realize()
    self.assertIn(y.uop.base, z.uop.toposort())
    GlobalCounters.reset()
    np.testing.assert_allclose(z.numpy(), np.exp2(np.arange(6) + 45.0), rtol=1e-6)
    self.assertEqual(GlobalCounters.kernel_count, 1)
    np.testing.assert_equal(w.numpy(), [45.0])
  def test_assign_and_dead_tensors(self):
    w = Tensor(np.zeros(4, np.float32)).realize()
    w.assign(w + 1)
    self.assertIn(id(w), self._lazy())
    w.realize()
    self.assertNotIn(id(w), self._lazy())
    from tinygrad.tensor import _lazy_tensors
    t = w * 5
    ref = weakref.ref(t)
    n = len(_lazy_tensors)
    del t
    self.assertIsNone(ref())
    self.assertEqual(len(_lazy_tensors), n - 1)   # a dead tensor leaves the registry
    np.testing.assert_equal(w.numpy(), np.ones(4, np.float32))

class TestOpsEnum(unittest.TestCase):
  def test_members(self):
    self.assertIs(Ops(Ops.ADD.value), Ops.ADD)
    self.assertIs(Ops["MUL"], Ops.MUL)
    self.assertIs(pickle.loads(pickle.dumps(Ops.WHERE)), Ops.WHERE)
    self.assertEqual(str(Ops.ADD), "Ops.ADD")
    self.assertIn(Ops.SINK, list(Ops))
    self.assertEqual(len(set(Ops)), len(Ops))
    self.assertTrue(Ops.ADD in {Ops.ADD: 1})
    with self.assertRaises(AttributeError): Ops.NOT_AN_OP  # noqa: B018
  def test_members_stay(self):
    with self.assertRaises(AttributeError): Ops.ADD = Ops.MUL  # type: ignore[misc]
    with self.assertRaises(AttributeError): del Ops.ADD
    self.assertEqual(Ops.ADD.name, "ADD")

if __name__ == "__main__":
  unittest.main()
