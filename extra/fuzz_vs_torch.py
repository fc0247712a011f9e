#!/usr/bin/env python3
"""Differential fuzzing against PyTorch (CPU): random small op graphs, forward and backward, in bool/int32/int64/float16/float32.

Each case builds the same graph on both libraries step by step. Expected dtypes follow tinygrad's rules (DESIGN.md): Python scalars
take the tensor's dtype (a float meeting ints gives float32, an int meeting bools int32), int / int is float32, sums (and cumsums,
prods) of bool/int32 accumulate and return int32, argmax is int32, mean of ints is float32. Where torch's dtype differs, its result is
converted to tinygrad's dtype before comparing. Every step checks the dtype and shape; the end checks the values and the gradients
of the float inputs through a random weighting of the output.

  python3 extra/fuzz_vs_torch.py --seconds 300 --seed 0 --device CPU
Each mismatch prints the case's seed, the program (one line per op) and what differed; --case N --mix M replays one case.
"""
from __future__ import annotations
import argparse, math, random, re, sys, time, traceback
from dataclasses import dataclass, field
from typing import Any, Callable
import numpy as np
import torch
import torch.nn.functional as F
from tinygrad import Tensor, dtypes, Device
from tinygrad.dtype import DType

DTYPES = ["bool", "int32", "int64", "float16", "float32"]        # ordered: the promotion of two of these is the later one
TORCH = {"bool": torch.bool, "int32": torch.int32, "int64": torch.int64, "float16": torch.float16, "float32": torch.float32}
TINY: dict[str, DType] = {"bool": dtypes.bool, "int32": dtypes.int32, "int64": dtypes.int64, "float16": dtypes.float16, "float32": dtypes.float32}
def is_float(dt:str) -> bool: return dt.startswith("float")
def is_int(dt:str) -> bool: return dt.startswith("int")
def promote(a:str, b:str) -> str: return max(a, b, key=DTYPES.index)
def float_of(dt:str) -> str: return dt if is_float(dt) else "float32"
def acc_of(dt:str) -> str: return "int32" if dt in ("bool", "int32") else dt   # tinygrad's sums of small ints: int32

# ops that hit a known bug (see KNOWN_BUGS in test/test_fuzz_vs_torch.py) stay out of the random programs until it is fixed
DISABLED_OPS: set[str] = set()
# Known bugs, each with a minimal repro (a strict xfail) in test/test_fuzz_vs_torch.py. While one is open, the programs steer around
# it, or a failure that shows its signature counts as that bug instead of a new mismatch. Remove a name here when its repro passes.
KNOWN_BUGS_OPEN: set[str] = set()
KNOWN_BUG_SIGNATURES = {"oob_read_after_exp_pad": "is out of bounds of"}   # PYTHON's bounds check fails the kernel
if "std_grad_at_zero_is_nan" in KNOWN_BUGS_OPEN: DISABLED_OPS.add("std")
def ill_conditioned_cast(c:Case) -> bool:
  # a float -> int cast of values that agree within tolerance but truncate apart (erf(3.9): 1.0 in torch, 1 ulp below in tinygrad)
  for t, r in c.casts:
    g, w = t.numpy().astype(np.float64), r.detach().double().numpy()
    if np.isclose(g, w, *tolerance("float16" if c.half else "float32"), equal_nan=True).all() and \
       not (np.array_equal(np.trunc(g), np.trunc(w), equal_nan=True) and np.array_equal(g != 0, w != 0)):
      return True
  return False
def known_bug(report:str, c:Case) -> str|None:
  if report.startswith("Mismatch") and ill_conditioned_cast(c): return "ill_conditioned_cast (not a bug)"
  # (fixed, kept for a reopened bug) gradients where a value was nan or inf: torch.amax gives a row holding nan nan gradients everywhere
  # (0/0); torch multiplies a 0 derivative (ceil, a max's other positions) by a nan or inf it meets (nan)
  if c.nonfinite and "Mismatch: gradient of" in report:
    if "amax_grad_of_nan_row" in KNOWN_BUGS_OPEN and any(".max(" in ln or ".min(" in ln for ln in c.lines): return "amax_grad_of_nan_row"
    if "zero_derivative_blocks_nonfinite" in KNOWN_BUGS_OPEN: return "zero_derivative_blocks_nonfinite"
  # a float cast to int or bool passes the gradient through here; torch's int values carry none
  if "grad_flows_through_int_cast" in KNOWN_BUGS_OPEN and c.int_cast and "Mismatch: gradient of" in report: return "grad_flows_through_int_cast"
  # a device whose compiler may assume no nan/inf (WGSL allows it; lavapipe folds x*0 to 0) differs from torch wherever one appears
  if not Device[Device.DEFAULT].renderer.nonfinite_exact and "Mismatch" in report and re.search(r"\b(nan|inf)\b", report):
    return "device_assumes_finite"
  return next((name for name, sig in KNOWN_BUG_SIGNATURES.items() if name in KNOWN_BUGS_OPEN and sig in report), None)
