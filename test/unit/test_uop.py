import gc, math, pickle, unittest, weakref
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, graph_rewrite_map, sym_infer, exec_alu, resolve, smax, smin, ssimplify
from tinygrad.uop.ops import UOpMetaClass, ThreadId, ThreadKind

def c(v, dt=dtypes.int32) -> UOp: return UOp.const(dt, v)

class TestHashCons(unittest.TestCase):
  def test_same_object(self):
    x = UOp.variable("x", 0, 10)
    self.assertIs(UOp.variable("x", 0, 10), x)
    self.assertIs(x+1, x+1)
    self.assertIs(UOp(Ops.ADD, dtypes.int32, (x, c(1))), x+1)
    self.assertIsNot(x+1, x+2)
    self.assertIsNot(UOp.variable("x", 0, 11), x)
  def test_dtype_and_arg_part_of_key(self):
    self.assertIsNot(c(1), c(1, dtypes.int64))
    self.assertIsNot(c(1.0, dtypes.float32), c(1, dtypes.int32))
  def test_float_consts_by_bits(self):
    self.assertIsNot(c(0.0, dtypes.float32), c(-0.0, dtypes.float32))
    self.assertIs(c(math.nan, dtypes.float32), c(math.nan, dtypes.float32))
  def test_replace(self):
    x = UOp.variable("x", 0, 10)
    u = x+1
    self.assertIs(u.replace(), u)
    self.assertIs(u.replace(op=Ops.MUL), x*1)
    with self.assertRaises(AssertionError): u.replace(bad=1)
  def test_pickle_roundtrip(self):
    x = UOp.variable("x", 0, 10)
    u = (x*4+2)//2
    self.assertIs(pickle.loads(pickle.dumps(u)), u)
  def test_no_truth_value(self):
    x = UOp.variable("x", 0, 10)
    with self.assertRaises(TypeError): bool(x < 3)

class TestWeakCache(unittest.TestCase):
  def test_freed(self):
    u = UOp.variable("weak_test_var", 0, 123456) * 77
    r = weakref.ref(u)
    n = len(UOpMetaClass.ucache)
    del u
    gc.collect()
    self.assertIsNone(r())
    self.assertLess(len(UOpMetaClass.ucache), n)
  def test_rebuilt_after_free(self):
    u = UOp.variable("weak_test_var2", 0, 5) + 3
    r = weakref.ref(u)
    del u
    gc.collect()
    self.assertIsNone(r())
    v = UOp.variable("weak_test_var2", 0, 5) + 3   # a fresh object, hash-consed again
    self.assertIs(v, UOp.variable("weak_test_var2", 0, 5) + 3)
  def test_big_graph_freed(self):
    u = UOp.variable("weak_chain", 0, 1)
    for i in range(20000): u = UOp(Ops.ADD, dtypes.int32, (u, c(1)))
    r = weakref.ref(u)
    del u
    gc.collect()
    self.assertIsNone(r())

