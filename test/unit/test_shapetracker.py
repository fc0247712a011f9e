import importlib.util, itertools, random, unittest
from typing import Callable
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sym_infer
from tinygrad.dtype import dtypes
from tinygrad.shape.shapetracker import ShapeTracker, views_to_indexed_uops
from tinygrad.shape.view import View

HAS_SYMBOLIC = importlib.util.find_spec("tinygrad.uop.symbolic") is not None

# ***** evaluate an index graph for every position at once, with the same (C) semantics as ops.python_alu *****

def _idiv(a, b):
  b_safe = np.where(b == 0, 1, b)
  return np.where(b == 0, 0, (np.abs(a) // np.abs(b_safe)) * np.where((a < 0) == (b_safe < 0), 1, -1))
def _mod(a, b):
  b_safe = np.where(b == 0, 1, b)
  return np.where(b == 0, 0, (np.abs(a) % np.abs(b_safe)) * np.where(a >= 0, 1, -1))
NP_OPS: dict[Ops, Callable] = {Ops.ADD: lambda a, b: a | b if a.dtype == bool else a + b, Ops.MUL: lambda a, b: a & b if a.dtype == bool else a * b,
          Ops.SUB: lambda a, b: a - b, Ops.IDIV: _idiv, Ops.MOD: _mod, Ops.CMPLT: lambda a, b: a < b, Ops.CMPNE: lambda a, b: a != b,
          Ops.CMPEQ: lambda a, b: a == b, Ops.AND: lambda a, b: a & b, Ops.OR: lambda a, b: a | b, Ops.XOR: lambda a, b: a ^ b,
          Ops.MAX: np.maximum, Ops.WHERE: lambda c, a, b: np.where(c, a, b), Ops.NEG: lambda a: ~a if a.dtype == bool else -a,
          Ops.SHL: lambda a, b: a << b, Ops.SHR: lambda a, b: a >> b}

def np_eval(u:UOp, shape:tuple[int, ...], var_vals:dict[UOp, int]|None=None) -> np.ndarray:
  grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), dtype=np.int64)
  vals: dict[UOp, np.ndarray] = {}
  for x in u.toposort():
    if x.op is Ops.CONST: v = np.array(x.arg, dtype=bool if x.dtype == dtypes.bool else np.int64)
    elif x.op is Ops.RANGE: v = grid[x.arg]
    elif x.op is Ops.DEFINE_VAR: v = np.array((var_vals or {})[x], dtype=np.int64)
    elif x.op is Ops.BIND: v = np.array((var_vals or {}).get(x.src[0], x.src[1].arg), dtype=np.int64)
    elif x.op is Ops.CAST: v = vals[x.src[0]].astype(bool if x.dtype == dtypes.bool else np.int64)
    else: v = NP_OPS[x.op](*[vals[s] for s in x.src])
    vals[x] = v
  return np.broadcast_to(vals[u], shape)

def check_st(stt:ShapeTracker, expected:np.ndarray, buf:np.ndarray, simplify=False, var_vals=None):
  # expected: numpy's result, -1 where it is padding; buf: the flat base buffer
  assert stt.shape == expected.shape, (stt.shape, expected.shape)
  if simplify: idx, valid = stt.to_indexed_uops()
  else: idx, valid = views_to_indexed_uops(stt.views)
  iv, vv = np_eval(idx, expected.shape, var_vals), np_eval(valid, expected.shape, var_vals)
  np.testing.assert_array_equal(vv, expected >= 0, err_msg=f"valid differs for {stt}")
  if vv.any():
    assert iv[vv].min() >= 0 and iv[vv].max() < buf.size, f"index out of the buffer for {stt}"
    np.testing.assert_array_equal(buf[iv[vv]], expected[vv], err_msg=f"values differ for {stt}")
    assert stt.real_size() >= iv[vv].max() + 1
  assert stt.real_size() <= buf.size

# ***** numpy versions of the movement ops *****

def np_pad(a:np.ndarray, arg) -> np.ndarray:
  # window semantics: new position c reads old position c - before, -1 outside
  for d, (b, e) in enumerate(arg):
    s, ns = a.shape[d], a.shape[d] + b + e
    src = np.arange(ns) - b
    ok = (src >= 0) & (src < s)
    if s == 0: a = np.full(a.shape[:d] + (ns,) + a.shape[d+1:], -1, dtype=a.dtype)
    else:
      a = np.take(a, np.clip(src, 0, s-1), axis=d)
      a = np.where(ok.reshape((1,)*d + (ns,) + (1,)*(a.ndim-d-1)), a, -1)
  return a