if "acos_asin_grad_outside_domain" in KNOWN_BUGS_OPEN: DISABLED_OPS |= {"acos", "asin"}
ZERO_GRAD_MAY_BE_NONE = "zero_derivative_grad_is_none" in KNOWN_BUGS_OPEN   # a used input whose derivative is zero gets None, torch zeros

@dataclass
class Val:
  t: Tensor
  r: torch.Tensor
  dt: str
  bound: float          # an upper bound of |x| (inf: unknown, maybe inf/nan)
  name: str

@dataclass
class Case:
  rng: random.Random
  lines: list[str] = field(default_factory=list)
  inputs: list[tuple[Val, np.ndarray]] = field(default_factory=list)
  nonfinite: bool = False   # some value of the program had a nan or inf (torch's)
  half: bool = False        # some value was float16: compare everything with float16's tolerance
  int_cast: bool = False    # a float value was cast to int or bool
  casts: list = field(default_factory=list)   # (tinygrad, torch) values of the float -> int casts
  mix: str = "default"      # see MIXES
  def new_input(self, shape:tuple[int, ...], dt:str) -> Val:
    nr = np.random.default_rng(self.rng.getrandbits(32))
    if dt == "bool": a, b = nr.random(shape) > 0.5, 1.0
    elif is_int(dt): a, b = nr.integers(-9, 10, shape), 9.0
    else: a, b = np.clip(nr.standard_normal(shape) * 1.5, -3, 3), 3.0
    if self.mix == "nonfinite" and is_float(dt) and nr.random() < 0.7:   # about one value in six a nan or an infinity
      a, b = np.where(nr.random(shape) < 0.17, nr.choice([math.nan, math.inf, -math.inf], shape), a), math.inf
    a = a.astype({"bool": np.bool_, "int32": np.int32, "int64": np.int64, "float16": np.float16, "float32": np.float32}[dt])
    grad = is_float(dt)
    v = Val(Tensor(a, requires_grad=grad or None), torch.tensor(a, requires_grad=grad), dt, b, f"x{len(self.inputs)}")
    self.inputs.append((v, a))
    self.half |= dt == "float16"
    self.lines.append(f"{v.name} = Tensor(np.array({a.tolist()!r}, dtype=np.{dt}){', requires_grad=True' if grad else ''})")
    return v
  def out(self, t:Tensor, r:torch.Tensor, dt:str, bound:float, code:str) -> Val:
    name = f"v{len(self.lines)}"
    self.lines.append(f"{name} = {code}")
    r = r.to(TORCH[dt])
    if r.is_floating_point() and not torch.isfinite(r).all(): self.nonfinite = True
    self.half |= dt == "float16"
    if t.dtype != TINY[dt]: raise Mismatch(f"dtype: {code} gave {t.dtype}, tinygrad's rules give {dt}")
    if tuple(t.shape) != tuple(r.shape): raise Mismatch(f"shape: {code} gave {t.shape}, torch {tuple(r.shape)}")
    return Val(t, r, dt, bound, name)

class Mismatch(Exception): pass

def rand_scalar(c:Case, dt:str) -> Any:
  k = c.rng.choice(["bool", "int", "float"]) if c.rng.random() < 0.3 else ("bool" if dt == "bool" else "int" if is_int(dt) else "float")
  return c.rng.random() < 0.5 if k == "bool" else c.rng.randint(-3, 3) if k == "int" else round(c.rng.uniform(-2.5, 2.5), 2)
def scalar_dtype(dt:str, s:Any) -> str:
  if isinstance(s, bool): return dt
  if isinstance(s, int): return "int32" if dt == "bool" else dt
  return dt if is_float(dt) else "float32"

def broadcast_partner(c:Case, x:Val, dt:str) -> Val:
  shape = list(x.t.shape)
  shape = [1 if c.rng.random() < 0.25 else s for s in shape][c.rng.randint(0, min(1, len(shape))):]
  return c.new_input(tuple(shape), dt)

# ***** the ops: each takes the case and one value, returns a new value or None when it doesn't apply *****

