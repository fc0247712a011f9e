# random integer expressions over bounded variables: the simplified graph computes what the original does, wrap-around included
# (int8/int16/int32/uint8 maths wraps like numpy's), at the bounds of every variable and at random points inside them
import itertools, random
import pytest
from tinygrad.uop.ops import UOp, sym_infer, graph_rewrite
from tinygrad.uop.symbolic import symbolic, sym
from tinygrad.dtype import dtypes

def _const(rng:random.Random, dt) -> UOp: return UOp.const(dt, rng.randint(0, 40) if dtypes.is_unsigned(dt) else rng.randint(-20, 20))

def rand_expr(rng:random.Random, vs:list[UOp], dt, depth:int) -> UOp:
  if depth == 0 or rng.random() < 0.2: return rng.choice(vs) if rng.random() < 0.7 else _const(rng, dt)
  op, a = rng.choice(["add", "sub", "mul", "idiv", "mod", "max", "where", "neg"]), rand_expr(rng, vs, dt, depth-1)
  unsigned = dtypes.is_unsigned(dt)
  if op == "add": return a + rand_expr(rng, vs, dt, depth-1)
  if op == "sub": return a - rand_expr(rng, vs, dt, depth-1)
  if op == "mul": return a * (rng.randint(0, 7) if unsigned else rng.randint(-5, 5)) if rng.random() < 0.7 else a * rand_expr(rng, vs, dt, depth-1)
  if op in ("idiv", "mod"):
    c = rng.choice([1, 2, 3, 4, 5, 7, 8, 16] + ([] if unsigned else [-3, -4]))
    return a // c if op == "idiv" else a % c
  if op == "max": return a.maximum(rand_expr(rng, vs, dt, depth-1))
  if op == "neg": return a if unsigned else -a
  return (a < rand_expr(rng, vs, dt, depth-1)).where(rand_expr(rng, vs, dt, depth-1), a)

@pytest.mark.parametrize("seed", range(4))
def test_simplify_keeps_values(seed):
  rng = random.Random(seed)
  for _ in range(150):
    dt = rng.choice([dtypes.int32, dtypes.int32, dtypes.int8, dtypes.uint8, dtypes.int16])
    vs = []
    for i in range(2):
      a = rng.randint(dtypes.min(dt), dtypes.max(dt))
      b = rng.randint(dtypes.min(dt), dtypes.max(dt)) if rng.random() < 0.3 else min(dtypes.max(dt), a + rng.randint(0, 12))
      vs.append(UOp.variable(f"v{i}", min(a, b), max(a, b), dt))
    e = rand_expr(rng, vs, dt, rng.randint(1, 4))
    if rng.random() < 0.5: e = e < UOp.const(dt, rng.randint(max(dtypes.min(dt), -30), min(dtypes.max(dt), 30)))
    points = [sorted({v.arg[1], v.arg[2], *(rng.randint(v.arg[1], v.arg[2]) for _ in range(5))}) for v in vs]
    for simplified in (graph_rewrite(e, symbolic), graph_rewrite(e, sym)):
      for combo in itertools.product(*points):
        vals = dict(zip(vs, combo))
        assert sym_infer(simplified, vals) == sym_infer(e, vals), f"{dt} {combo}: {e.render(simplify=False)} -> {simplified.render(simplify=False)}"
