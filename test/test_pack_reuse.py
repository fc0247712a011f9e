# a packed operand (schedule/packing.py) of a realized buffer is made once and reused until the buffer is written (run_schedule, Buffer.writes)
import unittest
import numpy as np
from tinygrad import Tensor, TinyJit, GlobalCounters, Device
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD, Adam

@unittest.skipUnless(Device[Device.DEFAULT].renderer.packs_operands, "the renderer packs no operands")
class TestPackReuse(unittest.TestCase):
  def setUp(self):
    self.ctx = Context(PACKED_DOT_MIN=1 << 15); self.ctx.__enter__()
    self.a, self.b = Tensor.randn(32, 64).realize(), Tensor.randn(64, 64).realize()
  def tearDown(self): self.ctx.__exit__(None, None, None)
  def mm(self, b=None) -> int:
    b = self.b if b is None else b
    GlobalCounters.reset()
    out = (self.a @ b).realize()
    k = GlobalCounters.kernel_count
    np.testing.assert_allclose(out.numpy(), self.a.numpy() @ b.numpy(), rtol=1e-4, atol=1e-4)
    return k
  def check_repacked(self, write):
    self.assertEqual(self.mm(), 2)   # the packing kernel and the GEMM
    self.assertEqual(self.mm(), 1)   # the GEMM alone
    write()
    self.assertEqual(self.mm(), 2)
    self.assertEqual(self.mm(), 1)

  def test_flag_off_packs_every_call(self):
    with Context(PACK_REUSE=0):
      for _ in range(3): self.assertEqual(self.mm(), 2)

  def test_assign(self): self.check_repacked(lambda: self.b.assign(Tensor.randn(64, 64)).realize())
  def test_add_assign(self): self.check_repacked(lambda: self.b.assign(self.b + 1).realize())
  def test_buffer_copy(self):
    from tinygrad.engine.realize import BufferCopy
    from tinygrad.device import Buffer
    from tinygrad.dtype import dtypes
    src = Buffer(self.b.device, 64*64, dtypes.float32, initial_value=np.full((64, 64), 3, np.float32).tobytes())
    self.check_repacked(lambda: BufferCopy(src.nbytes, self.b.device, src.device).exec([self.b.uop.buffer, src]))
  def test_setitem(self):
    def w(): self.b[3:5] = 7.0
    self.check_repacked(w)
  def test_copyin(self): self.check_repacked(lambda: self.b.uop.buffer.copyin(memoryview(np.full((64, 64), 2, np.float32).data)))
  def test_sgd(self):
    self.b.requires_grad = True
    def w():
      opt = SGD([self.b], lr=0.1)
      with Tensor.train():
        opt.zero_grad(); (self.a @ self.b).sum().backward(); opt.step()
    self.check_repacked(w)
  def test_adam(self):
    self.b.requires_grad = True
    def w():
      opt = Adam([self.b], lr=0.1)
      with Tensor.train():
        opt.zero_grad(); (self.a @ self.b).square().sum().backward(); opt.step()
    self.check_repacked(w)
  def test_view_of_base(self):
    # b is a view of a bigger buffer: a kernel writing another view of the same base (overlapping b) repacks
    big = Tensor.randn(128, 64).realize()
    b = big[32:96]
    self.assertEqual(self.mm(b), 2)
    self.assertEqual(self.mm(b), 1)
    big[64:70].assign(Tensor.ones(6, 64)).realize()
    self.assertEqual(self.mm(b), 2)
  def test_jit_replay(self):
    @TinyJit
    def step(x:Tensor):
      x2 = (x * 2).realize()   # (two kernels: the replays run them as one GraphRunner)
      self.b.assign(self.b * 0.5 + x2).realize()
    for i in range(4):
      step(Tensor.full((64, 64), float(i)).contiguous().realize())
      self.assertEqual(self.mm(), 2)   # (the replays write b through the jit's graph: repacked)
      self.assertEqual(self.mm(), 1)
  def test_write_between_in_one_schedule(self):
    # a matmul of b, b written, a matmul of the new b, all in one schedule (twice: the second run finds the first's copies)
    for _ in range(2):
      bn = self.b.numpy()
      c1 = self.a @ self.b
      self.b.assign(self.b + 1)
      c2 = self.a @ self.b
      Tensor.realize(c1, c2)
      np.testing.assert_allclose(c1.numpy(), self.a.numpy() @ bn, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(c2.numpy(), self.a.numpy() @ (bn + 1), rtol=1e-4, atol=1e-4)
  def test_rerun_schedule(self):
    from tinygrad.engine.realize import run_schedule
    c = self.a @ self.b
    self.b.assign(self.b * 2)
    sched = Tensor.schedule(c, self.b)   # the matmul reads the old b: its packing runs before the assign
    bn = self.b.uop.buffer.numpy().reshape(64, 64).copy()
    run_schedule(list(sched))
    np.testing.assert_allclose(c.numpy(), self.a.numpy() @ bn, rtol=1e-4, atol=1e-4)
    run_schedule(list(sched))   # again: the old b is now bn*2, its copy made then; c from it
    np.testing.assert_allclose(c.numpy(), self.a.numpy() @ (bn * 2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(self.b.numpy(), bn * 4, rtol=1e-6)
  def test_fresh_b(self):
    self.assertEqual(self.mm(Tensor.randn(64, 64).realize()), 2)
    self.assertEqual(self.mm(Tensor.randn(64, 64).realize()), 2)
  def test_zero_copy_view_escapes(self):
    # a writable view of b's memory handed out: b's packs are never reused again
    self.mm()
    if (mv := self.b.uop.buffer.as_buffer(allow_zero_copy=True)).readonly: self.skipTest("no zero-copy view")
    np.frombuffer(mv, np.float32)[:] = 3.0
    self.assertEqual(self.mm(), 2)
    self.assertEqual(self.mm(), 2)
  def test_freed_with_source(self):
    import weakref
    self.mm()
    ref = weakref.ref(next(iter(self.b.uop.buffer.packs.values()))[1])
    del self.b
    import gc; gc.collect()
    self.assertIsNone(ref())

if __name__ == "__main__": unittest.main()
