"""Did a change move a number?  Compare two ``verify.py --json`` runs case by case.

    python verify.py all --quick --json before.json          # on the old code
    python verify.py all --quick --json after.json           # on the new code, same seed
    python scripts/compare_runs.py before.json after.json

A refactor must leave every case's verdict, theory value (all its printed digits), confirmed digits,
Monte-Carlo mean, standard error and trial count, and z identical: same seed, same numbers.  Cases are
matched by claim id, parameters and design law.  The detail line and timings may differ.  Prints one line
per case and exits 1 if any number moved or a case is missing from either run.  ``--allow FIELD`` leaves
a field out of the comparison (state why in the commit that uses it).  ``--subset`` compares only the
claims present in the second run, so one claim's run can be held against a whole-suite baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

FIELDS = ("verdict", "theory", "theory_digits", "mc.mean", "mc.se", "mc.trials", "z", "expected")


def _key(row: dict) -> tuple:
    return row["id"], json.dumps(row["params"], sort_keys=True), row.get("data")


def _field(row: dict, name: str):
    value = row
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare(before: dict, after: dict, fields=FIELDS, subset: bool = False) -> list[str]:
    """One line per case; lines starting with 'MOVED' or 'MISSING' are failures."""
    ids = {r["id"] for r in after["results"]}
    old = {_key(r): r for r in before["results"] if not subset or r["id"] in ids}
    new = {_key(r): r for r in after["results"]}
    lines = []
    for key in list(old) + [k for k in new if k not in old]:
        label = f"{key[0]} {key[1]}" + (f" [{key[2]}]" if key[2] not in (None, "gaussian") else "")
        if key not in new or key not in old:
            lines.append(f"MISSING in {'after' if key not in new else 'before'}: {label}")
            continue
        moved = [f"{f}: {_field(old[key], f)!r} -> {_field(new[key], f)!r}"
                 for f in fields if not _same(_field(old[key], f), _field(new[key], f))]
        lines.append(f"MOVED {label}: " + "; ".join(moved) if moved else f"same  {label}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--allow", action="append", default=[], choices=FIELDS, help="a field not compared")
    parser.add_argument("--subset", action="store_true", help="compare only the claims the second run has")
    args = parser.parse_args(argv)
    with open(args.before) as a, open(args.after) as b:
        lines = compare(json.load(a), json.load(b), tuple(f for f in FIELDS if f not in args.allow),
                        args.subset)
    for line in lines:
        print(line)
    failures = sum(not line.startswith("same") for line in lines)
    print(f"{len(lines) - failures} of {len(lines)} cases identical in {', '.join(FIELDS)}"
          + (f" (not compared: {', '.join(args.allow)})" if args.allow else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
