# the classic small MNIST CNN, trained with Adam under TinyJit. Knobs: STEPS (default 70), BS (batch size, default 512), EVAL_BS (1000),
# SEED. MNIST_DIR=<folder of the original idx .gz files> reads them from there instead of downloading; if only the 10,000-image test set is
# there (t10k-*), it trains on the first 8,000 of those images and evaluates on the other 2,000.
import random, sys, time
from tinygrad import Tensor, TinyJit, nn, dtypes, GlobalCounters
from tinygrad.helpers import getenv
from tinygrad.nn.datasets import mnist
try: from tinygrad.helpers import trange
except ImportError:
  def trange(n:int, **kwargs):  # type: ignore[no-redef]
    for i in range(n):
      print(f"\r{i+1}/{n}", end="", file=sys.stderr)
      yield i
    print(file=sys.stderr)

class Model:
  def __init__(self):
    self.layers = [
      nn.Conv2d(1, 32, 5), Tensor.relu,
      nn.Conv2d(32, 32, 5), Tensor.relu,
      nn.BatchNorm(32), Tensor.max_pool2d,
      nn.Conv2d(32, 64, 3), Tensor.relu,
      nn.Conv2d(64, 64, 3), Tensor.relu,
      nn.BatchNorm(64), Tensor.max_pool2d,
      lambda x: x.flatten(1), nn.Linear(576, 10)]
  def __call__(self, x:Tensor) -> Tensor: return (x.float() / 255.0).sequential(self.layers)

def load_data():
  X_train, Y_train, X_test, Y_test = mnist()
  assert X_test is not None and Y_test is not None
  if X_train is None or Y_train is None:
    print("training on test images 0..7999, evaluating on 8000..9999", file=sys.stderr)
    X_train, Y_train, X_test, Y_test = X_test[:8000], Y_test[:8000], X_test[8000:], Y_test[8000:]
  # the images stay on the host as bytes; each step copies in a fresh batch (a new input buffer for the jit)
  return bytes(X_train.contiguous().data()), bytes(Y_train.contiguous().data()), bytes(X_test.contiguous().data()), bytes(Y_test.contiguous().data())

def batches(xs:bytes, ys:bytes, bs:int, rng:random.Random):
  n, order = len(ys), []
  while True:
    if len(order) < bs: order += rng.sample(range(n), n)   # a fresh shuffle each epoch
    idx, order = order[:bs], order[bs:]
    yield (Tensor(b"".join(xs[i*784:(i+1)*784] for i in idx), dtype=dtypes.uint8).reshape(bs, 1, 28, 28),
           Tensor(bytes(ys[i] for i in idx), dtype=dtypes.uint8).cast(dtypes.int32).realize())

def evaluate(model:Model, xs:bytes, ys:bytes, bs:int) -> float:
  @TinyJit
  def predict(x:Tensor) -> Tensor: return model(x).argmax(axis=1).cast(dtypes.uint8).realize()
  correct, n = 0, len(ys)
  with Tensor.train(False):
    for i in range(0, n - n % bs, bs):
      pred = predict(Tensor(xs[i*784:(i+bs)*784], dtype=dtypes.uint8).reshape(bs, 1, 28, 28)).data()
      correct += sum(p == y for p, y in zip(pred, ys[i:i+bs]))
    if n % bs:  # the tail, without the jit (another shape)
      pred = model(Tensor(xs[(n - n % bs)*784:], dtype=dtypes.uint8).reshape(-1, 1, 28, 28)).argmax(axis=1).cast(dtypes.uint8).data()
      correct += sum(p == y for p, y in zip(pred, ys[n - n % bs:]))
  return 100.0 * correct / n

def make_train_step(model:Model, opt:nn.optim.Optimizer):
  """One jitted optimizer step on a batch (uint8 images, int labels): the loss, realized. extra/bench/bench_mnist.py times the same step."""
  @TinyJit
  @Tensor.train()
  def train_step(x:Tensor, y:Tensor) -> Tensor:
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    opt.step()
    return loss.realize()
  return train_step

if __name__ == "__main__":
  Tensor.manual_seed(getenv("SEED", 42))
  xs, ys, xt, yt = load_data()
  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  BS, STEPS = getenv("BS", 512), getenv("STEPS", 70)
  train_step = make_train_step(model, opt)

  data, st = batches(xs, ys, BS, random.Random(getenv("SEED", 42))), time.perf_counter()
  for i in (t := trange(STEPS)):
    GlobalCounters.reset()
    if i == 2: st = time.perf_counter()   # the jit runs steps 0 and 1 eagerly (compiling) and replays from step 2: time the replays
    loss = train_step(*next(data))
    if hasattr(t, "set_description"): t.set_description(f"loss: {loss.item():6.3f}")
  steps_per_s = (STEPS - 2) / (time.perf_counter() - st) if STEPS > 2 else float("nan")
  acc = evaluate(model, xt, yt, getenv("EVAL_BS", 1000))
  print(f"steps: {STEPS}, batch size: {BS}, {steps_per_s:.2f} steps/s (jit replays), "
        f"final loss: {loss.item():.3f}, test accuracy: {acc:.2f}% on {len(yt)} images")
  if (target := getenv("TARGET_EVAL_ACC_PCT", 0.0)) and acc < target: raise SystemExit(f"test accuracy {acc:.2f}% is below the target {target}%")
