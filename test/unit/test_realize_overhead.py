"""The Python a realize costs when its graph was seen before (schedule plan cached, kernel compiled), counted in Python function calls, not
time: a loaded machine's timings swing, these counts don't. Calls inside tinygrad/runtime (a device's launch) are left out, so the bounds hold
on every device; the results are checked against numpy too."""
import os, subprocess, sys, unittest
import numpy as np
import tinygrad
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.engine import schedule

_LIB = os.path.dirname(tinygrad.__file__) + os.sep
_RUNTIME = os.path.join(_LIB, "runtime") + os.sep

def library_calls(fn, reps:int=5) -> float:
  """Python calls into tinygrad (outside its runtime/) per call of fn, averaged over reps calls after two warm-up calls"""
  fn(), fn()
  count = 0
  def profiler(frame, event, arg):
    nonlocal count
    if event == "call" and (f := frame.f_code.co_filename).startswith(_LIB) and not f.startswith(_RUNTIME): count += 1
  sys.setprofile(profiler)
  try:
    for _ in range(reps): fn()
  finally: sys.setprofile(None)
  return count / reps

CASES = {  # name: (the graph from three 16x16 tensors, its numpy result)
  "elementwise": (lambda t: t[0]*t[1]+t[2], lambda n: n[0]*n[1]+n[2]),
  "sum": (lambda t: t[0].sum(), lambda n: n[0].sum()),
  "matmul": (lambda t: t[0] @ t[1], lambda n: n[0] @ n[1]),
  "scalar_operands": (lambda t: t[0]*2+1, lambda n: n[0]*2+1),
}

def measure(case:str, grad_leaf:bool=False, extra:int=0) -> float:
  """calls per realize of CASES[case] in this process, after checking every repeat was a plan cache hit with the right result. grad_leaf:
  a tensor that requires grad is alive (elsewhere, not in the graph); extra: that many more live realized tensors"""
  alive = ([Tensor([1.0, 2.0], requires_grad=True)] if grad_leaf else []) + [Tensor([float(i)]).realize() for i in range(extra)]
  rng = np.random.default_rng(0)
  n = [rng.standard_normal((16, 16), dtype=np.float32) for _ in range(3)]
  t = [Tensor(x).realize() for x in n]
  out: list = []
  hits = schedule.plan_stats["hits"]
  calls = library_calls(lambda: out.append(CASES[case][0](t).realize()))
  assert schedule.plan_stats["hits"] - hits == (len(out) - 1 if schedule.SCHEDULE_CACHE else 0), "every call after the first hits the plan cache"
  for o in out: np.testing.assert_allclose(o.numpy(), CASES[case][1](n), rtol=1e-5, atol=1e-5)
  assert len(alive) == grad_leaf + extra
  return calls

def measure_assign(lazy:int) -> tuple[float, float]:
  """calls per realize of an in-place update (w -= g/2) and of a plain elementwise graph, with that many lazy tensors alive that read
  other buffers: a realize that runs an ASSIGN looks among the lazy tensors for readers of the old contents, in one walk without a call
  per tensor"""
  rng = np.random.default_rng(0)
  wn, gn = rng.standard_normal((16, 16), dtype=np.float32), rng.standard_normal((16, 16), dtype=np.float32)
  w, g = Tensor(wn).realize(), Tensor(gn).realize()
  alive = [Tensor([float(i)]) * 2 for i in range(lazy)]
  steps = library_calls(lambda: w.assign(w - g * 0.5).realize())
  plain = library_calls(lambda: (w * g + 1).realize())
  np.testing.assert_allclose(w.numpy(), wn - 7 * 0.5 * gn, rtol=1e-5, atol=1e-5)
  assert len(alive) == lazy and all(t.uop.op is not Ops.BUFFER for t in alive)
  return steps, plain

