# dataset loaders on the local copy of MNIST's test set (shared/datasets/mnist beside the clone), and CIFAR's binary format on a fake folder
import gzip, pathlib, struct
import numpy as np, pytest
from tinygrad.nn import datasets

REPO = pathlib.Path(__file__).resolve().parents[1]
MNIST_DIR = next((p for p in (REPO.parent / "shared/datasets/mnist", REPO.parents[1] / "shared/datasets/mnist") if p.is_dir()), None)

@pytest.mark.skipif(MNIST_DIR is None, reason="no shared/datasets/mnist beside the clone")
def test_mnist_local_test_set(monkeypatch, capsys):
  monkeypatch.setenv("MNIST_DIR", str(MNIST_DIR))
  xtr, ytr, xte, yte = datasets.mnist()
  assert xtr is None and ytr is None
  assert "train-images-idx3-ubyte.gz" in capsys.readouterr().err
  assert xte.shape == (10000, 1, 28, 28) and yte.shape == (10000,)
  raw = gzip.decompress((MNIST_DIR / "t10k-images-idx3-ubyte.gz").read_bytes())
  np.testing.assert_array_equal(xte[:5].numpy().reshape(-1), np.frombuffer(raw[16:16 + 5 * 784], np.uint8))
  labels = yte.numpy()
  assert labels.tolist()[:5] == [7, 2, 1, 0, 4] and np.bincount(labels).min() > 800

def test_mnist_missing_folder(monkeypatch, tmp_path):
  monkeypatch.setenv("MNIST_DIR", str(tmp_path))
  with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte.gz"): datasets.mnist()

def test_mnist_bad_idx(monkeypatch, tmp_path):
  (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x03" + struct.pack(">3I", 2, 28, 28) + b"\x00" * 100))
  (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x01" + struct.pack(">I", 2) + b"\x01\x02"))
  monkeypatch.setenv("MNIST_DIR", str(tmp_path))
  with pytest.raises(ValueError, match="t10k-images"): datasets.mnist()

def test_cifar_binary_folder(monkeypatch, tmp_path):
  rng = np.random.default_rng(0)
  recs = {}
  for n in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    r = rng.integers(0, 256, (3, 3073), dtype=np.uint8); r[:, 0] %= 10
    recs[n] = r
    (tmp_path / n).write_bytes(r.tobytes())
  monkeypatch.setenv("CIFAR_DIR", str(tmp_path))
  xtr, ytr, xte, yte = datasets.cifar()
  assert xtr.shape == (15, 3, 32, 32) and xte.shape == (3, 3, 32, 32)
  np.testing.assert_array_equal(ytr.numpy(), np.concatenate([recs[f"data_batch_{i}.bin"][:, 0] for i in range(1, 6)]))
  np.testing.assert_array_equal(xte.numpy(), recs["test_batch.bin"][:, 1:].reshape(3, 3, 32, 32))
