from __future__ import annotations
import contextlib, functools, gc, time
from typing import Callable, Generic, TypeVar, Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, buffers
from tinygrad.device import Buffer, Device
from tinygrad.dtype import DType
from tinygrad.shape.shapetracker import ShapeTracker
from tinygrad.helpers import DEBUG, JIT, JITBEAM, Context, colored
from tinygrad.renderer import Estimates
from tinygrad.engine.realize import ExecItem, Runner, CompiledRunner, JitError, capturing, capturing_inputs
from tinygrad.engine.memory import memory_planner

ReturnType = TypeVar("ReturnType")

class GraphRunner(Runner):
  """Runs a stretch of captured kernels of one device as one launch. A device offers a subclass as `Compiled.graph` (a device
  API that records launches once and submits them together); this base launches from Python, with everything that does not change
  between calls (buffer handles, launch sizes, variable values) worked out once, so a replay skips ExecItem.run's bookkeeping.

  Called with the jit's input buffers that the stretch uses, in the order given here, and the call's variable values."""
  def __init__(self, jit_cache:list[ExecItem], input_rawbuffers:list[Buffer], var_vals:dict[UOp, int]):
    if not all(isinstance(ei.prg, CompiledRunner) for ei in jit_cache): raise TypeError("a GraphRunner runs compiled kernels only")
    self.jit_cache = jit_cache
    index = {id(b): i for i, b in enumerate(input_rawbuffers)}
    # (item, argument) -> the input buffer that goes there; items whose launch size or arguments depend on the variables
    self.input_replace = {(j, i): index[id(b)] for j, ei in enumerate(jit_cache) for i, b in enumerate([x for x in ei.bufs if x is not None])
                          if id(b) in index}
    self.symbolic = [j for j, ei in enumerate(jit_cache) if self._prg(ei).p.vars]
    self.launches = [self._launch(ei, var_vals) for ei in jit_cache]
    self.programs = [self._prg(ei)._prg for ei in jit_cache]
    # what the base launch loop calls: per kernel a callable and its argument list, buffers first (Program.bind where it has one), so a
    # replay is one call per kernel with nothing worked out
    self.calls = [self._bind(j) for j in range(len(jit_cache))]
    self.writes = list({id(b := x.base): b for ei in jit_cache for x in ei.bufs if x is not None}.values())   # (all, to be safe)
    super().__init__(colored(f"<batched {len(jit_cache)}>", "cyan"), jit_cache[0].prg.device,
                     sum((ei.prg.estimates for ei in jit_cache), Estimates()))
  @staticmethod
  def _prg(ei:ExecItem) -> CompiledRunner:
    assert isinstance(ei.prg, CompiledRunner)
    return ei.prg
  def _launch(self, ei:ExecItem, var_vals:dict[UOp, int]) -> list:
    vv, p = {**var_vals, **ei.fixedvars}, self._prg(ei).p
    global_size, local_size = p.launch_dims(vv)
    return [[b.ensure_allocated()._buf for b in ei.bufs if b is not None], tuple(global_size), tuple(local_size) if local_size else None,
            tuple(vv[v] for v in p.vars)]
  def _bind(self, j:int) -> tuple[Callable[..., Any], list]:
    prg, (bufs, global_size, local_size, vals) = self.programs[j], self.launches[j]
    if (bind := getattr(prg, "bind", None)) is not None: return bind(bufs, global_size, local_size, vals)
    return functools.partial(prg, global_size=global_size, local_size=local_size, vals=vals), list(bufs)
  def __call__(self, rawbufs:list[Buffer], var_vals:dict[UOp, int], wait=False) -> float|None:
    calls = self.calls
    for (j, i), k in self.input_replace.items(): self.launches[j][0][i] = calls[j][1][i] = rawbufs[k]._buf
    for j in self.symbolic:
      self.launches[j][1:] = self._launch(self.jit_cache[j], var_vals)[1:]
      calls[j] = self._bind(j)
    for b in self.writes: b.writes += 1   # (bases already)
    for b in rawbufs: b.base.writes += 1
    if wait: st = time.perf_counter()
    for fxn, args in calls: fxn(*args)
    if not wait: return None
    Device[self.device].synchronize()
    return time.perf_counter() - st

