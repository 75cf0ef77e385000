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
