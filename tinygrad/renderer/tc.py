"""Tensor cores: a warp-wide matrix multiply-accumulate D = A @ B + C, A (M x K), B (K x N), C and D (M x N), with the matrices spread over
the registers of the warp's threads.

A layout says where each element lives. Every layout here is a permutation of bits: bit j of an element's row (or column) is either bit i
of the thread's id in the warp ("t<i>") or bit i of the element's index among the thread's register lanes ("e<i>"). So a layout is, per
matrix, (row bits, col bits), lowest bit first. A thread bit missing from A's or B's layout means those threads hold copies (AMD: lanes
16-31 repeat lanes 0-15); every element bit appears once, and C uses every thread bit.

How the optimizer uses it (Kernel.apply_opt with OptOps.TC): the N, M, K tile axes of the kernel are split into bits, and every view of
the kernel takes those bits from new axes: one LOCAL axis of `threads` (the warp: bits t0..), log2(K) UNROLL axes of size 2 (r0..) and
log2(elements of C) UPCAST axes of size 2 (u0..). Which tile bit each new axis bit reads is bit_sources(): C's views read the C layout
(u<j> = C's e<j>, r<j> = k bit j), A's and B's views read their own layout, with their element bits on the lanes lanes() names, and every
bit they don't have (n for A, m for B) on the bits left over. Then lane e of a thread's A fragment is the A factor evaluated at the lanes
lanes("a") spell e in binary, which is what the expander gathers into the WMMA's first operand.
"""
from __future__ import annotations
import functools
from dataclasses import dataclass
from tinygrad.dtype import DType, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

Layout = tuple[tuple[str, ...], tuple[str, ...]]   # (row bits, col bits), lowest first

def _L(rows:str, cols:str) -> Layout: return (tuple(rows.split()), tuple(cols.split()))
def _log2(x:int) -> int: return x.bit_length() - 1

_SPARE = {"a": "n", "b": "m", "c": "k"}              # the tile dimension an operand doesn't have
_DIMS = {"a": ("m", "k"), "b": ("k", "n"), "c": ("m", "n")}

