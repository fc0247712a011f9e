# TinyJit: the second call is captured, later calls replay the kernels on the new inputs
import gc
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, GlobalCounters, Variable, Device, dtypes
from tinygrad.helpers import Context, CACHELEVEL
from tinygrad.engine import realize
from tinygrad.engine.jit import JitError, GraphRunner
from tinygrad.engine.memory import memory_planner

@pytest.fixture
def compiles(monkeypatch):
  # counts kernels optimized and rendered (every compile goes through get_program)
  count = [0]
  orig = realize.get_program
  def counted(*args, **kwargs):
    count[0] += 1
    return orig(*args, **kwargs)
  monkeypatch.setattr(realize, "get_program", counted)
  monkeypatch.setattr(CACHELEVEL, "value", 0)   # every kernel built here, none from the program cache on disk
  return count

def _rand(rng, *shape): return rng.standard_normal(shape, dtype=np.float32)

def test_jit_replays_with_new_inputs():
  calls = 0
  @TinyJit
  def f(a:Tensor, b:Tensor) -> Tensor:
    nonlocal calls
    calls += 1
    return (a * b + 1).sum(axis=1)
  rng = np.random.default_rng(0)
  for i in range(5):
    an, bn = _rand(rng, 4, 8), _rand(rng, 4, 8)
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

def _mlp_weights(rng, layers=10, width=64): return [Tensor(_rand(rng, width, width) * 0.2).realize() for _ in range(layers)]
def _mlp(ws, x:Tensor) -> Tensor:
  for w in ws: x = (x @ w).relu()
  return x
def _mlp_np(ws, x):
  for w in ws: x = np.maximum(x @ w.numpy(), 0)
  return x

def test_mlp_replay_equals_eager(compiles):
  rng = np.random.default_rng(1)
  ws = _mlp_weights(rng)
  f = TinyJit(lambda x: _mlp(ws, x))
  for i in range(5):
    if i == 2: compiled = compiles[0]
    xn = _rand(rng, 16, 64)
    np.testing.assert_allclose(f(Tensor(xn)).numpy(), _mlp_np(ws, xn), rtol=1e-4, atol=1e-5)
  assert compiles[0] == compiled   # the replays compiled nothing
  assert len(f.jit_cache) >= 1

def _train(steps:int, jit:bool, rng_seed:int=2):
  rng = np.random.default_rng(rng_seed)
  w1 = Tensor(_rand(rng, 8, 16) * 0.3, requires_grad=True).realize()
  w2 = Tensor(_rand(rng, 16, 4) * 0.3, requires_grad=True).realize()
  def step(x:Tensor, y:Tensor) -> Tensor:
    loss = (((x @ w1).relu() @ w2 - y) ** 2).mean()
    loss.backward()
    for w in (w1, w2):
      w.assign(w - 0.1 * w.grad)
      w.grad = None
    Tensor.realize(w1, w2)
    return loss
  fn = TinyJit(step) if jit else step
  losses = [fn(Tensor(_rand(rng, 32, 8)), Tensor(_rand(rng, 32, 4))).item() for _ in range(steps)]
  return losses, w1.numpy(), w2.numpy()

