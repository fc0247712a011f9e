# fixtures every test file may use
import os
# every kernel a test compiles is checked for memory accesses that are neither gated nor provably in bounds (codegen raises)
os.environ.setdefault("IGNORE_OOB", "0")
import pytest
from tinygrad.device import Device

# run a test on each device: it becomes Device.DEFAULT for the test
@pytest.fixture(params=["CPU", "PYTHON"])
def device(request, monkeypatch):
  try: Device[request.param]
  except Exception as e: pytest.skip(f"device {request.param} is not available: {e}")
  monkeypatch.setitem(Device.__dict__, "DEFAULT", request.param)
  return request.param
