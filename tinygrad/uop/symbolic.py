# symbolic simplification of UOp graphs: constant folding, integer index maths, bounds (vmin/vmax) driven rules
# IDIV and MOD are C-style (truncate toward zero), so every rule that splits a dividend needs it (and what is left) on one side of zero
from __future__ import annotations
import functools, math, operator
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, exec_alu, graph_rewrite, _min_max_unchecked, ThreadKind
from tinygrad.dtype import dtypes, can_safe_cast, truncate

# common dtypes first: UPat tests dtype membership in order
ints = (dtypes.int32, dtypes.int64) + tuple(d for d in dtypes.ints if d not in (dtypes.int32, dtypes.int64))
ints_bool = ints + (dtypes.bool,)
# unsigned maths wraps around (64 - x is huge for x > 64): the rules that reorder sums, products and comparisons hold for signed ints only
sints = tuple(d for d in ints if not dtypes.is_unsigned(d))

def _cdiv(x:int, y:int) -> int: return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # C division, y != 0
def _ceil(x:int, y:int) -> int: return -(-x // y)                                            # y > 0
def _sum(terms:list[UOp]) -> UOp: return functools.reduce(operator.add, terms)

def _term(t:UOp) -> tuple[UOp, int]:
  # t as base * integer coefficient
  if t.op is Ops.MUL:
    if t.src[1].op is Ops.CONST: return t.src[0], t.src[1].arg
    if t.src[0].op is Ops.CONST: return t.src[1], t.src[0].arg
  return t, 1
def _mul(b:UOp, k:int) -> UOp: return b if k == 1 else b*k

# ***** symbolic_simple: folding that needs no knowledge of the whole expression *****

def const_fold(a:UOp) -> UOp|None:
  if a.op not in _folds: return None
  try: return a.const_like(exec_alu(a.op, a.dtype, [s.arg for s in a.src]))
  except (ValueError, ZeroDivisionError, OverflowError): return None   # e.g. a negative shift count: leave it to the device
_folds = set(GroupOp.ALU) - {Ops.THREEFRY}

def cast_const(root:UOp, c:UOp) -> UOp|None:
  if (tr := truncate.get(root.dtype.scalar())) is None or root.dtype.count != c.dtype.count: return None
  return root.const_like(tuple(tr(v) for v in c.arg) if isinstance(c.arg, tuple) else tr(c.arg))

def fold_bounds(x:UOp) -> UOp|None:
  # a scalar int/bool whose bounds meet is that constant (floats are skipped: nan breaks bounds reasoning)
  if x.dtype.count != 1 or x.dtype not in ints_bool or (lo := x.vmin) != x.vmax: return None
  if x.op in GroupOp.Comparison and any(dtypes.is_float(s.dtype) for s in x.src): return None
  return x.const_like(lo)

def where_const(gate:UOp, a:UOp, b:UOp) -> UOp|None: return (a if gate.arg else b) if not isinstance(gate.arg, tuple) else None

symbolic_simple = PatternMatcher([
  # ** constant folding **
  (UPat(GroupOp.ALU, src=UPat((Ops.CONST, Ops.VCONST)), name="a"), const_fold),
  (UPat(Ops.CAST, src=(UPat((Ops.CONST, Ops.VCONST), name="c"),), name="root"), cast_const),
  (UPat((Ops.CAST, Ops.BITCAST), name="root"), lambda root: root.src[0] if root.src[0].dtype == root.dtype else None),
  # ** bool ADD/MUL/MAX are OR/AND/OR: rewrite them first so int rules never see bools **
  (UPat(Ops.ADD, dtypes.bool, name="x"), lambda x: x.replace(op=Ops.OR)),
  (UPat(Ops.MUL, dtypes.bool, name="x"), lambda x: x.replace(op=Ops.AND)),
  (UPat(Ops.MAX, dtypes.bool, name="x"), lambda x: x.replace(op=Ops.OR)),
  # ** identities **
  # x + 0 is x, but for floats only x + -0.0: -0.0 + 0.0 is 0.0
  (UPat.var("x") + UPat.cvar("z", vec=False),
   lambda x, z: x if z.arg == 0 and (not dtypes.is_float(z.dtype) or math.copysign(1, z.arg) < 0) else None),
  (UPat.var("x") * 1, lambda x: x),
  (UPat.var("x", ints) * 0, lambda x: x.const_like(0)),     # not floats: 0*nan and 0*inf are nan
  (UPat.var("x", ints) // 1, lambda x: x),
  (UPat.var("x", ints) // -1, lambda x: -x),
  (UPat.var("x", ints) % 1, lambda x: x.const_like(0)),
  (UPat.var("x", ints) % -1, lambda x: x.const_like(0)),
  (UPat.var("x", ints) // UPat.var("x"), lambda x: x.const_like(1) if x.vmin > 0 or x.vmax < 0 else None),   # 0//0 is 0 here
  (UPat.var("x", ints) + UPat.var("x") * -1, lambda x: x.const_like(0)),   # x-x (not floats: inf-inf is nan)
  ((UPat.var("x") * -1) * -1, lambda x: x),
  (UPat.var("x", ints) ^ 0, lambda x: x),
  (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
  (UPat((Ops.AND, Ops.OR), src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
  (UPat.var("x") < UPat.var("x"), lambda x: UOp.const(dtypes.bool.vec(x.dtype.count), False)),
  (UPat.var("x", ints_bool).ne(UPat.var("x")), lambda x: UOp.const(dtypes.bool.vec(x.dtype.count), False)),
  # ** bools **
  (UPat.var("x", dtypes.bool) & UPat.cvar("c", vec=False), lambda x, c: x if c.arg else c),
  (UPat(Ops.OR, src=[UPat.var("x", dtypes.bool), UPat.cvar("c", vec=False)]), lambda x, c: c if c.arg else x),  # UPat's | is "any of"
  (UPat.var("x", dtypes.bool) ^ UPat.cvar("c", vec=False), lambda x, c: x.logical_not() if c.arg else x),
  (UPat.var("x", dtypes.bool).ne(UPat.cvar("c", vec=False)), lambda x, c: None if c.arg else x),
  (UPat.var("x", dtypes.bool).logical_not().logical_not(), lambda x: x),
  # ** where **
  (UPat.cvar("gate", vec=False).where(UPat.var("a"), UPat.var("b")), where_const),
  (UPat.var().where(UPat.var("x"), UPat.var("x")), lambda x: x),
  (UPat.var("c", dtypes.bool).where(UPat.const(dtypes.bool, True), UPat.const(dtypes.bool, False)), lambda c: c),
  (UPat.var("c", dtypes.bool).where(UPat.const(dtypes.bool, False), UPat.const(dtypes.bool, True)), lambda c: c.logical_not()),
  # ** an int/bool whose bounds meet is a constant **
  (UPat(set(GroupOp.ALU) | {Ops.CAST}, name="x"), fold_bounds),
])

# ***** symbolic: canonical sums and products, div/mod/lt folding *****

def fold_sum(x:UOp) -> UOp|None:
  # collect like terms: a*2 + b + a*3 + 1 + 2 -> a*5 + b + 3 (constant last); None when the sum is already in that form
  terms = list(x.split_uop(Ops.ADD))
  coefs: dict[UOp, int] = {}
  const, nconst = 0, 0
  for t in terms:
    if t.op is Ops.CONST: const, nconst = const + t.arg, nconst + 1
    else:
      b, k = _term(t)
      coefs[b] = coefs.get(b, 0) + k
  # (x%c)*k + ((x//c)%m)*(c*k) -> (x%(c*m))*k, repeatedly: the binary digits Tensor.arange sums add back up to the index (any sign of x)
  while (pair := next(((m, h) for m in coefs if m.op is Ops.MOD and m.src[1].op is Ops.CONST and m.src[1].arg > 0
                       for h in coefs if h.op is Ops.MOD and h.src[1].op is Ops.CONST and h.src[1].arg > 0 and h.src[0].op is Ops.IDIV
                       and h.src[0].src == m.src and coefs[h] == coefs[m] * m.src[1].arg), None)) is not None:
    m, h = pair
    merged, k = m.src[0] % (m.src[1].arg * h.src[1].arg), coefs.pop(m)
    del coefs[h]
    coefs[merged] = coefs.get(merged, 0) + k
  # (x%c)*k + (x//c)*(c*k) -> x*k: the definition of C's MOD, whatever the sign of x
  for m in [b for b in coefs if b.op is Ops.MOD and b.src[1].op is Ops.CONST]:
    if (kd := coefs.get(d := UOp(Ops.IDIV, m.dtype, m.src))) is not None and kd == coefs[m] * m.src[1].arg:
      del coefs[d]
      coefs[m.src[0]] = coefs.get(m.src[0], 0) + coefs.pop(m)
  if len(coefs) + nconst == len(terms) and (nconst == 0 or (nconst == 1 and const != 0 and terms[-1].op is Ops.CONST)): return None
  new = [_mul(b, k) for b, k in coefs.items() if k != 0]
  if const != 0 or not new: new.append(x.const_like(const))
  return _sum(new)

def fold_divmod(d:UOp, x:UOp, c:UOp) -> UOp|None:
  # x//c or x%c for an int constant c > 0: take out whole multiples of c, factor out a common gcd, and decide by bounds
  if (cv := c.arg) <= 0: return None
  lo, hi = x.vmin, x.vmax   # +-inf for vectors: then only the exact rewrites below apply
  if x.dtype.count == 1 and (q := _cdiv(int(lo), cv)) == _cdiv(int(hi), cv):  # C division is monotonic: one quotient for the whole range
    return d.const_like(q) if d.op is Ops.IDIV else (x if q == 0 else x + (-q*cv))
  if x.op is not Ops.ADD and x.op is not Ops.MUL: return None
  const, parts = 0, []
  for t in x.split_uop(Ops.ADD):
    if t.op is Ops.CONST: const += t.arg
    else: parts.append((t, *_term(t)))
  quo: list[UOp] = []
  rem: list[UOp] = []
  for t, b, k in parts:
    if k % cv == 0: quo.append(_mul(b, k // cv))
    elif k > cv: quo, rem = quo + [_mul(b, k // cv)], rem + [_mul(b, k % cv)]
    else: rem.append(t)
  rlo, rhi = sum(t.vmin for t in rem), sum(t.vmax for t in rem)
  # x = (sum(quo) + qk)*c + (rem + rk). C division agrees with floor division when x and the remainder sit on the same side of zero.
  # A constant smaller than c stays whole; a bigger one gives its multiples of c to the quotient, floor- or C-style, whichever is valid.
  tc = _cdiv(const, cv)
  for qk, rk in ((0, const),) if abs(const) < cv else ((const // cv, const % cv), (tc, const - tc*cv), (0, const)):
    if not quo and qk == 0: continue
    if (rem or rk) and not ((lo >= 0 and rlo+rk >= 0) or (hi <= 0 and rhi+rk <= 0)): continue
    r = _sum(rem + [x.const_like(rk)]) if rem else x.const_like(rk)
    if d.op is Ops.MOD: return r % cv
    return _sum(quo + [x.const_like(qk), r // cv])
  # every term shares a factor with c: divide it out exactly, any sign
  if (g := math.gcd(cv, x.const_factor())) > 1 and (xg := x.divides(g)) is not None:
    return xg // (cv // g) if d.op is Ops.IDIV else (xg % (cv // g)) * g
  # x = g*a + s with g | c and 0 <= s < g (so a >= 0 too): x//c is a//(c/g) and x%c is (a%(c/g))*g + s
  big, units = [(b, k) for _, b, k in parts if k not in (1, -1)], [t for t, _, k in parts if k in (1, -1)]
  if lo >= 0 and big:
    ulo, uhi, gb = sum(t.vmin for t in units), sum(t.vmax for t in units), math.gcd(cv, *(k for _, k in big))
    for g, sc in ((math.gcd(gb, const), 0), (gb, const)):   # sc: the part of the constant left with the small terms
      if g > 1 and (units or sc) and 0 <= ulo + sc and uhi + sc < g:
        a = _sum([_mul(b, k // g) for b, k in big] + [x.const_like((const - sc) // g)])
        return a // (cv // g) if d.op is Ops.IDIV else (a % (cv // g)) * g + _sum(units + [x.const_like(sc)])
  return None

def lt_fold(x:UOp, c:UOp) -> UOp|None:
  # int sum < c: move constants right, divide by the coefficients' gcd, drop small non-negative terms that can't reach the next multiple
  if x.op is not Ops.ADD and x.op is not Ops.MUL: return None
  terms = list(x.split_uop(Ops.ADD))
  d, parts = c.arg, []
  for t in terms:
    if t.op is Ops.CONST: d -= t.arg
    else: parts.append((t, *_term(t)))
  if not parts: return None
  if (g := math.gcd(*(k for _, _, k in parts))) > 1: return _sum([_mul(b, k // g) for _, b, k in parts]) < _ceil(d, g)
  if len(parts) != len(terms): return _sum([t for t, _, _ in parts]) < d
  if len(parts) == 1 and parts[0][2] == -1: return x.const_like(-d) < parts[0][1]   # -b < d  ->  -d < b
  big, small = [t for t, _, k in parts if k not in (1, -1)], [t for t, _, k in parts if k in (1, -1)]
  # big + small < d with g | big, g | d and 0 <= small < g is big < d
  if big and small and (g := math.gcd(d, *(_term(t)[1] for t in big))) > 1 and all(t.vmin >= 0 for t in small) and sum(t.vmax for t in small) < g:
    return _sum(big) < d
  return None

def lt_fold_left(c:UOp, x:UOp) -> UOp|None:
  # c < int sum: constants move left, c < g*s is floor(c/g) < s
  if x.op is not Ops.ADD and x.op is not Ops.MUL: return None
  terms = list(x.split_uop(Ops.ADD))
  d, parts = c.arg, [_term(t) for t in terms if t.op is not Ops.CONST]
  d -= sum(t.arg for t in terms if t.op is Ops.CONST)
  if not parts: return None
  if (g := math.gcd(*(k for _, k in parts))) > 1: return x.const_like(d // g) < _sum([_mul(b, k // g) for b, k in parts])
  if len(parts) != len(terms): return x.const_like(d) < _sum([t for t in terms if t.op is not Ops.CONST])
  return None

def lt_div(x:UOp, d:UOp, c:UOp) -> UOp|None:
  # C's x//d < c for d > 0: x < c*d when c > 0, else x <= (c-1)*d
  if d.arg <= 0: return None
  return x < (c.arg*d.arg if c.arg > 0 else (c.arg-1)*d.arg + 1)

def no_wrap(fxn):
  """fxn (a rule that regroups the sum x) only where x is computed without wrapping around, and only if its result's constants fit the dtype:
  int32 maths wraps like numpy's (x+10 < 5 holds for x = 2**31-1)"""
  def rule(x:UOp, **kw) -> UOp|None:
    # a vector's bounds are unknown (-inf, inf): vector int values (the C renderer's) never regroup
    if not (dtypes.min(x.dtype.scalar()) <= (r := _min_max_unchecked(x))[0] and r[1] <= dtypes.max(x.dtype.scalar())): return None
    if (ret := fxn(x=x, **kw)) is None: return None
    return ret if all(dtypes.min(u.dtype) <= u.arg <= dtypes.max(u.dtype) for u in ret.toposort() if u.op is Ops.CONST and u.dtype in ints) else None
  return rule

def where_alu(f:UOp, c:UOp, a:UOp, b:UOp, d:UOp, e:UOp) -> UOp|None:
  # c?a:b op c?d:e is c?(a op d):(b op e), taken only when one side folds to a constant
  if not ((a.op is Ops.CONST and d.op is Ops.CONST) or (b.op is Ops.CONST and e.op is Ops.CONST)): return None
  return c.where(a.alu(f.op, d), b.alu(f.op, e))

def max_bounds(x:UOp, y:UOp) -> UOp|None:
  if x.vmin >= y.vmax: return x
  if x.vmax <= y.vmin: return y
  return None

symbolic = symbolic_simple + PatternMatcher([
  # ** canonical order: constants to the right of commutative ops **
  (UPat(GroupOp.Commutative, src=(UPat((Ops.CONST, Ops.VCONST), name="c"), UPat.var("x")), name="root"),
   lambda root, c, x: root.replace(src=(x, c)) if x.op not in (Ops.CONST, Ops.VCONST) else None),
  # ** sums: like terms, constants folded and last; products: constants folded and last; a const mul distributes **
  (UPat(Ops.ADD, sints, name="x"), fold_sum),
  ((UPat.var("x", sints) * UPat.cvar("c1", vec=False)) * UPat.cvar("c2", vec=False), lambda x, c1, c2: x * (c1.arg*c2.arg)),
  (UPat(Ops.MUL, sints, src=[UPat(Ops.MUL, src=(UPat.var("x"), UPat.cvar("c", vec=False))), UPat.var("y")]),
   lambda x, c, y: (x*y)*c if y.op is not Ops.CONST else None),
  (UPat(Ops.MUL, sints, src=(UPat(Ops.ADD, name="s"), UPat.cvar("c", vec=False))), lambda s, c: s.src[0]*c + s.src[1]*c),
  # ** the other associative ops chain constants too (exact for ints and bools) **
  *[(UPat(op, ints_bool, src=(UPat(op, src=(UPat.var("x"), UPat.cvar("c1", vec=False))), UPat.cvar("c2", vec=False)), name="f"),
     lambda f, x, c1, c2: x.alu(f.op, c1.alu(f.op, c2))) for op in (Ops.MAX, Ops.AND, Ops.OR)],
  # ** div and mod **
  (UPat.var("x", sints) // UPat.cvar("c", vec=False), lambda x, c: -(x // -c.arg) if c.arg < 0 else None),
  (UPat.var("x", sints) % UPat.cvar("c", vec=False), lambda x, c: x % -c.arg if c.arg < 0 else None),
  ((UPat.var("x", sints) // UPat.cvar("a", vec=False)) // UPat.cvar("b", vec=False),
   lambda x, a, b: x // (a.arg*b.arg) if a.arg > 0 and b.arg > 0 else None),
  ((UPat.var("x", sints) % UPat.cvar("m", vec=False)) % UPat.cvar("a", vec=False),
   lambda x, m, a: x % a.arg if a.arg > 0 and m.arg > 0 and m.arg % a.arg == 0 else None),
  (UPat((Ops.IDIV, Ops.MOD), sints, src=(UPat.var("x"), UPat.cvar("c", vec=False)), name="d"), no_wrap(fold_divmod)),
  # ** lt **
  ((UPat.var("x", sints) // UPat.cvar("d", vec=False)) < UPat.cvar("c", vec=False), no_wrap(lt_div)),
  (UPat.var("x", sints) < UPat.cvar("c", vec=False), no_wrap(lt_fold)),
  (UPat.cvar("c", vec=False) < UPat.var("x", sints), no_wrap(lt_fold_left)),
  # two bounds on one expression
  ((UPat.var("x", ints) < UPat.cvar("a", vec=False)) & (UPat.var("x") < UPat.cvar("b", vec=False)), lambda x, a, b: x < min(a.arg, b.arg)),
  (UPat(Ops.OR, src=[UPat.var("x", ints) < UPat.cvar("a", vec=False), UPat.var("x") < UPat.cvar("b", vec=False)]),
   lambda x, a, b: x < max(a.arg, b.arg)),
  # ** max decided by bounds **
  (UPat(Ops.MAX, ints, src=(UPat.var("x"), UPat.var("y"))), max_bounds),
  # ** where: a branch under the same condition takes the same side; selects of one condition combine when a side folds **
  (UPat.var("c").where(UPat.var("c").where(UPat.var("a"), UPat.var()), UPat.var("b")), lambda c, a, b: c.where(a, b)),
  (UPat.var("c").where(UPat.var("a"), UPat.var("c").where(UPat.var(), UPat.var("b"))), lambda c, a, b: c.where(a, b)),
  (UPat.var("c").where(UPat(Ops.CAST, src=(UPat.var("c").where(UPat.var("a"), UPat.var()),), name="t"), UPat.var("b")),
   lambda c, a, t, b: c.where(a.cast(t.dtype), b)),
  (UPat.var("c").where(UPat.var("a"), UPat(Ops.CAST, src=(UPat.var("c").where(UPat.var(), UPat.var("b")),), name="t")),
   lambda c, a, t, b: c.where(a, b.cast(t.dtype))),
  (UPat.var("x", sints) * UPat.var("c").where(UPat.cvar("k", vec=False), UPat.const(None, 0)), lambda x, c, k: c.where(x*k, x.const_like(0))),
  # x >= c ? k : 0 is (x//c)*k where 0 <= x < 2c (one binary digit of an index)
  ((UPat.var("x", sints) < UPat.cvar("c", vec=False)).ne(True).where(UPat.cvar("k", vec=False), UPat.const(None, 0)),
   lambda x, c, k: (x // c.arg) * k.arg if 0 <= x.vmin and x.vmax < 2 * c.arg and x.dtype == k.dtype else None),
  (UPat(GroupOp.Binary, src=(UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a"), UPat.var("b"))),
                             UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("d"), UPat.var("e")))), name="f"), where_alu),
])

# ***** symbolic_flat: sums stay a left chain, ((a+b)+c)+d, which the index maths walks *****

symbolic_flat = symbolic + PatternMatcher([
  (UPat(Ops.ADD, sints, src=(UPat.var("x"), UPat(Ops.ADD, name="y"))), lambda x, y: (x + y.src[0]) + y.src[1]),
])

# ***** valid (gate) simplification *****

def _parse_bound(stmt:UOp) -> tuple[UOp, bool, int]|None:
  # one clause as (expr, is_upper, bound): x<c is x<=c-1, (x<c)!=True is x>=c, c<x is x>=c+1, (c<x)!=True is x<=c
  if stmt.op is Ops.CMPNE and stmt.src[1].op is Ops.CONST and stmt.src[1].arg is True and stmt.src[0].op is Ops.CMPLT:
    if (r := _parse_bound(stmt.src[0])) is None: return None
    return (r[0], False, r[2]+1) if r[1] else (r[0], True, r[2]-1)
  if stmt.op is not Ops.CMPLT or stmt.src[0].dtype.count != 1 or stmt.src[0].dtype not in ints: return None
  if stmt.src[1].op is Ops.CONST: return stmt.src[0], True, stmt.src[1].arg - 1
  if stmt.src[0].op is Ops.CONST: return stmt.src[1], False, stmt.src[0].arg + 1
  return None

def _valid_bounds(valid:UOp) -> dict[UOp, tuple[int, int]]:
  bounds: dict[UOp, tuple[int, int]] = {}
  for stmt in valid.split_uop(Ops.AND):
    if (p := _parse_bound(stmt)) is None: continue
    expr, upper, c = p
    lo, hi = bounds.get(expr, (int(expr.vmin), int(expr.vmax)))
    bounds[expr] = (lo, min(hi, c)) if upper else (max(lo, c), hi)
  return bounds

def uop_given_valid(valid:UOp, uop:UOp) -> UOp|None:
  """uop simplified on the assumption that valid (an AND of int bounds) holds; None when valid can never hold."""
  bounds = _valid_bounds(valid)
  if any(lo > hi for lo, hi in bounds.values()): return None
  # each bounded expression becomes a variable with the narrower range while simplifying, then goes back
  subs = {e: UOp.variable(f"__valid{i}", lo, hi, e.dtype) for i, (e, (lo, hi)) in enumerate(bounds.items()) if (lo, hi) != (e.vmin, e.vmax)}
  if not subs: return uop
  # loads are not looked into: a load runs whether or not valid holds (an AND or a WHERE computes both sides), so its own gate must stay
  return graph_rewrite(uop.substitute(subs, gate=lambda u: u.op is not Ops.LOAD), symbolic_flat).substitute({v: e for e, v in subs.items()})

def simplify_valid(valid:UOp) -> UOp|None:
  """Merge bounds on one expression, drop clauses implied by others or by the bounds of the expression itself; None when nothing changed."""
  stmts = list(valid.split_uop(Ops.AND))
  bounds = _valid_bounds(valid)
  if any(lo > hi for lo, hi in bounds.values()): return valid.const_like(False)
  out: list[UOp] = []
  seen: set[tuple[UOp, bool]] = set()
  for s in stmts:
    if (p := _parse_bound(s)) is None:
      if s not in out: out.append(s)
      continue
    if (key := (p[0], p[1])) in seen: continue
    seen.add(key)
    e, (lo, hi) = p[0], bounds[p[0]]
    if p[1] and hi < e.vmax: out.append(s if p[2] == hi and s.op is Ops.CMPLT and s.src[0] is e else e < hi+1)
    if not p[1] and lo > e.vmin: out.append(s if p[2] == lo and s.op is Ops.CMPNE and s.src[0].src[0] is e else (e < lo).logical_not())
  # each clause simplified given the bounds the others put on their expressions
  if len(out) > 1 and bounds:
    for i, s in enumerate(out):
      if (new := uop_given_valid(functools.reduce(operator.and_, out[:i] + out[i+1:]), s)) is None: return valid.const_like(False)
      out[i] = new
    if any(o.op is Ops.CONST and o.arg is False for o in out): return valid.const_like(False)
    out = [o for o in out if not (o.op is Ops.CONST and o.arg is True)]
  ret = functools.reduce(operator.and_, out) if out else valid.const_like(True)
  return None if ret is valid else ret

def _index_valid(root:UOp, buf:UOp, idx:UOp, gate:UOp) -> UOp|None:
  # the address only matters where the gate holds
  if gate.op is Ops.CONST and gate.arg is True: return root.replace(src=(buf, idx))
  if (new := uop_given_valid(gate, idx)) is None or new is idx: return None
  return root.replace(src=(buf, new, gate))

def _cast_cast(x:UOp, a:UOp, root:UOp) -> UOp|None:
  # x.cast(a).cast(b) is x.cast(b) when a holds every value of x exactly
  return x.cast(root.dtype) if a.dtype.count == x.dtype.count and can_safe_cast(x.dtype, a.dtype) else None

def _gep(root:UOp, x:UOp) -> UOp|None:
  idx: tuple[int, ...] = root.arg
  if x.op is Ops.VECTORIZE: return x.src[idx[0]] if len(idx) == 1 else UOp(Ops.VECTORIZE, root.dtype, tuple(x.src[i] for i in idx))
  if x.op is Ops.CONST: return UOp.const(root.dtype, x.arg)
  if x.op is Ops.VCONST: return UOp.const(root.dtype, tuple(x.arg[i] for i in idx) if len(idx) > 1 else x.arg[idx[0]])
  if x.op is Ops.GEP: return x.src[0].gep(tuple(x.arg[i] for i in idx))
  if x.dtype.count == 1 and idx == (0,): return x
  return None

def _vectorize(root:UOp) -> UOp|None:
  if root.dtype.count == len(root.src) and all(s.op is Ops.CONST for s in root.src): return UOp.const(root.dtype, tuple(s.arg for s in root.src))
  if root.src[0].op is Ops.GEP and (x := root.src[0].src[0]).dtype == root.dtype and \
     all(s.op is Ops.GEP and s.src[0] is x and s.arg == (i,) for i, s in enumerate(root.src)): return x
  return None

# ***** sym: what codegen passes run. Other engineers extend this table with rules their passes want *****

sym = symbolic_flat + PatternMatcher([
  (UPat(Ops.AND, dtypes.bool, name="valid"), lambda valid: simplify_valid(valid) if valid.dtype.count == 1 else None),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("idx"), UPat.var("gate")), name="root"), _index_valid),
  (UPat(Ops.CAST, src=(UPat(Ops.CAST, src=(UPat.var("x"),), name="a"),), name="root"), _cast_cast),
  (UPat(Ops.GEP, src=(UPat.var("x"),), name="root"), _gep),
  (UPat(Ops.VECTORIZE, name="root"), _vectorize),
])

# ***** a sum that picks one element is a load: sum over r of (idx == e(r)) ? x(r) : 0 -> x(r=idx), gated on idx being one of the e(r) *****

def reduce_gather(red:UOp) -> UOp|None:
  """For a REDUCE (ADD) over loop variables (RANGEs or unrolled-lane placeholders, before expansion) of a select on idx == e, where idx
  doesn't depend on the reduced variables and e is off + a mixed-radix number of some of them (coefficients 1, n0, n0*n1, ...: each value
  of [0, N) once). Exactly one term can be nonzero, the one where e == idx, so the sum is the selected value with those variables solved
  from idx, and 0 when idx - off is outside [0, N): loads that move with them are gated on that, so nothing outside the buffer is read."""
  # a workgroup's threads sharing the reduce (GROUP) are one more digit: each thread then computes the whole value
  if red.arg is not Ops.ADD or red.src[0].op is not Ops.WHERE or \
     not all(s.op in (Ops.RANGE, Ops.UNROLL) or (s.op is Ops.SPECIAL and s.arg.kind is ThreadKind.LOCAL) for s in red.src[1:]): return None
  cond, val, zero = red.src[0].src
  if cond.op is Ops.CMPNE and cond.src[0].op is Ops.CMPNE and cond.src[1].op is Ops.CONST and cond.src[1].arg is True: cond = cond.src[0]
  elif cond.op is Ops.CMPNE: val, zero = zero, val   # (idx != e) ? 0 : x
  else: return None
  if cond.op is not Ops.CMPNE or zero.op is not Ops.CONST or zero.arg != 0 or not dtypes.is_int(cond.src[0].dtype): return None
  loop = set(red.src[1:])
  def moves(u:UOp) -> bool: return any(x in loop for x in u.toposort())
  if moves(cond.src[0]) == moves(cond.src[1]): return None
  idx, e = cond.src if moves(cond.src[1]) else cond.src[::-1]
  # unrolled lanes stand in as variables of their range while e is simplified
  lanes = {u: UOp.variable(f"__lane{i}", 0, u.arg[1]-1, u.dtype) for i, u in enumerate(loop) if u.op is Ops.UNROLL}
  e = graph_rewrite(e.substitute(lanes), sym)
  while e.op is Ops.CAST and dtypes.is_int(e.src[0].dtype) and can_safe_cast(e.src[0].dtype, e.dtype): e = e.src[0]
  back, off = {v: u for u, v in lanes.items()}, []
  digits: list[tuple[int, UOp, int]] = []
  for t in e.split_uop(Ops.ADD):
    b, k = _term(t)
    if (v := back.get(b, b)) in loop and k > 0 and v not in [d[1] for d in digits]:
      # a loop of symbolic length may run short of its bound: only constant lengths
      if not isinstance(n := v.src[0].arg if v.op is Ops.RANGE and v.src[0].op is Ops.CONST else v.arg[1] if v.op is not Ops.RANGE else None, int):
        return None
      digits.append((k, v, n))
    elif any(x in loop or x in back for x in t.toposort()): return None
    else: off.append(t)
  digits.sort(key=lambda d: d[0])
  if not digits or any(k != (digits[i-1][0] * digits[i-1][2] if i else 1) for i, (k, _, _) in enumerate(digits)): return None
  span = digits[-1][0] * digits[-1][2]
  t = idx - _sum(off).cast(idx.dtype) if off else idx
  valid = (t < 0).ne(True) & (t < span)
  tv = t.cast(e.dtype)
  solved = {v: (tv // k if k > 1 else tv) % n if i < len(digits)-1 else tv // k for i, (k, v, n) in enumerate(digits)}
  new: dict[UOp, UOp] = {}
  for u in val.toposort():
    if u in solved: new[u] = solved[u]
    elif u.src and any(new[s] is not s for s in u.src):
      new[u] = u.replace(src=tuple(new[s] for s in u.src))
      if u.op is Ops.INDEX: new[u] = new[u].replace(src=new[u].src[:2] + ((valid & new[u].src[2]) if len(u.src) > 2 else valid,))
    else: new[u] = u
  picked = valid.where(new[val], zero)
  rest = tuple(s for s in red.src[1:] if s not in solved)
  return red.replace(src=(picked,) + rest) if rest else picked

pm_reduce_gather = PatternMatcher([(UPat(Ops.REDUCE, name="red"), reduce_gather)])
