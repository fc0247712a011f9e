"""The kernels of a representative op set, one or more per op family of the op suite (elementwise, math, int and bit ops, every dtype,
reductions, matmul, conv and pooling, movement, indexing, creation and random, normalization, sort, symbolic shapes), for compile-only
checks of renderers and compilers whose device isn't here: lower each kernel AST for a renderer, then compile or inspect the source."""
from __future__ import annotations
import re
from typing import Callable, Iterator
from tinygrad import Tensor, dtypes, Variable
from tinygrad.codegen.program import get_program
from tinygrad.renderer import Renderer, ProgramSpec
from tinygrad.renderer.cstyle import MetalRenderer
from tinygrad.runtime.support.metal_check import metal_source_errors, MetalSourceCheck  # noqa: F401  (the tests import it from here)
from tinygrad.uop import Ops

DEV = "PYTHON"   # the ASTs come from scheduling on the emulator, which has workgroups like the GPUs

def _f(*shape:int, dt=dtypes.float32) -> Tensor: return Tensor.empty(*shape, dtype=dt, device=DEV)

def op_cases() -> dict[str, Callable[[], Tensor|list[Tensor]]]:
  a, b, c = _f(32, 48), _f(32, 48), _f(32, 48)
  i, j = _f(32, 48, dt=dtypes.int32), _f(32, 48, dt=dtypes.int32)
  h, bf = _f(32, 48, dt=dtypes.half), _f(32, 48, dt=dtypes.bfloat16)
  x, w = _f(2, 4, 12, 12), _f(8, 4, 3, 3)
  v = Variable("n", 1, 32).bind(7)
  return {
    # elementwise and math
    "add_mul_sub": lambda: a * b - c + 1, "div_neg_recip": lambda: -a / b + a.reciprocal(), "abs_relu_clip": lambda: a.abs() + a.relu() + a.clip(-1, 1),
    "exp_log": lambda: a.exp() + b.log(), "sin_cos_tan": lambda: a.sin() + a.cos() + a.tan(), "sqrt_rsqrt_pow": lambda: a.sqrt() + a.rsqrt() + a.pow(b),
    "sigmoid_tanh_gelu": lambda: a.sigmoid() + a.tanh() + a.gelu(), "erf_softplus": lambda: a.erf() + a.softplus(),
    "max_min_where": lambda: (a < b).where(a.maximum(c), b.minimum(c)), "floor_ceil_round": lambda: a.floor() + a.ceil() + a.round() + a.trunc(),
    "isnan_isinf": lambda: (a.isnan() | a.isinf()).where(1.0, a),
    # ints and bits
    "int_div_mod": lambda: i // j + i % j, "int_shift_bits": lambda: ((i << 2) >> 1) & j | (i ^ j), "int_cmp_max": lambda: (i < j).where(i, j.maximum(3)),
    "uint8_wrap": lambda: i.cast(dtypes.uint8) * 3 + 250, "int8_int16": lambda: i.cast(dtypes.int8) + i.cast(dtypes.int16),
    "int64_uint32": lambda: i.cast(dtypes.int64) * 3000000000 + i.cast(dtypes.uint32), "bool_ops": lambda: ((a > 0) & (b < 0)) | (a == b),
    "bitcast": lambda: a.bitcast(dtypes.int32) + 1,
    # floating dtypes
    "half_math": lambda: (h * 2 + h.exp()).sum(1), "half_to_float": lambda: h.float() + a, "bfloat16_math": lambda: bf * 2 + bf.sqrt(),
    "bfloat16_cast": lambda: bf.float() + a.cast(dtypes.bfloat16).float(), "float64": lambda: a.cast(dtypes.float64).exp() * 3,
    # reductions
    "sum_all": lambda: a.sum(), "sum_axis_max_axis": lambda: [a.sum(0), a.max(1)], "mean_var": lambda: a.var(1) + a.mean(1),
    "argmax_argmin": lambda: a.argmax(1) + a.argmin(0).sum(), "softmax_logsumexp": lambda: a.softmax(-1) + a.logsumexp(1).unsqueeze(1),
    "cumsum": lambda: a.cumsum(1), "int_sum": lambda: i.sum(1), "half_sum_float_acc": lambda: h.sum(1, dtype=dtypes.float),
    # matmul, conv, pooling
    "matmul": lambda: a @ b.T, "matmul_half": lambda: (h @ h.T).float(), "conv2d": lambda: x.conv2d(w, padding=1),
    "conv_transpose2d": lambda: x.conv_transpose2d(w.permute(1, 0, 2, 3), stride=2), "max_avg_pool": lambda: x.max_pool2d() + x.avg_pool2d(),
    # movement and indexing
    "pad_permute": lambda: a.pad(((1, 1), (2, 0))).permute(1, 0).contiguous(), "shrink_flip_stride": lambda: a[::2, 1:].flip(0) + 1,
    "expand_cat": lambda: Tensor.cat(a, b, dim=1) + c.sum(1, keepdim=True), "repeat": lambda: a[:4].repeat(2, 3) * 2,
    "tensor_index": lambda: a[Tensor([1, 5, 7], device=DEV)], "gather": lambda: a.gather(1, (i % 48).abs()),
    "scatter": lambda: a.scatter(1, (i[:, :4] % 48).abs(), 1.0), "one_hot": lambda: (i[0] % 10).abs().one_hot(10),
    # creation, random, normalization, sort, symbolic
    "arange_eye": lambda: Tensor.arange(96, device=DEV).reshape(2, 48) + Tensor.eye(48, device=DEV)[:2], "rand": lambda: Tensor.rand(64, device=DEV),
    "layernorm": lambda: a.layernorm(), "batchnorm_like": lambda: (a - a.mean(0)) * (a.var(0) + 1e-5).rsqrt(),
    "sort": lambda: a[0].sort()[0], "symbolic_shrink": lambda: a.shrink(((0, v), None)) + 1,
  }

def kernels(cases:dict[str, Callable[[], Tensor|list[Tensor]]]|None=None) -> Iterator[tuple[str, object]]:
  """(case name, the AST of each of its kernels), in schedule order."""
  for name, fxn in (cases or op_cases()).items():
    out = fxn()
    sched, _ = Tensor.schedule_with_vars(*(out if isinstance(out, list) else [out]))
    for si in sched:
      if si.ast.op is Ops.SINK: yield name, si.ast

def lower_all(ren:Renderer, check:Callable[[ProgramSpec], None]) -> tuple[int, list[str]]:
  """Lower every kernel of the op set for ren and run check on it: (kernels that passed, one line per failure with its reason)."""
  ok, failed = 0, []
  for name, ast in kernels():
    try: check(get_program(ast, ren))   # type: ignore[arg-type]
    except Exception as e: failed.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    else: ok += 1
  return ok, failed

# ***** METAL has no compiler here: its source is checked for structure (tinygrad/runtime/support/metal_check.py) *****

def metal_structure_errors(p:ProgramSpec) -> list[str]:
  """The library's structural checks of a program's Metal source, and its buffers declared as the program's uops say (when it has them)."""
  errs = metal_source_errors(p.src, p.name)
  params = re.findall(r"device (?:const )?(\w+)\* (data\d+)", p.src)
  want = [(MetalRenderer().render_dtype(u.dtype.base, mem=True), f"data{u.arg}") for u in sorted((u for u in p.uops or [] if u.op is Ops.DEFINE_GLOBAL),
                                                                                                  key=lambda u: u.arg)]
  return errs + ([f"buffers declared {params}, the program has {want}"] if p.uops is not None and params != want else [])