UNARY_FLOAT: dict[str, tuple[Callable, Callable, Callable[[float], float]]] = {
  "neg": (lambda t: -t, lambda r: -r, lambda b: b), "abs": (Tensor.abs, torch.abs, lambda b: b),
  "exp": (Tensor.exp, torch.exp, lambda b: math.exp(min(b, 700))), "exp2": (Tensor.exp2, torch.exp2, lambda b: 2.0 ** min(b, 1000)),
  "log": (Tensor.log, torch.log, lambda b: math.inf), "log2": (Tensor.log2, torch.log2, lambda b: math.inf),
  "sqrt": (Tensor.sqrt, torch.sqrt, lambda b: math.inf), "rsqrt": (Tensor.rsqrt, torch.rsqrt, lambda b: math.inf),
  "reciprocal": (Tensor.reciprocal, torch.reciprocal, lambda b: math.inf), "square": (Tensor.square, torch.square, lambda b: b*b),
  "sin": (Tensor.sin, torch.sin, lambda b: 1.0), "cos": (Tensor.cos, torch.cos, lambda b: 1.0), "tan": (Tensor.tan, torch.tan, lambda b: math.inf),
  "tanh": (Tensor.tanh, torch.tanh, lambda b: 1.0), "sigmoid": (Tensor.sigmoid, torch.sigmoid, lambda b: 1.0),
  "relu": (Tensor.relu, torch.relu, lambda b: b), "erf": (Tensor.erf, torch.erf, lambda b: 1.0), "atan": (Tensor.atan, torch.atan, lambda b: 2.0),
  "softplus": (Tensor.softplus, F.softplus, lambda b: b + 1), "silu": (Tensor.silu, F.silu, lambda b: b),
  "gelu": (Tensor.gelu, lambda r: F.gelu(r, approximate="tanh"), lambda b: b), "elu": (Tensor.elu, F.elu, lambda b: b),
  "leaky_relu": (lambda t: t.leaky_relu(0.1), lambda r: F.leaky_relu(r, 0.1), lambda b: b), "mish": (Tensor.mish, F.mish, lambda b: b),
  "floor": (Tensor.floor, torch.floor, lambda b: b + 1), "ceil": (Tensor.ceil, torch.ceil, lambda b: b + 1),
  "round": (Tensor.round, torch.round, lambda b: b + 1), "trunc": (Tensor.trunc, torch.trunc, lambda b: b),
  "sign": (Tensor.sign, torch.sign, lambda b: 1.0), "clamp": (lambda t: t.clamp(-1.5, 0.75), lambda r: r.clamp(-1.5, 0.75), lambda b: 1.5),
  "asin": (Tensor.asin, torch.asin, lambda b: math.inf), "acos": (Tensor.acos, torch.acos, lambda b: math.inf),
  "sinh": (Tensor.sinh, torch.sinh, lambda b: math.inf), "cosh": (Tensor.cosh, torch.cosh, lambda b: math.inf),
  "asinh": (Tensor.asinh, torch.asinh, lambda b: b), "hardswish": (Tensor.hardswish, F.hardswish, lambda b: b),
  "logsigmoid": (Tensor.logsigmoid, F.logsigmoid, lambda b: b + 1), "softsign": (Tensor.softsign, F.softsign, lambda b: 1.0),
}

UNARY_CODE = {"neg": "-{x}", "invert": "~{x}", "clamp": "{x}.clamp(-1.5, 0.75)", "leaky_relu": "{x}.leaky_relu(0.1)"}
def unary_code(name:str, x:Val) -> str:
  return (UNARY_CODE.get(name, "{x}." + name + "()") if is_float(x.dt) or name != "clamp" else "{x}.clamp(-3, 5)").format(x=x.name)

def op_unary(c:Case, x:Val) -> Val|None:
  if x.dt == "bool":
    return c.out(x.t.logical_not(), x.r.logical_not(), "bool", 1, f"{x.name}.logical_not()")
  if is_int(x.dt):
    name = c.rng.choice(["neg", "abs", "invert", "sign", "clamp", "square", "exp", "sqrt", "sin", "relu"])
    if name in ("exp", "sqrt", "sin"):   # float ops on ints give the default float
      b = UNARY_FLOAT[name][2](x.bound) if math.isfinite(x.bound) else math.inf
      return c.out(getattr(x.t, name)(), getattr(torch, name)(x.r.float()), "float32", b, f"{x.name}.{name}()")
    if name == "square" and x.bound ** 2 >= 2**31: return None
    fns = {"neg": (lambda t: -t, lambda r: -r), "abs": (Tensor.abs, torch.abs), "invert": (lambda t: ~t, lambda r: ~r),
           "sign": (Tensor.sign, torch.sign), "clamp": (lambda t: t.clamp(-3, 5), lambda r: r.clamp(-3, 5)), "square": (Tensor.square, torch.square),
           "relu": (Tensor.relu, torch.relu)}
    tf, rf = fns[name]
    return c.out(tf(x.t), rf(x.r), x.dt, x.bound ** 2 if name == "square" else x.bound + 1, unary_code(name, x))
  names = [n for n in UNARY_FLOAT if n not in DISABLED_OPS]
  name = c.rng.choice(names)
  # sin(1490.) in float16 depends on the last bit of its argument: periodic ops get arguments whose rounding doesn't decide the result
  if name in ("sin", "cos", "tan") and not x.bound < (30 if x.dt == "float16" or c.half else 1e3): return None
  tf, rf, bf = UNARY_FLOAT[name]
  return c.out(tf(x.t), rf(x.r), x.dt, bf(x.bound) if math.isfinite(x.bound) else math.inf, unary_code(name, x))   # nan stays nan

SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "and": "&",
          "or": "|", "xor": "^"}
BINARY = ["add", "sub", "mul", "truediv", "maximum", "minimum", "lt", "le", "gt", "ge", "eq", "ne", "pow", "and", "or", "xor", "floordiv", "mod"]

