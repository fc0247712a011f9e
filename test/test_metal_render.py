"""METAL without a Mac: every kernel of the op set (test/vendor_kernels.py) rendered as Metal Shading Language and checked for structure:
balanced brackets, the kernel and its buffers declared as the program says, only Metal's types (no double: Metal has none), no other
dialect's spellings, threadgroup memory within Metal's 32 KiB. On macOS with the Metal toolchain the sources are compiled too."""
import re, shutil, subprocess, sys, pytest
from tinygrad import Device, dtypes
from tinygrad.renderer import ProgramSpec
from tinygrad.renderer.cstyle import MetalRenderer
from tinygrad.uop import Ops
from test.vendor_kernels import lower_all

_SCALARS = {"float", "half", "bfloat", "int", "uint", "char", "uchar", "short", "ushort", "long", "ulong", "bool"}
METAL_TYPES = _SCALARS | {f"{s}{n}" for s in _SCALARS for n in (2, 3, 4)}
FOREIGN = ["__global", "__shared__", "__syncthreads", "get_local_id", "get_group_id", "blockIdx", "threadIdx", "__builtin_amdgcn", "__ockl",
           "OPENCL", "_Float16", "__bf16", "unsigned short", "vload", "vstore"]

def metal_structure_errors(p:ProgramSpec) -> list[str]:
  src, errs = p.src, []
  stack: list[str] = []
  for ch in src:
    if ch in "({[": stack.append(ch)
    elif ch in ")}]":
      if not stack or "({["[")}]".index(ch)] != stack.pop(): return [f"unbalanced {ch!r}"]
  if stack: errs.append(f"unclosed {''.join(stack)!r}")
  heads = re.findall(r"kernel void (\w+)\((.*)\) \{", src)
  if len(heads) != 1 or heads[0][0] != p.name: return errs + [f"expected one kernel {p.name}, found {[h[0] for h in heads]}"]
  params = re.findall(r"device (?:const )?(\w+)\* (data\d+)", heads[0][1])
  bufs = sorted((u for u in p.uops or [] if u.op is Ops.DEFINE_GLOBAL), key=lambda u: u.arg)
  want = [(MetalRenderer().render_dtype(u.dtype.base, mem=True), f"data{u.arg}") for u in bufs]
  if params != want: errs.append(f"buffers declared {params}, the program has {want}")
  declared = {n for _, n in params}
  if (undeclared := set(re.findall(r"\bdata\d+\b", src)) - declared): errs.append(f"buffers used but not declared: {sorted(undeclared)}")
  if re.search(r"\bdouble\b", src): errs.append("double (Metal has no 64-bit float)")
  if (lits := re.findall(r"(?<![\w.])\d+\.\d*(?:e[+-]?\d+)?(?![\w.])", src)): errs.append(f"unsuffixed float literals (double in C++): {lits[:3]}")
  decls = re.findall(r"(?:const )?\b(\w+) (\w+) = ", src)
  if (bad := {t for t, _ in decls if t not in METAL_TYPES}): errs.append(f"types Metal doesn't have: {sorted(bad)}")
  names = [n for _, n in decls]
  if len(names) != len(set(names)): errs.append("a name declared twice")
  errs += [f"foreign spelling {f!r}" for f in FOREIGN if f in src]
  smem = sum(int(n) * {"float": 4, "half": 2, "int": 4}.get(t, 4) for t, n in re.findall(r"threadgroup __attribute__\(\(aligned\(16\)\)\) (\w+) \w+\[(\d+)\];", src))
  if smem > 32768: errs.append(f"{smem} bytes of threadgroup memory, Metal has 32768")
  return errs

def test_op_set_renders_as_metal():
  def check(p:ProgramSpec):
    if (errs := metal_structure_errors(p)): raise AssertionError("; ".join(errs))
  ok, failed = lower_all(MetalRenderer(), check)
  print(f"METAL: {ok} kernels pass the structural checks, {len(failed)} failed" + "".join(f"\n  {f}" for f in failed))
  # float64 is refused at codegen with a clear error, since the renderer declares the dtypes Metal has
  assert len(failed) == 1 and failed[0].startswith("float64: RuntimeError") and "can't compute dtypes.double" in failed[0], failed
  assert ok >= 60

def test_checker_catches_problems():
  good = ProgramSpec("k", "kernel void k(device float* data0, uint3 gid [[threadgroup_position_in_grid]]) {\n  const float alu0 = 1.0f;\n}\n", "METAL",
                     None)  # type: ignore[arg-type]
  assert [e for e in metal_structure_errors(good) if "buffers declared" not in e] == []
  for bad, why in [(good.src.replace("}\n", ""), "unclosed"), (good.src.replace("float alu0", "double alu0"), "double"),
                   (good.src.replace("1.0f", "1.0"), "unsuffixed"), (good.src.replace("float alu0", "float16 alu0"), "doesn't have"),
                   (good.src.replace("1.0f", "data3[0]"), "not declared"), (good.src.replace("kernel void k", "kernel void j"), "one kernel k"),
                   (good.src.replace("1.0f", "__syncthreads()"), "foreign")]:
    assert any(why in e for e in metal_structure_errors(ProgramSpec("k", bad, "METAL", None))), why  # type: ignore[arg-type]

def test_metal_dtypes():
  assert not MetalRenderer().supports_dtype(dtypes.float64) and MetalRenderer().supports_dtype(dtypes.bfloat16)

@pytest.mark.skipif(sys.platform == "darwin", reason="Metal is here")
def test_no_metal_is_clear():
  with pytest.raises(RuntimeError, match=r"no Metal \(macOS only\)"): Device["METAL"]

@pytest.mark.skipif(shutil.which("xcrun") is None, reason="needs the Metal toolchain (macOS, Xcode)")
def test_op_set_compiles_with_metal(tmp_path):
  def check(p:ProgramSpec):
    (f := tmp_path / f"{p.name}.metal").write_text(p.src)
    ret = subprocess.run(["xcrun", "-sdk", "macosx", "metal", "-c", str(f), "-o", str(tmp_path / "k.air")], capture_output=True, text=True)
    if ret.returncode != 0: raise AssertionError(ret.stderr[:500])
  ok, failed = lower_all(MetalRenderer(), check)
  assert len(failed) == 1 and failed[0].startswith("float64"), failed
