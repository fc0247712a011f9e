"""Run ONNX models with tinygrad: `OnnxRunner(path)({"input": x})` -> {output name: Tensor}, in graph output order.

Each ONNX operator maps onto Tensor ops in a function named after it (ops in extra/onnx_ops.py). Graph inputs are checked against the
graph's value infos. Values are Tensors, Python lists (sequences), None (missing optionals) or numpy object arrays (string tensors).
"""
from __future__ import annotations
import contextlib, ctypes, dataclasses, inspect, pathlib, sys, time
from collections import ChainMap
from typing import Any, Callable
from tinygrad import Tensor, TinyJit, UOp, dtypes, Device
from tinygrad.uop.ops import buffers
from tinygrad.tensor import _to_np_dtype
from tinygrad.helpers import JIT
from tinygrad.engine.realize import BufferCopy, JitError, capturing
from tinygrad.device import Buffer, BufferSpec, is_dtype_supported
from tinygrad.dtype import DType
from extra.onnx_parser import (onnx_load, onnx_load_message, OnnxParser, ModelProto, GraphProto, NodeProto, OnnxTensor, AttributeProto,
                               AttributeType, ValueInfoProto, SparseTensorProto, TypeProto, onnx_dtype, DATA_TYPE_NAMES, TensorDataType,
                               SequenceProto, OptionalProto)

__all__ = ["OnnxRunner", "onnx_load", "onnx_load_message", "OnnxParser", "to_value", "sparse_to_dense"]

def string_array(t: OnnxTensor) -> Any:
  import numpy as np
  return np.array([s.decode("utf-8", errors="replace") for s in t.strings()], dtype=object).reshape(t.shape)

def sparse_to_dense(s: SparseTensorProto, device: str|None = None) -> Tensor:
  if s.values is None or s.indices is None: raise ValueError("sparse tensor without values or indices")
  vals, idx, dims = s.values.to_tensor(device), s.indices.to_tensor(device).cast(dtypes.int64), tuple(s.dims)
  if idx.ndim == 2:   # (nnz, rank) coordinates -> linear indices
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1): strides[i] = strides[i + 1] * dims[i + 1]
    idx = (idx * Tensor(strides, dtype=dtypes.int64, device=device)).sum(1)
  numel = 1
  for d in dims: numel *= d
  return Tensor.zeros(numel, dtype=vals.dtype, device=device).scatter(0, idx.reshape(-1), vals.reshape(-1)).reshape(dims)

def to_value(t: OnnxTensor, device: str|None = None) -> Any:
  """An ONNX TensorProto as a Tensor (a numpy object array for strings); a dtype the device can't hold raises a clear error."""
  if t.data_type == TensorDataType.STRING: return string_array(t)
  dt = onnx_dtype(t.data_type)
  if not is_dtype_supported(dt, device): raise ValueError(f"tensor {t.name!r} has dtype {dt}, which device {device or 'default'} can't hold")
  return t.to_tensor(device)

def message_value(m: Any, device: str|None = None) -> Any:
  """A parsed test-data message (TensorProto, SequenceProto, OptionalProto) as a runner value."""
  if isinstance(m, OnnxTensor): return to_value(m, device)
  if isinstance(m, SequenceProto):
    return [message_value(v, device) for v in m.tensor_values + m.sequence_values + m.optional_values]
  if isinstance(m, OptionalProto):
    inner = next((v for v in (m.tensor_value, m.sequence_value, m.optional_value) if v is not None), None)
    return None if inner is None else message_value(inner, device)
  raise ValueError(f"can't make a value of {type(m).__name__}")

def attribute_value(a: AttributeProto, device: str|None = None) -> Any:
  T, v = AttributeType, a.value
  if a.type == T.STRING: return v.decode("utf-8", errors="surrogateescape")
  if a.type == T.STRINGS: return [s.decode("utf-8", errors="surrogateescape") for s in v]
  if a.type == T.TENSOR: return to_value(v, device)
  if a.type == T.TENSORS: return [to_value(t, device) for t in v]
  if a.type == T.SPARSE_TENSOR: return sparse_to_dense(v, device)
  return v

def _value_kind(t: TypeProto|None) -> str:
  if t is None: return "tensor"
  return "sequence" if t.sequence_type is not None else "optional" if t.optional_type is not None else "map" if t.map_type is not None else "tensor"

