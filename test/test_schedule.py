# fusion: how many kernels a graph becomes, and that the fused kernels compute the right thing
import numpy as np
import pytest
from tinygrad import Tensor, GlobalCounters, Device

from tinygrad.helpers import Context
from tinygrad.engine.schedule import create_schedule_with_vars
from tinygrad.engine.realize import run_schedule
from tinygrad.uop import Ops, GroupOp
from tinygrad.schedule.grouper import MAX_KERNEL_OPS, EXPENSIVE

DEVICES = ["CPU", "PYTHON"]

def kernels(*ts:Tensor) -> int:
  # schedule, count the kernels, and run them (a schedule points the tensors at buffers its items fill)
  sched = Tensor.schedule(*ts)
  run_schedule(list(sched))
  return len([si for si in sched if si.ast.op is Ops.SINK])

@pytest.fixture(params=DEVICES)
def device(request): return request.param

def rand(*shape, device="CPU", seed=0):
  return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), device=device)

def test_elementwise_chain_is_one_kernel(device):
  a, b, c = rand(4, 5, device=device, seed=1), rand(4, 5, device=device, seed=2), rand(4, 5, device=device, seed=3)
  out = (a + b) * c
  assert kernels(out) == 1
  np.testing.assert_allclose(out.numpy(), (a.numpy() + b.numpy()) * c.numpy(), rtol=1e-6)

def test_mul_sum_is_one_kernel(device):
  a, b = rand(8, 6, device=device, seed=1), rand(8, 6, device=device, seed=2)
  out = (a * b).sum()
  assert kernels(out) == 1
  np.testing.assert_allclose(out.numpy(), (a.numpy() * b.numpy()).sum(), rtol=1e-5)

def test_softmax_first_step_at_most_two(device):
  x = rand(5, 7, device=device)
  out = x - x.max(axis=1, keepdim=True)
  # max propagates nan like torch: its nan check is a second reduce, which a broadcast puts in a kernel of its own (softmax itself
  # uses the plain MAX reduce, as its max is only a shift)
  assert kernels(out) <= 3
  xn = x.numpy()
  np.testing.assert_allclose(out.numpy(), xn - xn.max(axis=1, keepdims=True), rtol=1e-6)

def test_reduce_then_elementwise_fuses(device):
  x, y = rand(6, 9, device=device, seed=1), rand(6, device=device, seed=2)
  out = x.sum(axis=1) * 2 + y
  assert kernels(out) == 1
  np.testing.assert_allclose(out.numpy(), x.numpy().sum(axis=1) * 2 + y.numpy(), rtol=1e-5)

def test_pad_of_unsafe_op_is_zero_outside(device):
  # exp(0) is 1: the padding of a computed value must still be 0
  x = rand(3, 4, device=device)
  out = x.exp().pad(((1, 1), (2, 0))) + 1
  assert kernels(out) == 1
  ref = np.pad(np.exp(x.numpy()), ((1, 1), (2, 0))) + 1
  np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)

def test_shared_reduce_is_computed_once(device):
  x = rand(16, 16, device=device)
  s = x.sum()
  a, b = s + 1, s * 2
  assert kernels(a, b) == 3
  Tensor.realize(a, b)
  np.testing.assert_allclose(a.numpy(), x.numpy().sum() + 1, rtol=1e-5)
  np.testing.assert_allclose(b.numpy(), x.numpy().sum() * 2, rtol=1e-5)

def test_expensive_value_read_through_an_expand_is_computed_once():
  # gelu(x) @ w reads each gelu value 48 times (once per output column): computed once it is its own kernel, and the matmul a second
  x, w = rand(32, 64, seed=1), rand(64, 48, seed=2)
  xn, wn = x.numpy(), w.numpy()
  want = (0.5 * xn * (1 + np.tanh(0.7978845608 * (xn + 0.044715 * xn ** 3)))) @ wn
  out = x.gelu() @ w
  assert kernels(out) == 2
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  with Context(EXPENSIVE_EXPAND=0):   # off: one kernel that recomputes gelu in the matmul
    out = x.gelu() @ w
    assert kernels(out) == 1
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  # cheap values (no transcendental) and small ones (under 1024 elements) are still recomputed in the reader
  assert kernels((x * 2 + 1).relu() @ w) == 1 and kernels(x[:8, :64].reshape(8, 64).sqrt()[:, :16].reshape(8, 16) @ w[:16]) == 1

