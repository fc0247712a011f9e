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
  def test_matmul(self): self.check("matmul", 118)
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

if __name__ == "__main__":
  unittest.main()
