"""In-place updates (assign, +=, *=, setitem) on tensors in a graph that requires grad, with realizes between, against PyTorch run
functionally (y = y op s). Usage: PYTHONPATH=. python3 extra/fuzz_inplace_grad.py FIRST_SEED LAST_SEED. Prints each mismatch (BAD: values,
ERR: tinygrad raised) and the count; REFERR: torch itself can not differentiate the case (skipped)."""
import random, sys
import numpy as np
import torch
from tinygrad import Tensor
def case(seed, verbose=False):
  rng = random.Random(seed)
  n = 3
  xs = [rng.choice([0.5,1.,2.,-1.,3.]) for _ in range(n)]
  ws = [rng.choice([0.5,1.,2.,-1.,3.]) for _ in range(n)]
  ys = [rng.choice([0.5,1.,2.,-1.]) for _ in range(n)]
  kind = rng.choice(["buf", "nonleaf", "lazy"])
  steps = []
  for _ in range(rng.randint(1,4)):
    op = rng.choice(["assign_mul", "assign_add", "iadd", "imul", "setitem", "assign_yy", "isub"])
    steps.append((op, rng.random() < 0.5, rng.choice(["x", "w"]), rng.randrange(n)))
  loss = rng.choice(["sum", "sq", "mix"])
  def prog(T, lib):
    x = T(xs, requires_grad=True) if lib else Tensor(xs, requires_grad=True)
    w = T(ws, requires_grad=True) if lib else Tensor(ws, requires_grad=True)
    if kind == "buf": y = T(ys) if lib else Tensor(ys).contiguous().realize()
    elif kind == "nonleaf": y = T(ys)*w if lib else (Tensor(ys)*w)
    else: y = T(ys)*1 if lib else Tensor(ys)*1
    keep = y*1
    for op, rz, src, i in steps:
      s = x if src == "x" else w
      if op == "assign_mul": y = y*s if lib else y.assign(y*s)
      elif op == "assign_add": y = y+s*s if lib else y.assign(y+s*s)
      elif op == "iadd":
        if lib: y = y + s
        else: y += s
      elif op == "isub":
        if lib: y = y - s.exp()
        else: y -= s.exp()
      elif op == "imul":
        if lib: y = y * s
        else: y *= s
      elif op == "assign_yy": y = y*y if lib else y.assign(y*y)
      elif op == "setitem":
        if lib: y = torch.cat([y[:i], (s[i]*y[(i+1)%n]).reshape(1), y[i+1:]])
        else: y[i] = s[i]*y[(i+1)%n]
      if rz and not lib: y.realize()
    L = {"sum": y.sum(), "sq": (y*y).sum(), "mix": (y*keep).sum() + y.sum()}[loss]
    L.backward()
    return [x.grad.tolist() if x.grad is not None else None, w.grad.tolist() if w.grad is not None else None, y.tolist()]
  desc = (xs, ws, ys, kind, steps, loss)
  try: ref = prog(torch.tensor, True)
  except Exception as e: return ("REFERR", desc, e)
  try: got = prog(None, False)
  except Exception as e: return ("ERR", desc, f"{type(e).__name__}: {e}")
  def close(a, b):
    if a is None or b is None: return (a is None) == (b is None) or all(v == 0 for v in (a or b))
    return np.allclose(a, b, rtol=1e-4, atol=1e-4)
  if not all(close(a, b) for a, b in zip(got, ref)): return ("BAD", desc, got, ref)
  return None
bad = 0
for s in range(int(sys.argv[1]), int(sys.argv[2])):
  r = case(s)
  if r: bad += 1; print(s, *r)
print("bad", bad)