def _written(ei:ExecItem) -> list[Buffer]:
  # the buffers an item may write: a kernel's stores (CompiledRunner.outs); for any other item, every buffer it is given
  if isinstance(ei.prg, CompiledRunner): return [b for j in ei.prg.outs if (b := ei.bufs[j]) is not None]
  return [b for b in ei.bufs if b is not None]

def _flatten(name:str, x:Any, out:list[tuple[str, Any]]) -> list[tuple[str, Any]]:
  # tensors inside (nested) tuples, lists and dicts are inputs and outputs too
  if isinstance(x, (tuple, list)):
    for i, y in enumerate(x): _flatten(f"{name}[{i}]", y, out)
  elif isinstance(x, dict):
    for k, y in x.items(): _flatten(f"{name}[{k!r}]", y, out)
  else: out.append((name, x))
  return out

@functools.lru_cache(maxsize=4096)
def _unbind(st:ShapeTracker) -> tuple[ShapeTracker, dict[UOp, int]]: return st.unbind()   # the same views come back every call

def _describe(entry:tuple|None) -> str:
  if entry is None: return "nothing"
  if entry[0] == "Tensor":
    _, st, dtype, device = entry
    shape = tuple(s if isinstance(s, int) else s.render() for s in st.shape)
    return f"a Tensor of shape {shape}, {dtype}, on {device}" + ("" if st.contiguous else f", viewed as {st}")
  if entry[0] == "object": return f"the {entry[1].__name__} object at {entry[2]:#x}"
  return f"the bound variable {entry[1].expr}" if entry[0] == "Variable" else f"{entry[1].__name__} {entry[2]!r}"

def _rebind(u:UOp, binds:dict[UOp, UOp]) -> UOp:
  # the movement ops over an output buffer, with the shape variables bound to this call's values (they sit in the args)
  def sub(a:Any) -> Any: return tuple(sub(x) for x in a) if isinstance(a, tuple) else a.substitute(binds) if isinstance(a, UOp) else a
  return u.replace(src=(_rebind(u.src[0], binds),), arg=sub(u.arg)) if u.op in GroupOp.Movement else u

