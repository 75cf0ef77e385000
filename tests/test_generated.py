"""The files generated from the registry (scripts/generate.py) are up to date, and the house keeps its shape:
claims in theorems/, machinery in engine/, no claim module reaching into another's private helpers."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_files_are_up_to_date():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "generate.py"), "--check"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def test_claim_modules_import_no_machinery_and_no_private_helpers():
    for path in (ROOT / "theorems").glob("*.py"):
        for module, names in _imports(path):
            # core.Run hands a check its Judge (run.judge): the one door from the claims to the engine
            assert not module.startswith("engine") or path.name == "core.py", f"{path.name} imports {module}: claims know nothing of the engine"
            if module.startswith("theorems.") and module not in ("theorems.core", "theorems.registry"):
                private = [name for name in names if name.startswith("_")]
                assert not private, f"{path.name} takes private helpers {private} from {module}"


def test_numerics_and_simulate_know_nothing_of_theorems_or_the_engine():
    for package in ("numerics", "simulate"):
        for path in (ROOT / package).glob("*.py"):
            for module, _ in _imports(path):
                assert not module.startswith(("theorems", "engine")), f"{package}/{path.name} imports {module}"


def test_the_command_line_is_thin():
    assert len((ROOT / "verify.py").read_text().splitlines()) <= 350


def test_every_claim_declares_its_power_and_method_in_one_place():
    from theorems import REGISTRY
    for theorem in REGISTRY.values():
        assert theorem.power and theorem.method, theorem.id
        # the method says how the check works, in its own words (not the verdict rule, not a table row)
        assert theorem.method != theorem.verdict_rule and "\\|" not in theorem.method, theorem.id
        assert all(spec.formula in theorem.formulas or spec.kind == "n/a" for spec in theorem.power), theorem.id