def op_binary(c:Case, x:Val) -> Val|None:
  name = c.rng.choice([n for n in BINARY if n not in DISABLED_OPS])
  use_scalar = c.rng.random() < 0.35
  if name in ("and", "or", "xor"):
    if is_float(x.dt): return None
    y = broadcast_partner(c, x, x.dt if c.rng.random() < 0.7 else c.rng.choice(["bool", "int32", "int64"]))
    dt = promote(x.dt, y.dt)
    op = {"and": "__and__", "or": "__or__", "xor": "__xor__"}[name]
    return c.out(getattr(x.t, op)(y.t), getattr(x.r.to(TORCH[dt]), op)(y.r.to(TORCH[dt])), dt, max(x.bound, y.bound) * 2,
                 f"{x.name} {SYMBOL[name]} {y.name}")
  if name in ("floordiv", "mod"):
    if not is_int(x.dt): return None
    # the divisor is made nonzero on both sides the same way: |y| % 4 + 1 with y an int tensor, or a nonzero scalar
    if use_scalar:
      s = c.rng.choice([-3, -2, 2, 3, 5])
      t, r, code = (x.t // s, torch.div(x.r, s, rounding_mode="floor"), f"{x.name} // {s}") if name == "floordiv" else \
                   (x.t % s, torch.remainder(x.r, s), f"{x.name} % {s}")
      return c.out(t, r, x.dt, x.bound + 5, code)
    y = broadcast_partner(c, x, x.dt)
    yt, yr = y.t.abs() % 4 + 1, y.r.abs() % 4 + 1
    t, r = (x.t // yt, torch.div(x.r, yr, rounding_mode="floor")) if name == "floordiv" else (x.t % yt, torch.remainder(x.r, yr))
    return c.out(t, r, x.dt, x.bound + 5, f"{x.name} {'//' if name == 'floordiv' else '%'} ({y.name}.abs() % 4 + 1)")
  if name == "pow":
    if not is_float(x.dt): return None
    e = c.rng.choice([2, 3, 0.5, -1, 1.5, -0.5] + ([0] if "pow_zero_loses_grad" not in KNOWN_BUGS_OPEN else []))
    base_t, base_r = (x.t.abs() + 0.25, x.r.abs() + 0.25) if e != int(e) or e < 0 else (x.t, x.r)
    bound = math.inf if e < 0 or x.bound > 1e30 else (x.bound + 0.25) ** e
    return c.out(base_t ** e, base_r ** e, x.dt, bound, f"({x.name}{'.abs() + 0.25' if base_t is not x.t else ''}) ** {e}")
  if use_scalar:
    s = rand_scalar(c, x.dt)
    dt = scalar_dtype(x.dt, s)
    rev = c.rng.random() < 0.3
    if name in ("truediv",) and (s == 0 or rev): return None
    if name in ("sub",) and dt == "bool": return None
    tf = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "truediv": lambda a, b: a / b,
          "maximum": lambda a, b: a.maximum(b) if isinstance(a, Tensor) else b.maximum(a),
          "minimum": lambda a, b: a.minimum(b) if isinstance(a, Tensor) else b.minimum(a),
          "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b,
          "ne": lambda a, b: a != b}[name]
    rt = x.r.to(TORCH[dt])
    sv = float(s) if is_float(dt) else int(s) if is_int(dt) else s
    if name in ("maximum", "minimum"): rres = getattr(torch, name)(rt, torch.tensor(sv, dtype=TORCH[dt]))
    else: rres = tf(sv, rt) if rev else tf(rt, sv)
    tres = tf(s, x.t) if rev else tf(x.t, s)
    out_dt = "bool" if name in ("lt", "le", "gt", "ge", "eq", "ne") else float_of(dt) if name == "truediv" else dt
    if name == "mul" and is_int(out_dt) and x.bound * 3 >= 2**31: return None
    b = x.bound + 3 if name in ("add", "sub", "maximum", "minimum") else x.bound * 3 if name == "mul" else math.inf if name == "truediv" else 1
    code = f"{x.name}.{name}({s!r})" if name in ("maximum", "minimum") else \
           f"{s!r} {SYMBOL[name]} {x.name}" if rev else f"{x.name} {SYMBOL[name]} {s!r}"
    return c.out(tres, rres, out_dt, b, code)
  y = broadcast_partner(c, x, x.dt if c.rng.random() < 0.6 else c.rng.choice(DTYPES))
  dt = promote(x.dt, y.dt)
  if name == "sub" and dt == "bool": return None
  if name == "mul" and is_int(dt) and x.bound * y.bound >= 2**31: return None
  xr, yr = x.r.to(TORCH[dt]), y.r.to(TORCH[dt])
  ops = {"add": (lambda a, b: a + b), "sub": (lambda a, b: a - b), "mul": (lambda a, b: a * b), "truediv": (lambda a, b: a / b),
         "lt": (lambda a, b: a < b), "le": (lambda a, b: a <= b), "gt": (lambda a, b: a > b), "ge": (lambda a, b: a >= b),
         "eq": (lambda a, b: a == b), "ne": (lambda a, b: a != b)}
  if name in ("maximum", "minimum"): tres, rres = getattr(x.t, name)(y.t), getattr(torch, name)(xr, yr)
  else: tres, rres = ops[name](x.t, y.t), ops[name](xr, yr)
  out_dt = "bool" if name in ("lt", "le", "gt", "ge", "eq", "ne") else float_of(dt) if name == "truediv" else dt
  b = {"add": x.bound + y.bound, "sub": x.bound + y.bound, "mul": x.bound * y.bound, "truediv": math.inf}.get(name, max(x.bound, y.bound))
  code = f"{x.name}.{name}({y.name})" if name in ("maximum", "minimum") else f"{x.name} {SYMBOL[name]} {y.name}"
  return c.out(tres, rres, out_dt, b if out_dt != "bool" else 1, code)

def op_reduce(c:Case, x:Val) -> Val|None:
  if x.t.ndim == 0 or (x.t.numel() == 0 and c.mix != "empty"): return None
  name = c.rng.choice([n for n in ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "std", "var", "logsumexp", "softmax",
                                   "log_softmax", "cumsum"] if n not in DISABLED_OPS])
  axis = c.rng.randrange(-x.t.ndim, x.t.ndim) if (c.rng.random() < 0.8 or name in ("softmax", "log_softmax", "cumsum")) else None
  keep = c.rng.random() < 0.3
  n = x.t.numel() if axis is None else x.t.shape[axis]
  dims = () if axis is None else (axis,)
  tkw: dict[str, Any] = {"axis": axis, "keepdim": keep}
  rkw: dict[str, Any] = {"dim": dims if axis is not None else None, "keepdim": keep} if axis is not None else {}
  code = f"{x.name}.{name}(axis={axis}, keepdim={keep})"
  def full(rr: torch.Tensor) -> torch.Tensor: return rr.reshape((1,) * x.r.ndim) if keep and axis is None else rr
  if name in ("sum", "prod", "cumsum"):
    dt = acc_of(x.dt)
    if is_int(dt) and (x.bound * n >= 2**31 if name != "prod" else x.bound ** n >= 2**31): return None
    if name == "cumsum":
      return c.out(x.t.cumsum(axis), torch.cumsum(x.r, axis).to(TORCH[dt]), dt, x.bound * n, f"{x.name}.cumsum({axis})")
    if name == "prod":
      if axis is None: rr = full(torch.prod(x.r.to(TORCH[dt]) if x.dt == "bool" else x.r))
      else: rr = torch.prod(x.r, axis, keepdim=keep)
      return c.out(x.t.prod(**tkw), rr, dt, x.bound ** n, code)
    rr = full(torch.sum(x.r, **rkw)) if axis is not None else full(torch.sum(x.r))
    return c.out(x.t.sum(**tkw), rr, dt, x.bound * n, code)
  if name == "mean":
    dt = float_of(x.dt)
    rr = torch.mean(x.r.to(TORCH[dt]), **rkw) if axis is not None else full(torch.mean(x.r.to(TORCH[dt])))
    return c.out(x.t.mean(**tkw), rr, dt, x.bound, code)
  if n == 0 and name in ("max", "min", "argmax", "argmin"):
    # nothing to reduce: torch raises (IndexError or RuntimeError), and so must tinygrad, with the same class
    tfn, rfn = (getattr(x.t, name), getattr(torch, {"max": "amax", "min": "amin"}.get(name, name)))
    try: rfn(x.r, **({"dim": axis} if axis is not None else {}))
    except Exception as e: want = type(e)
    else: raise Mismatch(f"{code}: torch doesn't raise")
    try: tfn(**tkw) if name in ("max", "min") else tfn(axis)
    except want: return None
    except Exception as e: raise Mismatch(f"{code}: torch raises {want.__name__}, tinygrad {type(e).__name__}: {e}") from e
    raise Mismatch(f"{code}: torch raises {want.__name__}, tinygrad doesn't")
  if name in ("max", "min"):
    if "max_min_skip_nan" in KNOWN_BUGS_OPEN and is_float(x.dt) and not math.isfinite(x.bound): return None
    rr = (torch.amax if name == "max" else torch.amin)(x.r, dim=dims if axis is not None else tuple(range(x.r.ndim)), keepdim=keep)
    return c.out(getattr(x.t, name)(**tkw), rr, x.dt, x.bound, code)
  if name in ("argmax", "argmin"):
    if x.dt == "bool" or (is_float(x.dt) and not math.isfinite(x.bound)): return None   # nan positions: torch picks the nan
    rr = getattr(torch, name)(x.r, dim=axis, keepdim=keep) if axis is not None else getattr(torch, name)(x.r)
    if axis is None and keep: return None
    return c.out(getattr(x.t, name)(axis, keepdim=keep) if axis is not None else getattr(x.t, name)(), rr, "int32", n, code)
  if name in ("any", "all"):
    c.int_cast |= is_float(x.dt)   # a cast to bool inside
    rr = getattr(torch, name)(x.r, dim=axis, keepdim=keep) if axis is not None else full(getattr(torch, name)(x.r))
    return c.out(getattr(x.t, name)(**tkw), rr, "bool", 1, code)
  if not is_float(x.dt): return None
  if name in ("std", "var"):
    if n < 2: return None
    rr = getattr(torch, name)(x.r, dim=dims if axis is not None else None, keepdim=keep)
    return c.out(getattr(x.t, name)(**tkw), rr, x.dt, x.bound ** 2 * 2, code)
  if name == "logsumexp":
    rr = torch.logsumexp(x.r, dim=dims if axis is not None else tuple(range(x.r.ndim)), keepdim=keep)
    return c.out(x.t.logsumexp(**tkw), rr, x.dt, x.bound + math.log(n + 1), code)
  assert axis is not None
  rr = getattr(torch, name)(x.r, dim=axis)
  return c.out(getattr(x.t, name)(axis), rr, x.dt, 1 if name == "softmax" and math.isfinite(x.bound) else math.inf, f"{x.name}.{name}({axis})")