class TestToposort(unittest.TestCase):
  def test_sources_first(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    a = x + y
    b = a * x
    d = (b + a).maximum(y)
    order = list(d.toposort())
    pos = {u: i for i, u in enumerate(order)}
    self.assertEqual(len(order), len(set(order)))
    for u in order:
      for s in u.src: self.assertLess(pos[s], pos[u])
    self.assertIs(order[-1], d)
  def test_deterministic_order(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    u = (x+y)*(y+x)
    self.assertEqual(list(u.toposort()), [x, y, x+y, y+x, u])
  def test_gate(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    u = (x+y)*y
    self.assertNotIn(x, u.toposort(gate=lambda n: n.op is not Ops.ADD))
  def test_deep(self):
    u = UOp.variable("x", 0, 10)
    for i in range(50000): u = UOp(Ops.ADD, dtypes.int32, (u, c(1)))
    self.assertEqual(len(u.toposort()), 50002)

class TestUPat(unittest.TestCase):
  def test_op_dtype_arg(self):
    x = UOp.variable("x", 0, 10)
    self.assertTrue(UPat(Ops.DEFINE_VAR).match(x, {}))
    self.assertFalse(UPat(Ops.CONST).match(x, {}))
    self.assertTrue(UPat((Ops.CONST, Ops.DEFINE_VAR)).match(x, {}))
    self.assertTrue(UPat(dtype=dtypes.int32).match(x, {}))
    self.assertFalse(UPat(dtype=dtypes.float32).match(x, {}))
    self.assertTrue(UPat(Ops.CONST, arg=3).match(c(3), {}))
    self.assertFalse(UPat(Ops.CONST, arg=3).match(c(4), {}))
  def test_vector_dtype_matches_scalar(self):
    v = UOp.const(dtypes.int32.vec(4), 1)
    self.assertTrue(UPat(dtype=dtypes.int32).match(v, {}))
  def test_names(self):
    x = UOp.variable("x", 0, 10)
    m = (UPat.var("a") + UPat.cvar("b")).match(x+3, {})
    self.assertEqual(len(m), 1)
    self.assertIs(m[0]["a"], x)
    self.assertIs(m[0]["b"], c(3))
  def test_commutative(self):
    x = UOp.variable("x", 0, 10)
    pat = UPat.var("a") + UPat.cvar("b")
    for u in (x+3, UOp(Ops.ADD, dtypes.int32, (c(3), x))):
      m = pat.match(u, {})
      self.assertTrue(m)
      self.assertIs(m[0]["a"], x)
    # ordered src does not flip
    self.assertFalse(UPat(Ops.ADD, src=(UPat.cvar("b"), UPat.var("a"))).match(x+3, {}))
  def test_name_bound_twice(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    pat = UPat.var("a") + UPat.var("a")
    self.assertTrue(pat.match(x+x, {}))
    self.assertFalse(pat.match(x+y, {}))
    # the second binding is checked against the first across levels
    pat2 = (UPat.var("a") * UPat.cvar("k")) + UPat.var("a")
    self.assertTrue(pat2.match(x*3+x, {}))
    self.assertFalse(pat2.match(x*3+y, {}))
  def test_any(self):
    x = UOp.variable("x", 0, 10)
    pat = UPat.any(UPat(Ops.CONST, name="q"), UPat(Ops.DEFINE_VAR, name="q"))
    self.assertIs(pat.match(x, {})[0]["q"], x)
    self.assertIs(pat.match(c(2), {})[0]["q"], c(2))
    self.assertFalse(pat.match(x+1, {}))
    self.assertTrue((UPat(Ops.CONST) | UPat(Ops.DEFINE_VAR)).match(x, {}))
  def test_src_len(self):
    x = UOp.variable("x", 0, 10)
    self.assertFalse(UPat(Ops.ADD, src=(UPat(),)).match(x+1, {}))
    self.assertTrue(UPat(Ops.ADD, src=(UPat(),), allow_any_len=True).match(x+1, {}))
    self.assertTrue(UPat(Ops.ADD, src=UPat(Ops.DEFINE_VAR, name="v")).match(x+x, {}))
    self.assertFalse(UPat(Ops.ADD, src=UPat(Ops.DEFINE_VAR)).match(x+1, {}))

class TestPatternMatcher(unittest.TestCase):
  def test_first_match_wins(self):
    pm = PatternMatcher([(UPat(Ops.CONST, name="x"), lambda x: None), (UPat(Ops.CONST, name="x"), lambda x: x.const_like(x.arg+1)),
                         (UPat(Ops.CONST, name="x"), lambda x: x.const_like(100))])
    self.assertIs(pm.rewrite(c(1)), c(2))
  def test_no_match(self):
    pm = PatternMatcher([(UPat(Ops.CONST), lambda: c(5))])
    self.assertIsNone(pm.rewrite(UOp.variable("x", 0, 1)))
    self.assertIsNone(pm.rewrite(c(5)))   # returning the same node is no match
  def test_ctx(self):
    seen: list[UOp] = []
    def visit(ctx, x):
      ctx.append(x)
      return None
    pm = PatternMatcher([(UPat(Ops.DEFINE_VAR, name="x"), visit)])
    x, y = UOp.variable("x", 0, 1), UOp.variable("y", 0, 1)
    graph_rewrite(x+y, pm, ctx=seen)
    self.assertEqual(seen, [x, y])
  def test_ctx_rewrite(self):
    pm = PatternMatcher([(UPat(Ops.DEFINE_VAR, name="x"), lambda ctx, x: ctx.get(x))])
    x, y = UOp.variable("x", 0, 1), UOp.variable("y", 0, 1)
    self.assertIs(graph_rewrite(x+y, pm, ctx={x: c(7)}), c(7)+y)
  def test_add(self):
    a = PatternMatcher([(UPat(Ops.CONST, arg=1), lambda: c(2))])
    b = PatternMatcher([(UPat(Ops.CONST, arg=2), lambda: c(3))])
    self.assertIs(graph_rewrite(c(1), a+b), c(3))

class TestGraphRewrite(unittest.TestCase):
  def test_unchanged_is_same(self):
    x = UOp.variable("x", 0, 10)
    u = (x+1)*2
    self.assertIs(graph_rewrite(u, PatternMatcher([])), u)
  def test_fixed_point(self):
    # each rewrite makes a new node that is rewritten again until no rule applies
    pm = PatternMatcher([(UPat(Ops.CONST, name="x"), lambda x: x.const_like(x.arg+1) if x.arg < 10 else None)])
    x = UOp.variable("x", 0, 10)
    self.assertIs(graph_rewrite(x + 0, pm), x + 10)
    self.assertIs(graph_rewrite(x + 0, pm, bottom_up=True), x + 10)
  def test_rewritten_node_sources_rewritten(self):
    x = UOp.variable("x", 0, 10)
    pm = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("a"), UPat(Ops.CONST, arg=2))), lambda a: a+a),
                         (UPat(Ops.DEFINE_VAR, arg=("x", 0, 10)), lambda: UOp.variable("y", 0, 10))])
    y = UOp.variable("y", 0, 10)
    self.assertIs(graph_rewrite(x*2, pm), y+y)
    self.assertIs(graph_rewrite(x*2, pm, bottom_up=True), y+y)
  def test_order(self):
    # post-order (default) rewrites the sources first, bottom_up=True tries a node before its sources
    pm = PatternMatcher([(UPat(Ops.CONST, arg=1), lambda: c(2)),
                         (UPat(Ops.ADD, src=(UPat(Ops.CONST, name="a"), UPat(Ops.CONST, name="b"))), lambda a, b: c(a.arg+b.arg))])
    self.assertIs(graph_rewrite(c(1)+c(1), pm), c(4))
    self.assertIs(graph_rewrite(c(1)+c(1), pm, bottom_up=True), c(2))
  def test_shared_node_once(self):
    calls: list[UOp] = []
    def f(ctx, x):
      ctx.append(x)
      return None
    x = UOp.variable("x", 0, 10)
    a = x+1
    graph_rewrite(a*a + a, PatternMatcher([(UPat(Ops.ADD, name="x"), f)]), ctx=calls)
    self.assertEqual(calls.count(a), 1)
  def test_map(self):
    x = UOp.variable("x", 0, 10)
    pm = PatternMatcher([(UPat(Ops.CONST, arg=1), lambda: c(2))])
    u = (x+1)*3
    m = graph_rewrite_map(u, pm)
    self.assertIs(m[u], (x+2)*3)
    self.assertIs(m[x+1], x+2)
    self.assertIs(m[x], x)
  def test_deep_chain(self):
    # 100,000 nodes deep: no recursion, reasonable time
    x, one = UOp.variable("x", 0, 10), c(1)
    u = x
    for _ in range(100_000): u = UOp(Ops.ADD, dtypes.int32, (u, one))
    pm = PatternMatcher([(UPat(Ops.CONST, arg=1), lambda: c(2))])
    out = graph_rewrite(u, pm)
    n, w = 0, out
    while w.op is Ops.ADD:
      self.assertIs(w.src[1], c(2))
      n, w = n+1, w.src[0]
    self.assertEqual(n, 100_000)
    self.assertIs(w, x)
    self.assertEqual(sym_infer(out, {x: 3}), 3 + 200_000)
    self.assertIs(graph_rewrite(u, pm, bottom_up=True), out)

