"""An ONNX file reader that decodes the protobuf wire format itself: no `onnx` or `protobuf` package at run time.

`onnx_load(fn)` returns a `ModelProto` made of plain dataclasses. Tensor payloads stay memoryview slices of the file (mapped with mmap)
until `OnnxTensor.to_tensor()` or `.payload()` is called. Malformed input raises ValueError: lengths, varints and nesting are all
bounds-checked, and nothing recurses deeper than MAX_DEPTH messages.
"""
from __future__ import annotations
import math, mmap, os, pathlib, struct
from dataclasses import dataclass, field
from typing import Any
from tinygrad import Tensor, dtypes
from tinygrad.dtype import DType

MAX_DEPTH = 64   # nested messages (a subgraph costs 3): deeper input is refused rather than risking Python's recursion limit
_U64 = 1 << 64

# ***** wire format *****

def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
  result = shift = 0
  for _ in range(10):
    if pos >= end: raise ValueError(f"truncated varint at byte {pos}")
    b = buf[pos]
    pos += 1
    result |= (b & 0x7f) << shift
    if b < 0x80: return result & (_U64 - 1), pos
    shift += 7
  raise ValueError(f"varint longer than 10 bytes at byte {pos - 10}")

def _signed64(v: int) -> int: return v - _U64 if v >= 1 << 63 else v
def _zigzag(v: int) -> int: return (v >> 1) ^ -(v & 1)

WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_START_GROUP, WIRE_END_GROUP, WIRE_FIXED32 = 0, 1, 2, 3, 4, 5

def _skip(buf: memoryview, pos: int, end: int, wire: int) -> int:
  if wire == WIRE_VARINT: return _varint(buf, pos, end)[1]
  if wire == WIRE_FIXED64: n = 8
  elif wire == WIRE_FIXED32: n = 4
  elif wire == WIRE_LEN: n, pos = _varint(buf, pos, end)
  else: raise ValueError(f"unsupported wire type {wire} at byte {pos} (groups are not used by ONNX)")
  if n > end - pos: raise ValueError(f"field of {n} bytes at byte {pos} runs past the end of its message ({end - pos} bytes left)")
  return pos + n