def test_realized_tensor_is_reused():
  x = rand(10, 10)
  y = (x + 1).realize()
  z = y * 2
  GlobalCounters.reset()
  z.realize()
  assert GlobalCounters.kernel_count == 1

def test_nothing_runs_before_data_is_asked():
  GlobalCounters.reset()
  x = rand(4, 4)
  y = (x * 3).sum(axis=0) + 1
  assert GlobalCounters.kernel_count == 0
  y.numpy()
  assert GlobalCounters.kernel_count >= 1

def test_long_chain_one_kernel():
  # a 1,000-op elementwise chain: one kernel, no RecursionError, compiled and run from cold
  x = Tensor(np.linspace(-1, 1, 16, dtype=np.float32))
  y = x
  for i in range(1000): y = y * 1.0001 + 0.0001 if i % 2 == 0 else y - 0.00005
  assert kernels(y) == 1
  with Context(CACHELEVEL=0): out = y.numpy()
  ref = np.linspace(-1, 1, 16, dtype=np.float32)
  for i in range(1000): ref = (ref * np.float32(1.0001) + np.float32(0.0001)) if i % 2 == 0 else ref - np.float32(0.00005)
  np.testing.assert_allclose(out, ref, rtol=1e-4)

def test_deep_graph_schedules_without_recursion():
  x = Tensor.ones(4).contiguous().realize()
  y = x
  for _ in range(10000): y = y + 1
  sched, _, _ = create_schedule_with_vars(y.uop.sink())
  # cut into kernels of at most MAX_KERNEL_OPS ops each
  assert len(sched) == -(-10000 // MAX_KERNEL_OPS.value)
  assert y.tolist() == [10001.0] * 4

def _kernel_ops(ast) -> int:
  return sum(128 if u.op in EXPENSIVE else 1 for u in ast.toposort() if u.op in GroupOp.ALU and u.op not in GroupOp.Comparison)

def test_long_chain_with_sines_cut_into_bounded_kernels():
  # a long chain with transcendentals is cut where it passes MAX_KERNEL_OPS (a sine counting 128): compile time stays linear in its length
  xn = np.linspace(-2, 2, 64, dtype=np.float32)
  y = Tensor(xn)
  for i in range(60): y = (y * 1.0001 + 0.5).sin() if i % 3 == 0 else y * 0.999 + 0.001
  with Context(MAX_KERNEL_OPS=600):
    sched, _, _ = create_schedule_with_vars(y.uop.sink())
    asts = [si.ast for si in sched if si.ast.op is Ops.SINK]
    assert len(asts) == 5 and all(_kernel_ops(a) <= 600 for a in asts), [_kernel_ops(a) for a in asts]   # 20 sines, 4 a kernel
    out = y.numpy()
  ref = xn
  for i in range(60): ref = np.sin(ref * np.float32(1.0001) + np.float32(0.5)) if i % 3 == 0 else ref * np.float32(0.999) + np.float32(0.001)
  np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)

def test_chain_of_20000_schedules():
  # 20,000 ops deep with sines: builds and schedules with no RecursionError, into kernels none of which passes the limit
  y = Tensor.ones(1024).contiguous()
  for i in range(20000): y = (y * 1.0001 + 0.5).sin() if i % 3 == 0 else y * 0.999 + 0.001
  sched, _, _ = create_schedule_with_vars(y.uop.sink())
  asts = [si.ast for si in sched if si.ast.op is Ops.SINK]
  assert len(asts) >= 20000 // 3 * 128 // MAX_KERNEL_OPS.value and all(_kernel_ops(a) <= MAX_KERNEL_OPS.value for a in asts)

def test_int64_indexing_big_expand():
  # 3 * 2**30 elements through an expand of a tiny buffer: the index maths needs int64, and needs no memory
  x = Tensor([1.0, 2.0, 3.0]).reshape(3, 1).expand(3, 2**30)
  sl = x[:, 2**30 - 2:]
  np.testing.assert_equal(sl.numpy(), np.array([[1, 1], [2, 2], [3, 3]], dtype=np.float32))
  from tinygrad.engine.realize import get_program
  big = x.contiguous()
  si = [s for s in big.schedule() if s.ast.op is Ops.SINK][0]
  src = get_program(si.ast, Device["CPU"].renderer).src
  assert "long" in src or "int64" in src

