"""The pinned symbolic statements of every claim (sympy srepr), as `show` prints them.

``python tests/statements.py`` rewrites statements.json from the registry; review its diff against the
papers before committing it.
"""

import json
from pathlib import Path

PATH = Path(__file__).with_name("statements.json")
STATEMENTS: dict[str, str] = json.loads(PATH.read_text())


if __name__ == "__main__":
    import sys

    import sympy as sp

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from theorems import REGISTRY

    current = {theorem_id: sp.srepr(REGISTRY[theorem_id].symbolic().statement) for theorem_id in sorted(REGISTRY)}
    PATH.write_text(json.dumps(current, indent=1) + "\n")