# Field kinds: 'i' signed varint (int32/int64/enum), 'u' unsigned varint, 'z' zigzag varint (sint64), 'f' float (fixed32), 'd' double
# (fixed64), 's' string, 'b' bytes (a memoryview, zero-copy), 'F'/'D' repeated float/double kept as raw little-endian bytes,
# or the name of a message. A schema maps field number -> (attribute name, kind, repeated).
Schema = dict[int, tuple[str, str, bool]]
SCHEMAS: dict[str, Schema] = {
  "StringStringEntryProto": {1: ("key", "s", False), 2: ("value", "s", False)},
  "OperatorSetIdProto": {1: ("domain", "s", False), 2: ("version", "i", False)},
  "Segment": {1: ("begin", "i", False), 2: ("end", "i", False)},
  "OnnxTensor": {1: ("dims", "i", True), 2: ("data_type", "i", False), 3: ("segment", "Segment", False), 4: ("float_data", "F", True),
                 5: ("int32_data", "i", True), 6: ("string_data", "b", True), 7: ("int64_data", "i", True), 8: ("name", "s", False),
                 9: ("raw_data", "b", False), 10: ("double_data", "D", True), 11: ("uint64_data", "u", True), 12: ("doc_string", "s", False),
                 13: ("external_data", "StringStringEntryProto", True), 14: ("data_location", "i", False),
                 16: ("metadata_props", "StringStringEntryProto", True)},
  "SparseTensorProto": {1: ("values", "OnnxTensor", False), 2: ("indices", "OnnxTensor", False), 3: ("dims", "i", True)},
  "Dimension": {1: ("dim_value", "i", False), 2: ("dim_param", "s", False), 3: ("denotation", "s", False)},
  "TensorShapeProto": {1: ("dim", "Dimension", True)},
  "TensorTypeProto": {1: ("elem_type", "i", False), 2: ("shape", "TensorShapeProto", False)},
  "SequenceTypeProto": {1: ("elem_type", "TypeProto", False)},
  "MapTypeProto": {1: ("key_type", "i", False), 2: ("value_type", "TypeProto", False)},
  "OptionalTypeProto": {1: ("elem_type", "TypeProto", False)},
  "TypeProto": {1: ("tensor_type", "TensorTypeProto", False), 4: ("sequence_type", "SequenceTypeProto", False),
                5: ("map_type", "MapTypeProto", False), 9: ("optional_type", "OptionalTypeProto", False),
                8: ("sparse_tensor_type", "TensorTypeProto", False), 6: ("denotation", "s", False)},
  "ValueInfoProto": {1: ("name", "s", False), 2: ("type", "TypeProto", False), 3: ("doc_string", "s", False),
                     4: ("metadata_props", "StringStringEntryProto", True)},
  "AttributeProto": {1: ("name", "s", False), 21: ("ref_attr_name", "s", False), 13: ("doc_string", "s", False), 20: ("type", "i", False),
                     2: ("f", "f", False), 3: ("i", "i", False), 4: ("s", "b", False), 5: ("t", "OnnxTensor", False), 6: ("g", "GraphProto", False),
                     22: ("sparse_tensor", "SparseTensorProto", False), 14: ("tp", "TypeProto", False), 7: ("floats", "f", True),
                     8: ("ints", "i", True), 9: ("strings", "b", True), 10: ("tensors", "OnnxTensor", True), 11: ("graphs", "GraphProto", True),
                     23: ("sparse_tensors", "SparseTensorProto", True), 15: ("type_protos", "TypeProto", True)},
  "NodeProto": {1: ("input", "s", True), 2: ("output", "s", True), 3: ("name", "s", False), 4: ("op_type", "s", False),
                7: ("domain", "s", False), 8: ("overload", "s", False), 5: ("attribute", "AttributeProto", True), 6: ("doc_string", "s", False),
                9: ("metadata_props", "StringStringEntryProto", True)},
  "GraphProto": {1: ("node", "NodeProto", True), 2: ("name", "s", False), 5: ("initializer", "OnnxTensor", True),
                 15: ("sparse_initializer", "SparseTensorProto", True), 10: ("doc_string", "s", False), 11: ("input", "ValueInfoProto", True),
                 12: ("output", "ValueInfoProto", True), 13: ("value_info", "ValueInfoProto", True),
                 16: ("metadata_props", "StringStringEntryProto", True)},
  "FunctionProto": {1: ("name", "s", False), 4: ("input", "s", True), 5: ("output", "s", True), 6: ("attribute", "s", True),
                    11: ("attribute_proto", "AttributeProto", True), 7: ("node", "NodeProto", True), 8: ("doc_string", "s", False),
                    9: ("opset_import", "OperatorSetIdProto", True), 10: ("domain", "s", False), 13: ("overload", "s", False),
                    12: ("value_info", "ValueInfoProto", True), 14: ("metadata_props", "StringStringEntryProto", True)},
  "ModelProto": {1: ("ir_version", "i", False), 8: ("opset_import", "OperatorSetIdProto", True), 2: ("producer_name", "s", False),
                 3: ("producer_version", "s", False), 4: ("domain", "s", False), 5: ("model_version", "i", False), 6: ("doc_string", "s", False),
                 7: ("graph", "GraphProto", False), 14: ("metadata_props", "StringStringEntryProto", True),
                 25: ("functions", "FunctionProto", True)},
  "SequenceProto": {1: ("name", "s", False), 2: ("elem_type", "i", False), 3: ("tensor_values", "OnnxTensor", True),
                    4: ("sparse_tensor_values", "SparseTensorProto", True), 5: ("sequence_values", "SequenceProto", True),
                    6: ("map_values", "MapProto", True), 7: ("optional_values", "OptionalProto", True)},
  "MapProto": {1: ("name", "s", False), 2: ("key_type", "i", False), 3: ("keys", "i", True), 4: ("string_keys", "b", True),
               5: ("values", "SequenceProto", False)},
  "OptionalProto": {1: ("name", "s", False), 2: ("elem_type", "i", False), 3: ("tensor_value", "OnnxTensor", False),
                    4: ("sparse_tensor_value", "SparseTensorProto", False), 5: ("sequence_value", "SequenceProto", False),
                    6: ("map_value", "MapProto", False), 7: ("optional_value", "OptionalProto", False)},
}
_SCALAR_WIRE = {"i": WIRE_VARINT, "u": WIRE_VARINT, "z": WIRE_VARINT, "f": WIRE_FIXED32, "d": WIRE_FIXED64, "F": WIRE_FIXED32, "D": WIRE_FIXED64}