def apply_np(a:np.ndarray, op:str, arg) -> np.ndarray:
  if op == "reshape": return a.reshape(arg)
  if op == "permute": return a.transpose(arg)
  if op == "expand": return np.broadcast_to(a, arg)
  if op == "pad": return np_pad(a, arg)
  if op == "shrink": return a[tuple(slice(b, e) for b, e in arg)]
  if op == "flip": return np.flip(a, tuple(i for i, f in enumerate(arg) if f)) if any(arg) else a
  raise ValueError(op)

def apply_st(stt:ShapeTracker, op:str, arg) -> ShapeTracker: return getattr(stt, op)(arg)

# ***** random chains: one generator for both hypothesis and a seeded Random *****

class Drawer:
  # the few random choices the generators make, backed by hypothesis' draw or by random.Random
  def __init__(self, draw=None, rng:random.Random|None=None): self.draw, self.rng = draw, rng or random.Random(0)
  def ints(self, lo:int, hi:int) -> int: return self.draw(st.integers(lo, hi)) if self.draw else self.rng.randint(lo, hi)
  def choice(self, xs:list): return self.draw(st.sampled_from(xs)) if self.draw else self.rng.choice(xs)
  def perm(self, n:int) -> tuple[int, ...]: return tuple(self.draw(st.permutations(range(n))) if self.draw else self.rng.sample(range(n), n))
  def dim(self) -> int: return self.choice([1, 2, 3, 4, 5, 6]*3 + [0])   # sizes 0-6, mostly non-zero so most chains keep data

ALL_OPS = ("reshape", "permute", "expand", "pad", "shrink", "flip")

def factor_shape(d:Drawer, n:int, ndim:int) -> tuple[int, ...]:
  if n == 0:
    shape = [d.dim() for _ in range(ndim)]
    shape[d.ints(0, ndim-1)] = 0
    return tuple(shape)
  shape = [1]*ndim
  f, p = n, 2
  while f > 1:
    while f % p == 0:
      shape[d.ints(0, ndim-1)] *= p
      f //= p
    p += 1
  return tuple(shape)

def draw_op(d:Drawer, shape:tuple[int, ...], ops=ALL_OPS):
  op = d.choice(list(ops))
  if op == "reshape": return op, factor_shape(d, int(np.prod(shape)), d.ints(1, 6))
  if op == "permute": return op, d.perm(len(shape))
  if op == "expand": return op, tuple(d.dim() if s == 1 else s for s in shape)
  if op == "flip": return op, tuple(d.ints(0, 1) == 1 for _ in shape)
  arg = []
  for s in shape:
    if op == "shrink":
      b = d.ints(0, s)
      # empty ranges are legal but rare, so most shrinks keep data
      arg.append((b, d.ints(b, s) if d.ints(0, 9) == 0 else d.ints(min(b+1, s), s)))
    else:
      # pad: negative parts shrink, never to a negative size
      b = d.ints(-min(s, 2), 2)
      arg.append((b, d.ints(-min(s + b, 2), 2)))
  return op, tuple(arg)

def make_chain(d:Drawer, ops=ALL_OPS, max_len=6, max_size=20000):
  ndim = d.ints(1, 6)
  base = tuple(d.dim() for _ in range(ndim))
  while int(np.prod(base)) > 3000: base = base[:-1]
  shape, chain = base, []
  for _ in range(d.ints(1, max_len)):
    op, arg = draw_op(d, shape, ops)
    if int(np.prod(nshape := apply_np(np.zeros(shape), op, arg).shape)) > max_size: break
    chain.append((op, arg))
    shape = nshape
  return base, chain

@st.composite
def chains(draw, ops=ALL_OPS, max_len=6): return make_chain(Drawer(draw), ops, max_len)

def run_chain(base, chain):
  buf = np.arange(int(np.prod(base)), dtype=np.int64)
  a, stt = buf.reshape(base), ShapeTracker.from_shape(base)
  for op, arg in chain: a, stt = apply_np(a, op, arg), apply_st(stt, op, arg)
  return buf, a, stt

SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

class TestShapeTrackerNumpy(unittest.TestCase):
  @SETTINGS
  @given(chains())
  def test_random_chains(self, bc):
    buf, a, stt = run_chain(*bc)
    check_st(stt, a, buf)
    # merging the views changes nothing
    check_st(stt.simplify(), a, buf)

  @SETTINGS
  @given(chains(), st.integers(0, 6))
  def test_compose(self, bc, cut):
    # an ST built in two halves and added must equal the one built in one go
    base, chain = bc
    buf, a, full = run_chain(base, chain)
    cut = min(cut, len(chain))
    _, mid, first = run_chain(base, chain[:cut])
    second = ShapeTracker.from_shape(mid.shape)
    for op, arg in chain[cut:]: second = apply_st(second, op, arg)
    check_st(first + second, a, buf)

  @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
  @given(chains(max_len=3), st.data())
  def test_two_stacked_views(self, c1, data):
    # a reshape of the first chain's result often can't merge, so the second chain runs on a view stack
    buf, a, stt = run_chain(*c1)
    d = Drawer(data.draw)
    shape = factor_shape(d, a.size, d.ints(1, 4))
    a, stt = a.reshape(shape), stt.reshape(shape)
    for _ in range(d.ints(1, 4)):
      op, arg = draw_op(d, a.shape)
      if int(np.prod(apply_np(np.zeros(a.shape), op, arg).shape)) > 20000: break
      a, stt = apply_np(a, op, arg), apply_st(stt, op, arg)
    check_st(stt, a, buf)
    check_st(stt.simplify(), a, buf)

  def _single(self, op):
    @SETTINGS
    @given(chains(ops=(op,), max_len=1))
    def t(bc):
      buf, a, stt = run_chain(*bc)
      check_st(stt, a, buf)
      self.assertEqual(len(stt.views), 1)
    t()
  def test_reshape(self): self._single("reshape")
  def test_permute(self): self._single("permute")
  def test_expand(self): self._single("expand")
  def test_pad(self): self._single("pad")
  def test_shrink(self): self._single("shrink")
  def test_flip(self): self._single("flip")

  @SETTINGS
  @given(chains(ops=("reshape", "permute", "flip")))
  def test_invert(self, bc):
    # for bijective chains the inverse composed under the ST is the identity
    base, chain = bc
    _, _, stt = run_chain(base, chain)
    inv = stt.invert(base)
    if int(np.prod(base)) == 0: return
    assert inv is not None, f"no inverse for {stt}"
    self.assertEqual(inv.shape, base)
    ident = inv + stt
    idx, valid = views_to_indexed_uops(ident.views)
    np.testing.assert_array_equal(np_eval(idx, stt.shape), np.arange(int(np.prod(base))).reshape(stt.shape))
    assert np_eval(valid, stt.shape).all()

  def test_sym_infer_agrees(self):
    # the numpy evaluator must agree with ops.sym_infer on a stacked, padded, flipped ST
    stt = ShapeTracker.from_shape((3, 4)).permute((1, 0)).pad(((1, 0), (0, 2))).reshape((25,)).reshape((5, 5)).flip((True, False)).shrink(((1, 4), (0, 5)))
    self.assertGreater(len(stt.views), 1)
    idx, valid = views_to_indexed_uops(stt.views)
    iv, vv = np_eval(idx, stt.shape), np_eval(valid, stt.shape)
    ranges = {u.arg: u for u in (idx.toposort() | valid.toposort()) if u.op is Ops.RANGE}
    for pos in itertools.product(*[range(s) for s in stt.shape]):
      sub = {ranges[i]: UOp.const(dtypes.int, p) for i, p in enumerate(pos) if i in ranges}
      self.assertEqual(bool(sym_infer(valid.substitute(sub), {})), bool(vv[pos]))
      if vv[pos]: self.assertEqual(sym_infer(idx.substitute(sub), {}), iv[pos])

class TestShapeTrackerFuzz(unittest.TestCase):
  # seeded fuzzing with longer chains than hypothesis likes to make; every step is checked
  def test_fuzz(self):
    d = Drawer(rng=random.Random(1337))
    for _ in range(1000):
      base, chain = make_chain(d, max_len=1)
      buf, a, stt = run_chain(base, [])
      for _ in range(d.ints(1, 10)):
        op, arg = draw_op(d, a.shape)
        if int(np.prod(apply_np(np.zeros(a.shape), op, arg).shape)) > 20000: break
        a, stt = apply_np(a, op, arg), apply_st(stt, op, arg)
        check_st(stt, a, buf)
      check_st(stt.simplify(), a, buf)

