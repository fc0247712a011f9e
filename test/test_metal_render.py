"""METAL without a Mac: every kernel of the op set (test/vendor_kernels.py) rendered as Metal Shading Language and checked for structure:
balanced brackets, the kernel and its buffers declared as the program says, only Metal's types (no double: Metal has none), no other
dialect's spellings, threadgroup memory within Metal's 32 KiB. On macOS with the Metal toolchain the sources are compiled too."""
import shutil, subprocess, sys, pytest
from tinygrad import Device, dtypes
from tinygrad.renderer import ProgramSpec
from tinygrad.renderer.cstyle import MetalRenderer
from tinygrad.device import CompileError
from test.vendor_kernels import lower_all, metal_structure_errors, MetalSourceCheck

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

def test_source_check_as_compiler():
  # the compile(src) -> bytes shape a cross-compile hook takes: structural errors are CompileErrors with the source
  good = "kernel void k(device float* data0, uint3 gid [[threadgroup_position_in_grid]]) {\n  *(data0+0) = 1.0f;\n}\n"
  assert MetalSourceCheck().compile(good) == good.encode()
  with pytest.raises(CompileError, match="double"): MetalSourceCheck().compile(good.replace("1.0f", "(double)1.0f"))
