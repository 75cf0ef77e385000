import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
torch.set_default_dtype(torch.float64)


@pytest.fixture
def quick_run():
    from theorems import Run
    return Run(tier="quick", seed=0, device=torch.device("cpu"), dps=30)


@pytest.fixture(scope="session")
def quick_suite(tmp_path_factory):
    """``verify.py all --quick --json``, run once for the whole test session."""
    import json
    import verify
    path = tmp_path_factory.mktemp("suite") / "quick.json"
    code = verify.main(["all", "--quick", "--json", str(path)])
    payload = json.loads(path.read_text())
    payload["exit_code"] = code
    return payload