class TestShapeTrackerMerge(unittest.TestCase):
  def test_permute_reshape_merges(self):
    # split then permute keeps a single view
    stt = ShapeTracker.from_shape((4, 6)).permute((1, 0)).reshape((3, 2, 4))
    self.assertEqual(len(stt.views), 1)
    self.assertEqual(stt.views[0].strides, (2, 1, 6))
  def test_permute_flatten_stacks(self):
    stt = ShapeTracker.from_shape((2, 3)).permute((1, 0)).reshape((6,))
    self.assertEqual(len(stt.views), 2)
    self.assertEqual(len(stt.simplify().views), 2)
  def test_two_views_simplify_to_one(self):
    # a view stack that is really one strided view: (6,) with stride 1 over a permuted (3, 2)...(2, 3)
    stt = ShapeTracker((View.create((4, 6)).permute((1, 0)), View.create((3, 2, 4))))
    self.assertEqual(len(stt.simplify().views), 1)
    self.assertEqual(stt.simplify().views[0].strides, (2, 1, 6))
  def test_add_contiguous(self):
    a = ShapeTracker.from_shape((2, 3)).permute((1, 0))
    self.assertEqual(a + ShapeTracker.from_shape((3, 2)), a)
    self.assertEqual(ShapeTracker.from_shape((6,)) + ShapeTracker.from_shape((6,)).shrink(((1, 4),)), ShapeTracker.from_shape((6,)).shrink(((1, 4),)))
  def test_reshape_of_shrink_merges(self):
    stt = ShapeTracker.from_shape((4, 6)).shrink(((1, 3), (0, 6))).reshape((12,))
    self.assertEqual(stt.views, (View(shape=(12,), strides=(1,), offset=6, mask=None, contiguous=False),))
  def test_pad_reshape_merges_when_aligned(self):
    stt = ShapeTracker.from_shape((2, 3)).pad(((1, 1), (0, 0))).reshape((12,))
    self.assertEqual(len(stt.views), 1)
    self.assertEqual(stt.views[0].mask, ((3, 9),))
  def test_shrink_pad_reshape_stacks(self):
    # the padded row has a hole in the middle of the flat range, so it can't be one masked view
    stt = ShapeTracker.from_shape((2, 4)).shrink(((0, 2), (0, 3))).pad(((0, 0), (0, 1))).reshape((8,))
    self.assertEqual(len(stt.views), 2)
    buf = np.arange(8)
    check_st(stt, np_pad(buf.reshape(2, 4)[:, :3], ((0, 0), (0, 1))).reshape(8), buf)
  def test_expand_stride_survives_stack(self):
    # stride-0 over a strided view still merges
    stt = ShapeTracker((View.create((4, 6)).permute((1, 0)), View.create((6, 4)).reshape((6, 1, 4)).expand((6, 3, 4))))
    self.assertEqual(len(stt.simplify().views), 1)