class TestSubstitute(unittest.TestCase):
  def test_substitute(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    u = (x+1)*x + y
    self.assertIs(u.substitute({x: c(2)}), (c(2)+1)*c(2) + y)
    self.assertIs(u.substitute({x: y}), (y+1)*y + y)
    self.assertIs(u.substitute({}), u)
    self.assertIs(u.substitute({x+1: y}), y*x + y)
  def test_substitute_deep(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    u = x
    for _ in range(20000): u = UOp(Ops.ADD, dtypes.int32, (u, c(1)))
    v = u.substitute({x: y})
    self.assertEqual(sym_infer(v, {y: 1}), 20001)

class TestVariables(unittest.TestCase):
  def test_variables_sorted(self):
    b, a = UOp.variable("b", 0, 10), UOp.variable("a", 1, 5)
    self.assertEqual((b*2 + a + b).variables(), [a, b])
  def test_bind_unbind(self):
    a = UOp.variable("a", 1, 5)
    ba = a.bind(3)
    self.assertIs(ba.op, Ops.BIND)
    self.assertEqual(ba.unbind(), (a, 3))
    self.assertEqual(ba.val, 3)
    self.assertEqual((ba + 1).variables(), [a])
    self.assertEqual(a.expr, "a")
    with self.assertRaises(ValueError): a.bind(6)
    with self.assertRaises(ValueError): UOp.variable("bad", 5, 1)
  def test_bind_bounds(self):
    a = UOp.variable("a", 1, 5)
    self.assertEqual((a.bind(3).vmin, a.bind(3).vmax), (1, 5))
  def test_const_of_bind_unbinds(self):
    a = UOp.variable("a", 1, 5)
    self.assertIs(UOp.const(dtypes.int32, a.bind(2)), a)

class TestSymInfer(unittest.TestCase):
  def test_sym_infer(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    self.assertEqual(sym_infer((x*3 + y)//2, {x: 3, y: 4}), 6)
    self.assertEqual(sym_infer((x - 7)//2, {x: 0}), -3)    # C division
    self.assertEqual(sym_infer((x - 7) % 2, {x: 0}), -1)
    self.assertIs(sym_infer(x < y, {x: 1, y: 2}), True)
    self.assertEqual(sym_infer(5, {}), 5)
    self.assertEqual(x.sym_infer({x: 4}), 4)
  def test_sym_infer_bind(self):
    x = UOp.variable("x", 0, 10)
    self.assertEqual(sym_infer(x.bind(3)*2, {}), 6)
    self.assertEqual(sym_infer(x.bind(3)*2, {x: 5}), 10)
  def test_missing_var(self):
    x = UOp.variable("x", 0, 10)
    with self.assertRaises(ValueError): sym_infer(x+1, {})
  def test_cast(self):
    x = UOp.variable("x", 0, 300)
    self.assertEqual(sym_infer(x.cast(dtypes.uint8), {x: 300}), 44)
    self.assertIs(sym_infer(x.cast(dtypes.bool), {x: 3}), True)
    self.assertEqual(sym_infer((x.cast(dtypes.float32)*0.5).cast(dtypes.int32), {x: 5}), 2)
  def test_wraps(self):
    x = UOp.variable("x", 0, 200, dtypes.int8)
    self.assertEqual(sym_infer(x + UOp.const(dtypes.int8, 100), {x: 100}), -56)

class TestExecAlu(unittest.TestCase):
  def test_idiv_mod_c_semantics(self):
    for a in range(-9, 10):
      for b in [-4, -3, -1, 1, 2, 5]:
        q, r = exec_alu(Ops.IDIV, dtypes.int32, [a, b]), exec_alu(Ops.MOD, dtypes.int32, [a, b])
        self.assertEqual(q, int(a / b))              # truncation toward zero
        self.assertEqual(q*b + r, a)                 # the C identity
        self.assertTrue(r == 0 or (r < 0) == (a < 0))  # the remainder has the dividend's sign
    self.assertEqual(exec_alu(Ops.IDIV, dtypes.int32, [-7, 2]), -3)
    self.assertEqual(-7 // 2, -4)                    # python floors, C doesn't
    self.assertEqual(exec_alu(Ops.MOD, dtypes.int32, [-7, 2]), -1)
    self.assertEqual(-7 % 2, 1)
    self.assertEqual(exec_alu(Ops.MOD, dtypes.int32, [7, -2]), 1)
  def test_truncation(self):
    self.assertEqual(exec_alu(Ops.ADD, dtypes.int8, [100, 100]), -56)
    self.assertEqual(exec_alu(Ops.ADD, dtypes.uint8, [200, 100]), 44)
    self.assertEqual(exec_alu(Ops.MUL, dtypes.int32, [2**20, 2**12]), 0)
    self.assertEqual(exec_alu(Ops.ADD, dtypes.float32, [0.1, 0.2]), 0.30000001192092896)
  def test_bool(self):
    self.assertIs(exec_alu(Ops.ADD, dtypes.bool, [True, True]), True)
    self.assertIs(exec_alu(Ops.MUL, dtypes.bool, [True, False]), False)
    self.assertIs(exec_alu(Ops.CMPLT, dtypes.bool, [1, 2]), True)
  def test_vector(self):
    self.assertEqual(exec_alu(Ops.ADD, dtypes.int32.vec(3), [(1, 2, 3), 10]), (11, 12, 13))
  def test_float_specials(self):
    self.assertTrue(math.isnan(exec_alu(Ops.SQRT, dtypes.float32, [-1.0])))
    self.assertEqual(exec_alu(Ops.RECIP, dtypes.float32, [0.0]), math.inf)
    self.assertEqual(exec_alu(Ops.LOG2, dtypes.float32, [0.0]), -math.inf)

class TestBounds(unittest.TestCase):
  def test_basic(self):
    x, y = UOp.variable("x", -3, 5), UOp.variable("y", 2, 4)
    self.assertEqual((x.vmin, x.vmax), (-3, 5))
    self.assertEqual(((x+y).vmin, (x+y).vmax), (-1, 9))
    self.assertEqual(((x*y).vmin, (x*y).vmax), (-12, 20))
    self.assertEqual(((x*-2).vmin, (x*-2).vmax), (-10, 6))
    self.assertEqual((x.maximum(y).vmin, x.maximum(y).vmax), (2, 5))
    self.assertEqual(((x < y).vmin, (x < y).vmax), (False, True))
    self.assertEqual(((y < 5).vmin, (y < 5).vmax), (True, True))
    self.assertEqual(((x < y).where(x, y).vmin, (x < y).where(x, y).vmax), (-3, 5))
  def test_div_mod(self):
    x = UOp.variable("x", -7, 9)
    self.assertEqual(((x//2).vmin, (x//2).vmax), (-3, 4))   # C division of the ends
    self.assertEqual(((x%4).vmin, (x%4).vmax), (-3, 3))
    p = UOp.variable("p", 0, 9)
    self.assertEqual(((p%4).vmin, (p%4).vmax), (0, 3))
    self.assertEqual(((p//-2).vmin, (p//-2).vmax), (-4, 0))
  def test_bounds_are_sound(self):
    x, y = UOp.variable("x", -5, 6), UOp.variable("y", 1, 4)
    for e in [x*y + x, (x+3)//y, (x*3) % 4, x.maximum(y*2) - y, (x < y).where(x*2, y)]:
      vals = [sym_infer(e, {x: a, y: b}) for a in range(-5, 7) for b in range(1, 5)]
      self.assertLessEqual(e.vmin, min(vals))
      self.assertGreaterEqual(e.vmax, max(vals))
  def test_range_special(self):
    r = UOp.range(dtypes.int32, 8, 0)
    self.assertEqual((r.vmin, r.vmax), (0, 7))
    s = UOp(Ops.SPECIAL, dtypes.int32, (), ThreadId.make(ThreadKind.GLOBAL, 0, 16))
    self.assertEqual((s.vmin, s.vmax), (0, 15))
  def test_unknown(self):
    buf = UOp(Ops.DEFINE_GLOBAL, dtypes.int32.ptr(4), arg=0)
    ld = buf.index(c(0)).load()
    self.assertEqual((ld.vmin, ld.vmax), (dtypes.min(dtypes.int32), dtypes.max(dtypes.int32)))
  def test_const(self):
    self.assertEqual((c(5).vmin, c(5).vmax), (5, 5))

class TestHelpers(unittest.TestCase):
  def test_resolve(self):
    x = UOp.variable("x", 0, 10)
    self.assertTrue(resolve(x < 11))
    self.assertFalse(resolve(x < 0))
    self.assertTrue(resolve(x < 5))
    self.assertFalse(resolve(x < 5, False))
    self.assertTrue(resolve(True))
    with self.assertRaises(ValueError): resolve(x)
  def test_smax_smin(self):
    x = UOp.variable("x", 0, 10)
    self.assertEqual(smax(1, 5, 3), 5)
    self.assertEqual(smin([1, 5, 3]), 1)
    self.assertIs(smax(x, 11), 11)
    self.assertIs(smin(x, 11), x)
  def test_ssimplify(self):
    x = UOp.variable("x", 0, 10)
    self.assertEqual(ssimplify(x - x + 4), 4)
    self.assertIs(ssimplify(x + 0), x)
    self.assertEqual(ssimplify(3), 3)
  def test_render(self):
    x, y = UOp.variable("x", 0, 10), UOp.variable("y", 0, 10)
    self.assertEqual((x*3 + y).render(), "((x*3)+y)")
    self.assertEqual((x//2).render(), "(x//2)")
    self.assertEqual((x+0).render(simplify=False), "(x+0)")
  def test_const_factor_divides(self):
    x = UOp.variable("x", 0, 10)
    self.assertEqual((x*6 + 12).const_factor(), 6)
    self.assertIs((x*6 + 12).divides(3), x*2 + 4)
    self.assertIsNone((x*6 + 1).divides(3))
  def test_split_uop(self):
    x, y, z = UOp.variable("x", 0, 1), UOp.variable("y", 0, 1), UOp.variable("z", 0, 1)
    self.assertEqual(list(((x+y)+z).split_uop(Ops.ADD)), [x, y, z])
  def test_groupop_sanity(self):
    self.assertTrue(GroupOp.Comparison <= GroupOp.Binary)
    self.assertTrue(GroupOp.Commutative <= GroupOp.ALU)

if __name__ == "__main__":
  unittest.main()