@dataclass(frozen=True)
class TensorCore:
  dims: tuple[int, int, int]                  # (N, M, K)
  threads: int                                # threads of one warp / wave / simdgroup / subgroup
  elements_per_thread: tuple[int, int, int]   # register lanes per thread of A, B and C (= D)
  dtype_in: DType                             # A and B
  dtype_out: DType                            # C and D
  device: str                                 # the family: CUDA, AMD, METAL, INTEL (the PYTHON device's emulator, the WMMA's renderer)
  a: Layout                                   # A: rows are m, cols are k
  b: Layout                                   # B: rows are k, cols are n
  c: Layout                                   # C, D: rows are m, cols are n
  def __post_init__(self):
    n, m, k = self.dims
    if any(x & (x-1) for x in (n, m, k, self.threads, *self.elements_per_thread)): raise ValueError(f"{self}: sizes must be powers of two")
    for op, ept in zip("abc", self.elements_per_thread):
      rows, cols = getattr(self, op)
      if (2**len(rows), 2**len(cols)) != tuple(dict(zip("nmk", self.dims))[d] for d in _DIMS[op]):
        raise ValueError(f"{op} layout {rows}, {cols} doesn't fit {self.dims}")
      bits = rows + cols
      if sorted(b for b in bits if b[0] == "e") != sorted(f"e{i}" for i in range(_log2(ept))) or len(set(bits)) != len(bits) or \
         any(b[0] not in "te" or int(b[1:]) >= _log2(self.threads if b[0] == "t" else ept) for b in bits):
        raise ValueError(f"{op} layout {rows}, {cols} must use each of its {ept} elements' bits once and thread bits at most once")
    if sorted(b for b in self.c[0] + self.c[1] if b[0] == "t") != sorted(f"t{i}" for i in range(_log2(self.threads))):
      raise ValueError("every thread of the warp holds part of C")
  def __repr__(self): return f"TensorCore({self.name}, {self.device}, threads={self.threads})"
  @property
  def name(self) -> str: return f"WMMA_{'_'.join(map(str, self.dims))}_{self.dtype_in.name.strip('_')}_{self.dtype_out.name.strip('_')}"
  @property
  def reduce_bits(self) -> int: return _log2(self.dims[2])
  @property
  def upcast_bits(self) -> int: return _log2(self.elements_per_thread[2])

  def coords(self, op:str, thread:int, elem:int) -> tuple[int, int]:
    """(row, col) of element elem of thread's fragment of A, B or C."""
    val = {f"t{i}": (thread >> i) & 1 for i in range(_log2(self.threads))} | {f"e{i}": (elem >> i) & 1 for i in range(8)}
    rows, cols = getattr(self, op)
    return sum(val[b] << j for j, b in enumerate(rows)), sum(val[b] << j for j, b in enumerate(cols))

  def lanes(self, op:str) -> tuple[str, ...]:
    """The kernel's register lane bits that carry element bits e0, e1, ... of the operand's fragment."""
    if op == "c": return tuple(f"u{j}" for j in range(self.upcast_bits))
    order = [f"r{j}" for j in range(self.reduce_bits)] + [f"u{j}" for j in range(self.upcast_bits)]
    return tuple(order[:_log2(self.elements_per_thread["ab".index(op)])])

  @functools.cache
  def bit_sources(self, op:str) -> dict[str, tuple[str, int]]:
    """For the views of operand op ("a", "b", or "c" for everything after the reduce): the tile bit (dim, index) each kernel bit reads.
    Kernel bits are t<i> (warp thread id), r<j> (UNROLL lanes over K) and u<j> (UPCAST lanes, C's elements)."""
    lane_of = dict(zip((f"e{i}" for i in range(8)), self.lanes(op)))
    src: dict[str, tuple[str, int]] = {}
    for dim, bits in zip(_DIMS[op], getattr(self, op)):
      for j, b in enumerate(bits): src[b if b[0] == "t" else lane_of[b]] = (dim, j)
    kernel_bits = [f"t{i}" for i in range(_log2(self.threads))] + [f"r{j}" for j in range(self.reduce_bits)] + \
                  [f"u{j}" for j in range(self.upcast_bits)]
    spare = iter(range(_log2(dict(zip("nmk", self.dims))[_SPARE[op]])))
    for b in kernel_bits:
      if b not in src: src[b] = (_SPARE[op], next(spare))
    if next(spare, None) is not None or len(src) != len(kernel_bits): raise RuntimeError(f"{self}: the {op} layout doesn't permute the tile")
    return src

def tc_operand(x:UOp, dtype_in:DType) -> UOp|None:
  """A factor of the matmul as the tensor core takes it: in dtype_in, seen through a widening CAST."""
  if x.dtype == dtype_in: return x
  return x.src[0] if x.op is Ops.CAST and x.src[0].dtype == dtype_in else None

def mul_factors(x:UOp) -> tuple[UOp, UOp]|None:
  """The two factors of a matmul-like reduce's source: MUL(a, b), possibly under a CAST to the accumulate dtype."""
  if x.op is Ops.CAST: x = x.src[0]
  return (x.src[0], x.src[1]) if x.op is Ops.MUL else None

# ***** the families *****

# NVIDIA mma.sync (sm_80+; m16n8k8 f16 from sm_75), from the PTX ISA, "Matrix Fragments for mma.m16n8k16 / mma.m16n8k8 with floating point
# type": groupID = laneid >> 2 (t2 t3 t4), threadID_in_group = laneid % 4 (t0 t1).
#   m16n8k16 A: row = groupID (+8 for a2 a3 a6 a7), col = threadID_in_group*2 + (i & 1) (+8 for i >= 4)
#            B: row = threadID_in_group*2 + (i & 1) (+8 for i >= 2), col = groupID
#            C: row = groupID (+8 for c2 c3), col = threadID_in_group*2 + (i & 1)
#   m16n8k8  A: row = groupID (+8 for a2 a3), col = threadID_in_group*2 + (i & 1); B: row = threadID_in_group*2 + i, col = groupID; C as k16
_CUDA_C = _L("t2 t3 t4 e1", "e0 t0 t1")
cuda_tcs = [TensorCore((8, 16, 16), 32, (8, 4, 4), di, dtypes.float, "CUDA", a=_L("t2 t3 t4 e1", "e0 t0 t1 e2"), b=_L("e0 t0 t1 e1", "t2 t3 t4"),
                       c=_CUDA_C) for di in (dtypes.half, dtypes.bfloat16)] + \
           [TensorCore((8, 16, 8), 32, (4, 2, 4), dtypes.half, dtypes.float, "CUDA", a=_L("t2 t3 t4 e1", "e0 t0 t1"), b=_L("e0 t0 t1", "t2 t3 t4"),
                       c=_CUDA_C)]