class TestShapeTrackerProps(unittest.TestCase):
  def test_real_size(self):
    self.assertEqual(ShapeTracker.from_shape((3, 4)).real_size(), 12)
    self.assertEqual(ShapeTracker.from_shape((3, 4)).shrink(((0, 2), (1, 3))).real_size(), 7)
    self.assertEqual(ShapeTracker.from_shape((3, 4)).pad(((1, 1), (2, 2))).real_size(), 12)
    self.assertEqual(ShapeTracker.from_shape((1,)).expand((100,)).real_size(), 1)
    self.assertEqual(ShapeTracker.from_shape((5,)).shrink(((2, 2),)).real_size(), 0)
    self.assertEqual(ShapeTracker.from_shape((5,)).pad(((-5, 3),)).real_size(), 0)
    self.assertEqual(ShapeTracker.from_shape((0, 3)).real_size(), 0)
    self.assertEqual(ShapeTracker.from_shape((4,)).flip((True,)).real_size(), 4)

  def test_real_strides_single_view(self):
    self.assertEqual(ShapeTracker.from_shape((3, 4)).real_strides(), (4, 1))
    self.assertEqual(ShapeTracker.from_shape((3, 4)).permute((1, 0)).real_strides(), (1, 4))
    self.assertEqual(ShapeTracker.from_shape((3, 1)).expand((3, 5)).real_strides(), (1, 0))
    self.assertEqual(ShapeTracker.from_shape((3, 4)).pad(((0, 0), (1, 0))).real_strides(), (4, None))
    self.assertEqual(ShapeTracker.from_shape((3, 4)).pad(((0, 0), (1, 0))).real_strides(ignore_valid=True), (4, 1))
    self.assertEqual(ShapeTracker.from_shape((3, 4)).flip((False, True)).real_strides(), (4, -1))
    self.assertEqual(ShapeTracker.from_shape((3, 4)).unit_stride_axes(), [1])
    self.assertEqual(ShapeTracker.from_shape((3, 4)).permute((1, 0)).unit_stride_axes(), [0])

  def test_axis_is_masked_single_view(self):
    stt = ShapeTracker.from_shape((3, 4)).pad(((0, 0), (1, 0)))
    self.assertFalse(stt.axis_is_masked(0))
    self.assertTrue(stt.axis_is_masked(1))

  def test_needs_int64(self):
    self.assertTrue(ShapeTracker.from_shape((1, 1)).expand((2**16, 2**16)).needs_int64())
    self.assertTrue(ShapeTracker.from_shape((2**31,)).needs_int64())
    self.assertFalse(ShapeTracker.from_shape((2**15, 2**15)).needs_int64())
    self.assertFalse(ShapeTracker.from_shape((2**15, 2**15)).permute((1, 0)).needs_int64())
    self.assertTrue(ShapeTracker.from_shape((2**16, 2**16)).shrink(((0, 2), (0, 2))).needs_int64() is False)

  def test_size_shape_contiguous_reduce(self):
    stt = ShapeTracker.from_shape((2, 3, 4))
    self.assertEqual((stt.shape, stt.size(), stt.contiguous), ((2, 3, 4), 24, True))
    self.assertFalse(stt.permute((0, 2, 1)).contiguous)
    self.assertTrue(stt.permute((0, 2, 1)).permute((0, 2, 1)).contiguous)
    self.assertEqual(stt.reduce((0, 2)), (1, 3, 1))
    self.assertEqual(ShapeTracker.from_shape((2, 3), (1, 2)).views[0].strides, (1, 2))

  def test_to_uop(self):
    stt = ShapeTracker.from_shape((2, 3))
    u = stt.to_uop()
    self.assertIs(u, UOp(Ops.VIEW, dtypes.void, (), stt))
    self.assertEqual(u.arg, stt)

class TestShapeTrackerErrors(unittest.TestCase):
  def err(self, fn, *parts):
    with self.assertRaises(ValueError) as cm: fn()
    for p in parts: self.assertIn(p, str(cm.exception))
  def test_reshape_size(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).reshape((4, 2)), "(2, 3)", "(4, 2)", "6", "8")
  def test_reshape_negative(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).reshape((-1, 6)), "(2, 3)", "(-1, 6)", "negative")
  def test_reshape_error_on_stacked(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).permute((1, 0)).reshape((5,)), "(3, 2)", "(5,)")
  def test_permute(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).permute((0, 0)), "(0, 0)", "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).permute((0,)), "(0,)", "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).permute((0, 2)), "(0, 2)", "(2, 3)")
  def test_expand(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).expand((4, 3)), "(2, 3)", "(4, 3)")
    self.err(lambda: ShapeTracker.from_shape((1, 3)).expand((4, 3, 1)), "(1, 3)", "(4, 3, 1)")
  def test_pad(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).pad(((1, 1),)), "((1, 1),)", "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).pad(((0, 0), (-2, -2))), "(2, 3)", "negative")
  def test_shrink(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).shrink(((0, 3), (0, 3))), "((0, 3), (0, 3))", "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).shrink(((1, 0), (0, 3))), "((1, 0), (0, 3))", "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).shrink(((-1, 1), (0, 3))), "(2, 3)")
    self.err(lambda: ShapeTracker.from_shape((2, 3)).shrink(((0, 1),)), "(2, 3)")
  def test_flip(self):
    self.err(lambda: ShapeTracker.from_shape((2, 3)).flip((True,)), "(True,)", "(2, 3)")