class OnnxRunner:
  """Runs an ONNX model: `OnnxRunner(path)(inputs)` -> dict of output Tensors in graph output order.
  model: a path, pathlib.Path, bytes, a Tensor of the file's bytes, or a parsed ModelProto.
  jit: replay the kernels of repeated calls with the same input shapes and dtypes (TinyJit), see __init__; False (or JIT=0): eager."""
  def __init__(self, model: str|pathlib.Path|bytes|Tensor|ModelProto, device: str|None = None, load_external_data: bool = True, jit: bool = True):
    from extra import onnx_ops, onnx_ms_ops  # noqa: F401  (onnx_ms_ops registers the com.microsoft domain)
    self.ops = onnx_ops
    self.model = model if isinstance(model, ModelProto) else onnx_load(model, load_external_data=load_external_data)
    if self.model.graph is None: raise ValueError("the model has no graph")
    self.graph, self.device = self.model.graph, device
    self.attr_cache: dict[int, tuple[Any, Any]] = {}   # id(attribute) -> (attribute, its value)
    self.opsets = self.model.opsets
    self.functions = {(f.domain, f.name): f for f in self.model.functions}
    self.initializers: dict[str, Any] = {t.name: to_value(t, device) for t in self.graph.initializer}
    self.initializers.update({s.values.name: sparse_to_dense(s, device) for s in self.graph.sparse_initializer if s.values is not None})
    self.inputs = [vi for vi in self.graph.input if vi.name not in self.initializers]
    # weights: initializers that are not also graph inputs (those are only defaults a call may override)
    self._constants = {id(v): v for n, v in self.initializers.items() if n not in {vi.name for vi in self.graph.input}}
    # ONNX element types by value name: ops on types held in a wider dtype (int4, fnuz fp8, ...) read the real type here
    self.elem_types: dict[str, int] = {t.name: t.data_type for t in self.graph.initializer}
    self.elem_types.update({vi.name: vi.elem_type for vi in self.graph.input + self.graph.value_info + self.graph.output if vi.elem_type})
    self.debug, self.node_count = 0, 0
    self._shape_values: dict[int, Tensor] = {}   # id -> Tensor of the values computed outside a capture
    # the graph as it runs: nodes that read only weights computed once here, BatchNormalization folded into the Conv before it
    self.exec_graph = dataclasses.replace(self.graph, node=self._fold_batchnorms(self._fold_constants(list(self.graph.node))))
    # calls with the inputs' shapes, dtypes and devices of an earlier call replay that call's kernels (TinyJit): the graph's Python runs
    # only in the first two calls of each input signature. Models with random ops always run eagerly; one that reads tensor data to go on
    # (If, Loop, NonZero ...) fails the capture and runs eagerly from then on, for that signature. jit=False or JIT=0: always eager. The
    # MAX_JITS signatures used last keep their captures.
    self.jit = jit and not any(_is_random(n) for n in _all_nodes(self.graph, self.model.functions))
    self._jits: dict[tuple, TinyJit|None] = {}
    self._handouts: dict[tuple, dict[str, _Handout]] = {}   # signature -> its capture's outputs as callers get them
    self._numpy_replays: dict[tuple, tuple[tuple, list[_NumpyInput], tuple]] = {}   # numpy inputs' signature -> (signature, inputs, prepared)

  def _add_constant(self, name: str, value: Any):
    if isinstance(value, Tensor): value.realize()
    self.initializers[name] = value
    self._constants[id(value)] = value

  def _fold_constants(self, nodes: list[NodeProto]) -> list[NodeProto]:
    """Runs the nodes whose inputs are all weights (or outputs of such nodes) once, keeping their outputs as weights: a transpose or
    reshape of a weight, shape maths on constants. Random and control-flow ops, and outputs much larger than their inputs, stay."""
    overridable = {vi.name for vi in self.graph.input}   # an initializer that is also a graph input is only a default
    const = {n for n in self.initializers if n not in overridable} | {""}
    kept = []
    for node in nodes:
      if node.op_type in _NO_FOLD or not all(n in const for n in node.input) or \
         any(a.type in (AttributeType.GRAPH, AttributeType.GRAPHS) for a in node.attribute):
        kept.append(node)
        continue
      try: outs = self.run_node(node, [self.initializers[n] if n else None for n in node.input], None, self.opsets, self.initializers)
      except Exception:   # left to run (and to raise) with the inputs
        kept.append(node)
        continue
      in_size = sum(v.numel() for n in node.input if n and isinstance(v := self.initializers[n], Tensor))
      if any(isinstance(o, Tensor) and o.numel() > 4 * in_size + 65536 for o in outs):
        kept.append(node)
        continue
      for name, val in zip(node.output, outs):
        if name: self._add_constant(name, val)
      const.update(node.output)
    return kept

  def _fold_batchnorms(self, nodes: list[NodeProto]) -> list[NodeProto]:
    """Conv -> BatchNormalization (inference, weights constant, the Conv's output read by nothing else) becomes one Conv with the BN's
    scale in its weight and its shift in its bias, as onnxruntime does."""
    readers: dict[str, int] = {}
    for node in nodes:
      for n in node.input: readers[n] = readers.get(n, 0) + 1
    outputs = {o.name for o in self.graph.output}
    producer = {node.output[0]: i for i, node in enumerate(nodes) if node.op_type == "Conv" and node.domain in ("", "ai.onnx") and node.output}
    drop: set[int] = set()
    for i, bn in enumerate(nodes):
      if bn.op_type != "BatchNormalization" or bn.domain not in ("", "ai.onnx") or any(bn.output[1:]) or len(bn.input) != 5: continue
      attrs = self.node_attributes(bn, None)
      if attrs.get("training_mode", 0) or (j := producer.get(bn.input[0])) is None: continue
      if readers.get(bn.input[0]) != 1 or bn.input[0] in outputs: continue
      conv = nodes[j]
      has_bias = len(conv.input) > 2 and bool(conv.input[2])
      w, b = self.initializers.get(conv.input[1]) if len(conv.input) > 1 else None, self.initializers.get(conv.input[2]) if has_bias else None
      scale, shift, mean, var = (self.initializers.get(n) for n in bn.input[1:])
      if not all(self.is_constant(v) for v in (w, scale, shift, mean, var)) or (has_bias and not self.is_constant(b)): continue
      if not dtypes.is_float(w.dtype) or w.ndim < 3 or any(v.shape != (w.shape[0],) for v in (scale, shift, mean, var)): continue
      k = scale.cast(dtypes.float32) / (var.cast(dtypes.float32) + attrs.get("epsilon", 1e-5)).sqrt()
      new_w = (w.cast(dtypes.float32) * k.reshape(-1, *[1] * (w.ndim - 1))).cast(w.dtype)
      new_b = (((b.cast(dtypes.float32) if b is not None else 0) - mean.cast(dtypes.float32)) * k + shift.cast(dtypes.float32)).cast(w.dtype)
      wn, bn_name = f"{bn.output[0]}::folded_weight", f"{bn.output[0]}::folded_bias"
      self._add_constant(wn, new_w)
      self._add_constant(bn_name, new_b)
      nodes[j] = dataclasses.replace(conv, input=[conv.input[0], wn, bn_name], output=[bn.output[0]])
      drop.add(i)
    return [node for i, node in enumerate(nodes) if i not in drop]

  def is_constant(self, x: Any) -> bool:
    """Whether x is one of the model's initializers (a weight): ops may prepare such tensors once (pack, check) and reuse the result."""
    return x is not None and self._constants.get(id(x)) is x

  def _check_input(self, vi: ValueInfoProto, value: Any) -> Any:
    kind = _value_kind(vi.type)
    if kind == "optional" and value is None: return None
    if kind == "sequence" or (kind == "optional" and isinstance(value, list)):
      if not isinstance(value, (list, tuple)): raise TypeError(f"input {vi.name!r} is a sequence: expected a list, got {type(value).__name__}")
      return [self._to_tensor(vi.name, v) for v in value]
    value = self._to_tensor(vi.name, value)
    if not isinstance(value, Tensor): return value
    if (et := vi.elem_type if kind == "tensor" else None):
      if et in (21, 22): pass
      elif et not in (TensorDataType.STRING,) and onnx_dtype(et) != value.dtype:
        raise TypeError(f"input {vi.name!r}: expected dtype {onnx_dtype(et)} ({DATA_TYPE_NAMES.get(et)}), got {value.dtype}")
    if (shape := vi.shape) is not None:
      if len(shape) != value.ndim: raise RuntimeError(f"input {vi.name!r}: expected {len(shape)} dims {shape}, got shape {value.shape}")
      for i, (want, got) in enumerate(zip(shape, value.shape)):
        if isinstance(want, int) and want >= 0 and want != got and not (want == 0):
          raise RuntimeError(f"input {vi.name!r}: dim {i} must be {want} (shape {shape}), got shape {value.shape}")
    return value

  def _to_tensor(self, name: str, value: Any) -> Any:
    if isinstance(value, Tensor) or value is None: return value
    if type(value).__module__ == "numpy":
      import numpy as np
      arr = np.asarray(value)
      if arr.dtype == object or arr.dtype.kind in "US": return arr.astype(object)
      dt = dtypes.bool if arr.dtype == np.bool_ else None
      if not arr.flags.c_contiguous: arr = np.ascontiguousarray(arr)
      t = Tensor(arr, device=self.device, dtype=dt)
      if not is_dtype_supported(t.dtype, t.device): raise ValueError(f"input {name!r}: dtype {t.dtype} is not supported on {t.device}")
      return t
    if isinstance(value, (int, float, bool, list)): return Tensor(value, device=self.device)
    raise TypeError(f"input {name!r}: expected a Tensor or numpy array, got {type(value).__name__}")

  def __call__(self, inputs: dict[str, Any], debug: int = 0) -> dict[str, Any]:
    self.debug = debug
    use_jit = self.jit and JIT and not debug and not capturing
    if use_jit and (fast := self._numpy_replays.get(_numpy_key(inputs))) is not None: return self._replay_numpy(inputs, *fast)
    unknown = set(inputs) - {vi.name for vi in self.graph.input}
    if unknown: raise KeyError(f"unknown inputs {sorted(unknown)}; the model's inputs are {[vi.name for vi in self.inputs]}")
    values: dict[str, Any] = dict(self.initializers)
    for vi in self.graph.input:
      if vi.name in inputs: values[vi.name] = self._check_input(vi, inputs[vi.name])
      elif vi.name not in values:
        if _value_kind(vi.type) == "optional": values[vi.name] = None
        else: raise KeyError(f"missing input {vi.name!r} (shape {vi.shape}); the model's inputs are {[v.name for v in self.inputs]}")
    feed = {vi.name: values[vi.name] for vi in self.graph.input if vi.name in inputs}
    if use_jit and all(isinstance(v, Tensor) or v is None for v in feed.values()):
      key = tuple((n, v.shape, v.dtype, v.device) if isinstance(v, Tensor) else (n, None) for n, v in feed.items())
      if key not in self._jits:
        # each capture holds its buffers: the signatures used longest ago are forgotten (inputs of ever new shapes don't pile up)
        while len(self._jits) >= MAX_JITS: self._forget(next(iter(self._jits)))
        rest = {n: v for n, v in values.items() if n not in feed}   # weights, defaults and missing optionals: the same every call
        self._jits[key] = TinyJit(lambda feed: self._run({**rest, **feed}))
      self._jits[key] = jit = self._jits.pop(key)   # most recently used last
      if jit is not None:
        try: ret = self._replay(key, jit, feed)
        except JitError: self._jits[key] = None   # reads tensor data, or returns an input: eager for these shapes
        else:
          # numpy inputs of this signature from now on: copied straight into input buffers of the runner's, no checks or graphs
          if jit.cnt >= 2 and (npkey := _numpy_key(inputs)) is not None and all(_to_np_dtype(feed[n].dtype) == a.dtype for n, a in inputs.items()):
            own = {n: _empty_like(v) for n, v in feed.items()}
            # the runner's own input tensors never change buffers: TinyJit's look at the arguments (signature, buffers) is made once
            prepared = jit._prepare((own,), {})
            index = {id(b): k for k, b in enumerate(prepared[1])}
            ins = [_NumpyInput(k := index[id(own[n].uop.base.buffer)], prepared[1][k], k in jit.read_only_inputs) for n in inputs]
            self._numpy_replays[npkey] = (key, ins, prepared)
          return ret
    return self._run(values)

  def _replay(self, key: tuple, jit: TinyJit, feed: dict[str, Any]|None, prepared: tuple|None = None) -> dict[str, Any]:
    # an output of this capture's last call that is still held gets a copy of its own before the replay overwrites its buffer
    handouts = self._handouts.setdefault(key, {})
    for name, h in list(handouts.items()):
      if h.held(): handouts.pop(name).detach()
    ret = jit._replay(*prepared) if prepared is not None else jit(feed)
    if jit.cnt < 2: return ret   # the first call ran eagerly: its outputs are its own
    out = {}
    for name, v in ret.items():
      if (h := handouts.get(name)) is None or h.src is not v:
        if not isinstance(v, Tensor) or v._plain_buffer() is None:   # a view of a buffer, a sequence: copied
          out[name] = [x.clone().realize() for x in v] if isinstance(v, list) else v.clone().realize() if isinstance(v, Tensor) else v
          continue
        handouts[name] = h = _Handout(v)
      out[name] = h.tensor
    return out

  def _replay_numpy(self, inputs: dict[str, Any], key: tuple, ins: list[_NumpyInput], prepared: tuple) -> dict[str, Any]:
    # a signature replayed before with numpy inputs of these names, shapes and dtypes: the checks passed then, and pass now
    signature, bufs, var_vals = prepared
    for arr, inp in zip(inputs.values(), ins):
      if (buf := inp.bind(arr)) is not bufs[inp.index]:
        if bufs is prepared[1]: bufs = list(bufs)
        bufs[inp.index] = buf
    self._jits[key] = jit = self._jits.pop(key)
    assert jit is not None
    return self._replay(key, jit, None, (signature, bufs, var_vals))

  def _forget(self, key: tuple):
    # a forgotten capture never runs again: the outputs it handed out keep its buffers as they are
    self._jits.pop(key)
    self._handouts.pop(key, None)
    self._numpy_replays = {k: v for k, v in self._numpy_replays.items() if v[0] != key}

  def _run(self, values: dict[str, Any]) -> dict[str, Any]:
    self.node_count = 0
    self._shape_values = dict(self._constants)
    env = self.run_graph(self.exec_graph, values)
    return {o.name: env[o.name] for o in self.graph.output}

  def run_graph(self, graph: GraphProto, env: dict[str, Any]|ChainMap, fn_attrs: dict[str, Any]|None = None,
                opsets: dict[str, int]|None = None) -> dict[str, Any]|ChainMap:
    for i, node in enumerate(graph.node):
      st = time.perf_counter()
      for n in node.input:   # a malformed graph: a clear error, not a bare KeyError
        if n and n not in env: raise ValueError(f"node {node.name or node.op_type!r} reads {n!r}, which no earlier node or input defines")
      ins = [env[n] if n else None for n in node.input]
      if self._is_shape_maths(node, ins):
        with _outside_capture():   # computed once, also while TinyJit captures: its values are constants of the capture, readable
          outs = self.run_node(node, ins, fn_attrs, opsets or self.opsets, env)
          for o in outs:
            if isinstance(o, Tensor): self._shape_values[id(o.realize())] = o
      else: outs = self.run_node(node, ins, fn_attrs, opsets or self.opsets, env)
      for name, val in zip(node.output, outs):
        if name: env[name] = val
      self.node_count += 1
      if self.debug >= 2:
        shapes = [getattr(o, "shape", type(o).__name__) for o in outs]
        print(f"{i:4d} {node.op_type:24s} {(time.perf_counter() - st) * 1e3:8.2f} ms  -> {shapes}")
    return env

  def _is_shape_maths(self, node: NodeProto, ins: list[Any]) -> bool:
    """Shape arithmetic: Shape/Size of anything, a Constant, or an op on small weights and earlier shape values only (Gather of a shape,
    Concat of dims, Range of them ...). Its values depend on the input shapes alone, which a TinyJit capture fixes."""
    if node.op_type in _NO_FOLD or any(a.type in (AttributeType.GRAPH, AttributeType.GRAPHS) for a in node.attribute): return False
    if node.op_type in ("Shape", "Size"): return True
    return all(isinstance(v, Tensor) and self._shape_values.get(id(v)) is v and v.numel() <= 4096 for v in ins if v is not None)

  def node_attributes(self, node: NodeProto, fn_attrs: dict[str, Any]|None) -> dict[str, Any]:
    attrs = {}
    for a in node.attribute:
      if a.ref_attr_name:
        if fn_attrs is not None and a.ref_attr_name in fn_attrs: attrs[a.name] = fn_attrs[a.ref_attr_name]
      else: attrs[a.name] = self.attribute(a)
    return attrs

  def attribute(self, a: Any) -> Any:
    # made once and realized: a Constant's value is then a constant to TinyJit too, readable (shapes, axes) inside a jitted call
    if (v := self.attr_cache.get(id(a))) is None:
      self.attr_cache[id(a)] = v = (a, attribute_value(a, self.device))
      if isinstance(v[1], Tensor): v[1].realize()
    return v[1]

  def run_node(self, node: NodeProto, ins: list[Any], fn_attrs: dict[str, Any]|None, opsets: dict[str, int], env: Any) -> tuple:
    domain = "" if node.domain == "ai.onnx" else node.domain
    attrs = self.node_attributes(node, fn_attrs)
    while ins and ins[-1] is None and node.input and not node.input[len(ins) - 1]: ins.pop()
    if (domain, node.op_type) in self.functions: return self.run_function(self.functions[(domain, node.op_type)], ins, attrs, env)
    opset = opsets.get(domain, opsets.get("", 1) if domain == "" else 1)
    fn = self.ops.lookup(domain, node.op_type, opset)
    if fn is None: raise NotImplementedError(f"ONNX op {node.op_type!r} (domain {domain or 'ai.onnx'!r}, opset {opset}) is not supported")
    params = _params(fn)
    if "opset" in params: attrs["opset"] = opset
    if "n_outputs" in params: attrs["n_outputs"] = len(node.output)
    if "runner" in params: attrs["runner"] = self
    if "env" in params: attrs["env"] = env
    if "in_types" in params: attrs["in_types"] = [self.elem_types.get(n) for n in node.input]
    try: ret = fn(*ins, **attrs)
    except TypeError as e:
      if "argument" in str(e) and node.op_type in str(e): raise NotImplementedError(f"ONNX op {node.op_type!r} (opset {opset}): {e}") from None
      raise
    return ret if isinstance(ret, tuple) else (ret,)

  def run_function(self, f: Any, ins: list[Any], attrs: dict[str, Any], outer: Any) -> tuple:
    fattrs = {a.name: attribute_value(a, self.device) for a in f.attribute_proto}
    fattrs.update(attrs)
    env: dict[str, Any] = {n: v for n, v in zip(f.input, ins)}
    for n in f.input[len(ins):]: env[n] = None
    opsets = dict(self.opsets)
    opsets.update({("" if o.domain == "ai.onnx" else o.domain): o.version for o in f.opset_import})
    self.run_graph(GraphProto(node=f.node), env, fattrs, opsets)
    return tuple(env.get(o) for o in f.output)

  def run_subgraph(self, graph: GraphProto, outer: Any, inputs: list[Any]) -> list[Any]:
    """Run a control-flow body: its inputs bound in order, outer names visible, -> its outputs in order."""
    env = ChainMap({vi.name: v for vi, v in zip(graph.input, inputs)}, outer)
    env.maps[0].update({t.name: to_value(t, self.device) for t in graph.initializer})
    self.run_graph(graph, env)
    return [env[o.name] for o in graph.output]