def _scalar(buf: memoryview, pos: int, end: int, kind: str) -> tuple[Any, int]:
  if kind in "iuz":
    v, pos = _varint(buf, pos, end)
    return (_signed64(v) if kind == "i" else _zigzag(v) if kind == "z" else v), pos
  n = 4 if kind in "fF" else 8
  if end - pos < n: raise ValueError(f"truncated fixed{n * 8} value at byte {pos}")
  if kind in "FD": return buf[pos:pos + n], pos + n
  return struct.unpack_from("<f" if n == 4 else "<d", buf, pos)[0], pos + n

def _decode(buf: memoryview, pos: int, end: int, msg: str, depth: int) -> Any:
  if depth > MAX_DEPTH: raise ValueError(f"messages nested deeper than {MAX_DEPTH} levels (at a {msg})")
  schema, cls = SCHEMAS[msg], MESSAGE_CLASSES[msg]
  values: dict[str, Any] = {}
  while pos < end:
    key, pos = _varint(buf, pos, end)
    num, wire = key >> 3, key & 7
    if num == 0: raise ValueError(f"field number 0 at byte {pos} in a {msg}")
    if (spec := schema.get(num)) is None:
      pos = _skip(buf, pos, end, wire)
      continue
    name, kind, repeated = spec
    if kind in SCHEMAS or kind in "sb":
      if wire != WIRE_LEN: raise ValueError(f"{msg}.{name} (field {num}) has wire type {wire}, expected {WIRE_LEN} (length-delimited)")
      n, pos = _varint(buf, pos, end)
      if n > end - pos: raise ValueError(f"{msg}.{name} claims {n} bytes at byte {pos}, only {end - pos} left in its message")
      if kind == "s":
        try: val: Any = bytes(buf[pos:pos + n]).decode()
        except UnicodeDecodeError as e: raise ValueError(f"{msg}.{name} is not valid UTF-8: {e}") from None
      elif kind == "b": val = buf[pos:pos + n]
      else: val = _decode(buf, pos, pos + n, kind, depth + 1)
      pos += n
    elif repeated and wire == WIRE_LEN:   # packed repeated scalars
      n, pos = _varint(buf, pos, end)
      if n > end - pos: raise ValueError(f"{msg}.{name} claims {n} bytes at byte {pos}, only {end - pos} left in its message")
      if kind in "FD":
        if n % (4 if kind == "F" else 8): raise ValueError(f"{msg}.{name}: packed {n} bytes are not whole {'floats' if kind == 'F' else 'doubles'}")
        values.setdefault(name, []).append(buf[pos:pos + n])
        pos += n
        continue
      lst, stop = values.setdefault(name, []), pos + n
      while pos < stop:
        v, pos = _scalar(buf, pos, stop, kind)
        lst.append(v)
      continue
    else:
      if wire != _SCALAR_WIRE[kind]: raise ValueError(f"{msg}.{name} (field {num}) has wire type {wire}, expected {_SCALAR_WIRE[kind]}")
      val, pos = _scalar(buf, pos, end, kind)
    if repeated: values.setdefault(name, []).append(val)
    else: values[name] = val
  if pos != end: raise ValueError(f"a {msg} runs past its end")
  return cls(**values)

# ***** data types *****

class TensorDataType:   # ONNX TensorProto.DataType
  UNDEFINED, FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16, DOUBLE, UINT32, UINT64 = range(14)
  COMPLEX64, COMPLEX128, BFLOAT16, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, UINT4, INT4, FLOAT4E2M1 = range(14, 24)
  FLOAT8E8M0, UINT2, INT2 = 24, 25, 26

