import unittest
import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.helpers import all_int
from tinygrad.shape.view import View, strides_for_shape, canonicalize_strides
from tinygrad.shape.shapetracker import ShapeTracker, views_to_indexed_uops
try: from test.unit.test_shapetracker import np_eval, make_chain, run_chain, draw_op, Drawer
except ImportError: from test_shapetracker import np_eval, make_chain, run_chain, draw_op, Drawer  # type: ignore[no-redef]  # no test/__init__.py yet

def evaluate(views:tuple[View, ...], var_vals=None) -> tuple[np.ndarray, np.ndarray]:
  idx, valid = views_to_indexed_uops(views)
  assert all_int(shape := views[-1].shape), "only concrete shapes are evaluated"
  return np_eval(idx, shape, var_vals), np_eval(valid, shape, var_vals)

def assert_same(test:unittest.TestCase, a:tuple[View, ...], b:tuple[View, ...]):
  # two view stacks read the same buffer elements at the same valid positions
  test.assertEqual(a[-1].shape, b[-1].shape)
  ia, va = evaluate(a)
  ib, vb = evaluate(b)
  np.testing.assert_array_equal(va, vb, err_msg=f"valid differs: {a} vs {b}")
  np.testing.assert_array_equal(ia[va], ib[vb], err_msg=f"index differs: {a} vs {b}")

class TestStrides(unittest.TestCase):
  def test_strides_for_shape(self):
    self.assertEqual(strides_for_shape((2, 3, 4)), (12, 4, 1))
    self.assertEqual(strides_for_shape((1, 3)), (0, 1))
    self.assertEqual(strides_for_shape((3, 1)), (1, 0))
    self.assertEqual(strides_for_shape(()), ())
    self.assertEqual(strides_for_shape((0, 3)), (3, 1))
    self.assertEqual(strides_for_shape([2, 2]), (2, 1))
  def test_canonicalize(self):
    self.assertEqual(canonicalize_strides((1, 3, 1), (7, 1, 5)), (0, 1, 0))
  def test_symbolic_strides(self):
    x = UOp.variable("x", 1, 10)
    s = strides_for_shape((2, x, 3))
    self.assertEqual(s[1:], (3, 1))
    self.assertIsInstance(s[0], UOp)

class TestCreate(unittest.TestCase):
  def test_cached(self):
    self.assertIs(View.create((2, 3)), View.create((2, 3)))
    self.assertEqual(View.create([2, 3], [3, 1]), View.create((2, 3)))
  def test_contiguous(self):
    self.assertTrue(View.create((2, 3)).contiguous)
    self.assertTrue(View.create((2, 1, 3), (3, 7, 1)).contiguous)
    self.assertTrue(View.create(()).contiguous)
    self.assertFalse(View.create((2, 3), offset=1).contiguous)
    self.assertFalse(View.create((2, 3), (1, 2)).contiguous)
    self.assertFalse(View.create((2, 3), mask=((0, 1), (0, 3))).contiguous)
  def test_full_mask_is_none(self):
    self.assertIsNone(View.create((2, 3), mask=((0, 2), (0, 3))).mask)
    self.assertTrue(View.create((2, 3), mask=((0, 2), (0, 3))).contiguous)
  def test_empty_mask(self):
    v = View.create((2, 3), (3, 1), 5, ((0, 2), (2, 2)))
    self.assertEqual((v.strides, v.offset, v.mask), ((0, 0), 0, ((0, 0), (0, 0))))
    self.assertTrue(v.fully_masked())
  def test_single_valued_mask_folds_stride(self):
    v = View.create((4, 3), (3, 1), 0, ((2, 3), (0, 3)))
    self.assertEqual((v.strides, v.offset, v.mask), ((0, 1), 6, ((2, 3), (0, 3))))
  def test_size(self):
    self.assertEqual(View.create((2, 3, 4)).size(), 24)
    self.assertEqual(View.create((2, 0)).size(), 0)
    self.assertEqual(View.create(()).size(), 1)
  def test_negative(self):
    with self.assertRaises(ValueError): View.create((2, -1))

