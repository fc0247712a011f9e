from __future__ import annotations
import functools
from dataclasses import dataclass, field
from typing import Callable, Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, PatternMatcher, sym_infer, sint
from tinygrad.helpers import prod
from tinygrad.dtype import DType, dtypes

@dataclass(frozen=True)
class Estimates:
  ops: sint = 0   # ALU operations
  lds: sint = 0   # bytes loaded
  mem: sint = 0   # bytes of the buffers touched
  def __add__(self, o:Estimates) -> Estimates: return Estimates(self.ops + o.ops, self.lds + o.lds, self.mem + o.mem)
  @staticmethod
  def from_uops(uops:list[UOp], ignore_indexing=False) -> Estimates:
    # count ALU ops and loaded bytes, multiplying by the trip counts of the enclosing loops
    from tinygrad.uop import GroupOp
    from tinygrad.dtype import PtrDType
    flops: sint = 0
    lds: sint = 0
    mults: sint = 1
    mult_stack: list[sint] = []
    dont_count: set[UOp] = set()
    if ignore_indexing:
      for u in uops:
        if u.op in (Ops.LOAD, Ops.STORE):
          idx = u.src[0]
          dont_count |= set(idx.src[1].toposort()) if idx.op is Ops.INDEX and len(idx.src) > 1 else set()
          if idx.op is Ops.INDEX and len(idx.src) > 2: dont_count |= set(idx.src[2].toposort())
        elif u.op is Ops.IF: dont_count |= set(u.src[0].toposort())
    for u in uops:
      if u.op is Ops.RANGE:
        mult_stack.append(mults)
        mults = mults * u.src[0].ssimplify()  # type: ignore[assignment]
      elif u.op is Ops.ENDRANGE: mults = mult_stack.pop(-1)
      elif u.op is Ops.SPECIAL: mults = mults * (u.arg[1] if isinstance(u.arg[1], int) else u.arg[1])
      elif u.op in (Ops.LOAD, Ops.STORE):
        buf = u.src[0].src[0] if u.src[0].op is Ops.INDEX else u.src[0]
        if isinstance(buf.dtype, PtrDType) and not buf.dtype.local: lds = lds + (u.dtype if u.op is Ops.LOAD else u.src[1].dtype).itemsize * mults
      elif u.op in GroupOp.ALU and u not in dont_count: flops = flops + (mults * (2 if u.op is Ops.MULACC else 1)) * u.dtype.count
      # a WMMA is N*M*K multiply-adds shared by the threads of a warp
      elif u.op is Ops.WMMA: flops = flops + mults * 2 * prod(u.arg[1]) // u.arg[5]
    return Estimates(flops, lds, lds)

@dataclass
class ProgramSpec:
  name: str
  src: str
  device: str
  ast: UOp                                  # the kernel AST it was made from
  uops: list[UOp]|None = None               # the linear program
  global_size: list[sint]|None = None
  local_size: list[sint]|None = None
  vars: list[UOp] = field(default_factory=list)
  globals: list[int] = field(default_factory=list)
  outs: list[int] = field(default_factory=list)
  ins: list[int] = field(default_factory=list)
  estimates: Estimates = field(default_factory=Estimates)
  applied_opts: tuple = ()                  # the tinygrad.opt.kernel.Opts that made it
  @property
  def function_name(self) -> str: return self.name
  def launch_dims(self, var_vals:dict[UOp, int]) -> tuple[list[int], list[int]|None]:
    global_size = [int(sym_infer(s, var_vals)) for s in self.global_size] if self.global_size is not None else [1, 1, 1]
    local_size = [int(sym_infer(s, var_vals)) for s in self.local_size] if self.local_size is not None else None
    return global_size, local_size

# what renderers with vector_alu_lanes compute on whole vectors by default: these float ops (the expander vectorizes them, the renderer
# prints them). A renderer may widen the set (Renderer.vector_alu_ops/_dtypes): the C renderer takes every ALU op, CAST and BITCAST
VECTOR_ALU_OPS = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.NEG, Ops.MULACC})
VECTOR_ALU_DTYPES = (dtypes.float32, dtypes.float64)
ALL_VECTOR_ALU_OPS = frozenset({*GroupOp.ALU, Ops.CAST, Ops.BITCAST})
ALL_VECTOR_ALU_DTYPES = (dtypes.bool, *dtypes.ints, dtypes.float32, dtypes.float64)

