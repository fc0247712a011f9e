# PTX fp8 (e4m3fn, e5m2) without a GPU: the instructions the PTX renderer emits for f32 <-> fp8 are run by a small interpreter of those
# PTX instructions (numpy float32 for the float ones, which rounds like the GPU), on every fp8 code and on floats around every rounding
# boundary, and compared bit for bit with tinygrad's fp8 semantics (dtype.float_to_fp8 / fp8_to_float, which torch's casts match up to
# e4m3fn's saturation). sm_80 uses integer emulation; sm_89+ the hardware cvt, modelled here as the PTX ISA describes it.
import math, re, struct
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.dtype import float_to_fp8, fp8_to_float
from tinygrad.device import DeviceUnavailable
from tinygrad.codegen.program import get_program
from tinygrad.renderer.ptx import PTXCtx, PTXRenderer, to_fp8, from_half_bits
from tinygrad.runtime.support import compiler_cuda
from tinygrad.runtime.support.compiler_cuda import PTXCompiler

def f2b(f:float) -> int: return struct.unpack("<I", struct.pack("<f", f))[0]
def b2f(b:int) -> float: return struct.unpack("<f", struct.pack("<I", b & 0xffffffff))[0]
def hw_to_fp8(f:float, dt) -> int:   # cvt.rn.satfinite: nearest even, beyond the largest finite value (inf too) the largest finite value
  if math.isnan(f): return 0x7f
  top = 0x7e if dt == dtypes.fp8e4m3 else 0x7b
  code = float_to_fp8(f, dt)
  return (code & 0x80) | top if (code & 0x7f) > top else code

def run(lines:list[str], regs:dict[str, int]) -> dict[str, int]:
  """Run straight-line PTX over registers holding raw bits (%h 16, %r 32 bits, %p 0/1)."""
  def val(a:str) -> int:
    if a.startswith("%"): return regs[a]
    return int(a[2:], 16) if a.startswith("0f") else int(a, 0)
  mask = lambda d, v: v & (0xffff if d.startswith("%h") else 1 if d.startswith("%p") else 0xffffffff)  # noqa: E731
  for line in lines:
    if (m := re.fullmatch(r"\s*mov\.b32 \{(%\w+), (%\w+)\}, (%\w+);", line)):
      regs[m[1]], regs[m[2]] = val(m[3]) & 0xffff, val(m[3]) >> 16
      continue
    ins, rest = line.strip().rstrip(";").split(" ", 1)
    d, *a = rest.split(", ")
    x = [val(v) for v in a]
    op, *mods = ins.split(".")
    t = mods[-1]
    if op == "cvt" and mods[-2:] == ["f32", "f16"]: r = f2b(float(np.uint16(x[0]).view(np.float16)))
    elif op == "cvt" and mods[-2:] == ["u32", "u16"]: r = x[0] & 0xffff
    elif op == "cvt" and mods[-2:] == ["u16", "u32"]: r = x[0] & 0xffff
    elif op == "cvt" and mods[-2:] == ["u32", "f32"]:   # float -> int saturates, nan is 0
      r = 0 if math.isnan(f := b2f(x[0])) else int(min(max(np.rint(np.float32(f)), 0), 0xffffffff))
    elif op == "cvt" and "satfinite" in mods:
      code = hw_to_fp8(b2f(x[1]), dtypes.fp8e4m3 if "e4m3x2" in mods else dtypes.fp8e5m2)
      r = code | code << 8
    elif op == "cvt" and mods[-2:] == ["f16x2", "e4m3x2"]:
      r = int(np.float16(fp8_to_float(x[0] & 0xff, dtypes.fp8e4m3)).view(np.uint16)) | \
          int(np.float16(fp8_to_float(x[0] >> 8 & 0xff, dtypes.fp8e4m3)).view(np.uint16)) << 16
    elif op == "mul" and t == "f32":
      with np.errstate(over="ignore"): r = f2b(float(np.float32(b2f(x[0])) * np.float32(b2f(x[1]))))
    elif op == "abs" and t == "f32": r = x[0] & 0x7fffffff
    elif op == "setp":
      cmp = {"eq": lambda p, q: p == q, "lt": lambda p, q: p < q, "gt": lambda p, q: p > q, "ge": lambda p, q: p >= q}[mods[0]]
      r = int(cmp(b2f(x[0]), b2f(x[1])) if t == "f32" else cmp(x[0], x[1]))
    elif op == "selp": r = x[0] if x[2] else x[1]
    else: r = {"and": lambda: x[0] & x[1], "or": lambda: x[0] | x[1], "shl": lambda: x[0] << x[1], "shr": lambda: x[0] >> x[1],
               "add": lambda: x[0] + x[1], "sub": lambda: x[0] - x[1], "min": lambda: min(x)}[op]()
    regs[d] = mask(d, r)
  return regs

