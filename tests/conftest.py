import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# The tests compute every point: a user's result cache (engine/cache.py) must neither answer them nor be filled by
# them.  Tests of the cache pass --cache explicitly; the CLIs they start inherit this.
os.environ["TRANSFER_CHECK_CACHE"] = "off"
torch.set_default_dtype(torch.float64)
# as every check's process does (engine.runner.run_task): the same bits, fewer page faults
from simulate.device import keep_freed_host_memory  # noqa: E402
keep_freed_host_memory()


@pytest.fixture
def quick_run():
    from theorems import Run
    return Run(tier="quick", seed=0, device=torch.device("cpu"), dps=30)


@pytest.fixture(scope="module")
def run():
    """The quick tier, seed 0, on the CPU: what the claim tests of a module share."""
    from theorems import Run
    return Run(tier="quick", seed=0, device=torch.device("cpu"))


@pytest.fixture(scope="module")
def outcomes(run):
    """outcomes(theorem_id, **overrides): the claim's quick check, run once per module and point."""
    from claim_helpers import quick_check
    from theorems import REGISTRY
    cache = {}

    def get(theorem_id, **overrides):
        key = (theorem_id, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = quick_check(REGISTRY[theorem_id], run, **overrides)
        return cache[key]
    return get


@pytest.fixture(scope="session")
def quick_suite(tmp_path_factory):
    """``verify.py all --quick --json``, run once for the whole test session."""
    import json
    import verify
    path = tmp_path_factory.mktemp("suite") / "quick.json"
    # scripts/mutation.py names a cache it filled on the unmutated tree: a mutant then recomputes only the claims
    # whose sources it changes (the cache's key hashes them), and every other row is the unmutated one
    cache = os.environ.get("QUICK_SUITE_CACHE")
    code = verify.main(["all", "--quick", "--json", str(path), *(["--cache", cache] if cache else [])])
    payload = json.loads(path.read_text())
    payload["exit_code"] = code
    return payload


@pytest.fixture
def own_claims():
    """Claims loaded in this process (engine.claim_sources) are forgotten after the test: the registry, the
    loaded sources and the modules written in temporary folders are as before."""
    from engine import claim_sources
    from theorems import REGISTRY
    registry, loaded, modules = dict(REGISTRY), dict(claim_sources._loaded), set(sys.modules)
    yield claim_sources
    REGISTRY.clear()
    REGISTRY.update(registry)
    claim_sources._loaded.clear()
    claim_sources._loaded.update(loaded)
    import tempfile
    for name in set(sys.modules) - modules:   # the claim modules the test wrote (in its tmp_path), not what they imported
        if (getattr(sys.modules[name], "__file__", None) or "").startswith(tempfile.gettempdir()):
            del sys.modules[name]
