# fixtures every test file may use
import pytest
from tinygrad.device import Device, is_dtype_supported
from tinygrad.dtype import DType

# run a test on each device: it becomes Device.DEFAULT for the test. A device that can't open here (no library, no hardware) is skipped,
# and so is a test whose parameters name a dtype the device doesn't hold
@pytest.fixture(params=["CPU", "PYTHON", "LLVM", "GPU"])
def device(request, monkeypatch):
  try: Device[request.param]
  except Exception as e: pytest.skip(f"device {request.param} is not available: {e}")
  params = getattr(request.node, "callspec", None)
  for dt in (v for v in (params.params.values() if params is not None else ()) if isinstance(v, DType)):
    if not is_dtype_supported(dt, request.param): pytest.skip(f"{request.param} does not support {dt}")
  monkeypatch.setitem(Device.__dict__, "DEFAULT", request.param)
  return request.param
