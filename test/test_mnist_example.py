# CI smoke test of examples/beautiful_mnist.py on the offline MNIST subset: a few jitted Adam steps must already beat chance clearly
import os, pathlib, re, subprocess, sys
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
MNIST_DIR = next((p for p in (REPO.parent / "shared/datasets/mnist", REPO.parents[1] / "shared/datasets/mnist") if p.is_dir()), None)

@pytest.mark.skipif(MNIST_DIR is None, reason="no shared/datasets/mnist beside the clone")
def test_beautiful_mnist_smoke():
  env = {**os.environ, "MNIST_DIR": str(MNIST_DIR), "STEPS": "5", "BS": "64", "EVAL_BS": "500", "PYTHONPATH": str(REPO)}
  out = subprocess.run([sys.executable, str(REPO / "examples/beautiful_mnist.py")], env=env, capture_output=True, text=True, timeout=900)
  assert out.returncode == 0, out.stderr[-3000:]
  m = re.search(r"final loss: ([\d.]+), test accuracy: ([\d.]+)% on 2000 images", out.stdout)
  assert m is not None, out.stdout
  loss, acc = float(m.group(1)), float(m.group(2))
  assert loss < 2.0 and acc > 25.0, out.stdout   # chance is 10% and a loss of 2.3

def test_train_step_kernel_count():
  # one eager training step of the example's CNN (forward, backward, Adam) is a fixed number of kernels: a regression adds some. Before the
  # conv backward became convolutions it was 98 kernels, the biggest an im2col-sized buffer reduced back (col2im); now each conv's
  # gradients are a transposed conv and a chunked weight reduce, plus channels-last copies on CPUs
  sys.path.insert(0, str(REPO / "examples"))
  from beautiful_mnist import Model
  from tinygrad import Tensor, nn, dtypes, GlobalCounters
  Tensor.manual_seed(0)
  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  x, y = Tensor.randint(8, 1, 28, 28, low=0, high=256).cast(dtypes.uint8).realize(), Tensor.randint(8, low=0, high=10).realize()
  def step():
    with Tensor.train():
      opt.zero_grad()
      loss = model(x).sparse_categorical_crossentropy(y).backward()
      opt.step()
      return loss.realize()
  step()
  GlobalCounters.reset()
  step()
  # 98 before conv backward got its own rule, 108 with its channels-last copies and partial sums, 112 after the merge with the
  # nan-aware max and leaf buffers of session 4, 110 since BatchNorm's backward is its closed form (two per-channel sums, not five), 111
  # since conv2's input (a relu) is computed once into a buffer instead of at each of its 25 taps' loads; a regression shows as a jump past this
  # 113 since a loss and grads still lazy at opt.step are computed by the step, before the weights change (torch's values: the loss read
  # after the step is the one its gradients came from): the loss's 2 kernels moved into the step, and 3 grads fused into their updates are
  # stored too
  assert GlobalCounters.kernel_count <= 113, GlobalCounters.kernel_count
