# The import graph of tinygrad/: every module is parsed (imports inside functions count too) and the graph must have no cycle and only
# point down the pipeline, as DESIGN.md orders it. A module may import modules of its own layer or of a layer below it.
import ast, pathlib
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2] / "tinygrad"

# top to bottom. The front end drives the engine; the engine schedules and asks codegen.program for programs; codegen.program is the
# codegen entry that runs the optimizer (opt) and then the lowering passes (the rest of codegen); renderers print programs; runtimes are
# device plug-ins (loaded by name by device.py, never imported by it) over device.py, which IR may use for buffers; helpers and dtype last.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
  # TinyJit wraps user functions of Tensors, so it sits with the front end it serves
  ("front end", ("tinygrad", "tinygrad.tensor", "tinygrad.gradient", "tinygrad.nn", "tinygrad.viz", "tinygrad.engine.jit")),
  ("engine", ("tinygrad.engine",)),
  ("schedule", ("tinygrad.schedule",)),
  ("codegen entry", ("tinygrad.codegen.program",)),
  ("opt", ("tinygrad.opt",)),
  ("codegen", ("tinygrad.codegen",)),
  ("runtime", ("tinygrad.runtime",)),
  ("renderer", ("tinygrad.renderer",)),
  ("IR/shape", ("tinygrad.uop", "tinygrad.shape")),
  ("device", ("tinygrad.device",)),
  ("base", ("tinygrad.dtype", "tinygrad.helpers")),
]

def module_name(p:pathlib.Path) -> str:
  parts = p.relative_to(ROOT.parent).with_suffix("").parts
  return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

def layer_of(mod:str) -> int:
  # the longest matching prefix decides: tinygrad.codegen.program is the codegen entry, tinygrad.codegen.lowerer plain codegen
  best, ret = -1, -1
  for i, (_, prefixes) in enumerate(LAYERS):
    for pre in prefixes:
      if (mod == pre or mod.startswith(pre + ".")) and len(pre) > best: best, ret = len(pre), i
  if ret < 0: raise AssertionError(f"{mod} is in no layer: add it to LAYERS")
  return ret

def _is_main_guard(node:ast.AST) -> bool:
  return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name) and \
    node.test.left.id == "__name__"

def imports_of(path:pathlib.Path, mod:str, known:set[str]) -> tuple[set[str], set[str]]:
  """(every tinygrad module it imports, those imported when the module loads, i.e. outside functions)"""
  tree = ast.parse(path.read_text())
  # a script block (`if __name__ == "__main__":`) is a program using the module, not a dependency of it
  tree.body = [n for n in tree.body if not _is_main_guard(n)]
  pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
  in_function: set[ast.AST] = {n for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)}
  every: set[str] = set()
  at_load: set[str] = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import): names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        up = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)]
        base = ".".join(up + ([base] if base else []))
      # `from tinygrad.codegen import program` imports the module tinygrad.codegen.program
      names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    else: continue
    found = {n for n in names if (n == "tinygrad" or n.startswith("tinygrad.")) and n != mod}
    every |= found
    if node not in in_function: at_load |= found
  return every, at_load

@pytest.fixture(scope="module")
def graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
  files = {module_name(p): p for p in ROOT.rglob("*.py")}
  got = {m: imports_of(p, m, set(files)) for m, p in files.items()}
  return {m: g[0] for m, g in got.items()}, {m: g[1] for m, g in got.items()}

@pytest.fixture(scope="module")
def graph(graphs) -> dict[str, set[str]]: return graphs[0]

def find_cycle(edges:dict[str, set[str]]) -> list[str]|None:
  state: dict[str, int] = {}
  stack: list[str] = []
  def visit(n:str) -> list[str]|None:
    state[n] = 1
    stack.append(n)
    for d in sorted(edges.get(n, ())):
      if state.get(d) == 1: return stack[stack.index(d):] + [d]
      if d not in state and (c := visit(d)) is not None: return c
    stack.pop()
    state[n] = 2
    return None
  for n in sorted(edges):
    if n not in state and (c := visit(n)) is not None: return c
  return None

def test_every_module_has_a_layer(graph):
  for m in graph: layer_of(m)

def test_imports_point_down(graph):
  bad = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {d} ({LAYERS[layer_of(d)][0]})" for m, deps in graph.items() for d in deps
         if layer_of(d) < layer_of(m)]
  assert not bad, "imports that point up the pipeline:\n" + "\n".join(sorted(bad))

def node(m:str) -> str:
  # the nodes are the LAYERS entries (packages, or modules named there like the codegen entry); IR and shapes are one node (a UOp carries
  # a ShapeTracker, a View lowers to UOps)
  if m.startswith(("tinygrad.uop", "tinygrad.shape")): return "IR/shape"
  return max((pre for _, prefixes in LAYERS for pre in prefixes if m == pre or (pre != "tinygrad" and m.startswith(pre + "."))), key=len)

def test_no_cycle_between_packages(graph):
  edges: dict[str, set[str]] = {}
  for m, deps in graph.items(): edges.setdefault(node(m), set()).update(node(d) for d in deps if node(d) != node(m))
  assert (c := find_cycle(edges)) is None, "import cycle: " + " -> ".join(c)

def test_no_cycle_when_loading(graphs):
  # imports that run when a module loads (not inside a function) never loop back, module by module
  assert (c := find_cycle(graphs[1])) is None, "import cycle at load time: " + " -> ".join(c)

def test_checker_finds_cycles():
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
  assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
  assert layer_of("tinygrad.opt.search") > layer_of("tinygrad.engine.realize")   # so search importing the engine is an upward import
  assert layer_of("tinygrad.codegen.program") < layer_of("tinygrad.opt.search") < layer_of("tinygrad.codegen.lowerer")

def test_engine_never_imports_opt(graph):
  assert not {d for m, deps in graph.items() if m.startswith("tinygrad.engine") for d in deps if d.startswith("tinygrad.opt")}

# ***** capabilities, not names: no code outside runtime/ compares a device name (issue 10) *****
DEVICE_NAMES = {"CPU", "LLVM", "GPU", "CL", "CUDA", "NV", "AMD", "METAL", "WEBGPU", "REMOTE", "DISK", "NPY", "NULL", "PYTHON", "QCOM", "DSP"}

def _names_in(node:ast.AST) -> set[str]:
  items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
  return {x.value.split(":")[0].upper() for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)} & DEVICE_NAMES

def device_name_compares(tree:ast.AST) -> list[int]:
  """Lines that compare a value with a device name: ==/!=/in/not in against a name (or a tuple of names), or .startswith(name)."""
  lines = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Compare) and any(_names_in(x) for x in [node.left, *node.comparators]): lines.append(node.lineno)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith") and \
       any(_names_in(a) for a in node.args): lines.append(node.lineno)
  return lines

def test_no_device_name_compares_outside_runtime():
  bad = {str(p.relative_to(ROOT.parent)): ls for p in sorted(ROOT.rglob("*.py")) if "runtime" not in p.relative_to(ROOT).parts
         and (ls := device_name_compares(ast.parse(p.read_text())))}
  assert not bad, f"device names compared outside runtime/ (ask the device's capabilities instead): {bad}"

def test_device_name_checker_finds_compares():
  src = 'if dev == "CPU": pass\nif d.split(":")[0] in ("GPU", "CUDA"): pass\nx = dev.startswith("WEBGPU")\nok = dev == "cpu_count"\n'
  assert device_name_compares(ast.parse(src)) == [1, 2, 3]
