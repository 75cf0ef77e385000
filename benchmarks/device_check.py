"""Every case of ``verify.py all`` on one device, one at a time, going on past failures.

    python benchmarks/device_check.py [--device cuda] [--tier quick] [--only ID ...] [--json PATH]

``verify.py`` stops a run at the first error; on a new device (a GPU the code has not run on)
what is wanted is every failure at once, each with its traceback, and each case's time and
verdict.  The rows are the ones ``verify.py all`` computes (same tasks, same seeds, same
false-alarm split over the whole run), so the verdicts can be compared with a CPU run's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.runner import run_task  # noqa: E402
from engine.session import Request, build_tasks, resolve_points, select  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tier", default="quick", choices=("quick", "default", "paper"))
    parser.add_argument("--only", nargs="*", default=None, help="claim ids (default: all)")
    parser.add_argument("--json", help="write the rows (and the failures) here")
    args = parser.parse_args(argv)
    request = Request(targets=args.only or ["all"], params={}, grid={}, tier=args.tier, device=args.device)
    tasks = build_tasks(resolve_points(select(request.targets), {}, args.tier), request, ["gaussian"])
    rows, failures, start = [], [], time.perf_counter()
    for index, task in enumerate(tasks, 1):
        began = time.perf_counter()
        try:
            row = run_task(task)
        except Exception:   # noqa: BLE001 -- the point of the script: report every failure, go on
            failures.append({"id": task.theorem_id, "params": {k: str(v) for k, v in task.params.items()},
                             "traceback": traceback.format_exc()})
            print(f"[{index}/{len(tasks)}] {task.theorem_id}: FAILED ({time.perf_counter() - began:.1f} s)\n"
                  + traceback.format_exc(), flush=True)
            continue
        rows.append(row)
        print(f"[{index}/{len(tasks)}] {row['id']} {row['params']}: {row['verdict']}"
              f"{'' if row['as_expected'] else ' (CHANGED; recorded ' + row['expected'] + ')'} "
              f"({row['seconds']:.1f} s)", flush=True)
    total = time.perf_counter() - start
    changed = sum(row["as_expected"] is False for row in rows)
    print(f"{len(rows)} cases ran, {len(failures)} failed, {changed} changed, in {total:.0f} s on {args.device}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"device": args.device, "tier": args.tier, "seconds": total, "results": rows,
                       "failures": failures}, handle, indent=1, default=str)
    return 1 if failures or changed else 0


if __name__ == "__main__":
    sys.exit(main())
