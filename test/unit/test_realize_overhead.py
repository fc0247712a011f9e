"""The Python a realize costs when its graph was seen before (schedule plan cached, kernel compiled), counted in Python function calls, not
time: a loaded machine's timings swing, these counts don't. Calls inside tinygrad/runtime (a device's launch) are left out, so the bounds hold
on every device; the results are checked against numpy too."""
import os, sys, unittest
import numpy as np
import tinygrad
from tinygrad import Tensor
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

class TestRealizeOverhead(unittest.TestCase):
  def setUp(self):
    rng = np.random.default_rng(0)
    self.np = [rng.standard_normal((16, 16), dtype=np.float32) for _ in range(3)]
    self.t = [Tensor(x).realize() for x in self.np]

  def check(self, make, expected, bound:int):
    out: list = []
    hits = schedule.plan_stats["hits"]
    calls = library_calls(lambda: out.append(make().realize()))
    # every call after the first was a plan cache hit, and computed the right thing
    self.assertEqual(schedule.plan_stats["hits"] - hits, len(out) - 1 if schedule.SCHEDULE_CACHE else 0)
    for o in out: np.testing.assert_allclose(o.numpy(), expected, rtol=1e-5, atol=1e-5)
    self.assertLessEqual(calls, bound, f"{calls} Python calls per realize, expected at most {bound}")

  # bounds: the counts when they were set (Python 3.11: 75, 69, 130 and 151; before that work 93, 81, 143 and 187), plus some room
  def test_elementwise(self): self.check(lambda: self.t[0]*self.t[1]+self.t[2], self.np[0]*self.np[1]+self.np[2], 84)
  def test_sum(self): self.check(lambda: self.t[0].sum(), self.np[0].sum(), 76)
  def test_matmul(self): self.check(lambda: self.t[0] @ self.t[1], self.np[0] @ self.np[1], 140)
  def test_scalar_operands(self): self.check(lambda: self.t[0]*2+1, self.np[0]*2+1, 165)

if __name__ == "__main__":
  unittest.main()