def test_copy_between_devices():
  x = rand(3, 3)
  y = (x.to("PYTHON") * 2).to("CPU")
  np.testing.assert_allclose(y.numpy(), x.numpy() * 2, rtol=1e-6)

def test_assign_writes_into_buffer():
  x = Tensor.zeros(4, 4).contiguous().realize()
  buf = x.uop.base.realized
  x.assign(x + 1).realize()
  assert x.uop.base.realized is buf
  np.testing.assert_equal(x.numpy(), np.ones((4, 4), dtype=np.float32))

def test_split_reduce_large_sum():
  # a big reduce to one value is split in two kernels where the first can run on several threads (or GPU workgroups); a CPU running
  # one thread gets one kernel. Both give the exact sum
  x = Tensor(np.arange(1 << 18, dtype=np.float32) % 7).realize()
  for threads, n in ((2, 2), (1, 1)):
    with Context(CPU_THREADS=threads):
      assert kernels(x.sum()) == n
      assert x.sum().item() == (np.arange(1 << 18) % 7).sum()
  xp = x.to("PYTHON").realize()
  with Context(CPU_THREADS=1): assert kernels(xp.sum()) == 2



def test_debug_prints_kernels_and_source(capsys):
  x = rand(7, 9)
  with Context(DEBUG=4, CACHELEVEL=0):
    from tinygrad.engine.realize import method_cache
    method_cache.clear()
    (x * 3 + 1).sum(axis=1).realize()
  out = capsys.readouterr().out
  assert "void r_" in out and "data0" in out       # DEBUG>=4: the generated C
  assert "GFLOPS" in out and "GB/s" in out and "tm" in out   # DEBUG>=2: one line per kernel with time and rates

# ***** the plan cache: the same computation on other buffers reuses the schedule, never its buffers *****

def _new_plans(fxn) -> int:
  from tinygrad.engine import schedule
  before = len(schedule._plans)
  fxn()
  return len(schedule._plans) - before

def test_plan_cache_other_inputs_and_fresh_outputs(device):
  rng = np.random.default_rng(0)
  a1, a2, b = [rng.standard_normal((8, 16), dtype=np.float32) for _ in range(3)]
  tb = Tensor(b, device=device).realize()
  t1 = Tensor(a1, device=device).realize()
  y1 = (t1 @ tb.T).relu().sum(1).realize()
  t2 = Tensor(a2, device=device).realize()
  # same graph on another input buffer: no new plan, right values, and y1 keeps its own buffer
  assert _new_plans(lambda: (t2 @ tb.T).relu().sum(1).realize()) == 0
  y2 = (t2 @ tb.T).relu().sum(1).realize()
  assert y1.uop.base.buffer is not y2.uop.base.buffer
  np.testing.assert_allclose(y1.numpy(), np.maximum(a1 @ b.T, 0).sum(1), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(y2.numpy(), np.maximum(a2 @ b.T, 0).sum(1), rtol=1e-5, atol=1e-5)
  # one buffer used twice is a different graph from two buffers
  np.testing.assert_allclose((t1 + t1).numpy(), a1 + a1)
  np.testing.assert_allclose((t1 + t2).numpy(), a1 + a2)

def test_plan_cache_assign_steps(device):
  # a training-style update: every step is the same plan writing into the same buffer
  w = Tensor(np.ones(16, dtype=np.float32), device=device).realize()
  g = Tensor(np.arange(16, dtype=np.float32), device=device).realize()
  for _ in range(4): w.assign(w - g * 0.5).realize()
  np.testing.assert_allclose(w.numpy(), 1 - 2 * np.arange(16, dtype=np.float32))

def test_plan_cache_keeps_no_buffers(device):
  import gc, weakref
  x = Tensor(np.ones(1024, dtype=np.float32), device=device).realize()
  y = (x * 3 + 1).realize()
  ref = weakref.ref(y.uop.base.buffer)
  del y
  gc.collect()
  assert ref() is None, "a cached plan must not keep an output buffer alive"

def test_plan_cache_off_matches(device):
  x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device).realize()
  with Context(SCHEDULE_CACHE=0): off = (x.exp() / x.exp().sum(1, keepdim=True)).numpy()
  np.testing.assert_allclose((x.exp() / x.exp().sum(1, keepdim=True)).numpy(), off, rtol=1e-6)

