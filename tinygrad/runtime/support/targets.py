"""Cross-compile targets, in one place: a name (CUDA, PTX, AMD, METAL ...) -> how to make its renderer and its compiler from an arch string,
and the archs checked by default. The engine (engine/cross.py, CROSS_COMPILE=...) renders and compiles every kernel it lowers for each target
named, without running anything: a target needs its compiler here, never its hardware. A vendor's module registers its own targets."""
from __future__ import annotations
from dataclasses import dataclass
from typing import Callable
from tinygrad.device import Compiler
from tinygrad.renderer import Renderer

@dataclass(frozen=True)
class Target:
  name: str
  renderer: Callable[[str], Renderer]     # arch -> the renderer (its tensor cores, locals and limits are the target's)
  compiler: Callable[[str], Compiler]     # arch -> a compiler whose compile(src) makes the binary (or raises CompileError)
  archs: tuple[str, ...]                  # the archs `--compile NAME` checks when none is given

TARGETS: dict[str, Target] = {}
def register_target(name:str, renderer:Callable[[str], Renderer], compiler:Callable[[str], Compiler], archs:tuple[str, ...]) -> None:
  TARGETS[name.upper()] = Target(name.upper(), renderer, compiler, archs)

def parse_targets(spec:str) -> list[tuple[Target, str]]:
  """"CUDA:sm_80,PTX" -> [(CUDA, sm_80), (PTX, each of its default archs)]."""
  out: list[tuple[Target, str]] = []
  for item in (x.strip() for x in spec.split(",") if x.strip()):
    name, _, arch = item.partition(":")
    if (t := TARGETS.get(name.upper())) is None: raise ValueError(f"unknown cross-compile target {name!r}, known targets are {', '.join(TARGETS)}")
    out += [(t, a) for a in ((arch,) if arch else t.archs)]
  return out

# the imports are inside the factories: a target costs nothing until it is used
def _cuda_renderer(arch:str) -> Renderer:
  from tinygrad.renderer.cstyle import CUDARenderer
  return CUDARenderer(arch)
def _nvrtc(arch:str) -> Compiler:
  from tinygrad.runtime.support.compiler_cuda import NVRTCCompiler
  return NVRTCCompiler(arch)
def _ptx_renderer(arch:str) -> Renderer:
  from tinygrad.renderer.ptx import PTXRenderer
  return PTXRenderer(arch)
def _ptxas(arch:str) -> Compiler:
  from tinygrad.runtime.support.compiler_cuda import PTXCompiler
  return PTXCompiler(arch)
register_target("CUDA", _cuda_renderer, _nvrtc, ("sm_80", "sm_90"))
register_target("PTX", _ptx_renderer, _ptxas, ("sm_80", "sm_90"))
def _amd_renderer(arch:str) -> Renderer:
  from tinygrad.renderer.llvmir import AMDLLVMRenderer
  return AMDLLVMRenderer(arch)
def _amd_llvm(arch:str) -> Compiler:
  from tinygrad.runtime.support.compiler_amd import AMDLLVMCompiler
  return AMDLLVMCompiler(arch)
register_target("AMD", _amd_renderer, _amd_llvm, ("gfx90a", "gfx1100"))
# METAL has no compiler off macOS: the rendered source passes structural checks (runtime/support/metal_check.py), Metal's AIR is the "arch"
def _metal_renderer(arch:str) -> Renderer:
  from tinygrad.renderer.cstyle import MetalRenderer
  return MetalRenderer()
def _metal_check(arch:str) -> Compiler:
  from tinygrad.runtime.support.metal_check import MetalSourceCheck
  return MetalSourceCheck()
register_target("METAL", _metal_renderer, _metal_check, ("air64",))
