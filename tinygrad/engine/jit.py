from __future__ import annotations
import contextlib, functools
from typing import Callable, Generic, TypeVar, Any
from tinygrad.uop.ops import UOp
from tinygrad.device import Buffer
from tinygrad.helpers import DEBUG, JIT, JITBEAM, Context, colored
from tinygrad.engine.realize import ExecItem, Runner, capturing

ReturnType = TypeVar("ReturnType")

class GraphRunner(Runner):
  """Runs a captured list of kernels as one launch where the device can batch them; the base version just loops."""
  def __init__(self, jit_cache:list[ExecItem], input_rawbuffers:list[Buffer], var_vals:dict[UOp, int]):
    self.jit_cache = jit_cache
    super().__init__(colored(f"<batched {len(jit_cache)}>", "cyan"), jit_cache[0].prg.device if jit_cache else "CPU")
  def __call__(self, rawbufs:list[Buffer], var_vals:dict[UOp, int], wait=False) -> float|None:
    total = 0.0
    for ei in self.jit_cache: total += ei.run(var_vals, wait=wait, jit=True) or 0.0
    return total if wait else None

class JitError(Exception): pass

class TinyJit(Generic[ReturnType]):
  """Run a function twice normally (the second run is captured), then replay its kernels with new inputs, skipping Python."""
  def __init__(self, fxn:Callable[..., ReturnType]|None, prune:bool=False):
    self.fxn, self.prune = fxn, prune
    self.cnt = 0
    self.jit_cache: list[ExecItem] = []
    self.input_positions: list[tuple[int, int, int]] = []   # (exec item, buffer slot, input index)
    self.expected: list[tuple[tuple, Any, str]] = []
    self.ret: Any = None
    if fxn is not None: functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
  def __get__(self, obj, objtype):  # bind as a method
    return functools.partial(self.__call__, obj)
  def reset(self):
    self.cnt, self.jit_cache, self.input_positions, self.ret = 0, [], [], None

  def _inputs(self, args, kwargs) -> list:
    from tinygrad.tensor import Tensor
    return [t for t in list(args) + [kwargs[k] for k in sorted(kwargs)] if isinstance(t, Tensor)]

  def __call__(self, *args, **kwargs) -> ReturnType:
    from tinygrad.tensor import Tensor
    assert self.fxn is not None, "TinyJit without a function"
    inputs = self._inputs(args, kwargs)
    if inputs: Tensor.realize(*[t.contiguous() if not t.uop.is_realized else t for t in inputs])
    inputs = self._inputs(args, kwargs)
    if not JIT or self.cnt == 0:
      self.cnt += 1
      return self.fxn(*args, **kwargs)
    if self.cnt == 1:
      capturing.append(self.jit_cache)
      try:
        # the captured kernels run for the life of the jit: JITBEAM searches them (method_cache keys on BEAM, so they compile anew)
        with Context(BEAM=JITBEAM.value) if JITBEAM >= 1 else contextlib.nullcontext():
          ret = self.fxn(*args, **kwargs)
          outs = [t for t in (ret if isinstance(ret, (tuple, list)) else [ret]) if isinstance(t, Tensor)]
          if outs: Tensor.realize(*outs)
      finally: capturing.pop()
      in_bufs = [t.uop.base.realized for t in inputs]
      self.expected = [(t.shape, t.dtype, t.device) for t in inputs]
      for i, ei in enumerate(self.jit_cache):
        for j, b in enumerate(ei.bufs):
          for k, ib in enumerate(in_bufs):
            if b is not None and ib is not None and b is ib: self.input_positions.append((i, j, k))
      if DEBUG >= 1: print(f"JIT captured {len(self.jit_cache)} kernels with {len(in_bufs)} inputs")
      self.ret, self.cnt = ret, 2
      return ret
    got = [(t.shape, t.dtype, t.device) for t in inputs]
    if got != self.expected: raise JitError(f"TinyJit inputs changed: captured with {self.expected}, called with {got}")
    in_bufs = [t.uop.base.realized for t in inputs]
    for i, j, k in self.input_positions: self.jit_cache[i].bufs[j] = in_bufs[k]
    for ei in self.jit_cache: ei.run(jit=True)
    return self.ret