def _counts(fxn) -> tuple[int, int, int]:
  # (scheduler runs, plan cache hits, kernels lowered from scratch) while fxn runs
  from tinygrad.engine import schedule, realize
  m, h, lowered = schedule.plan_stats["misses"], schedule.plan_stats["hits"], len(realize.method_cache)
  fxn()
  return schedule.plan_stats["misses"] - m, schedule.plan_stats["hits"] - h, len(realize.method_cache) - lowered

def test_repeated_realize_skips_scheduler_and_lowering(device):
  rng = np.random.default_rng(1)
  an, bn, cn, xn = [rng.standard_normal((8, 8), dtype=np.float32) for _ in range(4)]
  a, b, c, x = [Tensor(v, device=device).realize() for v in (an, bn, cn, xn)]
  graphs = {"a*b+c": (lambda: a*b+c, an*bn+cn), "sum": (lambda: x.sum(), xn.sum()), "matmul": (lambda: a@b, an@bn),
            "softmax": (lambda: x.softmax(-1), np.exp(xn) / np.exp(xn).sum(-1, keepdims=True))}
  for name, (make, ref) in graphs.items():
    make().realize()
    for _ in range(3):
      out = None
      def run():
        nonlocal out
        out = make().realize()
      misses, hits, lowered = _counts(run)
      assert (misses, hits, lowered) == (0, 1, 0), f"{name}: scheduler ran {misses}x, {hits} hits, {lowered} new kernels"
      np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
  # the same structure on other buffers of the same dtype/size/device is a hit too, and reads the new inputs
  out = None
  def on_other_inputs():
    nonlocal out
    out = (c*a+b).realize()
  assert _counts(on_other_inputs)[:2] == (0, 1)
  np.testing.assert_allclose(out.numpy(), cn*an+bn, rtol=1e-6)

@pytest.mark.parametrize("change", ["const", "negzero", "shape", "dtype", "device", "same buffer twice"])
def test_plan_cache_tells_graphs_apart(change):
  # graphs that differ only in a constant, a shape, a dtype, a device or which inputs alias get their own plans and the right values
  xn = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
  x, y = Tensor(xn).realize(), Tensor(xn + 1).realize()
  base = lambda t: (t * 2.0 + y).realize()
  base(x)
  other = {"const": lambda: ((x * 3.0 + y), xn * 3 + xn + 1), "negzero": lambda: ((x * 0.0).reciprocal(), 1 / (xn * np.float32(0.0))),
           "shape": lambda: (Tensor(xn.reshape(4, 3)).realize() * 2.0 + Tensor(xn.reshape(4, 3) + 1), xn.reshape(4, 3) * 2 + xn.reshape(4, 3) + 1),
           "dtype": lambda: (x.cast("float16") * 2.0 + y.cast("float16"), (xn * 2 + xn + 1).astype(np.float16)),
           "device": lambda: (x.to("PYTHON") * 2.0 + y.to("PYTHON"), xn * 2 + xn + 1),
           "same buffer twice": lambda: (x * 2.0 + x, xn * 3)}[change]
  if change == "negzero": (x * -0.0).reciprocal().realize()   # -0.0 and 0.0 hash alike as floats: the plan of one must not serve the other
  with np.errstate(divide="ignore"): t, ref = other()
  misses, _, _ = _counts(lambda: t.realize())
  assert misses == 1
  np.testing.assert_allclose(t.numpy(), ref, rtol=1e-3)

def test_realize_repoints_only_what_it_computed():
  # realize skips tensors that are buffer views; a view that was itself realized (a copy's source) still reads right afterwards
  xn = np.arange(12, dtype=np.float32).reshape(3, 4)
  x = Tensor(xn).realize()
  y = x[1:3]
  z = y.to("PYTHON").realize()
  w = (x * 2).realize()
  np.testing.assert_equal(z.numpy(), xn[1:3])
  np.testing.assert_equal(y.numpy(), xn[1:3])
  np.testing.assert_equal(w.numpy(), xn * 2)
  assert w.uop.base.op is Ops.BUFFER and x.uop.base.op is Ops.BUFFER

def test_conv_with_packed_weight_copies_nothing():
  # a weight packed once (in panels of output channels) is read as it is: the conv is one kernel; unpacked, a CPU conv copies it first
  x, w = Tensor.randn(2, 16, 12, 12).realize(), Tensor.randn(32, 16, 3, 3).realize()
  with Context(PACKED_CONV_MIN=0):
    packed = w.pack_conv_weight()
    assert len(x.conv2d(packed).schedule()) == 1
    assert len(x.conv2d(w).schedule()) == (2 if packed is not w else 1)
    np.testing.assert_allclose(x.conv2d(packed).numpy(), x.conv2d(w).numpy(), atol=1e-4, rtol=1e-4)