DATA_TYPE_NAMES = {v: k for k, v in vars(TensorDataType).items() if not k.startswith("_")}
# ONNX data type -> tinygrad dtype. Types tinygrad has no dtype for are held in a wider one with their values decoded: 2- and 4-bit ints
# unpacked to 8-bit ints, the fnuz fp8s, fp4 (e2m1) and e8m0 to float32
ONNX_DTYPES: dict[int, DType] = {
  1: dtypes.float32, 2: dtypes.uint8, 3: dtypes.int8, 4: dtypes.uint16, 5: dtypes.int16, 6: dtypes.int32, 7: dtypes.int64, 9: dtypes.bool,
  10: dtypes.float16, 11: dtypes.float64, 12: dtypes.uint32, 13: dtypes.uint64, 16: dtypes.bfloat16, 17: dtypes.fp8e4m3, 19: dtypes.fp8e5m2,
  21: dtypes.uint8, 22: dtypes.int8, 25: dtypes.uint8, 26: dtypes.int8,
  18: dtypes.float32, 20: dtypes.float32, 23: dtypes.float32, 24: dtypes.float32}
SUBBYTE_BITS = {21: 4, 22: 4, 25: 2, 26: 2, 23: 4}   # elements packed several to a byte, low bits first
EMULATED_FLOATS = (18, 20, 23, 24)

def decode_small_float(code: int, data_type: int) -> float:
  """The value of one fnuz fp8 (18, 20), fp4 e2m1 (23) or e8m0 (24) code."""
  if data_type == 24: return math.nan if code == 0xff else 2.0 ** (code - 127)
  ebits, mbits, bias, nbits = {18: (4, 3, 8, 8), 20: (5, 2, 16, 8), 23: (2, 1, 1, 4)}[data_type]
  if nbits == 8 and code == 0x80: return math.nan   # fnuz: "negative zero" is the only NaN
  sign = -1.0 if code >> (nbits - 1) else 1.0
  e, m = (code >> mbits) & ((1 << ebits) - 1), code & ((1 << mbits) - 1)
  if e == 0: return sign * m / (1 << mbits) * 2.0 ** (1 - bias)
  return sign * (1 + m / (1 << mbits)) * 2.0 ** (e - bias)

DTYPE_TO_ONNX: dict[DType, int] = {v: k for k, v in ONNX_DTYPES.items() if k not in SUBBYTE_BITS and k not in EMULATED_FLOATS}

def onnx_dtype(data_type: int) -> DType:
  if (dt := ONNX_DTYPES.get(data_type)) is None:
    raise ValueError(f"ONNX data type {DATA_TYPE_NAMES.get(data_type, data_type)} has no tinygrad dtype (supported: "
                     f"{', '.join(DATA_TYPE_NAMES[k] for k in ONNX_DTYPES)})")
  return dt

# ***** messages *****

@dataclass
class StringStringEntryProto:
  key: str = ""
  value: str = ""

@dataclass
class OperatorSetIdProto:
  domain: str = ""
  version: int = 0

@dataclass
class Segment:
  begin: int = 0
  end: int = 0

