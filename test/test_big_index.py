# indices past int32: shapes of more than 2**31 elements compute their indices (and arange's values) in int64 on every device, without
# allocating gigabytes (views of small buffers, arange, expand) except where a kernel is only compiled
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes, Context
from tinygrad.device import is_dtype_supported
from tinygrad.engine.realize import get_program

N = 2**31 + 10

def _needs_int64(device):
  if not is_dtype_supported(dtypes.int64, device): pytest.skip(f"{device} has no int64")

def test_arange_tail_past_int32(device):
  _needs_int64(device)
  assert Tensor.arange(N, dtype=dtypes.int64)[-3:].tolist() == [N-3, N-2, N-1]
  assert Tensor.arange(2**33, dtype=dtypes.int64)[-2:].tolist() == [2**33-2, 2**33-1]
  assert Tensor.arange(0, 3*2**31, 3, dtype=dtypes.int64)[-2:].tolist() == [3*2**31-6, 3*2**31-3]

def test_flat_index_of_an_expanded_view(device):
  _needs_int64(device)
  # 2**33 virtual elements over a buffer of 2**17: the flat index of the tail is past int32, the buffer's isn't
  a = Tensor.arange(2**17, dtype=dtypes.int64).reshape(1, 2**17).expand(2**16, 2**17).reshape(-1)
  assert a[-3:].tolist() == [2**17-3, 2**17-2, 2**17-1]
  assert Tensor.ones(3, 3).pad(((2**31, 0), (0, 0)))[-4:].sum().item() == 9.0
  np.testing.assert_equal(Tensor.ones(2**16, 2**16).triu()[-2:, -3:].numpy(), np.triu(np.ones((5, 5)))[-2:, -3:])

@pytest.mark.parametrize("dev", ["CPU", "LLVM", "GPU"])
def test_big_buffer_kernel_compiles(dev):
  # a kernel over a buffer of 2**31+16 bytes (never allocated here); on LLVM with threads its core_id (an i32 argument) meets i64 index maths
  try: Device[dev]
  except Exception as e: pytest.skip(f"device {dev} is not available: {e}")
  x = Tensor.empty(2**31 + 16, dtype=dtypes.uint8, device=dev)
  with Context(CPU_THREADS=2):
    for out in (x + 1, x[-8:] * 3):
      p = get_program(out.schedule()[-1].ast, Device[dev].renderer)
      Device[dev].compiler.compile(p.src)