@dataclass(frozen=True)
class MachineModel:
  """A CPU as the heuristics see it (tinygrad/runtime/support/cpu_model.py measures the host's): register tiles, cache blocks and thread
  splits are sized from it."""
  name: str
  simd_bytes: int          # one vector register
  vector_regs: int         # architectural vector registers
  fma_chains: int          # independent FMA chains that keep every FMA pipe busy: latency x pipes
  fma_gflops: float        # measured (or assumed) fp32 FMA peak of one core
  l1: int                  # data cache bytes per core
  l2: int
  l3: int                  # shared
  cores: int
  @property
  def l1_ways(self) -> int:
    # an L1 indexed by virtual address within a 4 KB page (every x86 and most ARM cores) repeats its sets every 4 KB: its size over 4 KB is
    # its ways, the lines a few streams a multiple of 4 KB apart (a power-of-two row pitch) may hold in one set
    return max(1, self.l1 // 4096)

def register_tile(m:MachineModel, width:int, max_lanes:int, nrows:sint, ncols:sint, loaded:int=1, depth:int=0) -> tuple[int, int]|None:
  """(rows, lanes) of the register tile of accumulators: rows x lanes/width vector registers, enough independent FMA chains to cover
  latency x pipes where possible (else as many as fit), leaving room for `loaded` rows of loaded vectors and a broadcast; of those, the most
  FMAs per loaded value. (The heuristics' tile of a matmul or conv, and the panels a conv's weight is packed in: schedule/packing.py)
  depth, a conv's reduce (input channels x taps, `loaded` of them a window row): with the chains, a tile whose weight panel (depth x lanes)
  fits L1 next to its input window goes first, read from L1 by every tile, not streamed from L2 (ResNet-18's 64-channel 56x56 convs on
  Zen 3: 8 rows x 8 lanes, an 18 KB panel, 2.55 ms against 2.62-2.7 for 4 x 16, 37 KB)"""
  if not isinstance(nrows, int) or not isinstance(ncols, int): return None
  def fits(t:tuple[int, int]) -> bool:
    return depth * t[1] * width + depth // loaded * (t[0] + loaded - 1) <= m.l1 * width // m.simd_bytes
  def best(live:int, spare:int=0) -> tuple[int, int]|None:
    cands = [(r, v) for v in range(1, max_lanes // width + 1) for r in range(1, 17)
             if ncols % (v * width) == 0 and nrows % r == 0 and r * v + live * v + 1 + spare <= m.vector_regs]
    # (short of enough chains, the most: 7 rows x 8 lanes over 2 x 16, 4.0 ms against 5.4 for a 256-channel 14x14 conv on 16 registers)
    return max(cands, key=lambda t: (min(t[0] * t[1], m.fma_chains), depth > 0 and fits(t), t[0] * t[1] / (t[0] + t[1]), t[0] * t[1]),
               default=None)
  # short of enough chains with every loaded row live: a tile that gets more with one row live at a time (the compiler orders the FMAs row by
  # row, or reads the vector as an FMA's memory operand) and one register to spare, if it loads no more per FMA. A 14x14 conv's 3 taps on
  # 16 registers: 2 rows x 32 lanes, not 7 x 8 (stride 2, 128 -> 256 channels: 1.6 ms against 1.95; 14 x 8, no register to spare, spilled)
  def score(t:tuple[int, int]|None) -> tuple[int, float]: return (min(t[0] * t[1], m.fma_chains), t[0] * t[1] / (t[0] + t[1])) if t else (0, 0.0)
  tile = best(loaded)
  if loaded > 1 and (one := best(1, 1)) is not None and score(one)[0] > score(tile)[0] and score(one)[1] >= score(tile)[1]: tile = one
  return (tile[0], tile[1] * width) if tile is not None else None

class Renderer:
  """What a device's code generator supports, and how it prints a linear program."""
  device: str = ""
  suffix: str = ""
  supports_float4: bool = True
  has_local: bool = True       # threads in workgroups (GPUs); False: global axes are plain loops
  has_shared: bool = True
  has_threads: bool = False    # kernels are split over host threads (a CPU): the outermost global axis may run on a thread pool
  # big multiply-reduces (matmul, conv) read operands whose panels stay in cache better as a packed copy (CPUs): the scheduler makes one
  packs_operands: bool = False
  supports_prefetch: bool = False   # renders Ops.PREFETCH (a cache hint); codegen makes none for a device that doesn't
  nonfinite_exact: bool = True   # nan and inf flow through arithmetic as IEEE 754 says (False: the compiler may assume there are none)
  vector_alu_lanes: int = 0    # > 0: float arithmetic on vectors of up to this many lanes renders as whole-vector code (codegen/expander.py)
  vector_alu_ops: frozenset[Ops] = VECTOR_ALU_OPS          # the ops and dtypes the expander makes vectors (with vector_alu_lanes)
  vector_alu_dtypes: tuple[DType, ...] = VECTOR_ALU_DTYPES
  simd_bytes: int = 16         # the width of one vector register (a device may measure its host and set this)
  machine: MachineModel|None = None   # a CPU device's measured machine model (its CPU heuristics read it)
  # the most workgroups / threads per workgroup per launch dimension (dim 0 first); None: no limit. Codegen cuts a global axis over its
  # dim's limit into chunks (codegen/lowerer.py) and refuses a workgroup over local_max
  global_max: tuple[int, ...]|None = (2**31-1,) * 3
  local_max: tuple[int, ...]|None = (0x8FFFFFFF,) * 3
  # the most loop iterations one thread may run, over all its loops (each exit test counted); None: no limit. Codegen spreads a longer
  # reduce over a workgroup, and refuses a kernel still over it
  loop_max: int|None = None
  # the most buffers one kernel may take, its output included; None: no limit. The scheduler cuts a fusion that would read more
  max_bufs: int|None = None
  # the dtypes the device holds and computes; None: every dtype
  dtypes_supported: frozenset[DType]|None = None
  shared_max: int = 32768
  tensor_cores: list = []
  # ops the device computes natively; the rest are decomposed before rendering
  code_for_op: dict[Ops, Callable] = {}
  # device-specific rewrites applied to the lowered graph before linearizing
  extra_matcher: PatternMatcher|None = None
  pre_matcher: PatternMatcher|None = None
  def __reduce__(self): return self.__class__, ()
  def render(self, name:str, uops:list[UOp]) -> str: raise NotImplementedError("needs a renderer")
  @functools.cached_property
  def supported_ops(self) -> set[Ops]: return set(self.code_for_op)
  def __repr__(self): return f"{type(self).__name__}()"
  def vector_widths(self, dtype:Any) -> tuple[int, ...]: return (1,)
  def supports_dtype(self, dtype:DType) -> bool: return self.dtypes_supported is None or dtype.scalar() in self.dtypes_supported