def op_movement(c:Case, x:Val) -> Val|None:
  sh, nd = tuple(x.t.shape), x.t.ndim
  name = c.rng.choice([n for n in ["reshape", "permute", "expand", "pad", "shrink", "flip", "cat", "stack", "transpose", "unsqueeze", "squeeze",
                                   "repeat", "getitem"] if n not in DISABLED_OPS])
  if name == "reshape":
    size, new = x.t.numel(), []
    rest = size
    while rest > 1 and len(new) < 4:
      f = c.rng.choice([d for d in range(1, rest + 1) if rest % d == 0])
      new.append(f)
      rest //= f
    new.append(rest)
    c.rng.shuffle(new)
    if c.rng.random() < 0.3: new[c.rng.randrange(len(new))] = -1
    return c.out(x.t.reshape(new), x.r.reshape(new), x.dt, x.bound, f"{x.name}.reshape({new})")
  if name == "permute":
    p = list(range(nd))
    c.rng.shuffle(p)
    return c.out(x.t.permute(p), x.r.permute(p), x.dt, x.bound, f"{x.name}.permute({p})")
  if name == "transpose":
    if nd < 2: return None
    a, b = c.rng.sample(range(nd), 2)
    return c.out(x.t.transpose(a, b), x.r.transpose(a, b), x.dt, x.bound, f"{x.name}.transpose({a}, {b})")
  if name == "expand":
    new = [c.rng.randint(1, 3) if s == 1 else s for s in sh]
    if c.rng.random() < 0.4: new = [c.rng.randint(1, 3)] + new
    return c.out(x.t.expand(new), x.r.expand(new), x.dt, x.bound, f"{x.name}.expand({new})")
  if name == "pad":
    pads = [(c.rng.randint(0, 2), c.rng.randint(0, 2)) for _ in sh]
    val = 0 if x.dt == "bool" or c.rng.random() < 0.5 else (c.rng.randint(-2, 2) if is_int(x.dt) else round(c.rng.uniform(-2, 2), 2))
    flat = [p for pair in reversed(pads) for p in pair]
    return c.out(x.t.pad(pads, value=val), F.pad(x.r, flat, value=val), x.dt, max(x.bound, abs(val)), f"{x.name}.pad({pads}, value={val})")
  if name == "shrink":
    arg = []
    for s in sh:
      b = c.rng.randint(0, s)
      arg.append((b, c.rng.randint(b, s)))
    rr = x.r[tuple(slice(b, e) for b, e in arg)]
    return c.out(x.t.shrink(arg), rr, x.dt, x.bound, f"{x.name}.shrink({arg})")
  if name == "flip":
    if nd == 0: return None
    dims = sorted(c.rng.sample(range(nd), c.rng.randint(1, nd)))
    return c.out(x.t.flip(dims), x.r.flip(dims), x.dt, x.bound, f"{x.name}.flip({dims})")
  if name in ("cat", "stack"):
    if nd == 0 and name == "cat": return None
    d = c.rng.randrange(nd + (name == "stack")) if nd + (name == "stack") > 0 else 0
    oshape = list(sh)
    if name == "cat": oshape[d] = c.rng.randint(0, 3)
    y = c.new_input(tuple(oshape), x.dt if c.rng.random() < 0.7 else c.rng.choice(DTYPES))
    dt = promote(x.dt, y.dt)
    tf = Tensor.cat if name == "cat" else Tensor.stack
    rr = (torch.cat if name == "cat" else torch.stack)([x.r.to(TORCH[dt]), y.r.to(TORCH[dt])], d)
    return c.out(tf(x.t, y.t, dim=d), rr, dt, max(x.bound, y.bound), f"{x.name}.{name}({y.name}, dim={d})")
  if name == "unsqueeze":
    d = c.rng.randint(-nd - 1, nd)
    return c.out(x.t.unsqueeze(d), x.r.unsqueeze(d), x.dt, x.bound, f"{x.name}.unsqueeze({d})")
  if name == "squeeze":
    ones = [i for i, s in enumerate(sh) if s == 1]
    if not ones: return None
    d = c.rng.choice(ones)
    return c.out(x.t.squeeze(d), x.r.squeeze(d), x.dt, x.bound, f"{x.name}.squeeze({d})")
  if name == "repeat":
    reps = [c.rng.randint(1, 2) for _ in range(nd + c.rng.randint(0, 1))]
    return c.out(x.t.repeat(reps), x.r.repeat(reps), x.dt, x.bound, f"{x.name}.repeat({reps})")
  # getitem: ints, slices with a positive step, an int index tensor on one dim
  if nd == 0: return None
  idx: list[Any] = []
  ridx: list[Any] = []
  for s in sh:
    k = c.rng.random()
    if k < 0.2 and s > 0:
      i = c.rng.randint(-s, s - 1)
      idx.append(i)
      ridx.append(i)
    elif k < 0.6:
      sl = slice(c.rng.choice([None, 0, 1, -2]), c.rng.choice([None, s, -1, 2]), c.rng.choice([None, 1, 2, 3]))
      idx.append(sl)
      ridx.append(sl)
    else:
      idx.append(slice(None))
      ridx.append(slice(None))
  tensor_dims = [i for i, s in enumerate(sh) if s > 0 and isinstance(idx[i], slice) and idx[i] == slice(None)]
  if tensor_dims and c.rng.random() < 0.5:
    d = c.rng.choice(tensor_dims)
    ii = np.array([c.rng.randint(-sh[d], sh[d] - 1) for _ in range(c.rng.randint(1, 4))], dtype=np.int32)
    idx[d], ridx[d] = Tensor(ii), torch.tensor(ii, dtype=torch.int64)
  code = f"{x.name}[{tuple(i.tolist() if isinstance(i, Tensor) else i for i in idx)}]"
  return c.out(x.t[tuple(idx)], x.r[tuple(ridx)], x.dt, x.bound, code)

