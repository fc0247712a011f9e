"""METAL off macOS: no Metal compiler runs here, so a kernel's Metal Shading Language source is checked for structure instead. The checks are
cheap and real: balanced brackets, one well-formed kernel signature (device buffers, constant scalars, position attributes Metal has), every
identifier declared before it is used (or one of Metal's types, keywords and functions), only Metal's types (no double: Metal has no 64-bit
float), float literals suffixed (an unsuffixed one is a double), no other dialect's spellings, and threadgroup memory within 32 KiB."""
from __future__ import annotations
import re
from tinygrad.device import Compiler, CompileError

_SCALARS = {"float", "half", "bfloat", "int", "uint", "char", "uchar", "short", "ushort", "long", "ulong", "bool"}
METAL_TYPES = _SCALARS | {f"{p}{s}{n}" for p in ("", "packed_") for s in _SCALARS for n in (2, 3, 4)} | \
              {f"simdgroup_{s}8x8" for s in ("float", "half", "bfloat")} | {"void"}
_KEYWORDS = {"kernel", "device", "constant", "threadgroup", "thread", "const", "for", "if", "else", "while", "return", "using", "namespace",
             "metal", "true", "false", "__attribute__", "aligned", "mem_flags", "mem_threadgroup", "precise", "fast"}
# Metal's standard library functions (metal_stdlib) a renderer may call
_FUNCTIONS = {"sin", "cos", "tan", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "pow", "powr", "trunc", "floor", "ceil", "rint", "round", "fabs",
              "abs", "max", "min", "fmax", "fmin", "fma", "fmod", "copysign", "clamp", "select", "isnan", "isinf", "isfinite", "signbit", "as_type",
              "threadgroup_barrier", "simdgroup_multiply_accumulate", "INFINITY", "NAN", "MAXFLOAT"}
_POSITIONS = {"threadgroup_position_in_grid", "thread_position_in_threadgroup", "thread_position_in_grid", "threads_per_threadgroup",
              "threadgroups_per_grid", "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup"}
FOREIGN = ["__global", "__shared__", "__syncthreads", "get_local_id", "get_group_id", "blockIdx", "threadIdx", "__builtin_amdgcn", "__ockl",
           "OPENCL", "_Float16", "__bf16", "unsigned short", "vload", "vstore"]
_PARAM = re.compile(r"device (?:const )?(?P<buf>\w+)\* (?P<bname>\w+)|constant (?P<var>\w+)& (?P<vname>\w+)|"
                    r"(?P<pos>u?(?:int|short)[23]?) (?P<pname>\w+) \[\[(?P<attr>\w+)\]\]")

def _bracket_errors(src:str) -> list[str]:
  stack: list[str] = []
  for ch in src:
    if ch in "({[": stack.append(ch)
    elif ch in ")}]" and (not stack or "({["[")}]".index(ch)] != stack.pop()): return [f"unbalanced {ch!r}"]
  return [f"unclosed {''.join(stack)!r}"] if stack else []

def _signature_errors(params:str) -> tuple[list[str], list[str]]:
  """What is wrong with a kernel's parameter list, and the names it declares."""
  errs, names = [], []
  for p in (x.strip() for x in params.split(", ")):
    if (m := _PARAM.fullmatch(p)) is None:
      errs.append(f"kernel parameter {p!r} is none of: device T* buffer, constant T& scalar, uint3 name [[position]]")
      continue
    if (t := m["buf"] or m["var"]) is not None and t not in _SCALARS: errs.append(f"kernel parameter {p!r}: {t} is not a Metal scalar type")
    if m["attr"] is not None and m["attr"] not in _POSITIONS: errs.append(f"kernel parameter {p!r}: Metal has no attribute [[{m['attr']}]]")
    names.append(m["bname"] or m["vname"] or m["pname"])
  if len(names) != len(set(names)): errs.append(f"kernel parameters named twice: {sorted(n for n in set(names) if names.count(n) > 1)}")
  return errs, names

def metal_source_errors(src:str, name:str|None=None) -> list[str]:
  """What is wrong with the structure of one kernel's Metal source (name: the kernel it must define)."""
  code = re.sub(r"/\*.*?\*/|//[^\n]*", "", src, flags=re.S)
  code = re.sub(r"^\s*#[^\n]*", "", code, flags=re.M)   # #include <metal_stdlib>
  if (errs := _bracket_errors(code)): return errs
  heads = re.findall(r"kernel void (\w+)\((.*)\) \{", code)
  if len(heads) != 1 or (name is not None and heads[0][0] != name): return [f"expected one kernel {name or ''}, found {[h[0] for h in heads]}"]
  errs, params = _signature_errors(heads[0][1])
  if re.search(r"\bdouble\b", code): errs.append("double (Metal has no 64-bit float)")
  if (lits := re.findall(r"(?<![\w.])\d+\.\d*(?:e[+-]?\d+)?(?![\w.])", code)): errs.append(f"unsuffixed float literals (double in C++): {lits[:3]}")
  decls = re.findall(r"(?:const )?\b(\w+) (\w+) = ", code)
  if (bad := {t for t, _ in decls if t not in METAL_TYPES}): errs.append(f"types Metal doesn't have: {sorted(bad)}")
  if len(names := [n for _, n in decls]) != len(set(names)): errs.append("a name declared twice")
  # every identifier is declared before its first use: as a parameter, after a type (a variable, a loop counter, a helper and its arguments,
  # `T a, b;`), or it is one of Metal's types, keywords and functions; a member (after '.') belongs to its value
  declared: dict[str, int] = {p: 0 for p in params}
  for m in re.finditer(r"\b(?=(\w+)[*&]? ((?:\w+, )*\w+)[ ;(\[,)=])", code):
    if m[1] in METAL_TYPES or m[1] in ("constant", "device"):
      for i, n in enumerate(m[2].split(", ")): declared.setdefault(n, m.start(2) + i)
  # numbers and [[attributes]] blanked out in place, so offsets stay those of code
  body = re.sub(r"\[\[\w+\]\]|(?<![\w.])\d[\w.]*(?:[eE][+-]\d+)?\w*", lambda m: " " * len(m[0]), code)
  known = METAL_TYPES | _KEYWORDS | _FUNCTIONS
  undeclared = {m[0] for m in re.finditer(r"(?<![\w.])[A-Za-z_]\w*", body) if m[0] not in known and m.start() < declared.get(m[0], len(code))}
  if undeclared: errs.append(f"used but not declared: {sorted(undeclared)}")
  errs += [f"foreign spelling {f!r}" for f in FOREIGN if f in code]
  smem = sum(int(n) * {"half": 2, "bfloat": 2, "short": 2, "ushort": 2, "char": 1, "uchar": 1, "bool": 1, "long": 8, "ulong": 8}.get(t, 4)
             for t, n in re.findall(r"threadgroup __attribute__\(\(aligned\(16\)\)\) (\w+) \w+\[(\d+)\];", code))
  if smem > 32768: errs.append(f"{smem} bytes of threadgroup memory, Metal has 32768")
  return errs

def numbered(src:str) -> str: return "\n".join(f"{i:4d} {line}" for i, line in enumerate(src.splitlines(), 1))

class MetalSourceCheck(Compiler):
  """compile(src) -> the source, after the structural checks (a CompileError lists what failed, with the numbered source): METAL's
  stand-in compiler where there is no Metal toolchain, the cross-compile target METAL (runtime/support/targets.py)."""
  def compile(self, src:str) -> bytes:
    if (errs := metal_source_errors(src)): raise CompileError("Metal source check failed: " + "; ".join(errs) + "\nsource:\n" + numbered(src))
    return src.encode()