@dataclass
class OnnxTensor:   # TensorProto
  dims: list[int] = field(default_factory=list)
  data_type: int = 0
  segment: Segment|None = None
  float_data: list = field(default_factory=list)     # memoryviews of little-endian float32 bytes
  int32_data: list[int] = field(default_factory=list)
  string_data: list = field(default_factory=list)    # memoryviews
  int64_data: list[int] = field(default_factory=list)
  name: str = ""
  raw_data: Any = None                               # memoryview (zero-copy slice of the file) or None
  double_data: list = field(default_factory=list)
  uint64_data: list[int] = field(default_factory=list)
  doc_string: str = ""
  external_data: list[StringStringEntryProto] = field(default_factory=list)
  data_location: int = 0                             # 1: EXTERNAL
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)

  @property
  def shape(self) -> tuple[int, ...]: return tuple(self.dims)
  @property
  def numel(self) -> int:
    n = 1
    for d in self.dims: n *= d
    return n
  @property
  def dtype(self) -> DType: return onnx_dtype(self.data_type)
  @property
  def is_external(self) -> bool: return self.data_location == 1

  def strings(self) -> list[bytes]: return [bytes(s) for s in self.string_data]

  def payload(self) -> memoryview|bytes:
    """The elements as little-endian bytes in the layout of `self.dtype` (4-bit ints unpacked to one per byte)."""
    if self.data_type == TensorDataType.STRING: raise ValueError(f"tensor {self.name!r} holds strings; use .strings()")
    if any(d < 0 for d in self.dims): raise ValueError(f"tensor {self.name!r} has a negative dim: {self.dims}")
    dt, n, dtn = self.dtype, self.numel, self.data_type
    if self.is_external and self.raw_data is None: raise ValueError(f"tensor {self.name!r} has external data that was not loaded")
    if self.raw_data is not None: data: memoryview|bytes = self.raw_data
    elif dtn in (TensorDataType.FLOAT, TensorDataType.COMPLEX64):
      data = self.float_data[0] if len(self.float_data) == 1 else b"".join(self.float_data)
    elif dtn in (TensorDataType.DOUBLE, TensorDataType.COMPLEX128):
      data = self.double_data[0] if len(self.double_data) == 1 else b"".join(self.double_data)
    elif dtn == TensorDataType.INT64: data = struct.pack(f"<{len(self.int64_data)}q", *self.int64_data)
    elif dtn in (TensorDataType.UINT32, TensorDataType.UINT64):
      data = struct.pack(f"<{len(self.uint64_data)}{'IQ'[dt.itemsize // 8]}", *self.uint64_data)
    elif dtn in SUBBYTE_BITS or dtn in EMULATED_FLOATS: data = bytes(v & 0xff for v in self.int32_data)
    else:   # int32_data holds the values (or the bit patterns of 16-bit and 8-bit floats)
      fmt = {1: "B", 2: "H", 4: "I"}[dt.itemsize]
      data = struct.pack(f"<{len(self.int32_data)}{fmt}", *(v & ((1 << (8 * dt.itemsize)) - 1) for v in self.int32_data))
    if (bits := SUBBYTE_BITS.get(dtn)) is not None:
      if len(data) != (n * bits + 7) // 8: raise ValueError(f"tensor {self.name!r}: {len(data)} bytes for {n} {bits}-bit elements")
      codes = [(b >> s) & ((1 << bits) - 1) for b in bytes(data) for s in range(0, 8, bits)][:n]
      if dtn in EMULATED_FLOATS: return struct.pack(f"<{n}f", *(decode_small_float(c, dtn) for c in codes))
      if dtn in (TensorDataType.INT4, TensorDataType.INT2): codes = [c - (1 << bits) if c >= 1 << (bits - 1) else c for c in codes]
      return struct.pack(f"<{n}{'b' if dtn in (TensorDataType.INT4, TensorDataType.INT2) else 'B'}", *codes)
    if dtn in EMULATED_FLOATS:
      if len(data) != n: raise ValueError(f"tensor {self.name!r}: {len(data)} bytes for {n} 8-bit elements")
      return struct.pack(f"<{n}f", *(decode_small_float(c, dtn) for c in bytes(data)))
    if len(data) != n * dt.itemsize:
      raise ValueError(f"tensor {self.name!r}: {len(data)} bytes of data for shape {self.shape} of {dt} ({n * dt.itemsize} bytes expected)")
    return data

  def to_tensor(self, device: str|None = None) -> Tensor:
    return Tensor(self.payload(), device=device, dtype=self.dtype).reshape(self.shape)

@dataclass
class SparseTensorProto:
  values: OnnxTensor|None = None
  indices: OnnxTensor|None = None
  dims: list[int] = field(default_factory=list)

@dataclass
class Dimension:
  dim_value: int|None = None
  dim_param: str|None = None
  denotation: str = ""
  @property
  def value(self) -> int|str|None: return self.dim_value if self.dim_value is not None else self.dim_param

@dataclass
class TensorShapeProto:
  dim: list[Dimension] = field(default_factory=list)

@dataclass
class TensorTypeProto:
  elem_type: int = 0
  shape: TensorShapeProto|None = None

@dataclass
class SequenceTypeProto:
  elem_type: TypeProto|None = None