def _numpy_key(inputs: dict[str, Any]) -> tuple|None:
  """The names, shapes and dtypes of inputs that are all numpy arrays (of numbers), else None."""
  key = []
  for n, v in inputs.items():
    if type(v).__name__ != "ndarray" or v.dtype.hasobject or v.dtype.kind in "USV" or v.size == 0: return None
    key.append((n, v.shape, v.dtype))
  return tuple(key)

def _empty_like(t: Tensor) -> Tensor:
  out = Tensor.empty(*t.shape, dtype=t.dtype, device=t.device)
  out.uop.base.buffer.allocate()
  return out

class _NumpyInput:
  """A numpy input of a replayed signature, given to the capture as its input buffer `index`: copied into the runner's own buffer, or, where
  the device computes on host memory and no kernel of the capture writes this input, bound in place: a Buffer over the array's memory, no
  copy (made again only when a call brings other memory). The array bound last is kept alive with it."""
  def __init__(self, index: int, own: Buffer, read_only: bool):
    self.index, self.own, self.buf, self.ptr, self.arr = index, own, own, 0, None
    self.in_place = read_only and own.nbytes >= IN_PLACE_MIN and getattr(Device[own.device].allocator, "host_memory", False)
  def bind(self, arr: Any) -> Buffer:
    if self.in_place and arr.flags.carray:   # C order, aligned and writable, which c_char.from_buffer needs to give the address
      if (ptr := ctypes.addressof(ctypes.c_char.from_buffer(arr))) != self.ptr:
        self.ptr, self.buf = ptr, Buffer(self.own.device, self.own.size, self.own.dtype, options=BufferSpec(external_ptr=ptr)).allocate()
      self.arr = arr
      return self.buf
    self.own.copyin(memoryview(arr.reshape(-1)))   # (reshape copies only an array that is not contiguous)
    return self.own