# AMD RDNA3 v_wmma_f32_16x16x16_f16 in wave32, from AMD's RDNA3 ISA reference (WMMA) and GPUOpen's RDNA3 WMMA guide: lane l holds
# row l % 16 of A and column l % 16 of B, its 16 elements running over K; lanes 16-31 must hold the same values as lanes 0-15.
# D (8 floats): element i of lane l is row 2*i + l // 16, column l % 16.
amd_tcs = [TensorCore((16, 16, 16), 32, (16, 16, 8), dtypes.half, dtypes.float, "AMD", a=_L("t0 t1 t2 t3", "e0 e1 e2 e3"),
                      b=_L("e0 e1 e2 e3", "t0 t1 t2 t3"), c=_L("t4 e0 e1 e2", "t0 t1 t2 t3"))]

# AMD CDNA (gfx90a) v_mfma_f32_16x16x16f16 in wave64, from AMD's CDNA2 ISA reference and its matrix instruction calculator: lane l holds
# row l % 16 of A and column l % 16 of B, elements i = k % 4 with k // 4 = l // 16; D element i of lane l is row 4*(l // 16) + i, column l % 16.
amd_mfma_tcs = [TensorCore((16, 16, 16), 64, (4, 4, 4), dtypes.half, dtypes.float, "AMD", a=_L("t0 t1 t2 t3", "e0 e1 t4 t5"),
                           b=_L("e0 e1 t4 t5", "t0 t1 t2 t3"), c=_L("e0 e1 t4 t5", "t0 t1 t2 t3"))]

# Apple simdgroup_float8x8 / simdgroup_half8x8 (simdgroup_multiply_accumulate). Apple doesn't document where thread_elements() live; this
# is the layout of the patent (US11256518B2) that metal-flash-attention and MLX's steel GEMM (BaseMMAFrag::get_coord) use: thread t holds
# row ((t >> 1) & 3) + 4*(t >> 4), columns 2*(t & 1) + 4*((t >> 3) & 1) + {0, 1}; the same for A, B and C.
_METAL = _L("t1 t2 t4", "e0 t0 t3")
metal_tcs = [TensorCore((8, 8, 8), 32, (2, 2, 2), di, do, "METAL", a=_METAL, b=_METAL, c=_METAL)
             for di, do in ((dtypes.float, dtypes.float), (dtypes.half, dtypes.float), (dtypes.half, dtypes.half))]

# Intel XMX through cl_intel_subgroup_matrix_multiply_accumulate (intel_sub_group_f16_f16_matrix_mad_k16), from the extension's spec:
# component r of a, acc and the result is row r; work item j holds column j of B and of the result (N = the subgroup size) and K values
# of B packed two per int; with subgroup 8 work item j gives A's columns 2j, 2j+1 (int8 a), with subgroup 16 column j (short8 a).
intel_tcs = [TensorCore((8, 8, 16), 8, (16, 16, 8), dtypes.half, dtypes.float, "INTEL", a=_L("e1 e2 e3", "e0 t0 t1 t2"),
                        b=_L("e0 e1 e2 e3", "t0 t1 t2"), c=_L("e0 e1 e2", "t0 t1 t2")),
             TensorCore((16, 8, 16), 16, (8, 16, 8), dtypes.half, dtypes.float, "INTEL", a=_L("e0 e1 e2", "t0 t1 t2 t3"),
                        b=_L("e0 e1 e2 e3", "t0 t1 t2 t3"), c=_L("e0 e1 e2", "t0 t1 t2 t3"))]

tensor_cores: dict[str, list[TensorCore]] = {"CUDA": cuda_tcs, "AMD": amd_tcs, "METAL": metal_tcs, "INTEL": intel_tcs}
