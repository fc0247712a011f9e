import itertools, unittest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, graph_rewrite, sym_infer, exec_alu
from tinygrad.uop.symbolic import symbolic_simple, symbolic, symbolic_flat, sym, simplify_valid, uop_given_valid

def Var(name:str, lo:int, hi:int) -> UOp: return UOp.variable(name, lo, hi)

def brute_force(orig:UOp, new:UOp, valid:UOp|None=None):
  """every assignment of the variables in their ranges gives the same value (where valid holds, if given)"""
  vs = sorted({*orig.variables(), *new.variables(), *(valid.variables() if valid is not None else [])}, key=lambda v: v.arg)
  assert all(v.arg[2] - v.arg[1] < 200 for v in vs), "range too big to brute force"
  for vals in itertools.product(*[range(v.arg[1], v.arg[2]+1) for v in vs]):
    env = dict(zip(vs, vals))
    if valid is not None and not sym_infer(valid, env): continue
    a, b = sym_infer(orig, env), sym_infer(new, env)
    assert a == b and type(a) is type(b), f"{orig.render(False)} -> {new.render(False)}: {a} != {b} at { {v.arg[0]: x for v, x in env.items()} }"

def check(expr:UOp, expected:UOp|str|None=None, pm=symbolic) -> UOp:
  new = graph_rewrite(expr, pm)
  brute_force(expr, new)
  if isinstance(expected, UOp): assert new is expected, f"{expr.render(False)} -> {new.render(False)}, expected {expected.render(False)}"
  elif isinstance(expected, str): assert new.render(False) == expected, f"{expr.render(False)} -> {new.render(False)}, expected {expected}"
  return new

