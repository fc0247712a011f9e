# TinyJit: the second call is captured, later calls replay the kernels on the new inputs
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, GlobalCounters
from tinygrad.engine.jit import JitError

def test_jit_replays_with_new_inputs():
  calls = 0
  @TinyJit
  def f(a:Tensor, b:Tensor) -> Tensor:
    nonlocal calls
    calls += 1
    return (a * b + 1).sum(axis=1)
  rng = np.random.default_rng(0)
  for i in range(5):
    an, bn = rng.standard_normal((4, 8), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32)
    out = f(Tensor(an), Tensor(bn)).numpy()
    np.testing.assert_allclose(out, (an * bn + 1).sum(axis=1), rtol=1e-5)
  assert calls == 2   # run once, captured once, then replayed without calling the function

def test_jit_replay_runs_kernels_only():
  @TinyJit
  def f(a:Tensor) -> Tensor: return (a + 1).contiguous() * 2
  for _ in range(2): f(Tensor([1.0, 2.0, 3.0])).numpy()
  GlobalCounters.reset()
  out = f(Tensor([5.0, 6.0, 7.0]))
  assert GlobalCounters.kernel_count >= 1
  np.testing.assert_equal(out.numpy(), [12.0, 14.0, 16.0])

def test_jit_rejects_changed_shapes():
  @TinyJit
  def f(a:Tensor) -> Tensor: return a * 2
  for _ in range(3): f(Tensor([1.0, 2.0]))
  with pytest.raises(JitError, match="captured with"): f(Tensor([1.0, 2.0, 3.0]))