def op_matmul(c:Case, x:Val) -> Val|None:
  if not is_float(x.dt) or x.t.ndim == 0: return None
  k = x.t.shape[-1]
  oshape = (k, c.rng.randint(1, 4)) if c.rng.random() < 0.6 or x.t.ndim == 1 else tuple(x.t.shape[:-2]) + (k, c.rng.randint(1, 4))
  y = c.new_input(oshape, x.dt)
  return c.out(x.t @ y.t, x.r @ y.r, x.dt, x.bound * y.bound * max(k, 1), f"{x.name} @ {y.name}")

def op_where(c:Case, x:Val) -> Val|None:
  cond = broadcast_partner(c, x, "bool")
  if c.rng.random() < 0.5:
    s = rand_scalar(c, x.dt)
    if type(s) is not {"bool": bool}.get(x.dt, int if is_int(x.dt) else float): s = True if x.dt == "bool" else 2 if is_int(x.dt) else -1.5
    rr = torch.where(cond.r, x.r, torch.tensor(s, dtype=TORCH[x.dt]))
    return c.out(cond.t.where(x.t, s), rr, x.dt, max(x.bound, abs(s)), f"{cond.name}.where({x.name}, {s!r})")
  y = broadcast_partner(c, x, x.dt if c.rng.random() < 0.7 else c.rng.choice(DTYPES))
  dt = promote(x.dt, y.dt)
  return c.out(cond.t.where(x.t, y.t), torch.where(cond.r, x.r.to(TORCH[dt]), y.r.to(TORCH[dt])), dt, max(x.bound, y.bound),
               f"{cond.name}.where({x.name}, {y.name})")

