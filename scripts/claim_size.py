"""How many lines is a claim?  Lines of its own, per claim, from the family modules' syntax trees.

    python scripts/claim_size.py            # one row per claim, then the median
    python scripts/claim_size.py --max 100  # exit 1 if the median is above 100

A claim's lines are its registering statement plus every top-level function, constant or class of its
family module that the statement reaches (through names, transitively).  What several claims reach is
split evenly between them; what none reaches (the docstring, imports) is counted for none.  Blank lines
and comment-only lines count: they are what a reader reads.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    """Name -> defining statement, for the module's functions, classes and assignments."""
    named = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            named[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        named[leaf.id] = node
    return named


def _names(node: ast.AST) -> set[str]:
    return {leaf.id for leaf in ast.walk(node) if isinstance(leaf, ast.Name)}


def _span(node: ast.stmt) -> int:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return node.end_lineno - first + 1


def _is_claim(node: ast.stmt) -> bool:
    """``name = register(Theorem(...))``: the statement that makes a claim."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "register")


def claim_lines(path: Path) -> dict[str, float]:
    """Claim variable name -> its lines of its own in the module at ``path``."""
    tree = ast.parse(path.read_text())
    named = _top_level(tree)
    claims = {node.targets[0].id: node for node in tree.body if _is_claim(node)}
    reached_by = defaultdict(set)             # statement -> the claims that reach it
    for claim, statement in claims.items():
        seen, todo = set(), [statement]
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            reached_by[id(node)].add(claim)
            todo += [named[name] for name in _names(node) if name in named and not _is_claim(named[name])]
    sizes = dict.fromkeys(claims, 0.0)
    for node in {id(n): n for n in named.values()}.values():
        owners = reached_by.get(id(node), ())
        for claim in owners:
            sizes[claim] += _span(node) / len(owners)
    return sizes   # a claim's own statement is among what it reaches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=float, help="exit 1 if the median claim has more lines than this")
    args = parser.parse_args(argv)
    rows = []
    for path in sorted((ROOT / "theorems").glob("*.py")):
        rows += [(path.stem, name, size) for name, size in claim_lines(path).items()]
    for module, name, size in sorted(rows, key=lambda row: row[2]):
        print(f"{size:7.1f}  {module}.{name}")
    median = statistics.median(size for _, _, size in rows)
    print(f"{len(rows)} claims, median {median:.1f} lines of their own")
    return 1 if args.max is not None and median > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