@dataclass
class MapTypeProto:
  key_type: int = 0
  value_type: TypeProto|None = None

@dataclass
class OptionalTypeProto:
  elem_type: TypeProto|None = None

@dataclass
class TypeProto:
  tensor_type: TensorTypeProto|None = None
  sequence_type: SequenceTypeProto|None = None
  map_type: MapTypeProto|None = None
  optional_type: OptionalTypeProto|None = None
  sparse_tensor_type: TensorTypeProto|None = None
  denotation: str = ""

@dataclass
class ValueInfoProto:
  name: str = ""
  type: TypeProto|None = None
  doc_string: str = ""
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)
  @property
  def shape(self) -> tuple[int|str|None, ...]|None:
    """Dims as ints, symbolic names (str) or None where unknown; None when the rank is unknown or this is not a tensor."""
    tt = self.type.tensor_type if self.type is not None else None
    if tt is None or tt.shape is None: return None
    return tuple(d.value for d in tt.shape.dim)
  @property
  def elem_type(self) -> int|None:
    tt = self.type.tensor_type if self.type is not None else None
    return tt.elem_type if tt is not None else None

class AttributeType:
  UNDEFINED, FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, GRAPHS = range(11)
  SPARSE_TENSOR, SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS = range(11, 15)

@dataclass
class AttributeProto:
  name: str = ""
  ref_attr_name: str = ""
  doc_string: str = ""
  type: int = 0
  f: float = 0.0
  i: int = 0
  s: Any = b""
  t: OnnxTensor|None = None
  g: GraphProto|None = None
  sparse_tensor: SparseTensorProto|None = None
  tp: TypeProto|None = None
  floats: list[float] = field(default_factory=list)
  ints: list[int] = field(default_factory=list)
  strings: list = field(default_factory=list)
  tensors: list[OnnxTensor] = field(default_factory=list)
  graphs: list[GraphProto] = field(default_factory=list)
  sparse_tensors: list[SparseTensorProto] = field(default_factory=list)
  type_protos: list[TypeProto] = field(default_factory=list)

  @property
  def value(self) -> Any:
    """The attribute's value by its type: float, int, bytes, OnnxTensor, GraphProto, SparseTensorProto, TypeProto or a list of those."""
    T = AttributeType
    getters = {T.FLOAT: lambda: self.f, T.INT: lambda: self.i, T.STRING: lambda: bytes(self.s), T.TENSOR: lambda: self.t, T.GRAPH: lambda: self.g,
               T.SPARSE_TENSOR: lambda: self.sparse_tensor, T.TYPE_PROTO: lambda: self.tp, T.FLOATS: lambda: list(self.floats),
               T.INTS: lambda: list(self.ints), T.STRINGS: lambda: [bytes(s) for s in self.strings], T.TENSORS: lambda: self.tensors,
               T.GRAPHS: lambda: self.graphs, T.SPARSE_TENSORS: lambda: self.sparse_tensors, T.TYPE_PROTOS: lambda: self.type_protos}
    if (g := getters.get(self.type)) is None: raise ValueError(f"attribute {self.name!r} has unknown type {self.type}")
    return g()

@dataclass
class NodeProto:
  input: list[str] = field(default_factory=list)
  output: list[str] = field(default_factory=list)
  name: str = ""
  op_type: str = ""
  domain: str = ""
  overload: str = ""
  attribute: list[AttributeProto] = field(default_factory=list)
  doc_string: str = ""
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)

@dataclass
class GraphProto:
  node: list[NodeProto] = field(default_factory=list)
  name: str = ""
  initializer: list[OnnxTensor] = field(default_factory=list)
  sparse_initializer: list[SparseTensorProto] = field(default_factory=list)
  doc_string: str = ""
  input: list[ValueInfoProto] = field(default_factory=list)
  output: list[ValueInfoProto] = field(default_factory=list)
  value_info: list[ValueInfoProto] = field(default_factory=list)
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)