def op_cast(c:Case, x:Val) -> Val|None:
  dt = c.rng.choice(DTYPES)
  if is_float(x.dt) and not is_float(dt) and dt != "bool" and not x.bound < 1e6: return None   # float -> int of inf/nan/huge: undefined
  if dt == "float16" and not x.bound < 6e4: return None
  c.int_cast |= is_float(x.dt) and not is_float(dt)
  if is_float(x.dt) and not is_float(dt): c.casts.append((x.t, x.r))
  return c.out(x.t.cast(TINY[dt]), x.r.to(TORCH[dt]), dt, 1 if dt == "bool" else x.bound + 1, f"{x.name}.cast(dtypes.{dt})")

OPS: dict[str, tuple[float, Callable[[Case, Val], Val|None]]] = {
  "unary": (3, op_unary), "binary": (3, op_binary), "reduce": (2, op_reduce), "movement": (3, op_movement), "matmul": (0.7, op_matmul),
  "where": (0.7, op_where), "cast": (1, op_cast)}

def tolerance(dt:str) -> tuple[float, float]: return {"float16": (2e-2, 2e-2), "float32": (2e-4, 2e-4)}.get(dt, (0.0, 0.0))

def compare(what:str, got:np.ndarray, want:np.ndarray, dt:str, scale:float, half:bool=False) -> None:
  if got.shape != want.shape: raise Mismatch(f"{what}: shape {got.shape} != torch's {want.shape}")
  rtol, atol = tolerance("float16" if half and is_float(dt) else dt)
  if not is_float(dt):
    if not np.array_equal(got, want): raise Mismatch(f"{what}: got {got.tolist()}\n  torch {want.tolist()}")
    return
  g, w = got.astype(np.float64), want.astype(np.float64)
  ok = np.isclose(g, w, rtol=rtol, atol=atol * max(1.0, scale), equal_nan=True)
  if not ok.all():
    bad = np.argwhere(~ok)[:4]
    raise Mismatch(f"{what}: {int((~ok).sum())} of {ok.size} differ, e.g. " +
                   ", ".join(f"at {tuple(b)} got {g[tuple(b)]!r} torch {w[tuple(b)]!r}" for b in bad))

