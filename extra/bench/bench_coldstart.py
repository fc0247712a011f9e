#!/usr/bin/env python3
"""First calls: the first training steps (forward, backward, SGD) of an MLP in a new process, with an empty cache (cold: every kernel is
optimized, lowered, rendered and compiled) and with the disk cache the cold run left (warm: a lookup per kernel), against PyTorch's first
step in a new process, all in one run. Each number is one new process (the best of --repeat), timed from after the imports.
Usage: python3 extra/bench/bench_coldstart.py [--repeat N] [--device CPU]"""
import json, os, pathlib, subprocess, sys, tempfile, time

# (name, layer sizes, batch): a 3-layer MLP on MNIST-sized inputs, and a tiny one whose kernels are all small
MODELS = {"mlp": ((784, 256, 256, 10), 64), "tiny": ((16, 32, 32, 4), 8)}
ROOT = pathlib.Path(__file__).resolve().parents[2]

def timed(step) -> dict:
  # wall time, and the process's CPU time (on a busy machine the CPU time is what the step costs; kernel threads add to it)
  (w0, c0), _, (w1, c1), _, (w2, c2) = (time.perf_counter(), time.process_time()), step(), (time.perf_counter(), time.process_time()), step(), \
    (time.perf_counter(), time.process_time())
  return {"first": w1 - w0, "second": w2 - w1, "first cpu": c1 - c0, "second cpu": c2 - c1}

def child_tinygrad(model:str) -> dict:
  st = time.perf_counter()
  from tinygrad import Tensor, nn
  from tinygrad.nn.optim import SGD
  imported = time.perf_counter() - st
  sizes, bs = MODELS[model]
  Tensor.manual_seed(0)
  layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
  opt = SGD(nn.state.get_parameters(layers), lr=0.01)
  # the data comes from a loader: realized before the step, as a batch would be
  x, y = Tensor.randn(bs, sizes[0]).realize(), Tensor.randint(bs, high=sizes[-1]).realize()
  def step() -> float:
    with Tensor.train():
      opt.zero_grad()
      h = x
      for i, layer in enumerate(layers): h = layer(h).relu() if i < len(layers) - 1 else layer(h)
      loss = h.sparse_categorical_crossentropy(y)
      loss.backward()
      opt.step()
      return loss.item()
  return {"import": imported, **timed(step)}

def child_torch(model:str) -> dict:
  st = time.perf_counter()
  import torch
  imported = time.perf_counter() - st
  sizes, bs = MODELS[model]
  torch.manual_seed(0)
  net = torch.nn.Sequential(*[m for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
                              for m in ([torch.nn.Linear(a, b)] + ([torch.nn.ReLU()] if i < len(sizes) - 2 else []))])
  opt = torch.optim.SGD(net.parameters(), lr=0.01)
  x, y = torch.randn(bs, sizes[0]), torch.randint(0, sizes[-1], (bs,))
  def step() -> float:
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    return loss.item()
  return {"import": imported, **timed(step)}

def spawn(kind:str, model:str, env:dict) -> dict|None:
  ret = subprocess.run([sys.executable, __file__, "--child", kind, model], env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                       capture_output=True, text=True, timeout=1800)
  if ret.returncode != 0:
    if kind != "torch": raise RuntimeError(f"{kind} {model} failed:\n{ret.stderr}")
    return None   # torch isn't installed: its column stays empty
  return json.loads(ret.stdout.strip().splitlines()[-1])

def best(runs:list[dict]) -> dict: return {k: min(r[k] for r in runs) for k in runs[0]}

def main():
  repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
  env = {"DEV": sys.argv[sys.argv.index("--device") + 1]} if "--device" in sys.argv else {}
  rows = []
  for model in MODELS:
    cold, warm = [], []
    for _ in range(repeat):
      with tempfile.TemporaryDirectory() as d:
        cache = {"CACHEDB": os.path.join(d, "cache.db"), "XDG_CACHE_HOME": d}
        cold.append(spawn("tinygrad", model, {**env, **cache}))
        warm.extend(spawn("tinygrad", model, {**env, **cache}) for _ in range(2))
    torch_runs = [r for r in (spawn("torch", model, {}) for _ in range(repeat)) if r is not None]
    rows.append((model, best(cold), best(warm), best(torch_runs) if torch_runs else None))
  print(f"first calls in a new process, best of {repeat}; seconds, timed after the imports (import: their own row; cpu: the process's CPU time)")
  print(f"| {'model':5s} | {'step':10s} | {'cold':>7s} | {'warm':>7s} | {'torch':>7s} | {'warm/torch':>10s} |")
  print("|-------|------------|---------|---------|---------|------------|")
  for model, c, w, t in rows:
    for k in ("import", "first", "second", "first cpu", "second cpu"):
      ts, ratio = (f"{t[k]:7.3f}", f"{w[k]/t[k]:9.1f}x") if t else (f"{'-':>7s}", f"{'-':>10s}")
      print(f"| {model:5s} | {k:10s} | {c[k]:7.3f} | {w[k]:7.3f} | {ts} | {ratio} |")
    print(f"| {model:5s} | {'first+2nd':10s} | {c['first']+c['second']:7.3f} | {w['first']+w['second']:7.3f} | "
          + (f"{t['first']+t['second']:7.3f} | {(w['first']+w['second'])/(t['first']+t['second']):9.1f}x |" if t else f"{'-':>7s} | {'-':>10s} |"))
  sizes = {m: "-".join(map(str, s)) + f" batch {b}" for m, (s, b) in MODELS.items()}
  print(f"models: {sizes}; target: mlp first step, warm, <= 1 s")

if __name__ == "__main__":
  if "--child" in sys.argv:
    kind, model = sys.argv[sys.argv.index("--child") + 1:][:2]
    print(json.dumps((child_torch if kind == "torch" else child_tinygrad)(model)))
  else: main()