@unittest.skipUnless(HAS_SYMBOLIC, "needs tinygrad/uop/symbolic.py: views simplify their symbolic fields")
class TestShapeTrackerSymbolic(unittest.TestCase):
  def test_reshape_variable_contiguous(self):
    x = UOp.variable("x", 1, 10)
    stt = ShapeTracker.from_shape((x, 4)).reshape((x, 2, 2))
    self.assertEqual(len(stt.views), 1)
    self.assertEqual(stt.shape, (x, 2, 2))
  def test_reshape_variable_permuted(self):
    x = UOp.variable("x", 1, 10)
    stt = ShapeTracker.from_shape((4, x)).permute((1, 0)).reshape((x, 1, 2, 2))
    self.assertEqual(len(stt.views), 1)
    for xv in (1, 3, 7):
      buf = np.arange(4*xv)
      expected = buf.reshape(4, xv).transpose(1, 0).reshape(xv, 1, 2, 2)
      idx, valid = views_to_indexed_uops(stt.views)
      shape = (xv, 1, 2, 2)
      np.testing.assert_array_equal(buf[np_eval(idx, shape, {x: xv})], expected)
  def test_pad_shrink_variable(self):
    x = UOp.variable("x", 2, 10)
    stt = ShapeTracker.from_shape((x, 3)).pad(((1, 1), (0, 0))).shrink(((1, x+1), (0, 3)))
    for xv in (2, 5):
      buf = np.arange(3*xv)
      idx, valid = views_to_indexed_uops(stt.views)
      np.testing.assert_array_equal(buf[np_eval(idx, (xv, 3), {x: xv})], buf.reshape(xv, 3))
      self.assertTrue(np_eval(valid, (xv, 3), {x: xv}).all())
  @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
  @given(st.data())
  def test_random_symbolic_chains(self, data):
    # one dim is a variable; the same chain with the variable's value put in must match numpy for several values
    d, x = Drawer(data.draw), UOp.variable("x", 1, 6)
    base = [d.ints(1, 4) for _ in range(d.ints(1, 3))]
    base.insert(d.ints(0, len(base)), x)
    chain: list = []
    stt = ShapeTracker.from_shape(tuple(base))
    for _ in range(d.ints(1, 6)):
      shape, nd = stt.shape, len(stt.shape)
      op = d.choice(["permute", "flip", "pad", "shrink", "expand", "reshape"])
      if op == "permute": arg = d.perm(nd)
      elif op == "flip": arg = tuple(d.ints(0, 1) == 1 for _ in shape)
      elif op == "pad": arg = tuple((d.ints(0, 2), d.ints(0, 2)) for _ in shape)
      elif op == "shrink":
        sarg = []
        for s in shape:
          # int dims lose up to 2 at each end; a symbolic dim may lose its first element when it is never empty
          if isinstance(s, int): sarg.append(((b := d.ints(0, min(s, 2))), s - d.ints(0, min(s - b, 2))))
          else: sarg.append((d.ints(0, 1) if s.vmin >= 1 else 0, s))
        arg = tuple(sarg)
      elif op == "expand": arg = tuple(d.ints(0, 3) if isinstance(s, int) and s == 1 else s for s in shape)
      else:
        # put in or take out a 1, or merge two int dims
        k = d.ints(0, nd - 1)
        if d.ints(0, 2) == 0: arg = shape[:k] + (1,) + shape[k:]
        elif isinstance(shape[k], int) and shape[k] == 1: arg = shape[:k] + shape[k+1:]
        elif k + 1 < nd and isinstance(shape[k], int) and isinstance(shape[k+1], int): arg = shape[:k] + (shape[k]*shape[k+1],) + shape[k+2:]
        else: continue
      stt = apply_st(stt, op, arg)
      chain.append((op, arg))
    for xv in (1, 2, 5):
      def c(v): return tuple(c(a) for a in v) if isinstance(v, tuple) else sym_infer(v, {x: xv}) if isinstance(v, UOp) else v
      cbase = c(tuple(base))
      buf = np.arange(int(np.prod(cbase)), dtype=np.int64)
      a = buf.reshape(cbase)
      for op, arg in chain: a = apply_np(a, op, c(arg))
      self.assertEqual(c(stt.shape), a.shape)
      idx, valid = views_to_indexed_uops(stt.views)
      iv, vv = np_eval(idx, a.shape, {x: xv}), np_eval(valid, a.shape, {x: xv})
      np.testing.assert_array_equal(vv, a >= 0, err_msg=f"x={xv} {stt}")
      if vv.any(): np.testing.assert_array_equal(buf[iv[vv]], a[vv], err_msg=f"x={xv} {stt}")

  def test_vars_unbind(self):
    x = UOp.variable("x", 1, 10)
    stt = ShapeTracker.from_shape((x.bind(3), 4))
    self.assertEqual(stt.vars(), {x.bind(3)})
    unbound, vals = stt.unbind()
    self.assertEqual(unbound.shape, (x, 4))
    self.assertEqual(vals, {x: 3})
    self.assertEqual(stt.var_vals, {x: 3})
    self.assertEqual(ShapeTracker.from_shape((x, 4)).vars(), {x})
    self.assertEqual(ShapeTracker.from_shape((3, 4)).unbind(), (ShapeTracker.from_shape((3, 4)), {}))
  def test_needs_int64_symbolic(self):
    x = UOp.variable("x", 1, 2**20)
    self.assertTrue(ShapeTracker.from_shape((x, 2**12)).needs_int64())
    self.assertFalse(ShapeTracker.from_shape((x, 2**10)).needs_int64())
    self.assertEqual(ShapeTracker.from_shape((x, 4)).real_size(), 4*2**20)

