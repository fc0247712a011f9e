# ONNX node-test conformance: every case of onnx.backend.test.case.node.collect_testcases(), written to a cache folder once and run with
# OnnxRunner (test data read by extra/onnx_parser.py). The pytest summary's "passed" count is the conformance count; the cases listed in
# KNOWN_FAILURES are expected to fail (xfail) and are reported by op in the closing note. Device: ONNX_TEST_DEVICE (default PYTHON, the
# reference emulator, faster than compiling thousands of tiny kernels).
import os, pathlib
import pytest
onnx = pytest.importorskip("onnx")
from tinygrad.device import Device  # noqa: E402
from extra.onnx_conformance import write_node_tests, case_names, run_tinygrad  # noqa: E402

ROOT = write_node_tests()
KNOWN_FAILURES = {ln.strip() for ln in (pathlib.Path(__file__).parent / "onnx_known_failures.txt").read_text().splitlines()
                  if ln.strip() and not ln.startswith("#")}

@pytest.fixture(autouse=True)
def onnx_device(monkeypatch):
  monkeypatch.setitem(Device.__dict__, "DEFAULT", os.environ.get("ONNX_TEST_DEVICE", "PYTHON"))

@pytest.mark.parametrize("case", case_names(ROOT))
def test_node(case):
  if case in KNOWN_FAILURES:
    try: run_tinygrad(ROOT / case)
    except Exception as e: pytest.xfail(f"known failure: {type(e).__name__}: {str(e)[:200]}")
    return   # now passing: fine, remove it from onnx_known_failures.txt
  run_tinygrad(ROOT / case)