class TestRealizeOverhead(unittest.TestCase):
  # each count is taken in a fresh process: every live tensor (other tests' leftovers) adds to what a realize walks once any requires grad
  def check(self, case:str, bound:int, **kw) -> float:
    code = f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); from test_realize_overhead import measure; print(measure({case!r}, **{kw!r}))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    self.assertEqual(res.returncode, 0, res.stderr)
    calls = float(res.stdout.split()[-1])
    self.assertLessEqual(calls, bound, f"{calls} Python calls per realize, expected at most {bound}")
    return calls

  # bounds: the counts when they were set (Python 3.11: 63, 54, 111 and 136; before that work 64, 59, 118 and 137, before that 75, 69, 130 and
  # 151, and before that 93, 81, 143 and 187), plus some room
  def test_elementwise(self): self.check("elementwise", 68)
  def test_sum(self): self.check("sum", 58)
  def test_matmul(self): self.check("matmul", 80)   # (72 when dot's graph was replayed from its plan, 111 before)
  def test_scalar_operands(self): self.check("scalar_operands", 145)
  # a tensor that requires grad alive makes a realize look for gradient leaves and origins (109 when set, 63 without), but among the
  # tensors that require grad, not every live tensor: 1,000 more live tensors cost nothing (they cost 4 calls each before)
  def test_grad_leaf_alive(self):
    with_leaf = self.check("elementwise", 120, grad_leaf=True)
    self.assertLessEqual(self.check("elementwise", 120, grad_leaf=True, extra=1000), with_leaf + 5)

  # (set: 226 calls per assign realize, 104 per plain one; 200 lazy tensors alive add about 3,400 to both (the walk that points them at the
  # new buffers), but nothing more to the assign's)
  def test_assign_with_lazy_tensors_alive(self):
    def run(lazy:int) -> tuple[float, float]:
      code = f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); from test_realize_overhead import measure_assign; print(*measure_assign({lazy}))"
      res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
      self.assertEqual(res.returncode, 0, res.stderr)
      steps, plain = map(float, res.stdout.split()[-2:])
      return steps, plain
    (s0, p0), (s1, p1) = run(0), run(200)
    self.assertLessEqual(s0, 260)
    self.assertLessEqual(s1 - s0, p1 - p0 + 20)

class TestDotPlan(unittest.TestCase):
  # dot keeps its graph per (shapes, dtypes) and rebuilds it on new inputs: the rebuilt graph is the one built from scratch (hash-consing
  # makes it the same object while the first lives), and the values are numpy's
  def test_replayed_graph_is_the_built_one(self):
    from tinygrad import dtypes
    from tinygrad.tensor import _dot_plans
    from tinygrad.uop.ops import _compute_st
    rng = np.random.default_rng(0)
    cases = [((5, 7), (7, 3), "float32", "float32"), ((7,), (7, 3), "float32", "float32"), ((5, 7), (7,), "float32", "float32"),
             ((7,), (7,), "float32", "float32"), ((2, 1, 5, 7), (3, 7, 4), "float32", "float32"), ((5, 7), (7, 3), "int32", "float32"),
             ((5, 7), (7, 3), "int8", "int8"), ((5, 7), (7, 3), "float16", "float32"), ((4, 4), (4, 4), "float32", "float32")]
    for xs, ws, xd, wd in cases:
      xn, wn = rng.integers(-3, 4, xs).astype(xd), rng.integers(-3, 4, ws).astype(wd)
      for _ in range(3):
        x, w = Tensor(xn), Tensor(wn)
        first = x @ w
        _dot_plans.clear()
        built = x @ w   # from scratch, with first alive: the same graph is the same object
        self.assertIs(built.uop, first.uop)
        replayed = Tensor(xn) @ Tensor(wn).realize()   # other inputs, from the plan
        self.assertIs((x @ w).uop, first.uop)
        want = xn @ wn
        for t in (first, replayed): np.testing.assert_allclose(t.numpy(), want, rtol=1e-3)
        self.assertEqual(replayed.dtype, first.dtype)
    # inputs of the same shapes viewed otherwise (transposed, shrunk, padded, expanded) get graphs of their own: their views' ShapeTrackers differ
    xn, wn = rng.standard_normal((6, 6), dtype=np.float32), rng.standard_normal((6, 6), dtype=np.float32)
    x, w = Tensor(xn).realize(), Tensor(wn).realize()
    views = [(lambda t: t, lambda n: n), (lambda t: t.T, lambda n: n.T), (lambda t: t.pad(((1, 1), (0, 0)))[1:7], lambda n: n),
             (lambda t: t[::-1], lambda n: n[::-1]), (lambda t: t[:, :1].expand(6, 6), lambda n: np.broadcast_to(n[:, :1], (6, 6))),
             (lambda t: Tensor.cat(t[3:], t[:3]), lambda n: np.concatenate([n[3:], n[:3]]))]
    for _ in range(2):
      for fx, nx in views:
        for fw, nw in views:
          out = fx(x) @ fw(w)
          for u in out.uop.toposort(): self.assertEqual(u.st, _compute_st(u), f"{u.op} of a replayed graph has another node's ShapeTracker")
          np.testing.assert_allclose(out.numpy(), nx(xn) @ nw(wn), rtol=1e-4, atol=1e-4)
    # inputs built on each other (x @ x, x @ x.T, y @ y[0]...) are never kept as plans, and replay plans made on other inputs correctly
    a = Tensor(an := rng.standard_normal((4, 4), dtype=np.float32))
    for f, g in [(lambda t: t @ t, lambda n: n @ n), (lambda t: t @ t.T, lambda n: n @ n.T), (lambda t: t.T @ t, lambda n: n.T @ n)]:
      for _ in range(2): np.testing.assert_allclose(f(a).numpy(), g(an), rtol=1e-5)
    self.assertIs(dtypes.float32, (a @ a).dtype)

if __name__ == "__main__":
  unittest.main()