# ***** row kernels: a reduce read back along its own row stays in its reader (CPU: global axes are loops) *****

def _torch_ref(f, x:np.ndarray) -> np.ndarray:
  import torch
  return f(torch.from_numpy(x)).numpy()

@pytest.mark.parametrize("shape,axis", [((6, 40), -1), ((5, 13), 1), ((3, 7, 33), -1), ((9, 8), 0), ((4, 6, 5), 1)])
def test_softmax_logsoftmax_layernorm_are_one_kernel_on_cpu(shape, axis):
  import torch
  xn = np.random.default_rng(3).standard_normal(shape).astype(np.float32) * 4
  x = Tensor(xn)
  for f, tf in ((lambda v: v.softmax(axis), lambda v: v.softmax(axis)), (lambda v: v.log_softmax(axis), lambda v: v.log_softmax(axis)),
                (lambda v: (v - v.mean(axis, keepdim=True)) / (v.var(axis, keepdim=True, correction=0) + 1e-5).sqrt(),
                 lambda v: (v - v.mean(axis, keepdim=True)) / (v.var(axis, keepdim=True, unbiased=False) + 1e-5).sqrt())):
    out = f(x)
    # a row that isn't the innermost axes would rerun its reduces for every output row: separate kernels then
    assert (kernels(out) == 1) == (axis in (-1, len(shape) - 1))
    np.testing.assert_allclose(out.numpy(), _torch_ref(tf, xn), rtol=1e-5, atol=2e-6)
  out = x.layernorm(axis if axis == -1 else len(shape) - 1)
  assert kernels(out) == 1
  np.testing.assert_allclose(out.numpy(), torch.nn.functional.layer_norm(torch.from_numpy(xn), shape[-1:]).numpy(), rtol=1e-4, atol=1e-5)

def test_row_kernel_off_and_on_gpu_style_devices():
  x = rand(5, 13)
  with Context(ROW_FUSE=0): assert kernels(x.softmax(-1)) == 3
  # a device with workgroups (PYTHON emulates one) would recompute the row for every output thread: separate kernels there
  assert kernels(rand(5, 13, device="PYTHON").softmax(-1)) == 3
  # a row longer than ROW_FUSE: separate kernels
  with Context(ROW_FUSE=8): assert kernels(x.softmax(-1)) == 3

@pytest.mark.parametrize("after", [lambda t: t[2:], lambda t: t.T, lambda t: t[::2, 1:], lambda t: t @ t.T, lambda t: t.sum(1),
                                   lambda t: t.max(0), lambda t: t.pad(((1, 0), (0, 2))) if isinstance(t, Tensor) else np.pad(t, ((1, 0), (0, 2)))])
def test_row_kernel_output_read_through_views(after):
  # the row kernel's output read through a view, or reduced again: right values whatever the grouper decides
  xn = np.random.default_rng(5).standard_normal((6, 16)).astype(np.float32)
  e = np.exp(xn - xn.max(1, keepdims=True))
  np.testing.assert_allclose(after(Tensor(xn).softmax(-1)).numpy(), after(e / e.sum(1, keepdims=True)), rtol=1e-5, atol=1e-6)

def test_row_kernel_gradient_and_returned_statistics():
  import torch
  xn = np.random.default_rng(6).standard_normal((4, 24)).astype(np.float32)
  x, xt = Tensor(xn, requires_grad=True), torch.from_numpy(xn).requires_grad_(True)
  (x.softmax(-1) * Tensor.arange(24).float()).sum().backward()
  (xt.softmax(-1) * torch.arange(24).float()).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
  # the max is also an output: it is computed once, in its own kernel, and the softmax reads it
  y = Tensor(xn)
  m = y.max(1, keepdim=True)
  sm = (y - m).exp()
  np.testing.assert_allclose(sm.numpy(), np.exp(xn - xn.max(1, keepdims=True)), rtol=1e-6)
  np.testing.assert_allclose(m.numpy(), xn.max(1, keepdims=True))

def _exps_and_stores(t:Tensor) -> list[tuple[int, int]]:
  # per kernel: the EXP nodes of its AST (before decomposition) and its STOREs
  return [(sum(u.op is Ops.EXP for u in si.ast.toposort()), sum(u.op is Ops.STORE for u in si.ast.toposort())) for si in t.schedule()]