class _Handout:
  """An output of a capture as callers get it: the same Tensor every call, on a buffer UOp of its own over the capture's output buffer, so
  no copy is made. The next replay overwrites that buffer: if the caller still holds the Tensor or anything built from it, or the raw Buffer
  behind it (`out.uop.buffer`), which Python's reference counts of the Tensor, its UOp, the buffer UOp and that Buffer show (they are above
  those of this object's own), the held Buffer becomes a copy first (detach) and the call after hands out a new Tensor.
  runner(x)["y"].numpy() keeps nothing: no copy ever."""
  def __init__(self, src: Tensor):
    self.src, plain = src, src._plain_buffer()
    assert plain is not None
    self.buf = plain.buffer
    # a view of the capture's buffer (no copy) where the device has views: a Buffer object of the caller's own, which detach can repoint
    self.view = self.buf.view(self.buf.size, self.buf.dtype, 0) if hasattr(Device[self.buf.device].allocator, "_offset") else self.buf
    self.alias = UOp.new_buffer(self.buf.device, self.buf.size, self.buf.dtype)
    buffers[self.alias] = self.view.ensure_allocated()
    self.tensor = Tensor(self.alias.reshape(src.shape) if src.shape != (self.buf.size,) else self.alias)
    self.uop = self.tensor.uop
    self.refs = self._refs()
  def _refs(self) -> tuple[int, ...]:
    return sys.getrefcount(self.tensor), sys.getrefcount(self.uop), sys.getrefcount(self.alias), sys.getrefcount(self.view)
  def held(self) -> bool: return self._refs() != self.refs
  def detach(self):
    if self.view is self.buf:   # no views: the alias gets a copy (a raw Buffer held is the capture's and is overwritten)
      copy = buffers[self.alias] = Buffer(self.buf.device, self.buf.size, self.buf.dtype).allocate()
    else:   # the view, as everyone holding it sees it, becomes a buffer of its own holding the values
      (copy := self.view)._release()
      copy._base, copy.offset, copy._lb_refcount = None, 0, 0
      copy.allocate()
    BufferCopy(self.buf.nbytes, copy.device, self.buf.device).copy(copy, self.buf)