class TestIssueExamples(unittest.TestCase):
  def test_mul_add_div(self):
    x = Var("x", 0, 10)
    check((x*4+2)//2, x*2+1)
    self.assertEqual(((x*4+2)//2).render(), "((x*2)+1)")
  def test_mul_add_div_negative_range(self):
    x = Var("x", -10, 10)
    check((x*4+2)//2, x*2+1)   # exact division holds for either sign
  def test_add_mod(self):
    x = Var("x", 0, 5)
    check((x+3)%3, x%3)
    self.assertEqual(((x+3)%3).render(), "(x%3)")
  def test_div_drop_small(self):
    x, y = Var("x", 0, 10), Var("y", 0, 7)
    check((x*8+y)//8, x)
    check((x*8+y)%8, y)
  def test_mod_in_range(self):
    x = Var("x", 0, 3)
    check(x%4, x)

class TestSimple(unittest.TestCase):
  def test_const_fold(self):
    for op, a, b in [(Ops.ADD, 3, 4), (Ops.MUL, 3, -4), (Ops.IDIV, -7, 2), (Ops.MOD, -7, 2), (Ops.MAX, 3, 9), (Ops.CMPLT, 3, 4), (Ops.SHL, 1, 3)]:
      u = UOp(op, dtypes.bool if op is Ops.CMPLT else dtypes.int32, (UOp.const(dtypes.int32, a), UOp.const(dtypes.int32, b)))
      out = graph_rewrite(u, symbolic_simple)
      self.assertIs(out.op, Ops.CONST)
      self.assertEqual(out.arg, exec_alu(op, u.dtype, [a, b]))
  def test_const_fold_c_semantics(self):
    self.assertEqual(graph_rewrite(UOp.const(dtypes.int32, -7)//2, symbolic_simple).arg, -3)
    self.assertEqual(graph_rewrite(UOp.const(dtypes.int32, -7)%2, symbolic_simple).arg, -1)
  def test_const_fold_wraps(self):
    self.assertEqual(graph_rewrite(UOp.const(dtypes.int8, 100)+100, symbolic_simple).arg, -56)
  def test_const_fold_float(self):
    out = graph_rewrite(UOp.const(dtypes.float32, 0.1)+0.2, symbolic_simple)
    self.assertIs(out.dtype, dtypes.float32)
    self.assertEqual(out.arg, exec_alu(Ops.ADD, dtypes.float32, [0.1, 0.2]))
  def test_const_fold_vector(self):
    a = UOp.const(dtypes.int32.vec(3), (1, 2, 3))
    out = graph_rewrite(a*2, symbolic_simple)
    self.assertIs(out, UOp.const(dtypes.int32.vec(3), (2, 4, 6)))
  def test_const_fold_where(self):
    t = UOp.const(dtypes.bool, True)
    self.assertIs(graph_rewrite(t.where(UOp.const(dtypes.int32, 1), UOp.const(dtypes.int32, 2)), symbolic_simple), UOp.const(dtypes.int32, 1))
  def test_no_fold_bad_shift(self):
    u = UOp.const(dtypes.int32, 1) >> -1
    self.assertIs(graph_rewrite(u, symbolic_simple), u)
  def test_identities(self):
    x = Var("x", -5, 5)
    check(x+0, x, symbolic_simple)
    check(x*1, x, symbolic_simple)
    check(x*0, UOp.const(dtypes.int32, 0), symbolic_simple)
    check(x//1, x, symbolic_simple)
    check(x//-1, x*-1, symbolic_simple)
    check(x%1, UOp.const(dtypes.int32, 0), symbolic_simple)
    check(x + x*-1, UOp.const(dtypes.int32, 0), symbolic_simple)
    check(-(-x), x, symbolic_simple)
    check(x.maximum(x), x, symbolic_simple)
    check(x < x, UOp.const(dtypes.bool, False), symbolic_simple)
    check(x.ne(x), UOp.const(dtypes.bool, False), symbolic_simple)
  def test_float_mul_zero_kept(self):
    f = UOp(Ops.DEFINE_VAR, dtypes.float32, arg=("f", -1.0, 1.0))
    self.assertIs(graph_rewrite(f*0, symbolic_simple).op, Ops.MUL)   # nan*0 is nan
    self.assertIs(graph_rewrite(f*1, symbolic_simple), f)
  def test_float_ne_self_kept(self):
    f = UOp(Ops.DEFINE_VAR, dtypes.float32, arg=("f", -1.0, 1.0))
    self.assertIs(graph_rewrite(f.ne(f), symbolic_simple).op, Ops.CMPNE)   # nan != nan
  def test_idiv_self(self):
    x, y = Var("x", 1, 5), Var("y", 0, 5)
    check(x//x, UOp.const(dtypes.int32, 1))
    self.assertIsNot(graph_rewrite(y//y, symbolic).op, Ops.CONST)   # 0//0 is not 1
  def test_bool_identities(self):
    b = UOp(Ops.DEFINE_VAR, dtypes.bool, arg=("b", False, True))
    T, F = UOp.const(dtypes.bool, True), UOp.const(dtypes.bool, False)
    self.assertIs(graph_rewrite(b & T, symbolic_simple), b)
    self.assertIs(graph_rewrite(b & F, symbolic_simple), F)
    self.assertIs(graph_rewrite(b | F, symbolic_simple), b)
    self.assertIs(graph_rewrite(b | T, symbolic_simple), T)
    self.assertIs(graph_rewrite(b.ne(False), symbolic_simple), b)
    self.assertIs(graph_rewrite(b.logical_not().logical_not(), symbolic_simple), b)
    self.assertIs(graph_rewrite(b.where(T, F), symbolic_simple), b)
    self.assertIs(graph_rewrite(b + b, symbolic_simple), b)     # bool ADD is OR
  def test_cast_const(self):
    self.assertIs(graph_rewrite(UOp.const(dtypes.float32, 3.7).cast(dtypes.int32), symbolic_simple), UOp.const(dtypes.int32, 3))
    self.assertIs(graph_rewrite(UOp.const(dtypes.float32, -3.7).cast(dtypes.int32), symbolic_simple), UOp.const(dtypes.int32, -3))
    self.assertIs(graph_rewrite(UOp.const(dtypes.int32, 300).cast(dtypes.uint8), symbolic_simple), UOp.const(dtypes.uint8, 44))
    self.assertIs(graph_rewrite(UOp.const(dtypes.int32, 2).cast(dtypes.bool), symbolic_simple), UOp.const(dtypes.bool, True))
    self.assertEqual(graph_rewrite(UOp.const(dtypes.float64, 0.1).cast(dtypes.float32), symbolic_simple).arg, exec_alu(Ops.ADD, dtypes.float32, [0.1, 0]))
  def test_cast_same_dtype(self):
    x = Var("x", 0, 5)
    self.assertIs(graph_rewrite(UOp(Ops.CAST, dtypes.int32, (x,)), symbolic_simple), x)
  def test_where(self):
    x, y = Var("x", 0, 5), Var("y", 0, 5)
    check((x < 3).where(y, y), y)
    check(UOp.const(dtypes.bool, False).where(x, y), y)
    check((x < 10).where(x, y), x)   # the condition is decided by bounds
  def test_bounds_to_const(self):
    x = Var("x", 0, 5)
    check(x//8, UOp.const(dtypes.int32, 0))
    check(x < 6, UOp.const(dtypes.bool, True))
    check(x < 0, UOp.const(dtypes.bool, False))
    check((x*2).maximum(-1) < 11, UOp.const(dtypes.bool, True))
  def test_bounds_no_fold_variable(self):
    v = Var("v", 3, 3)
    self.assertIs(graph_rewrite(v, symbolic), v)   # a variable stays a variable even when its range is one value
  def test_empty_range_not_folded(self):
    r = UOp.range(dtypes.int32, 1, 0)
    self.assertIs(graph_rewrite(r, symbolic), r)

class TestSymbolic(unittest.TestCase):
  def test_canonical_order(self):
    x = Var("x", 0, 5)
    self.assertIs(graph_rewrite(UOp.const(dtypes.int32, 3) + x, symbolic), x+3)
    self.assertIs(graph_rewrite(UOp.const(dtypes.int32, 3) * x, symbolic), x*3)
  def test_const_chains(self):
    x, y = Var("x", 0, 5), Var("y", 0, 5)
    check((x+3)+4, x+7)
    check((x*3)*4, x*12)
    check((x+3)+y, (x+y)+3)
    check((x*3)*y, (x*y)*3)
    check((x+3)+(y+2), (x+y)+5)
    check(x.maximum(2).maximum(4), x.maximum(4))
  def test_like_terms(self):
    x, y = Var("x", -3, 5), Var("y", 0, 5)
    check(x+x, x*2)
    check(x*3+x*4, x*7)
    check(x+x*3, x*4)
    check(x*3+y+x*-3, y)
    check((x+y)-x, y)
    check((x+2)-(x+1), UOp.const(dtypes.int32, 1))
    check(x*2+y+x+1+2, x*3+y+3)
  def test_distribute(self):
    x, y = Var("x", -3, 5), Var("y", 0, 5)
    check((x+3)*4, x*4+12)
    check((x+y)*2, x*2+y*2)
    check(((x+1)*2+1)*3, x*6+9)
  def test_mod_div_recombine(self):
    x = Var("x", -20, 20)
    check(x%4 + (x//4)*4, x)
    check((x//4)*8 + (x%4)*2, x*2)
  def test_div(self):
    x, y = Var("x", 0, 10), Var("y", 0, 3)
    check((x*4+y)//4, x)
    check((x*4+y)%4, y)
    check((x*6+4)//2, x*3+2)
    check((x*5)//4, x+x//4)
    check((x*5)%4, x%4)
    check((x+8)//4, x//4+2)
    check((x*4+y+8)//4, x+2)
    check((x*4 + y*6)%8, ((x*2+y*3)%4)*2)
    check((x*6+9)//3, x*2+3)
  def test_div_negative_dividend_not_split(self):
    x, y = Var("x", -3, 3), Var("y", 0, 3)
    check((x*4+y)//4)      # trunc toward zero: -1*4+3 = -1, -1//4 = 0 but x = -1
    check((x*4+y)%4)
    check((x+4)//4)
    check((x-5)%4)
  def test_div_negative_range(self):
    x, y = Var("x", -10, 0), Var("y", -3, 0)
    check((x*4+y)//4, x)
    check((x*4+y)%4, y)
  def test_div_negative_divisor(self):
    x = Var("x", -10, 10)
    check(x//-3, (x//3)*-1)
    check(x%-3, x%3)
  def test_nested_div(self):
    x = Var("x", -50, 50)
    check((x//3)//4, x//12)
  def test_nested_mod(self):
    x = Var("x", -50, 50)
    check((x%12)%4, x%4)
    check((x%4)%4, x%4)
    check((x%4)%12)
  def test_div_by_bounds(self):
    x = Var("x", 4, 7)
    check(x//4, UOp.const(dtypes.int32, 1))
    check(x%4, x-4)
  def test_lt(self):
    x, y = Var("x", -10, 10), Var("y", 0, 3)
    check(x*4 < 9, x < 3)
    check(x*4 < -9, x < -2)
    check(x*-4 < 9)
    check(x+3 < 5, x < 2)
    check(x*4+y < 8, x < 2)
    check(x*4+2 < 8, x < 2)
    check(x*6+y*3 < 8, x*2+y < 3)
    check(x*-1 < 3, UOp.const(dtypes.int32, -3) < x)
    check(UOp.const(dtypes.int32, 5) < x+2, UOp.const(dtypes.int32, 3) < x)
    check(UOp.const(dtypes.int32, 5) < x*3, UOp.const(dtypes.int32, 1) < x)
  def test_lt_div(self):
    x = Var("x", -20, 20)
    check(x//4 < 2, x < 8)
    check(x//4 < -2, x < -11)
    check(x//4 < 0, x < -3)
  def test_and_or_lt(self):
    x = Var("x", -20, 20)
    check((x < 5) & (x < 3), x < 3)
    check((x < 5) | (x < 3), x < 5)
    check((x < 30) & (x < 3), x < 3)
    check((x < -30) | (x < 3), x < 3)
  def test_max(self):
    x, y = Var("x", 0, 5), Var("y", 6, 9)
    check(x.maximum(y), y)
    check(y.maximum(x), y)
    check(x.maximum(0), x)
    check(x.maximum(3))
  def test_where_same_cond(self):
    x, y = Var("x", 0, 10), Var("y", 0, 3)
    c = x < 5
    check(c.where(c.where(x, y), y+1), c.where(x, y+1))
    check(c.where(y, c.where(x, y+1)), c.where(y, y+1))
    check(c.where(c.where(x, y).cast(dtypes.int64), UOp.const(dtypes.int64, 7)), c.where(x.cast(dtypes.int64), UOp.const(dtypes.int64, 7)))
    check(x * c.where(UOp.const(dtypes.int32, 1), UOp.const(dtypes.int32, 0)), c.where(x, UOp.const(dtypes.int32, 0)))
    check(c.where(UOp.const(dtypes.int32, 3), x) + c.where(UOp.const(dtypes.int32, 4), y), c.where(UOp.const(dtypes.int32, 7), x+y))
    check(c.where(x, y) + c.where(y, x))   # no side folds: left alone
  def test_gcd_small_remainder(self):
    g, l = Var("g", 0, 15), Var("l", 0, 3)
    check((g*4+l)//16, g//4)
    check((g*4+l)%16, (g%4)*4+l)
    check((g*4+l)//8, g//2)
    check((g*4+l+1)//8)      # l+1 reaches 4: (4+4)//8 is 1 but 1//2 is 0
    check(((g*4+l)+-1)//4)   # -1//4 is 0 in C: not g-1+...
  def test_render(self):
    x, y = Var("x", 0, 10), Var("y", 0, 3)
    self.assertEqual(((x*4+y)//4).render(), "x")
    self.assertEqual((x+x+1+1).render(), "((x*2)+2)")

class TestFlat(unittest.TestCase):
  def test_flatten(self):
    x, y, z, w = Var("x", 0, 3), Var("y", 0, 3), Var("z", 0, 3), Var("w", 0, 3)
    e = (x+y)+(z+w)
    out = check(e, pm=symbolic_flat)
    self.assertIs(out, ((x+y)+z)+w)
    self.assertTrue(all(u.src[1].op is not Ops.ADD for u in out.toposort() if u.op is Ops.ADD))
  def test_sym_long_chain(self):
    x = Var("x", 0, 10)
    e = x
    for i in range(3000): e = e + (i % 3)
    out = graph_rewrite(e, sym)
    self.assertIs(out, x + sum(i % 3 for i in range(3000)))
  def test_gep_vectorize(self):
    x, y = Var("x", 0, 3), Var("y", 0, 3)
    v = UOp(Ops.VECTORIZE, dtypes.int32.vec(2), (x, y))
    self.assertIs(graph_rewrite(v.gep(1), sym), y)
    self.assertIs(graph_rewrite(UOp(Ops.VECTORIZE, dtypes.int32.vec(2), (v.gep(0), v.gep(1))), sym), v)
    self.assertIs(graph_rewrite(UOp(Ops.VECTORIZE, dtypes.int32.vec(2), (UOp.const(dtypes.int32, 1), UOp.const(dtypes.int32, 2))), sym),
                  UOp.const(dtypes.int32.vec(2), (1, 2)))
    self.assertIs(graph_rewrite(UOp.const(dtypes.int32.vec(2), (1, 2)).gep(1), sym), UOp.const(dtypes.int32, 2))
  def test_vector_divmod(self):
    # vectors have no bounds (vmin/vmax are +-inf), so no regrouping can be shown free of wrap-around: each lane stays right, nothing crashes
    x, y = Var("x", 0, 10), Var("y", 0, 10)
    v = UOp(Ops.VECTORIZE, dtypes.int32.vec(2), (x, y))
    k = UOp.const(dtypes.int32.vec(2), (1, 2))
    for e in [(v*4+k*4)//4, (v*4+k)//4, (v*4+k)%4, (v*4+k) < UOp.const(dtypes.int32.vec(2), 8), ((v*4+k)//4)//2]:
      out = graph_rewrite(e, sym)
      def lane(u:UOp, xv:int, yv:int, i:int):
        ret = graph_rewrite(u.substitute({x: UOp.const(dtypes.int32, xv), y: UOp.const(dtypes.int32, yv)}).gep(i), sym)
        assert ret.op is Ops.CONST, ret
        return ret.arg
      for xv, yv, i in itertools.product(range(0, 11, 3), range(0, 11, 2), range(2)): self.assertEqual(lane(out, xv, yv, i), lane(e, xv, yv, i))
  def test_cast_cast(self):
    x = Var("x", 0, 3)
    self.assertIs(graph_rewrite(x.cast(dtypes.int64).cast(dtypes.float32), sym), x.cast(dtypes.float32))
    narrow = x.cast(dtypes.int8).cast(dtypes.int32)
    self.assertIs(graph_rewrite(narrow, sym), narrow)   # int8 can't hold every int32: the inner cast truncates

class TestValid(unittest.TestCase):
  def test_uop_given_valid(self):
    x = Var("x", 0, 10)
    valid = x >= 1
    idx = (x-1).maximum(0)
    new = uop_given_valid(valid, idx)
    assert new is not None
    self.assertIs(new, x-1)
    brute_force(idx, new, valid)
  def test_uop_given_valid_div(self):
    x, y = Var("x", 0, 10), Var("y", 0, 10)
    valid = (x < 4) & (y >= 2)
    idx = (x + y*4 - 8)//4
    new = uop_given_valid(valid, idx)
    assert new is not None
    brute_force(idx, new, valid)
    self.assertIs(new, y-2)
  def test_uop_given_valid_impossible(self):
    x = Var("x", 0, 10)
    self.assertIsNone(uop_given_valid((x < 3) & (x >= 5), x+1))
  def test_uop_given_valid_nothing(self):
    x = Var("x", 0, 10)
    self.assertIs(uop_given_valid(x < 20, x+1), x+1)
  def test_simplify_valid(self):
    x, y = Var("x", 0, 10), Var("y", 0, 10)
    v = (x < 5) & (y >= 2) & (x < 3)
    new = simplify_valid(v)
    assert new is not None
    self.assertIs(new, (x < 3) & (y >= 2))
    brute_force(v, new)
    self.assertIsNone(simplify_valid(new))
  def test_simplify_valid_impossible(self):
    x = Var("x", 0, 10)
    v = (x < 3) & (x >= 5)
    self.assertIs(simplify_valid(v), UOp.const(dtypes.bool, False))
  def test_simplify_valid_given_others(self):
    x, y = Var("x", 0, 15), Var("y", 0, 7)
    v = (y >= 1) & ((((x*8 + y - 1)//16) % 2) >= 1)
    new = simplify_valid(v)
    assert new is not None
    brute_force(v, new)
    self.assertIs(new, (y >= 1) & (((x//2) % 2) >= 1))
    self.assertIsNone(simplify_valid(new))
  def test_simplify_valid_implied(self):
    x, y = Var("x", 0, 10), Var("y", 0, 10)
    v = (x < 20) & (y < 5)
    self.assertIs(simplify_valid(v), y < 5)
  def test_sym_index_gate(self):
    x = Var("x", 0, 10)
    buf = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(16), arg=0)
    idx = buf.index((x-1).maximum(0), x >= 1)
    self.assertIs(graph_rewrite(idx, sym), buf.index(x-1, x >= 1))
    self.assertIs(graph_rewrite(buf.index(x, UOp.const(dtypes.bool, True)), sym), buf.index(x))

# ***** random expressions, checked by brute force *****

@st.composite
def _expr(draw, depth:int=3) -> UOp:
  nvars = draw(st.integers(1, 3))
  vs = [Var(n, lo := draw(st.integers(-4, 4)), lo + draw(st.integers(0, 6))) for n in "abc"[:nvars]]
  def build(d:int) -> UOp:
    if d == 0 or draw(st.integers(0, 3)) == 0:
      return vs[draw(st.integers(0, nvars-1))] if draw(st.booleans()) else UOp.const(dtypes.int32, draw(st.integers(-5, 5)))
    op = draw(st.sampled_from(["add", "mul", "cmul", "div", "mod", "max", "where"]))
    a = build(d-1)
    if op == "add": return a + build(d-1)
    if op == "mul": return a * build(d-1)
    if op == "cmul": return a * draw(st.integers(-4, 4))
    if op == "div": return a // draw(st.integers(1, 9))
    if op == "mod": return a % draw(st.integers(1, 9))
    if op == "max": return a.maximum(build(d-1))
    return (a < build(d-1)).where(build(d-1), build(d-1))
  e = build(depth)
  if draw(st.booleans()): e = e < (build(1) if draw(st.booleans()) else UOp.const(dtypes.int32, draw(st.integers(-10, 10))))
  return e

class TestRandom(unittest.TestCase):
  @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
  @given(_expr())
  def test_symbolic(self, e:UOp):
    brute_force(e, graph_rewrite(e, symbolic))
  @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
  @given(_expr())
  def test_sym(self, e:UOp):
    brute_force(e, graph_rewrite(e, sym))

if __name__ == "__main__":
  unittest.main()