def test_train_step_replay_equals_eager():
  (jl, jw1, jw2), (el, ew1, ew2) = _train(6, jit=True), _train(6, jit=False)
  np.testing.assert_allclose(jl, el, rtol=1e-5)
  np.testing.assert_allclose(jw1, ew1, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(jw2, ew2, rtol=1e-5, atol=1e-6)
  assert len(set(jl)) == 6   # the weights really changed every step

def test_rand_is_fresh_every_call():
  def f(x:Tensor) -> Tensor: return x + Tensor.rand(3, 4)
  def run(fn):
    Tensor.manual_seed(5)
    return [fn(Tensor.zeros(3, 4).contiguous()).numpy() for _ in range(5)]
  eager, jitted = run(f), run(TinyJit(f))
  for e, j in zip(eager, jitted): np.testing.assert_equal(j, e)
  assert len({a.tobytes() for a in jitted}) == 5

def test_changed_shape_raises_clear_error():
  @TinyJit
  def f(a:Tensor) -> Tensor: return a * 2
  for _ in range(3): f(Tensor([1.0, 2.0]))
  with pytest.raises(JitError, match=r"argument 0: captured with a Tensor of shape \(2,\).*called with a Tensor of shape \(3,\)"):
    f(Tensor([1.0, 2.0, 3.0]))
  with pytest.raises(JitError, match="dtypes.int"): f(Tensor([1, 2], dtype=dtypes.int32))
  with pytest.raises(RuntimeError, match="argument 1: captured with nothing"): f(Tensor([1.0, 2.0]), Tensor([1.0]))
  with pytest.raises(JitError, match="keyword argument 'scale'"): f(Tensor([1.0, 2.0]), scale=Tensor([1.0]))
  base = Tensor([[1.0, 2.0], [3.0, 4.0]]).realize()
  with pytest.raises(JitError, match="viewed as"): f(base[:, 0])   # same shape, a strided view
  np.testing.assert_equal(f(Tensor([4.0, 5.0])).numpy(), [8.0, 10.0])   # a refused call leaves the capture usable
  f.reset()
  np.testing.assert_equal(f(Tensor([1.0, 2.0, 3.0])).numpy(), [2.0, 4.0, 6.0])

def test_python_values_are_checked():
  @TinyJit
  def f(a:Tensor, k:float) -> Tensor: return a * k
  for _ in range(3): f(Tensor([1.0, 2.0]), 3.0)
  np.testing.assert_equal(f(Tensor([1.0, 2.0]), 3.0).numpy(), [3.0, 6.0])
  with pytest.raises(JitError, match="argument 1: captured with float 3.0, called with float 4.0"): f(Tensor([1.0, 2.0]), 4.0)

def test_other_objects_must_be_the_same():
  class Model:
    def __init__(self, k:float): self.w = Tensor([k, k]).realize()
    @TinyJit
    def __call__(self, x:Tensor) -> Tensor: return x * self.w
  m1, m2 = Model(2.0), Model(3.0)
  for i in range(3): np.testing.assert_equal(m1(Tensor([1.0, float(i)])).numpy(), [2.0, 2.0 * i])
  # a jitted method is shared by the instances: another instance would silently replay m1's weights
  with pytest.raises(JitError, match="argument 0: captured with the Model object at"): m2(Tensor([1.0, 1.0]))

def test_same_buffer_twice_is_refused():
  @TinyJit
  def f(a:Tensor, b:Tensor) -> Tensor: return a + b
  x = Tensor([1.0, 2.0]).realize()
  with pytest.raises(JitError, match="argument 0 and argument 1 are the same buffer"): f(x, x)
  with pytest.raises(JitError, match="same buffer"): f([x, x.reshape(2, 1)], x)

def test_unrealized_inputs_are_realized():
  @TinyJit
  def f(a:Tensor) -> Tensor: return a * 2
  for i in range(4):
    a = Tensor([1.0, 2.0]) + i   # not realized: the jit realizes it before the call
    np.testing.assert_equal(f(a).numpy(), [2.0 + 2 * i, 4.0 + 2 * i])
    assert a.uop.is_realized

def test_inputs_in_lists_and_views():
  @TinyJit
  def f(xs:list, d:dict) -> Tensor: return xs[0] * xs[1] + d["b"]
  for i in range(4):
    big = Tensor(np.arange(8, dtype=np.float32) + i).realize()
    out = f([big[2:5], Tensor([1.0, 2.0, 3.0])], {"b": Tensor([1.0, 1.0, 1.0]) * i})
    np.testing.assert_equal(out.numpy(), (np.arange(2, 5) + i) * np.array([1, 2, 3]) + i)

def test_data_reads_and_input_outputs_are_refused():
  @TinyJit
  def f(a:Tensor) -> float: return (a * 2).sum().item()
  assert f(Tensor([1.0, 2.0])) == 6.0   # the first call runs eagerly
  with pytest.raises(JitError, match="read inside a jitted function"): f(Tensor([1.0, 2.0]))
  @TinyJit
  def g(a:Tensor) -> tuple: return a * 2, a
  g(Tensor([1.0]))
  with pytest.raises(JitError, match=r"output\[1\] is an input"): g(Tensor([1.0]))

def test_constant_reads_are_allowed_input_reads_refused():
  # realized data that neither the capture's kernels nor the jit's inputs touch is the same in every replay: reading it is fine
  axes = Tensor([1, 0]).realize()
  @TinyJit
  def f(a:Tensor) -> Tensor: return a.permute(*axes.tolist()) * 2
  for i in range(4): np.testing.assert_equal(f(Tensor([[float(i), 1.0]])).numpy(), [[2.0 * i], [2.0]])
  @TinyJit
  def g(a:Tensor) -> Tensor: return a * a.tolist()[0]
  g(Tensor([3.0]))
  with pytest.raises(JitError, match="read inside a jitted function"): g(Tensor([3.0]))

def test_outputs_are_reused_between_calls():
  @TinyJit
  def f(a:Tensor) -> Tensor: return a * 10
  for i in range(3): f(Tensor([float(i)]))
  out1 = f(Tensor([1.0]))
  kept = out1.numpy().copy()
  out2 = f(Tensor([2.0]))
  # the same Tensor, overwritten by the next call: copy a result to keep it
  assert out1 is out2
  np.testing.assert_equal(out1.numpy(), [20.0])
  np.testing.assert_equal(kept, [10.0])

def test_jit_0_runs_eagerly_every_call():
  calls = 0
  def body(a:Tensor) -> Tensor:
    nonlocal calls
    calls += 1
    return a + 1
  f = TinyJit(body)
  with Context(JIT=0):
    for i in range(4): np.testing.assert_equal(f(Tensor([float(i)])).numpy(), [i + 1.0])
  assert calls == 4 and f.jit_cache == [] and f.cnt == 0

def test_jitbeam_searches_only_captured_kernels(monkeypatch):
  import tinygrad.codegen.program as program
  searched = []
  monkeypatch.setattr(program, "beam_search", lambda k, rawbufs, amt: searched.append(amt) or k)
  @TinyJit
  def f(a:Tensor) -> Tensor: return (a * 3 + 7.25).sum()
  with Context(JITBEAM=2, BEAM_MIN_WORK=0, CACHELEVEL=0):
    f(Tensor([1.0, 2.0]))
    assert searched == []   # the eager first call uses the default optimizer
    for _ in range(3): np.testing.assert_allclose(f(Tensor([1.0, 2.0])).numpy(), 23.5)
  assert searched == [2]

def test_memory_planner_reduces_peak_memory():
  rng = np.random.default_rng(3)
  ws = _mlp_weights(rng)
  xn = _rand(rng, 32, 64)
  results, used = {}, {}
  for plan in (True, False):
    gc.collect()
    start = GlobalCounters.mem_used
    f = TinyJit(lambda x: _mlp(ws, x))
    with Context(NO_MEMORY_PLANNER=int(not plan)):
      for _ in range(3): out = f(Tensor(xn))
    gc.collect()
    used[plan], results[plan] = GlobalCounters.mem_used - start, (out.numpy(), f.planned_bytes)
    del f, out
  np.testing.assert_allclose(results[True][0], _mlp_np(ws, xn), rtol=1e-4, atol=1e-5)
  (before, after), (unplanned, _) = results[True][1], results[False][1]
  # 10 layers: 9 intermediate activations of 32x64 floats share 2 buffers
  assert before == unplanned == 9 * 32 * 64 * 4 and after == 2 * 32 * 64 * 4
  assert used[False] - used[True] == before - after

def test_memory_planner_never_overlaps_live_buffers():
  rng = np.random.default_rng(4)
  a, b = Tensor(_rand(rng, 8, 8)).realize(), Tensor(_rand(rng, 8, 8)).realize()
  @TinyJit
  def f(x:Tensor) -> Tensor:
    # many intermediates alive at once, of different sizes and dtypes
    h1 = (x @ a).contiguous()
    h2 = (x @ b).contiguous()
    h3 = (h1.cast(dtypes.float16) * 2).contiguous()
    h4 = (h2.sum(1) + 1).contiguous()
    return (h3.cast(dtypes.float32) + h2 - h4.reshape(8, 1) + h1).sum(0)
  for _ in range(4):
    xn = _rand(rng, 8, 8)
    h1, h2 = xn @ a.numpy(), xn @ b.numpy()
    h3 = (h1.astype(np.float16) * 2).astype(np.float32)
    np.testing.assert_allclose(f(Tensor(xn)).numpy(), (h3 + h2 - (h2.sum(1) + 1)[:, None] + h1).sum(0), rtol=2e-3, atol=1e-2)

def test_memory_planner_keeps_given_buffers():
  rng = np.random.default_rng(5)
  ws = _mlp_weights(rng, layers=4, width=8)
  f = TinyJit(lambda x: _mlp(ws, x))
  for _ in range(3): f(Tensor(_rand(rng, 2, 8)))
  items = f.jit_cache
  every = {b.base for ei in items for b in ei.bufs if b is not None}
  same, before, after = memory_planner(items, every)
  assert (before, after) == (0, 0) and [ei.bufs for ei in same] == [ei.bufs for ei in items]

class CountingGraph(GraphRunner):
  calls = 0
  built: list[int] = []
  def __init__(self, jit_cache, input_rawbuffers, var_vals):
    CountingGraph.built.append(len(jit_cache))
    super().__init__(jit_cache, input_rawbuffers, var_vals)
  def __call__(self, rawbufs, var_vals, wait=False):
    CountingGraph.calls += 1
    return super().__call__(rawbufs, var_vals, wait)

def counting_graph(base, jit_cache, input_rawbuffers, var_vals):   # a device's Compiled.graph: given the engine's GraphRunner to build on
  assert base is GraphRunner
  return CountingGraph(jit_cache, input_rawbuffers, var_vals)

def test_graph_runner_batches_kernels(monkeypatch):
  monkeypatch.setattr(Device[Device.DEFAULT], "graph", counting_graph)
  CountingGraph.calls, CountingGraph.built = 0, []
  @TinyJit
  def f(a:Tensor, b:Tensor) -> Tensor:
    for _ in range(5): a = (a * 1.5 + b).contiguous()
    return a
  for i in range(5):
    an, bn = np.full(4, float(i), np.float32), np.arange(4, dtype=np.float32)
    ref = an
    for _ in range(5): ref = ref * 1.5 + bn
    np.testing.assert_allclose(f(Tensor(an), Tensor(bn)).numpy(), ref, rtol=1e-6)
  assert CountingGraph.built == [5] and CountingGraph.calls == 3 and len(f.jit_cache) == 1

def test_graph_runner_without_graph(monkeypatch):
  monkeypatch.setattr(Device[Device.DEFAULT], "graph", None)
  @TinyJit
  def f(a:Tensor) -> Tensor: return (a + 1).contiguous() * 2
  for i in range(4): np.testing.assert_equal(f(Tensor([float(i)])).numpy(), [2.0 * (i + 1)])
  assert not any(isinstance(ei.prg, GraphRunner) for ei in f.jit_cache)

@pytest.mark.parametrize("graph", [None, CountingGraph])
def test_variables_replay_without_recompiling(compiles, monkeypatch, graph):
  monkeypatch.setattr(Device[Device.DEFAULT], "graph", graph and counting_graph)
  v = Variable("n", 1, 10)
  @TinyJit
  def f(a:Tensor) -> tuple[Tensor, Tensor]: return (a * 2).sum(0), (a + 1).sum(1)
  data = np.arange(40, dtype=np.float32).reshape(10, 4)
  big = Tensor(data).realize()
  for i, n in enumerate((3, 5, 7, 2, 9)):
    if i == 2: compiled = compiles[0]
    cols, rows = f(big.shrink(((0, v.bind(n)), (0, 4))))
    np.testing.assert_equal(cols.numpy(), (data[:n] * 2).sum(0))
    # the symbolic output takes this call's value
    assert rows.shape[0].unbind() == (v, n)
    np.testing.assert_equal(rows.sum().numpy(), (data[:n] + 1).sum())
  assert compiles[0] == compiled   # neither the replays nor the eager `rows.sum()` of a new value compile

def test_bound_variable_argument():
  v = Variable("k", 1, 8)
  @TinyJit
  def f(a:Tensor, k) -> Tensor: return a.shrink(((0, k),)).sum()
  data = np.arange(8, dtype=np.float32)
  for n in (2, 4, 8, 1, 5): np.testing.assert_equal(f(Tensor(data), v.bind(n)).numpy(), data[:n].sum())
  with pytest.raises(JitError, match="variable k is bound to 2 and to 3 in argument 1"): f(Tensor(data).shrink(((0, v.bind(2)),)), v.bind(3))

def test_default_device_graph_batches():
  # the CPU device offers the base GraphRunner: a replay of several kernels is one batched launch
  if Device[Device.DEFAULT].graph is None: pytest.skip(f"{Device.DEFAULT} has no graph")
  @TinyJit
  def f(a:Tensor) -> Tensor: return ((a + 1).contiguous() * 2).contiguous() - 3
  for i in range(4): np.testing.assert_equal(f(Tensor([float(i)])).numpy(), [2.0 * (i + 1) - 3])
  graph = Device[Device.DEFAULT].graph
  assert [type(ei.prg) for ei in f.jit_cache] == [GraphRunner if graph is True else graph]
  with Context(JIT=2):   # JIT=2 captures without graphs
    g = TinyJit(f.fxn)
    for i in range(3): np.testing.assert_equal(g(Tensor([float(i)])).numpy(), [2.0 * (i + 1) - 3])
  assert len(g.jit_cache) == 3 and not any(isinstance(ei.prg, GraphRunner) for ei in g.jit_cache)

def test_prune_drops_kernels_independent_of_inputs():
  w = Tensor([1.0, 2.0, 3.0]).realize()
  def body(a:Tensor) -> Tensor: return a * (w * 2 + 1).contiguous()
  full, pruned = TinyJit(body), TinyJit(body, prune=True)
  with Context(JIT=2):   # no graph, so jit_cache lists every kernel
    for i in range(4):
      for f in (full, pruned): np.testing.assert_equal(f(Tensor([float(i)] * 3)).numpy(), [3.0 * i, 5.0 * i, 7.0 * i])
  assert (len(full.jit_cache), len(pruned.jit_cache)) == (2, 1)

def test_nested_jit_is_captured_by_the_outer():
  inner = TinyJit(lambda a: (a * 3).contiguous())
  @TinyJit
  def outer(a:Tensor) -> Tensor: return inner(a) + 1
  for _ in range(3): inner(Tensor([0.0]))   # the inner jit is already replaying when the outer captures
  for i in range(4): np.testing.assert_equal(outer(Tensor([float(i)])).numpy(), [3.0 * i + 1])

def _chain_items(sizes, dtype=dtypes.float32, device="PYTHON"):
  # item i reads buffer i and writes buffer i+1: buffer 0 is the input, the last one the output
  from tinygrad.device import Buffer
  from tinygrad.engine.realize import ExecItem, Runner
  bufs = [Buffer(device, s, dtype) for s in sizes]
  return bufs, [ExecItem(Runner("k", device), [bufs[i + 1], bufs[i]]) for i in range(len(sizes) - 1)]

def test_memory_planner_liveness_with_views():
  bufs, items = _chain_items([16, 8, 32, 4, 16, 16])
  planned, before, after = memory_planner(items, {bufs[0], bufs[-1]})
  assert before == (8 + 32 + 4 + 16) * 4
  # two slots alternate; each is as large as the largest buffer it holds
  slot = [ei.bufs[0].base for ei in planned[:-1]]
  assert slot[0] is slot[2] and slot[1] is slot[3] and slot[0] is not slot[1]
  assert after == slot[0].nbytes + slot[1].nbytes == (8 + 32) * 4   # 8,4 share one slot (grown to 16 floats), 32,16 the other
  assert all(ei.bufs[1] is planned[i - 1].bufs[0] or i == 0 for i, ei in enumerate(planned))   # reader and writer agree
  assert planned[0].bufs[1] is bufs[0] and planned[-1].bufs[0] is bufs[-1]   # input and output untouched

def test_memory_planner_exact_sizes_without_views(monkeypatch):
  monkeypatch.setattr(Device["PYTHON"], "allocator", object())   # an allocator without _offset can't make views
  bufs, items = _chain_items([16, 8, 32, 8, 32, 8, 16])
  planned, before, after = memory_planner(items, {bufs[0], bufs[-1]})
  got = [ei.bufs[0] for ei in planned[:-1]]
  assert [b.size for b in got] == [8, 32, 8, 32, 8] and all(b._base is None for b in got)
  # the first 8 is freed after item 1, so item 2's output takes it, and so on: one buffer per size
  assert got[0] is got[2] and got[2] is got[4] and got[1] is got[3] and got[0] is not got[1]
  assert after == (8 + 32) * 4 and before == (8 + 32 + 8 + 32 + 8) * 4

def test_structured_outputs():
  @TinyJit
  def f(a:Tensor) -> dict:
    return {"double": a * 2, "pair": (a + 1, "label", 3), "none": None}
  for i in range(4):
    out = f(Tensor([float(i), 1.0]))
    np.testing.assert_equal(out["double"].numpy(), [2.0 * i, 2.0])
    np.testing.assert_equal(out["pair"][0].numpy(), [i + 1.0, 2.0])
    assert out["pair"][1:] == ("label", 3) and out["none"] is None

@pytest.mark.parametrize("jit,planner", [(1, 1), (2, 1), (1, 0), (2, 0)])
def test_constant_made_inside_is_not_an_intermediate(jit, planner):
  # Tensor([...]) inside the function is a buffer filled from Python before its kernel reads it, and its Tensor is gone after the
  # capture. The planner took it for an intermediate and gave it the memory of two dead ones: every replay read their values instead
  with Context(JIT=jit, NO_MEMORY_PLANNER=1 - planner):
    @TinyJit
    def f(x:Tensor) -> Tensor:
      k = ((x * 2).contiguous() + (x * 3).contiguous()).contiguous()
      return (k * Tensor([1.0, 2.0, 3.0, 4.0])).contiguous()
    for i in range(5):
      xn = np.arange(4, dtype=np.float32) + i
      np.testing.assert_equal(f(Tensor(xn)).numpy(), xn * 5 * np.array([1, 2, 3, 4], np.float32))

def test_memory_planner_leaves_buffers_read_before_written():
  bufs, items = _chain_items([4, 4, 4, 4])
  from tinygrad.device import Buffer
  from tinygrad.engine.realize import ExecItem, Runner
  const = Buffer("PYTHON", 4, dtypes.float32)
  items.append(ExecItem(Runner("k", "PYTHON"), [Buffer("PYTHON", 4, dtypes.float32), bufs[-1], const]))
  planned, before, after = memory_planner(items, {bufs[0], bufs[-1]})
  assert planned[-1].bufs[2] is const and before == 3 * 4 * 4   # the two in the chain and the last output; const keeps its data

def _gelu_np(x): return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

@pytest.mark.parametrize("jit,planner", [(1, 1), (2, 1), (1, 0), (2, 0)])
def test_shared_intermediates_replay_equals_numpy(jit, planner):
  # intermediates read by two later kernels each, through several layers, with constants made inside and three outputs
  rng = np.random.default_rng(7)
  wn = [_rand(rng, 16, 16) * 0.3 for _ in range(3)]
  ws = [Tensor(w).realize() for w in wn]
  def fn(x:Tensor, y:Tensor):
    h, peaks = x, []
    for w in ws:
      g = (h @ w).gelu().contiguous()
      a = (g * 2 + y).sum(1, keepdim=True)
      h = ((g - y).relu() + a * Tensor([0.5])).contiguous()
      peaks.append(g.max(1))
    return h, peaks[0] + peaks[-1], (y * 3).contiguous()
  def fn_np(x, y):
    h, peaks = x, []
    for w in wn:
      g = _gelu_np(h @ w)
      h = np.maximum(g - y, 0) + (g * 2 + y).sum(1, keepdims=True) * 0.5
      peaks.append(g.max(1))
    return h, peaks[0] + peaks[-1], y * 3
  with Context(JIT=jit, NO_MEMORY_PLANNER=1 - planner):
    f = TinyJit(fn)
    for _ in range(6):
      xn, yn = _rand(rng, 8, 16), _rand(rng, 8, 16)
      for got, want in zip(f(Tensor(xn), Tensor(yn)), fn_np(xn, yn)): np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("threads,symbolic", [(1, True), (2, False)])
def test_graph_launch_loop_binds_each_kernel_once(threads, symbolic):
  # the base GraphRunner calls one bound callable per kernel (CPUProgram.bind: the kernel's own function with no argument conversion, or
  # its threaded launch); replays with new inputs, threaded kernels and variables still give numpy's answers
  if Device[Device.DEFAULT].graph is not True: pytest.skip(f"{Device.DEFAULT} has its own graph")
  v = Variable("n", 1, 64)
  with Context(CPU_THREADS=threads, THREAD_MIN_WORK=1):
    @TinyJit
    def f(a:Tensor, b:Tensor) -> tuple[Tensor, Tensor]: return ((a * 2 + b).contiguous() * 3).sum(0), (a - b).contiguous().sum(1).sum()
    rng = np.random.default_rng(0)
    for n in (64, 17, 40, 5, 64):
      an, bn = _rand(rng, 64, 256), _rand(rng, 64, 256)
      if not symbolic: n = 64
      rows = ((0, v.bind(n) if symbolic else n), None)
      x, s = f(Tensor(an).shrink(rows), Tensor(bn).shrink(rows))
      np.testing.assert_allclose(x.numpy(), ((an[:n] * 2 + bn[:n]) * 3).sum(0), rtol=1e-5, atol=1e-5)
      np.testing.assert_allclose(s.numpy(), (an[:n] - bn[:n]).sum(), rtol=1e-4, atol=1e-3)
  (graph,) = [ei.prg for ei in f.jit_cache]
  assert isinstance(graph, GraphRunner) and len(graph.calls) == len(graph.jit_cache) >= 2
  for (fxn, args), p, (bufs, gs, _, vals) in zip(graph.calls, graph.programs, graph.launches):
    if gs[0] == 1: assert fxn is p._plain and fxn.argtypes is None and args == [*bufs, *vals]
    assert args[:len(bufs)] == bufs   # the buffers the last replay used, inputs swapped in
  assert (threads > 1) == any(gs[0] > 1 for _, gs, _, _ in graph.launches)   # with 2 threads some kernel is split among them