@dataclass
class FunctionProto:
  name: str = ""
  input: list[str] = field(default_factory=list)
  output: list[str] = field(default_factory=list)
  attribute: list[str] = field(default_factory=list)
  attribute_proto: list[AttributeProto] = field(default_factory=list)
  node: list[NodeProto] = field(default_factory=list)
  doc_string: str = ""
  opset_import: list[OperatorSetIdProto] = field(default_factory=list)
  domain: str = ""
  overload: str = ""
  value_info: list[ValueInfoProto] = field(default_factory=list)
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)

@dataclass
class ModelProto:
  ir_version: int = 0
  opset_import: list[OperatorSetIdProto] = field(default_factory=list)
  producer_name: str = ""
  producer_version: str = ""
  domain: str = ""
  model_version: int = 0
  doc_string: str = ""
  graph: GraphProto|None = None
  metadata_props: list[StringStringEntryProto] = field(default_factory=list)
  functions: list[FunctionProto] = field(default_factory=list)
  @property
  def opsets(self) -> dict[str, int]:
    """domain -> opset version ("" and "ai.onnx" are both the default domain)."""
    return {("" if o.domain == "ai.onnx" else o.domain): o.version for o in self.opset_import}

@dataclass
class SequenceProto:
  name: str = ""
  elem_type: int = 0
  tensor_values: list[OnnxTensor] = field(default_factory=list)
  sparse_tensor_values: list[SparseTensorProto] = field(default_factory=list)
  sequence_values: list[SequenceProto] = field(default_factory=list)
  map_values: list[MapProto] = field(default_factory=list)
  optional_values: list[OptionalProto] = field(default_factory=list)

@dataclass
class MapProto:
  name: str = ""
  key_type: int = 0
  keys: list[int] = field(default_factory=list)
  string_keys: list = field(default_factory=list)
  values: SequenceProto|None = None

@dataclass
class OptionalProto:
  name: str = ""
  elem_type: int = 0   # 0 undefined, 1 tensor, 2 sparse tensor, 3 sequence, 4 map, 5 optional
  tensor_value: OnnxTensor|None = None
  sparse_tensor_value: SparseTensorProto|None = None
  sequence_value: SequenceProto|None = None
  map_value: MapProto|None = None
  optional_value: OptionalProto|None = None

MESSAGE_CLASSES: dict[str, type] = {"StringStringEntryProto": StringStringEntryProto, "OperatorSetIdProto": OperatorSetIdProto, "Segment": Segment,
  "OnnxTensor": OnnxTensor, "SparseTensorProto": SparseTensorProto, "Dimension": Dimension, "TensorShapeProto": TensorShapeProto,
  "TensorTypeProto": TensorTypeProto, "SequenceTypeProto": SequenceTypeProto, "MapTypeProto": MapTypeProto, "OptionalTypeProto": OptionalTypeProto,
  "TypeProto": TypeProto, "ValueInfoProto": ValueInfoProto, "AttributeProto": AttributeProto, "NodeProto": NodeProto, "GraphProto": GraphProto,
  "FunctionProto": FunctionProto, "ModelProto": ModelProto, "SequenceProto": SequenceProto, "MapProto": MapProto, "OptionalProto": OptionalProto}
TensorProto = OnnxTensor

# ***** files *****

def _read_buffer(fn: Tensor|str|pathlib.Path|bytes|bytearray|memoryview) -> tuple[memoryview, pathlib.Path|None]:
  if isinstance(fn, (bytes, bytearray, memoryview)): return memoryview(fn).cast("B"), None
  if isinstance(fn, Tensor):
    if fn.dtype != dtypes.uint8 or fn.ndim != 1: raise TypeError(f"expected a 1-D uint8 Tensor of the file's bytes, got {fn.dtype} {fn.shape}")
    if isinstance(fn.device, str) and fn.device.startswith("DISK:"):   # a file on disk: map it ourselves, zero-copy like DISK does
      buf, base = _read_buffer(fn.device[5:])
      if len(buf) < fn.shape[0]: raise ValueError(f"{fn.device}: the file has {len(buf)} bytes, the Tensor {fn.shape[0]}")
      return buf[:fn.shape[0]], base
    return memoryview(fn.to("CPU").data() if fn.device != "CPU" else fn.data()).cast("B"), None
  if not isinstance(fn, (str, pathlib.Path)): raise TypeError(f"expected a path, bytes or a Tensor of bytes, got {type(fn).__name__}")
  path = pathlib.Path(fn)
  with open(path, "rb") as f:
    if os.fstat(f.fileno()).st_size == 0: return memoryview(b""), path.parent
    return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)), path.parent