class TestMovement(unittest.TestCase):
  def test_permute(self):
    v = View.create((2, 3, 4)).permute((2, 0, 1))
    self.assertEqual((v.shape, v.strides), ((4, 2, 3), (1, 12, 4)))
  def test_expand(self):
    v = View.create((3, 1)).expand((3, 5))
    self.assertEqual((v.shape, v.strides), ((3, 5), (1, 0)))
    self.assertEqual(View.create((1,)).expand((0,)).shape, (0,))
  def test_expand_masked(self):
    v = View.create((2, 1)).pad(((1, 0), (0, 0))).expand((3, 4))
    self.assertEqual(v.mask, ((1, 3), (0, 4)))
    v = View.create((2, 1)).pad(((0, 0), (1, 0))).shrink(((0, 2), (0, 1))).expand((2, 4))
    self.assertTrue(v.fully_masked())
  def test_pad(self):
    v = View.create((2, 3)).pad(((1, 0), (2, 1)))
    self.assertEqual((v.shape, v.strides, v.offset, v.mask), ((3, 6), (3, 1), -5, ((1, 3), (2, 5))))
  def test_negative_pad_is_shrink(self):
    self.assertEqual(View.create((4, 3)).pad(((-1, -1), (0, 0))), View.create((4, 3)).shrink(((1, 3), (0, 3))))
  def test_shrink(self):
    v = View.create((4, 5)).shrink(((1, 3), (2, 5)))
    self.assertEqual((v.shape, v.strides, v.offset, v.mask), ((2, 3), (5, 1), 7, None))
  def test_shrink_masked(self):
    v = View.create((4,)).pad(((2, 2),)).shrink(((1, 5),))
    self.assertEqual((v.shape, v.offset, v.mask), ((4,), -1, ((1, 4),)))
    self.assertTrue(View.create((4,)).pad(((2, 2),)).shrink(((0, 2),)).fully_masked())
  def test_flip(self):
    v = View.create((2, 3)).flip((False, True))
    self.assertEqual((v.strides, v.offset), ((3, -1), 2))
    v = View.create((3,)).pad(((1, 0),)).flip((True,))
    self.assertEqual(v.mask, ((0, 3),))
  def test_errors(self):
    v = View.create((2, 3))
    for fn, msg in [(lambda: v.reshape((4, 2)), "sizes 6 and 8 differ"), (lambda: v.reshape((2, -3)), "negative"),
                    (lambda: v.permute((1, 1)), "(1, 1)"), (lambda: v.expand((2, 4)), "(2, 4)"), (lambda: v.expand((2, 3, 1)), "(2, 3, 1)"),
                    (lambda: v.pad(((0, 0),)), "(2, 3)"), (lambda: v.pad(((0, 0), (-4, 0))), "negative"), (lambda: v.shrink(((0, 2), (2, 4))), "(2, 3)"),
                    (lambda: v.shrink(((0, 2),)), "(2, 3)"), (lambda: v.flip((True, True, True)), "(2, 3)")]:
      with self.assertRaises(ValueError) as cm: fn()
      self.assertIn(msg, str(cm.exception))

class TestReshape(unittest.TestCase):
  def test_contiguous(self):
    self.assertEqual(View.create((2, 3, 4)).reshape((6, 4)), View.create((6, 4)))
  def test_split_permuted(self):
    v = View.create((4, 6)).permute((1, 0)).reshape((2, 3, 2, 2))
    self.assertEqual(v.strides, (3, 1, 12, 6))
  def test_merge_fails(self):
    self.assertIsNone(View.create((2, 3)).permute((1, 0)).reshape((6,)))
  def test_ones(self):
    v = View.create((2, 3)).permute((1, 0))
    r = v.reshape((1, 3, 1, 2, 1))
    self.assertEqual(r.strides, (0, 1, 0, 3, 0))
    self.assertEqual(r.reshape((3, 2)), v)
  def test_zero_size(self):
    self.assertEqual(View.create((2, 0)).permute((1, 0)).reshape((0, 5)), View.create((0, 5)))
  def test_scalar(self):
    v = View.create((3, 4)).shrink(((1, 2), (2, 3)))
    self.assertEqual(v.reshape(()), View.create((), (), 6))
    self.assertIsNone(View.create((1,)).pad(((1, 0),)).shrink(((0, 1),)).reshape(()))
  def test_mask_split_aligned(self):
    v = View.create((2, 3)).pad(((1, 1), (0, 0))).reshape((12,))
    self.assertEqual((v.strides, v.offset, v.mask), ((1,), -3, ((3, 9),)))
    self.assertEqual(v.reshape((4, 3)).mask, ((1, 3), (0, 3)))
    self.assertEqual(v.reshape((4, 1, 3)).mask, ((1, 3), (0, 1), (0, 3)))
    # flat [3, 9) is rows (0, 1) and (1, 0) of (2, 2, 3): not a box
    self.assertIsNone(v.reshape((2, 2, 3)))
  def test_mask_split_within_block(self):
    v = View.create((2,)).pad(((4, 6),)).reshape((3, 4))
    self.assertEqual((v.strides, v.offset, v.mask), ((0, 1), 0, ((1, 2), (0, 2))))
    self.assertIsNone(View.create((3,)).pad(((3, 6),)).reshape((3, 4)))
  def test_mask_merge_single_outer(self):
    v = View.create((4, 3)).pad(((0, 0), (0, 1))).shrink(((2, 3), (0, 4))).reshape((4,))
    self.assertEqual((v.strides, v.offset, v.mask), ((1,), 6, ((0, 3),)))
  def test_mask_merge_single_outer_strided(self):
    # row -1 (padding) and row 0 of a (4, 3): only one row of the (2, 3) is valid, so it flattens
    v = View.create((4, 3)).pad(((1, 0), (0, 0))).shrink(((0, 2), (0, 3)))
    self.assertEqual(v.strides, (0, 1))
    r = v.reshape((6,))
    self.assertIsNotNone(r)
    assert_same(self, (v, View.create((6,))), (r,))
    self.assertEqual((r.strides, r.offset, r.mask), ((1,), -3, ((3, 6),)))
  def test_mask_merge_partial_inner_fails(self):
    self.assertIsNone(View.create((2, 4)).shrink(((0, 2), (0, 3))).pad(((0, 0), (0, 1))).reshape((8,)))
  def test_fully_masked(self):
    v = View.create((2, 3)).pad(((0, 0), (2, 0))).shrink(((0, 2), (0, 2))).reshape((4, 1))
    self.assertTrue(v.fully_masked())
    self.assertEqual(v.shape, (4, 1))