@unittest.skipUnless(HAS_SYMBOLIC, "needs tinygrad/uop/symbolic.py")
class TestShapeTrackerSimplified(unittest.TestCase):
  # these go through UOp.simplify()
  @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
  @given(chains(max_len=4))
  def test_random_chains_simplified(self, bc):
    buf, a, stt = run_chain(*bc)
    check_st(stt, a, buf, simplify=True)

  def test_int64_indexing(self):
    idx, valid = ShapeTracker.from_shape((1, 1)).expand((2**16, 2**16)).to_indexed_uops()
    self.assertTrue(all(u.dtype in (dtypes.int64, dtypes.bool) for u in idx.toposort() | valid.toposort() if u.op is not Ops.CAST))
    idx, _ = ShapeTracker.from_shape((4, 5)).to_indexed_uops()
    self.assertEqual(idx.dtype, dtypes.int)
    r = [UOp.range(dtypes.int64, 4, 0), UOp.range(dtypes.int64, 5, 1)]
    idx, _ = ShapeTracker.from_shape((4, 5)).pad(((1, 0), (0, 0))).shrink(((0, 4), (0, 5))).to_indexed_uops(r)
    self.assertTrue(all(u.dtype == dtypes.int64 for u in idx.toposort()))

  def test_real_strides_stacked(self):
    stt = ShapeTracker.from_shape((2, 3)).permute((1, 0)).reshape((6,)).reshape((6, 1)).expand((6, 4))
    self.assertEqual(len(stt.views), 2)
    self.assertEqual(stt.real_strides()[1], 0)
    self.assertIsNone(stt.real_strides()[0])
    stt = ShapeTracker.from_shape((4, 6)).pad(((0, 0), (1, 1))).reshape((4, 2, 4)).permute((1, 0, 2))
    rs = stt.real_strides(ignore_valid=True)
    self.assertEqual(rs[1], 6)
    self.assertIsNone(stt.real_strides()[2])

  def test_axis_is_masked_stacked(self):
    stt = ShapeTracker.from_shape((2, 3)).pad(((0, 0), (0, 1))).permute((1, 0)).reshape((8,)).reshape((2, 4))
    self.assertTrue(stt.axis_is_masked(0) or stt.axis_is_masked(1))

  def test_reshape_variable_merge(self):
    x = UOp.variable("x", 1, 10)
    stt = ShapeTracker.from_shape((4, x)).permute((1, 0)).reshape((x, 2, 2)).permute((1, 2, 0)).reshape((4, x))
    self.assertEqual(len(stt.views), 1)
    idx, valid = stt.to_indexed_uops()
    for xv in (1, 4):
      buf = np.arange(4*xv)
      np.testing.assert_array_equal(buf[np_eval(idx, (4, xv), {x: xv})], buf.reshape(4, xv))

if __name__ == "__main__":
  unittest.main()