def _conv(fn, dt, fp8_cvt:bool, inp:str) -> tuple[list[str], str]:
  ctx = PTXCtx(fp8_cvt)
  out = fn(ctx, inp, dt)
  return ctx.lines, out

# every fp8 code, the floats halfway between neighbours and just off them (ties go to even), past the top, subnormals, inf and nan
def _floats(dt) -> list[float]:
  vals = sorted({v for c in range(256) if not math.isnan(v := fp8_to_float(c, dt))})
  out = list(vals) + [math.inf, -math.inf, math.nan, -math.nan, 1e30, -1e-30, 3e-10, 0.0, -0.0, 65504.0, 1e5, 448.0, 464.0, 480.0, 61440.0]
  for a, b in zip(vals, vals[1:]):
    mid = np.float32((a + b) / 2)
    out += [float(mid), float(np.nextafter(mid, np.float32(np.inf))), float(np.nextafter(mid, np.float32(-np.inf)))]
  return out

@pytest.mark.parametrize("fp8_cvt", [False, True], ids=["sm_80", "sm_89"])
@pytest.mark.parametrize("dt", dtypes.fp8s, ids=str)
def test_f32_to_fp8_bits(dt, fp8_cvt):
  lines, out = _conv(to_fp8, dt, fp8_cvt, "%rIN")
  bad = []
  for f in _floats(dt):
    got = run(lines, {"%rIN": f2b(f)})[out] & 0xff
    want = float_to_fp8(f, dt)
    if math.isnan(f): ok = math.isnan(fp8_to_float(got, dt))
    else: ok = got == want
    if not ok: bad.append((f, hex(got), hex(want)))
  assert not bad, bad[:10]

@pytest.mark.parametrize("fp8_cvt", [False, True], ids=["sm_80", "sm_89"])
@pytest.mark.parametrize("dt", dtypes.fp8s, ids=str)
def test_fp8_bits_to_f32(dt, fp8_cvt):
  lines, out = _conv(from_half_bits, dt, fp8_cvt, "%hIN")
  for code in range(256):
    # the byte is the low half of a 16-bit register whose high half may hold anything (a sign-extended int8 bitcast)
    got = b2f(run(lines, {"%hIN": code | 0xff00 * (code >> 7)})[out])
    want = fp8_to_float(code, dt)
    assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want)), (hex(code), got, want)

def test_fp8_conversions_by_arch():
  ast = Tensor.empty(4, device="PYTHON").cast(dtypes.fp8e4m3).schedule()[-1].ast
  src = {arch: get_program(ast, PTXRenderer(arch)).src for arch in ("sm_80", "sm_89")}
  assert "e4m3x2" not in src["sm_80"] and "cvt.rn.satfinite.e4m3x2.f32" in src["sm_89"] and ".version 8.1" in src["sm_89"]

_have_ptxas = True
try: compiler_cuda.ptxas()
except DeviceUnavailable: _have_ptxas = False

@pytest.mark.skipif(not _have_ptxas, reason="needs ptxas: pip install 'tinygrad[cuda]'")
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_fp8_kernels_assemble(arch):
  outs = []
  for dt in dtypes.fp8s:
    a, b, i = Tensor.empty(64, device="PYTHON"), Tensor.empty(64, dtype=dt, device="PYTHON"), Tensor.empty(64, dtype=dtypes.int8, device="PYTHON")
    outs += [a.cast(dt), b.float(), b + b, (b * 2).sum(), b.cast(dtypes.half), i.bitcast(dt), b.bitcast(dtypes.int8), (b > 0).where(b, 0)]
  asts = [si.ast for o in outs for si in o.schedule() if si.ast.op.name == "SINK"]
  for ast in asts: assert len(PTXCompiler(arch).compile(get_program(ast, PTXRenderer(arch)).src)) > 0