class TinyJit(Generic[ReturnType]):
  """Capture the kernels a function runs and replay them on new inputs, without running the Python again.

  The first call runs the function eagerly, the second runs it while capturing its kernels, and every later call only replays
  them with the new input buffers. Inputs are the Tensors among the arguments (also inside tuples, lists and dicts) and bound
  Variables; unrealized input Tensors are realized before the call, as in tinygrad. A replay needs the same inputs as the
  capture: the same names, shapes (up to the values of bound Variables), dtypes, devices and views, the same Python values of
  the other plain arguments (ints, floats, strings) and the same other objects; anything else raises JitError saying what
  changed. Reading tensor data (.numpy(), .item(), ...) inside the function is refused while capturing, because a replay could
  not recompute it. See docs/jit.md.

  The returned Tensors are the same objects every call, backed by the same buffers: the next call overwrites a result unless it
  was copied (.numpy(), or `out.clone().realize()`). JIT=0 runs the function eagerly every call (JIT=2: no graph batching);
  JITBEAM=n searches the captured kernels with BEAM=n. Intermediate buffers of the capture share memory (engine/memory.py,
  NO_MEMORY_PLANNER=1 turns it off), and runs of kernels of a device with a graph (`Compiled.graph`) replay as one GraphRunner
  launch. With prune=True the kernels that don't depend on the inputs run only in the capture. A jit called while another
  captures runs its function eagerly, so the outer capture holds its kernels."""
  def __init__(self, fxn:Callable[..., ReturnType]|None, prune:bool=False):
    self.fxn, self.prune = fxn, prune
    self.reset()
    if fxn is not None: functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
  def __get__(self, obj, objtype):  # bind as a method
    return functools.partial(self.__call__, obj)
  def reset(self) -> None:
    """Forget the capture: the next call runs eagerly again."""
    self.cnt = 0
    self.jit_cache: list[ExecItem] = []
    self.signature: list[tuple[str, tuple]] = []
    self.input_replace: list[tuple[int, int, int, DType|None, int, int]] = []  # (item, arg, input, view dtype, size, offset)
    self.symbolic_outputs: list[tuple[Any, UOp]] = []
    self.ret: Any = None
    self.planned_bytes = (0, 0)   # intermediate bytes before and after memory planning
    self.read_only_inputs: set[int] = set()   # the inputs (by position) no captured kernel writes

  def _prepare(self, args:tuple, kwargs:dict) -> tuple[list[tuple[str, tuple]], list[Buffer], dict[UOp, int]]:
    from tinygrad.tensor import Tensor
    flat: list[tuple[str, Any]] = []
    for i, a in enumerate(args): _flatten(f"argument {i}", a, flat)
    for k in sorted(kwargs): _flatten(f"keyword argument {k!r}", kwargs[k], flat)
    if unrealized := [x for _, x in flat if isinstance(x, Tensor) and not x.uop.is_realized]: Tensor.realize(*unrealized)
    signature: list[tuple[str, tuple]] = []
    bufs: list[Buffer] = []
    owner: dict[int, str] = {}
    var_vals: dict[UOp, int] = {}
    for name, x in flat:
      vals: dict[UOp, int] = {}
      if isinstance(x, Tensor):
        if not x.uop.is_realized: raise JitError(f"TinyJit: {name} ({x.uop.base.op}) is not backed by a single device buffer")
        if (other := owner.setdefault(id(buf := x.uop.base.realized), name)) != name:
          raise JitError(f"TinyJit: {other} and {name} are the same buffer; pass each buffer once (or a copy)")
        st, vals = _unbind(x.uop.st)
        signature.append((name, ("Tensor", st, x.dtype, x.device)))
        bufs.append(buf)
      elif isinstance(x, UOp) and x.op is Ops.BIND:
        var, vals[var] = x.unbind()
        signature.append((name, ("Variable", var)))
      # Python values are baked into the captured kernels, so they must not change; other objects (a model, `self` of a jitted
      # method) must be the same object, though what they hold is not checked
      elif x is None or isinstance(x, (bool, int, float, str, bytes)): signature.append((name, ("value", type(x), x)))
      else: signature.append((name, ("object", type(x), id(x))))
      for var, val in vals.items():
        if var_vals.setdefault(var, val) != val: raise JitError(f"TinyJit: variable {var.expr} is bound to {var_vals[var]} and to {val} in {name}")
    return signature, bufs, var_vals

  def __call__(self, *args, **kwargs) -> ReturnType:
    from tinygrad.tensor import Tensor
    if self.fxn is None: raise TypeError("TinyJit has no function to call")
    # JIT=0 runs eagerly; so does a jit called while another captures, whose capture then holds these kernels too
    if not JIT or capturing: return self.fxn(*args, **kwargs)
    signature, in_bufs, var_vals = self._prepare(args, kwargs)
    if self.cnt >= 2: return self._replay(signature, in_bufs, var_vals)
    if self.cnt == 0:
      self.cnt = 1
      ret = self.fxn(*args, **kwargs)
      if first := [x for _, x in _flatten("output", ret, []) if isinstance(x, Tensor)]: Tensor.realize(*first)
      return ret
    self.jit_cache = []
    capturing.append(self.jit_cache)
    capturing_inputs.append(in_bufs)
    try:
      # JITBEAM searches the captured kernels (get_runner keys on BEAM, so they compile anew)
      with Context(BEAM=JITBEAM.value) if JITBEAM >= 1 else contextlib.nullcontext():
        ret = self.fxn(*args, **kwargs)
        outs = [(n, x) for n, x in _flatten("output", ret, []) if isinstance(x, Tensor)]
        if outs: Tensor.realize(*[x for _, x in outs])
    finally: capturing.pop(), capturing_inputs.pop()
    self._finish_capture(signature, in_bufs, var_vals, outs)
    self.ret, self.cnt = ret, 2
    return ret

  def _finish_capture(self, signature:list, in_bufs:list[Buffer], var_vals:dict[UOp, int], outs:list[tuple[str, Any]]):
    index = {id(b): k for k, b in enumerate(in_bufs)}
    for name, t in outs:
      if not t.uop.is_realized: raise JitError(f"TinyJit: {name} ({t.uop.base.op}) is not backed by a single device buffer")
      if id(t.uop.base.realized) in index: raise JitError(f"TinyJit: {name} is an input or a view of one; return a copy (.clone())")
      if t.uop.st.vars(): self.symbolic_outputs.append((t, t.uop))
    computed: list[Buffer] = []
    if self.prune:   # kernels that don't depend on the inputs ran in the capture, and never again
      depends, kept = {id(b) for b in in_bufs}, []
      for ei in self.jit_cache:
        if any(id(b.base) in depends for b in ei.bufs if b is not None):
          depends.update(id(b.base) for b in ei.bufs if b is not None)
          kept.append(ei)
        else: computed.extend(b.base for b in ei.bufs if b is not None)   # what they computed stays, unplanned
      self.jit_cache = kept
    # variables that come from the inputs change between calls; any other stays as it was bound in the capture
    for ei in self.jit_cache: ei.fixedvars = {k: v for k, v in ei.fixedvars.items() if k not in var_vals}
    # every buffer a live tensor holds (outputs, weights, state) survives the call; the rest are intermediates to share
    gc.collect()
    keep = {b.base for b in list(buffers.values())} | {b.base for b in in_bufs} | set(computed)
    # a replay may bind memory of the caller's own to these (OnnxRunner binds numpy arrays in place), as nothing writes into it
    written = {id(b.base) for ei in self.jit_cache for b in _written(ei)}
    self.read_only_inputs = {k for k, b in enumerate(in_bufs) if id(b) not in written}
    self.jit_cache, *planned = memory_planner(self.jit_cache, keep)
    self.planned_bytes = (planned[0], planned[1])
    if JIT < 2: self.jit_cache = self._batch(self.jit_cache, in_bufs, var_vals)
    for j, ei in enumerate(self.jit_cache):
      for i, b in enumerate(ei.bufs):
        if b is not None and (k := index.get(id(b), index.get(id(b._base)))) is not None:
          self.input_replace.append((j, i, k, None, 0, 0) if b._base is None else (j, i, k, b.dtype, b.size, b.offset))
    self.signature = signature
    if DEBUG >= 1: print(f"TinyJit captured {len(self.jit_cache)} items with {len(in_bufs)} input buffers")

  def _batch(self, items:list[ExecItem], in_bufs:list[Buffer], var_vals:dict[UOp, int]) -> list[ExecItem]:
    # runs of compiled kernels on one device whose Compiled.graph exists become one GraphRunner item
    out: list[ExecItem] = []
    run: list[ExecItem] = []
    def flush():
      graph = Device[run[0].prg.device].graph if run else None
      if graph is None or len(run) < 2: out.extend(run)
      else:
        ins = [b for b in in_bufs if any(x is b for ei in run for x in ei.bufs)]
        # a device's own graph gets GraphRunner to build on: runtime/ never imports the engine
        out.append(ExecItem(GraphRunner(list(run), ins, var_vals) if graph is True else graph(GraphRunner, list(run), ins, var_vals), list(ins)))
      run.clear()
    for ei in items:
      batchable = isinstance(ei.prg, CompiledRunner) and not any(b is not None and b._base is not None and b._base in in_bufs for b in ei.bufs)
      if not batchable or (run and run[0].prg.device != ei.prg.device): flush()
      (run if batchable else out).append(ei)
    flush()
    return out

  def _replay(self, signature:list, in_bufs:list[Buffer], var_vals:dict[UOp, int]) -> ReturnType:
    if signature != self.signature:
      was, now = dict(self.signature), dict(signature)
      diffs = [f"{n}: captured with {_describe(was.get(n))}, called with {_describe(now.get(n))}" for n in dict.fromkeys([*was, *now])
               if was.get(n) != now.get(n)]
      raise JitError("TinyJit inputs changed since the capture (reset() the jit to capture again):\n  " + "\n  ".join(diffs))
    for j, i, k, dtype, size, offset in self.input_replace:
      self.jit_cache[j].bufs[i] = in_bufs[k] if dtype is None else in_bufs[k].view(size, dtype, offset)
    for ei in self.jit_cache: ei.run(var_vals, jit=True)
    # outputs with symbolic shapes take this call's values
    for t, u in self.symbolic_outputs:
      t.uop = _rebind(u, {b: b.src[0].bind(var_vals[b.src[0]]) for b in u.st.vars() if b.op is Ops.BIND and b.src[0] in var_vals})
    self.cnt += 1
    return self.ret
