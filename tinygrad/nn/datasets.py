# datasets as uint8 Tensors, downloaded through fetch (cached) or read from a local folder of the original files:
# MNIST_DIR=<folder with the idx .gz files>, CIFAR_DIR=<folder with cifar-10-binary.tar.gz or its data_batch_*.bin files>
from __future__ import annotations
import gzip, os, pathlib, struct, sys, tarfile
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.helpers import fetch, prod

MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

def _idx(raw:bytes, name:str, device) -> Tensor:
  # idx: 2 zero bytes, a dtype byte (0x08: uint8), the number of dims, then each dim as a big-endian uint32, then the data
  if len(raw) < 4 or raw[:3] != b"\x00\x00\x08" or len(raw) < 4 + 4 * raw[3]: raise ValueError(f"{name}: not a uint8 idx file")
  shape = struct.unpack(f">{raw[3]}I", raw[4:4 + 4 * raw[3]])
  if (got := len(raw) - 4 - 4 * raw[3]) != prod(shape): raise ValueError(f"{name}: the header says {shape} ({prod(shape)} bytes), it holds {got}")
  return Tensor(raw[4 + 4 * raw[3]:], dtype=dtypes.uint8, device=device).reshape(shape)

def mnist(device=None, fashion:bool=False) -> tuple[Tensor|None, Tensor|None, Tensor|None, Tensor|None]:
  """(X_train (60000, 1, 28, 28), Y_train, X_test (10000, 1, 28, 28), Y_test), all uint8. With MNIST_DIR set, the files come from that folder;
  a split whose files are missing there comes back as None (with a message naming the files), and if no file is there it raises."""
  local = os.environ.get("MNIST_DIR", "")
  base = "https://storage.googleapis.com/cvdf-datasets/mnist/" if not fashion else "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
  if local:
    missing = [f for f in MNIST_FILES if not (pathlib.Path(local) / f).is_file()]
    if len(missing) == len(MNIST_FILES): raise FileNotFoundError(f"MNIST_DIR={local} has none of the MNIST files {', '.join(MNIST_FILES)}")
    if missing: print(f"mnist: {', '.join(missing)} missing from MNIST_DIR={local}; those splits are None", file=sys.stderr)
    def get(f:str) -> Tensor|None:
      return None if f in missing else _idx(gzip.decompress((pathlib.Path(local) / f).read_bytes()), f, device)
  else:
    def get(f:str) -> Tensor|None: return _idx(fetch(base + f, gunzip=True, subdir="fashion" if fashion else "mnist").read_bytes(), f, device)
  xtr, ytr, xte, yte = (get(f) for f in MNIST_FILES)
  return (xtr.reshape(-1, 1, 28, 28) if xtr is not None else None, ytr, xte.reshape(-1, 1, 28, 28) if xte is not None else None, yte)

def cifar(device=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """CIFAR-10: (X_train (50000, 3, 32, 32), Y_train, X_test (10000, 3, 32, 32), Y_test), uint8, from the binary version of the dataset
  (records of 1 label byte + 3072 pixel bytes). CIFAR_DIR: a folder with cifar-10-binary.tar.gz or its extracted .bin files."""
  names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
  local = os.environ.get("CIFAR_DIR", "")
  files: dict[str, bytes] = {}
  if local and all(any(pathlib.Path(local).rglob(n)) for n in names):
    files = {n: next(pathlib.Path(local).rglob(n)).read_bytes() for n in names}
  else:
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    tgz = pathlib.Path(local) / "cifar-10-binary.tar.gz" if local else fetch(url, subdir="cifar")
    if not os.path.isfile(tgz): raise FileNotFoundError(f"CIFAR_DIR={local} lacks cifar-10-binary.tar.gz and {', '.join(names)}")
    with tarfile.open(tgz) as tar:
      for m in tar.getmembers():
        if (n := pathlib.PurePath(m.name).name) in names and (f := tar.extractfile(m)) is not None: files[n] = f.read()
  if missing := [n for n in names if n not in files]: raise FileNotFoundError(f"cifar: {', '.join(missing)} missing")
  def split(batch_names:list[str]) -> tuple[Tensor, Tensor]:
    raw = b"".join(files[n] for n in batch_names)
    if len(raw) % 3073: raise ValueError(f"cifar: {batch_names} is not a whole number of 3073-byte records")
    t = Tensor(raw, dtype=dtypes.uint8, device=device).reshape(-1, 3073)
    return t[:, 1:].reshape(-1, 3, 32, 32).contiguous(), t[:, 0].contiguous()
  return (*split(names[:5]), *split(names[5:]))