def run_case(seed:int, c:Case|None=None) -> Case:
  """Build and check one random program (into c, so its lines survive a failure); raises Mismatch (or what tinygrad raised)."""
  c = c if c is not None else Case(random.Random(seed))
  shape = tuple(c.rng.randint(0 if c.mix == "empty" else 1, 4) for _ in range(c.rng.randint(0, 3)))
  v = c.new_input(shape, c.rng.choice(["bool", "int32", "int64"] if c.mix == "ints" else DTYPES + ["float32"] * 2))
  names, weights = list(OPS), [w for w, _ in OPS.values()]
  for _ in range(c.rng.randint(1, 6)):
    for _ in range(20):
      if (nv := OPS[c.rng.choices(names, weights)[0]][1](c, v)) is not None and nv.t.numel() <= 512: break
    else: continue
    v = nv
  out = v
  do_grad = is_float(out.dt) and out.r.requires_grad
  # every third case reads the value before backward: that must not change the gradient
  if do_grad and seed % 3 == 0: out.t.realize()
  if do_grad:
    w = np.random.default_rng(seed).standard_normal(tuple(out.r.shape)).astype(np.float32)
    (out.r.float() * torch.tensor(w)).sum().backward()
    (out.t.float() * Tensor(w)).sum().backward()
  ref = out.r.detach()
  scale = float(ref.abs().float().max()) if ref.numel() and is_float(out.dt) and torch.isfinite(ref).all() else 1.0
  compare("forward", out.t.numpy(), ref.numpy(), out.dt, scale, c.half)
  if not do_grad: return c
  for iv, _ in c.inputs:
    if not is_float(iv.dt): continue
    want = iv.r.grad if iv.r.grad is not None else torch.zeros_like(iv.r)
    if iv.t.grad is None and iv.r.grad is None: continue   # not used (on a differentiable path) by the output in either library
    if iv.t.grad is None:
      # torch gives zeros (or None) where the derivative is zero; tinygrad must give zeros too (a known bug while this is None)
      if ZERO_GRAD_MAY_BE_NONE and not want.any(): continue
      raise Mismatch(f"gradient of {iv.name}: None, torch {want.tolist()}")
    gscale = float(want.abs().float().max()) if want.numel() and torch.isfinite(want).all() else 1.0
    compare(f"gradient of {iv.name}", iv.t.grad.numpy(), want.numpy(), iv.dt, gscale, c.half)
  return c

# the kinds of programs: default; ints (the first input bool/int32/int64); empty (dims of size 0: empty tensors, reductions over empty
# axes); nonfinite (float inputs hold nan and infinities)
MIXES = ("default", "ints", "empty", "nonfinite")

def fuzz(seed:int, cases:int|None=None, seconds:float|None=None, verbose:bool=True, mix:str="default") -> list[tuple[int, str]]:
  """Run cases seed*1_000_003 + i for i in range(cases) (or until seconds pass); returns [(case seed, report)] of the new mismatches
  (those of a known open bug are counted and printed, not returned)."""
  bad: list[tuple[int, str]] = []
  known: dict[str, int] = {}
  st, i = time.perf_counter(), 0
  while (cases is None or i < cases) and (seconds is None or time.perf_counter() - st < seconds):
    cs = seed * 1_000_003 + i
    i += 1
    c = Case(random.Random(cs), mix=mix)
    try: run_case(cs, c)
    except Exception as e:
      rep = f"{type(e).__name__}: {e}" if isinstance(e, Mismatch) else f"raised {type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
      if (kb := known_bug(rep, c)) is not None:
        known[kb] = known.get(kb, 0) + 1
        continue
      bad.append((cs, "\n".join(c.lines) + "\n  -> " + rep))
      if verbose: print(f"MISMATCH case {cs} (--mix {mix}) on {Device.DEFAULT}:\n" + bad[-1][1] + "\n", flush=True)
  if verbose:
    print(f"{i} cases ({mix}) on {Device.DEFAULT} in {time.perf_counter() - st:.0f} s, {len(bad)} mismatches, known bugs hit: {known}", flush=True)
  return bad

if __name__ == "__main__":
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
  ap.add_argument("--seed", type=int, default=0, help="the run's seed; case i uses seed*1000003 + i")
  ap.add_argument("--device", default=None, help="device to run on (default: Device.DEFAULT)")
  ap.add_argument("--case", type=int, default=None, help="replay one case (its full seed, as printed) and print its program")
  ap.add_argument("--mix", choices=MIXES, default="default", help="the kind of programs (default: all dtypes, nonzero sizes, finite inputs)")
  args = ap.parse_args()
  if args.device: Device.DEFAULT = Device.canonicalize(args.device) if hasattr(Device, "canonicalize") else args.device.upper()
  if args.case is not None:
    c = Case(random.Random(args.case), mix=args.mix)
    try: run_case(args.case, c)
    except Exception as e:
      rep = f"{type(e).__name__}: {e}"
      print("\n".join(c.lines) + f"\n  -> {rep}" + (f"\n  (known bug {kb})" if (kb := known_bug(rep, c)) else ""))
    else: print("\n".join(c.lines) + "\n  -> ok")
    sys.exit(0)
  sys.exit(1 if fuzz(args.seed, seconds=args.seconds, mix=args.mix) else 0)