@pytest.mark.parametrize("shape", [(6, 40), (3, 1000), (2, 4097), (3, 7, 33), (4, 1), (1, 16)])
def test_softmax_row_kernel_computes_exp_once(shape):
  # the row sum's loop stores exp(x - max) into the output and the output loop scales it in place: one EXP in the kernel, two stores
  import torch
  xn = np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 6
  assert _exps_and_stores(Tensor(xn).softmax(-1)) == [(1, 2 if shape[-1] > 1 else 1)]   # (a row of one has no sum)
  for scale in (1.0, 1e4):   # large values: exp(x - max) underflows for most of the row
    out = Tensor(xn * scale).softmax(-1)
    np.testing.assert_allclose(out.numpy(), torch.from_numpy(xn * scale).softmax(-1).numpy(), rtol=1e-5, atol=1e-7)
  # float64 too; log_softmax and layernorm have no exp to share (one EXP / none already)
  np.testing.assert_allclose(Tensor(xn.astype(np.float64)).softmax(-1).numpy(), torch.from_numpy(xn.astype(np.float64)).softmax(-1).numpy(),
                             rtol=1e-12, atol=1e-15)
  assert _exps_and_stores(Tensor(xn).log_softmax(-1)) == [(1, 1)]

def test_softmax_row_kernel_keeps_its_row_in_one_thread():
  # the exps stored in the sum's loop are scaled by the output's loop: splitting the output's row across threads, or looping over blocks of it
  # around the row's passes, would scale some of them twice or not at all, so those opts are refused there (and allowed on the rows)
  from tinygrad.opt.kernel import Kernel, Opt, OptOps, KernelOptError
  for shape, row_axis in (((1, 64), 0), ((4, 48), 1)):
    k = Kernel(Tensor.ones(*shape).contiguous().softmax(-1).schedule()[-1].ast, Device["CPU"].renderer)
    assert k.reread_axes() == {row_axis}
    for opt in (Opt(OptOps.THREAD, row_axis, 2), Opt(OptOps.BLOCK, row_axis, 2), Opt(OptOps.SWAP, 0, 1)):
      if opt.op is OptOps.THREAD and row_axis != 0: continue
      with pytest.raises(KernelOptError): k.copy().apply_opt(opt)
  k.copy().apply_opt(Opt(OptOps.THREAD, 0, 2))
  assert Kernel(Tensor.ones(4, 48).contiguous().log_softmax(-1).schedule()[-1].ast, Device["CPU"].renderer).reread_axes() == set()

def test_softmax_row_kernel_edge_rows():
  import torch
  xn = np.random.default_rng(8).standard_normal((6, 24)).astype(np.float32)
  xn[1] = -np.inf                      # all -inf: nan, like torch
  xn[2, :5] = -np.inf                  # a masked row
  xn[3, 3] = np.inf                    # inf: nan where x is inf too, like torch
  xn[4, 7] = np.nan
  xn[5] = 3e38                         # all at the top of float32
  np.testing.assert_allclose(Tensor(xn).softmax(-1).numpy(), torch.from_numpy(xn).softmax(-1).numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)
  # half input: computed in float32, stored as half: the float32 exps have nowhere to go, so the output loop recomputes them
  assert _exps_and_stores(Tensor(xn).half().softmax(-1)) == [(2, 1)]