class TestMerge(unittest.TestCase):
  def test_low_contiguous(self):
    top = View.create((3, 2), (1, 3))
    self.assertIs(top + View.create((6,)), top)
  def test_top_contiguous(self):
    low = View.create((4, 6)).permute((1, 0))
    self.assertEqual(View.create((3, 2, 4)) + low, low.reshape((3, 2, 4)))
    self.assertIsNone(View.create((24,)) + low)
  def test_regroup_low(self):
    # top's stride 5 steps across low's rows: merging works once low's dims are merged
    low, top = View.create((4, 6), offset=5), View.create((3,), (5,))
    m = top + low
    self.assertEqual(m, View.create((3,), (5,), 5))
  def test_pad_under_shrink(self):
    # reading only the unpadded part of a padded view drops the mask
    low = View.create((3, 4)).permute((1, 0)).pad(((1, 1), (1, 1)))
    top = View.create((6, 5)).shrink(((1, 5), (1, 4)))
    m = top + low
    self.assertIsNotNone(m)
    self.assertIsNone(m.mask)
    assert_same(self, (low, top), (m,))
  def test_low_mask_projects(self):
    low = View.create((3, 4)).pad(((1, 1), (0, 0)))
    top = View.create((5, 4)).permute((1, 0))
    m = top + low
    self.assertEqual(m.mask, ((0, 4), (1, 4)))
    assert_same(self, (low, top), (m,))
  def test_two_top_dims_on_masked_dim(self):
    # top's two dims both walk low's padded dim: the valid part is not a box
    low = View.create((6,)).pad(((1, 1),))
    self.assertIsNone(View.create((2, 3), (4, 1), 1) + low)
    # reading only inside the padding's hole drops the mask
    m = View.create((2, 3), (3, 1), 1) + low
    self.assertEqual(m, View.create((2, 3), (3, 1), 0))
    self.assertIsNone(View.create((2, 3), (4, 1), 0) + low)
  def test_negative_step_mask_projection(self):
    # top walks low's padded dim backwards with step -2: the mask bounds need ceil/floor division by a negative number
    low = View.create((5,)).pad(((2, 3),))
    for off in range(1, 10):
      top = View.create(((off // 2) + 1,), (-2,), off)
      m = top + low
      self.assertIsNotNone(m)
      assert_same(self, (low, top), (m,))
  def test_out_of_range_never_merges(self):
    # top reads past the end of low: no merge, rather than a wrapped-around index
    self.assertIsNone(View.create((2,), (6,)) + View.create((2, 3), (1, 2)))
  def test_mixed_mask_fails(self):
    # top merges two low dims that carry a mask: not one box
    low = View.create((3, 4)).pad(((0, 0), (0, 1)))
    self.assertIsNone(View.create((3, 5), (1, 3)) + low)

  @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
  @given(st.data())
  def test_random_pairs(self, data):
    # any view on top of any view: when they merge, the merge reads exactly what the stack reads
    d = Drawer(data.draw)
    _, _, low_st = run_chain(*make_chain(d, max_len=4, max_size=4000))
    top_st = ShapeTracker.from_shape(low_st.shape)
    for _ in range(d.ints(1, 4)):
      op, arg = draw_op(d, top_st.shape)
      try: nst = getattr(top_st, op)(arg)
      except ValueError: continue
      if int(np.prod(nst.shape)) > 4000: break
      top_st = nst
    if len(low_st.views) != 1 or len(top_st.views) != 1: return
    low, top = low_st.views[0], top_st.views[0]
    if (m := top + low) is not None: assert_same(self, (low, top), (m,))

class TestInvertMinify(unittest.TestCase):
  def test_invert_permute(self):
    v = View.create((2, 3, 4)).permute((2, 0, 1))
    inv = v.invert((2, 3, 4))
    self.assertEqual(inv, View.create((4, 2, 3)).permute((1, 2, 0)))
  def test_invert_flip_reshape(self):
    v = View.create((4, 6)).flip((True, False)).permute((1, 0))
    inv = v.invert((24,))
    self.assertIsNone(inv)   # the inverse needs two views
    st_inv = ShapeTracker((v,)).invert((4, 6))
    self.assertIsNotNone(st_inv)
    # the inverse under the view reads position p at p
    idx, _ = views_to_indexed_uops((st_inv + ShapeTracker((v,))).views)
    np.testing.assert_array_equal(np_eval(idx, (6, 4)), np.arange(24).reshape(6, 4))
  def test_invert_not_bijective(self):
    self.assertIsNone(View.create((1, 3)).expand((4, 3)).invert((1, 3)))
    self.assertIsNone(View.create((4, 3)).shrink(((1, 3), (0, 3))).invert((4, 3)))
  def test_invert_pad(self):
    inv = View.create((3,)).pad(((1, 2),)).invert((3,))
    self.assertEqual(inv, View.create((3,), offset=1))
  def test_minify(self):
    self.assertEqual(View.create((2, 3, 4)).minify(), View.create((24,)))
    self.assertEqual(View.create((2, 3, 4)).permute((0, 2, 1)).minify().shape, (2, 4, 3))
    self.assertEqual(View.create((2, 3, 4)).permute((2, 0, 1)).minify().shape, (4, 6))
    self.assertEqual(View.create((2, 1, 3)).pad(((0, 0), (0, 0), (1, 0))).minify().shape, (2, 4))

class TestIndexedUops(unittest.TestCase):
  def test_default(self):
    idx, valid = View.create((2, 3)).to_indexed_uops()
    self.assertEqual(idx.dtype, dtypes.int)
    self.assertEqual(valid.op, Ops.CONST)
    self.assertEqual({u.arg for u in idx.toposort() if u.op is Ops.RANGE}, {0, 1})
  def test_int64(self):
    r = [UOp.range(dtypes.int64, 3, 0), UOp.range(dtypes.int64, 4, 1)]
    x = UOp.variable("x", 1, 10)
    v = View.create((3, 4), (x, 1), 2).pad(((1, 0), (0, 1))).shrink(((0, 3), (0, 4)))
    idx, valid = v.to_indexed_uops(r)
    self.assertEqual(idx.dtype, dtypes.int64)
    # everything but the symbolic stride itself (int32, cast once) is int64
    for u in (idx.toposort(gate=lambda u: u.op is not Ops.CAST) | valid.toposort(gate=lambda u: u.op is not Ops.CAST)):
      if u.dtype != dtypes.bool: self.assertEqual(u.dtype, dtypes.int64, u)
  def test_fully_masked(self):
    _, valid = View.create((2, 3), mask=((0, 0), (0, 0))).to_indexed_uops()
    self.assertEqual((valid.op, valid.arg), (Ops.CONST, False))
  def test_vexpr(self):
    g = UOp.variable("g", 0, 1).lt(1)
    _, valid = View.create((2,)).to_indexed_uops(None, g)
    self.assertIs(valid, g)

class TestVars(unittest.TestCase):
  def test_vars_unbind(self):
    x, y = UOp.variable("x", 1, 10), UOp.variable("y", 1, 10)
    v = View.create((x.bind(2), y), offset=x.bind(2))
    self.assertEqual(v.vars(), {x.bind(2), y})
    ub, vals = v.unbind()
    self.assertEqual(ub.shape, (x, y))
    self.assertEqual(vals, {x: 2})

if __name__ == "__main__":
  unittest.main()
