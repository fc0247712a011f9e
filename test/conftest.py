# fixtures every test file may use
import os
import pytest
from tinygrad.device import Device

# run a test on each device: it becomes Device.DEFAULT for the test. REMOTE joins when REMOTE_HOST names a running server
@pytest.fixture(params=["CPU", "PYTHON"] + (["REMOTE"] if os.environ.get("REMOTE_HOST") else []))
def device(request, monkeypatch):
  try: Device[request.param]
  except Exception as e: pytest.skip(f"device {request.param} is not available: {e}")
  monkeypatch.setitem(Device.__dict__, "DEFAULT", request.param)
  return request.param