def test_softmax_row_kernel_into_views_and_in_place():
  # the output's own view: a slice of a bigger buffer (assign), the tensor's own buffer (reads its old contents: exp not shared), other axes
  import torch
  xn = np.random.default_rng(9).standard_normal((5, 32)).astype(np.float32)
  ref = torch.from_numpy(xn).softmax(-1).numpy()
  big = Tensor.zeros(5, 48).contiguous().realize()
  big[:, 8:40].assign(Tensor(xn).softmax(-1)).realize()
  np.testing.assert_allclose(big.numpy()[:, 8:40], ref, rtol=1e-6, atol=1e-7)
  np.testing.assert_array_equal(big.numpy()[:, :8], 0)
  np.testing.assert_array_equal(big.numpy()[:, 40:], 0)
  t = Tensor(xn).contiguous().realize()
  t.assign(t.softmax(-1)).realize()
  np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6, atol=1e-7)
  tt = Tensor(xn).T.contiguous().realize()
  np.testing.assert_allclose(tt.T.softmax(-1).numpy(), ref, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(Tensor(xn).softmax(0).numpy(), torch.from_numpy(xn).softmax(0).numpy(), rtol=1e-6, atol=1e-7)

@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_cross_entropy_is_a_row_kernel_with_vector_reduces(ignore_index):
  # log_softmax summed again over the row at the targets: one row kernel whose max, sum of exps and final sum each get a register's lanes
  # (not one scalar loop per reduce), and the mean's count of targets that count needs no pass over the classes
  import torch
  from tinygrad.opt.kernel import Kernel, OptOps
  from tinygrad.opt.heuristic import hand_coded_optimizations
  rng = np.random.default_rng(10)
  xn, yn = rng.standard_normal((64, 40)).astype(np.float32) * 3, rng.integers(0, 40, 64).astype(np.int32)
  yn[:5] = 3
  x, y = Tensor(xn), Tensor(yn)
  sched = x.cross_entropy(y, ignore_index=ignore_index).schedule()
  assert len(sched) == 2
  row = max(sched, key=lambda si: sum(u.op is Ops.REDUCE_AXIS for u in si.ast.toposort()))
  opts = hand_coded_optimizations(Kernel(row.ast, Device["CPU"].renderer))
  assert sum(o.op is OptOps.UNROLL for o in opts) >= 3
  ref = torch.nn.functional.cross_entropy(torch.from_numpy(xn), torch.from_numpy(yn).long(), ignore_index=ignore_index)
  np.testing.assert_allclose(x.cross_entropy(y, ignore_index=ignore_index).numpy(), ref.numpy(), rtol=1e-5)

def test_loss_class_ids_built_once():
  # a loss's class indices (an arange: many tensor ops of Python) are built once per (classes, device, dtype) and reused every step
  import torch
  from tinygrad.tensor import _class_ids
  rng = np.random.default_rng(11)
  for n, ydt in ((7, np.int32), (7, np.int64), (12, np.int32)):
    xn, yn = rng.standard_normal((5, n)).astype(np.float32), rng.integers(0, n, 5).astype(ydt)
    for _ in range(2):
      got = Tensor(xn).cross_entropy(Tensor(yn)).numpy()
      np.testing.assert_allclose(got, torch.nn.functional.cross_entropy(torch.from_numpy(xn), torch.from_numpy(yn).long()).numpy(), rtol=1e-5)
  assert _class_ids(7, "CPU", Tensor(np.zeros(1, np.int64)).dtype) is _class_ids(7, "CPU", Tensor(np.zeros(1, np.int64)).dtype)
  np.testing.assert_array_equal(Tensor(_class_ids(12, "CPU", Tensor(np.zeros(1, np.int32)).dtype)).numpy(), np.arange(12))

def test_reading_a_scheduled_tensor_before_its_schedule_runs():
  # .schedule() points the tensor at the buffer its kernels will fill; reading it before they run is a clear error, after gives the data
  x = np.arange(8*16*32, dtype=np.float32).reshape(8, 16, 32)
  t = Tensor(x).permute(1, 0, 2).contiguous()
  sched = t.schedule()
  with pytest.raises(RuntimeError, match="never filled"): t.numpy()
  run_schedule(sched)
  np.testing.assert_array_equal(t.numpy(), x.transpose(1, 0, 2))

def test_cached_kernels_run_and_count_like_the_general_path(capsys):
  # a kernel compiled before runs straight from the runner cache; the counters and results are those of the ExecItem path (DEBUG=2 takes it)
  x = Tensor(np.arange(64, dtype=np.float32)).realize()
  (x * 2 + 1).realize()
  stats = []
  for debug in (0, 2):
    with Context(DEBUG=debug):
      GlobalCounters.reset()
      y = (x * 2 + 1).realize()
      stats.append((GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem))
    np.testing.assert_equal(y.numpy(), np.arange(64) * 2 + 1)
  assert stats[0] == stats[1] and stats[0][0] == 1 and stats[0][1] > 0
  assert "GFLOPS" in capsys.readouterr().out

def test_cached_kernel_with_a_variable():
  from tinygrad import Variable
  x = Tensor(np.arange(32, dtype=np.float32)).realize()
  v = Variable("n", 1, 32)
  for n in (5, 9, 5, 17):
    y = (x.shrink(((0, v.bind(n)),)) * 3).sum().realize()
    assert y.item() == 3 * sum(range(n))