def _external_file(base: pathlib.Path, location: str) -> pathlib.Path:
  p, win = pathlib.PurePath(location), pathlib.PureWindowsPath(location)
  if not location or p.is_absolute() or win.is_absolute() or win.drive or ".." in p.parts or ".." in win.parts:
    raise ValueError(f"external data location {location!r} must be a relative path inside the model's folder")
  full = (base / p).resolve()
  if not full.is_relative_to(base.resolve()): raise ValueError(f"external data location {location!r} leaves the model's folder {base}")
  return full

def load_external(t: OnnxTensor, base: pathlib.Path|None, cache: dict[pathlib.Path, memoryview]|None = None) -> None:
  """Fill t.raw_data from its external file (a memoryview of an mmap), checking location, offset and length."""
  info = {e.key: e.value for e in t.external_data}
  if "location" not in info: raise ValueError(f"tensor {t.name!r} has external data without a location")
  if base is None: raise ValueError(f"tensor {t.name!r} has external data but the model was not loaded from a file")
  path = _external_file(base, info["location"])
  cache = {} if cache is None else cache
  if path not in cache:
    if not path.is_file(): raise ValueError(f"external data file {info['location']!r} of tensor {t.name!r} not found in {base}")
    cache[path] = _read_buffer(path)[0]
  buf = cache[path]
  try: offset, length = int(info.get("offset", 0)), int(info["length"]) if "length" in info else len(buf) - int(info.get("offset", 0))
  except ValueError: raise ValueError(f"tensor {t.name!r}: bad external data offset/length {info}") from None
  if offset < 0 or length < 0 or offset + length > len(buf):
    raise ValueError(f"tensor {t.name!r}: external data [{offset}, {offset + length}) is outside {info['location']!r} ({len(buf)} bytes)")
  t.raw_data = buf[offset:offset + length]

def _all_graph_tensors(g: GraphProto):
  stack = [g]
  while stack:
    g = stack.pop()
    yield from g.initializer
    for s in g.sparse_initializer: yield from (x for x in (s.values, s.indices) if x is not None)
    for n in g.node:
      for a in n.attribute:
        if a.t is not None: yield a.t
        yield from a.tensors
        for s in ([a.sparse_tensor] if a.sparse_tensor is not None else []) + a.sparse_tensors:
          yield from (x for x in (s.values, s.indices) if x is not None)
        stack.extend(([a.g] if a.g is not None else []) + a.graphs)

class OnnxParser:
  """Decodes protobuf-encoded ONNX messages from a buffer. `parse(buf, "ModelProto")` returns the message's dataclass."""
  def __init__(self, buf: memoryview|bytes): self.buf = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
  def parse(self, msg: str = "ModelProto") -> Any:
    if msg not in SCHEMAS: raise ValueError(f"unknown message {msg!r}, expected one of {sorted(SCHEMAS)}")
    return _decode(self.buf, 0, len(self.buf), msg, 0)

def onnx_load(fn: Tensor|str|pathlib.Path|bytes, load_external_data: bool = True) -> ModelProto:
  """Parse an ONNX model. External data is read (zero-copy, mmap) from files inside the model's folder unless load_external_data=False."""
  buf, base = _read_buffer(fn)
  model: ModelProto = OnnxParser(buf).parse("ModelProto")
  if model.graph is None: raise ValueError("not an ONNX model: it has no graph")
  if load_external_data:
    cache: dict[pathlib.Path, memoryview] = {}
    for t in _all_graph_tensors(model.graph):
      if t.is_external: load_external(t, base, cache)
  return model

def onnx_load_message(fn: Tensor|str|pathlib.Path|bytes, msg: str = "OnnxTensor") -> Any:
  """Parse a single message file, e.g. a test-data TensorProto (.pb), SequenceProto or OptionalProto."""
  return OnnxParser(_read_buffer(fn)[0]).parse(msg)