def _all_nodes(graph: GraphProto, functions: list) -> list[NodeProto]:
  """The graph's nodes, with those of its subgraphs and local functions."""
  nodes, stack = [], [graph, *[GraphProto(node=f.node) for f in functions]]
  while stack:
    for node in stack.pop().node:
      nodes.append(node)
      for a in node.attribute: stack.extend([a.value] if a.type == AttributeType.GRAPH else a.value if a.type == AttributeType.GRAPHS else [])
  return nodes

# draws new values every call (a replay would repeat the capture's); Dropout only with a training_mode input
def _is_random(node: NodeProto) -> bool:
  return node.op_type in _RANDOM_OPS or (node.op_type == "Dropout" and len(node.input) > 2 and bool(node.input[2]))

@contextlib.contextmanager
def _outside_capture():
  # kernels run here are not part of a TinyJit capture in progress: they run once and their buffers are constants of the capture
  from tinygrad.engine.realize import capturing
  saved = capturing[:]
  capturing.clear()
  try: yield
  finally: capturing.extend(saved)

# never run at load: their values change from call to call, or they run subgraphs
_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout", "If", "Loop", "Scan",
            "SequenceMap"}

MAX_JITS = 8   # input signatures an OnnxRunner keeps a capture for
IN_PLACE_MIN = 65536   # bytes from which a numpy input is bound in place, not copied: below, a copy costs less than making a Buffer

_RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}

_PARAMS: dict[Callable, set[str]] = {}
def _params(fn: Callable) -> set[str]:
  if fn not in _PARAMS: _PARAMS[fn] = set(inspect.signature(fn).parameters)
  return _PARAMS[fn]

def dtype_of(onnx_type: int) -> DType: return onnx_dtype(onnx_type)
