#!/usr/bin/env python
"""How often does the checker cry wolf?  ``verify.py all --quick`` under many seeds.

Every verdict the suite gives is compared with the verdict recorded for it; a
difference under a new seed is a false alarm (or a recorded finding that does not
reproduce, which is as bad).  Each run of the suite splits its false-alarm budget
over its points (Bonferroni, ``Run.alarm``), so by design a run alarms with
probability <= 1e-3 and the expected number of alarms over S seeds is <= S x 1e-3:
the target is zero.  The script prints, per check, the runs, the alarms, the rate
its verdict rule implies (1e-3 / points per run) and the largest |z| seen against
the critical value, and writes everything as JSON.

    python scripts/calibration.py --seeds 1:50 [--jobs 2] [--out calibration.json]
    python scripts/calibration.py --merge first.json second.json --out all.json

Each seed is one ``verify.py all --quick --seed S --json`` process (the same code
path a user runs); a seed's rows are read back from its JSON file.  ``--jobs N`` runs
N seeds at a time, each with cores/N BLAS threads.  The output file is rewritten
after every seed, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def seeds_from(text: str) -> list[int]:
    first, _, last = text.partition(":")
    return list(range(int(first), int(last or first) + 1))


def run_suite(seed: int, threads: int, folder: str) -> dict:
    path = os.path.join(folder, f"seed{seed}.json")
    command = [sys.executable, "verify.py", "all", "--quick", "--seed", str(seed), "--json", path]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    if not os.path.exists(path):
        raise SystemExit(f"seed {seed}: verify.py wrote no results (exit {done.returncode}): {done.stderr[-400:]}")
    return json.load(open(path))


def write(path: str, payload: dict) -> None:
    """Replace ``path`` atomically: an interrupted run never leaves a half-written file."""
    with open(path + ".tmp", "w") as handle:
        json.dump(payload, handle, indent=1)
    os.replace(path + ".tmp", path)


def merge(payloads: list[dict]) -> dict:
    """Stored runs of disjoint seeds as one: seeds and alarms joined, per check the runs and alarms added and the
    largest |z| kept (the points per run must agree: the same suite)."""
    seeds = [seed for payload in payloads for seed in payload["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"the runs share seeds: {sorted(s for s in set(seeds) if seeds.count(s) > 1)}")
    per_check = {}
    for payload in payloads:
        for theorem_id, entry in payload["per_check"].items():
            total = per_check.setdefault(theorem_id, {"runs": 0, "alarms": 0, "max_abs_z": 0.0,
                                                      "points_per_run": entry["points_per_run"]})
            if total["points_per_run"] != entry["points_per_run"]:
                raise SystemExit(f"{theorem_id}: runs of suites with {total['points_per_run']} and "
                                 f"{entry['points_per_run']} points")
            total["runs"] += entry["runs"]
            total["alarms"] += entry["alarms"]
            total["max_abs_z"] = max(total["max_abs_z"], entry["max_abs_z"])
    return {"seeds": sorted(seeds), "alarms": [a for payload in payloads for a in payload["alarms"]],
            "per_check": per_check}


def summarise(payload: dict) -> None:
    """Per check: runs, changed verdicts, the per-point rate its rule implies, the largest |z|; then the changes,
    split into refutations of a recorded agreement (false alarms) and other changes (e.g. lost power)."""
    import theorems
    seeds, alarms, per_check = payload["seeds"], payload["alarms"], payload["per_check"]
    print(f"\n{'claim':28s} {'runs':>5s} {'changed':>7s} {'rate per point (rule)':>22s} {'max |z|':>8s}")
    for theorem_id, entry in sorted(per_check.items()):
        rule = theorems.REGISTRY[theorem_id].false_alarm / max(entry["points_per_run"], 1)
        print(f"{theorem_id:28s} {entry['runs']:5d} {entry['alarms']:7d} {rule:22.2g} {entry['max_abs_z']:8.2f}")
    false_alarms = [a for a in alarms if a["verdict"] == "disagree" and a["expected"] == "agree"]
    total = sum(entry["runs"] for entry in per_check.values())
    print(f"\n{len(seeds)} seeds, {total} verdicts: {len(false_alarms)} refute a recorded agreement (design: <= "
          f"{len(seeds) * 1e-3:.2g} expected), {len(alarms) - len(false_alarms)} other changes")
    for alarm in alarms:
        print(f"  seed {alarm['seed']}: {alarm['id']} {alarm['params']}: {alarm['verdict']} "
              f"(recorded {alarm['expected']}): {alarm['detail'][:200]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1:50", help="FIRST:LAST (inclusive), default 1:50")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at the same time")
    parser.add_argument("--out", default="calibration.json", help="where to write the per-seed rows and the summary")
    parser.add_argument("--summarise", metavar="PATH", help="print the summary of a stored (possibly partial) run and exit")
    parser.add_argument("--merge", nargs="+", metavar="PATH", help="combine stored runs of disjoint seeds into --out, "
                        "print its summary and exit")
    args = parser.parse_args()
    if args.summarise:
        summarise(json.load(open(args.summarise)))
        return 0
    if args.merge:
        merged = merge([json.load(open(path)) for path in args.merge])
        write(args.out, merged)
        summarise(merged)
        return 0
    seeds = seeds_from(args.seeds)
    alarms, done, per_check = [], [], defaultdict(lambda: {"runs": 0, "alarms": 0, "max_abs_z": 0.0, "points_per_run": 0})
    started = time.time()
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_suite, seed, threads, folder): seed for seed in seeds}
        for count, future in enumerate(concurrent.futures.as_completed(futures), 1):
            seed, rows = futures[future], future.result()["results"]
            for row in rows:
                entry = per_check[row["id"]]
                entry["runs"] += 1
                entry["points_per_run"] = len(rows)
                if isinstance(row.get("z"), (int, float)) and row["expected"] == "agree":   # a recorded refutation's z is large by design
                    entry["max_abs_z"] = max(entry["max_abs_z"], abs(row["z"]))
                if row["as_expected"] is False:
                    entry["alarms"] += 1
                    alarms.append({"seed": seed, "id": row["id"], "params": row["params"], "verdict": row["verdict"],
                                   "expected": row["expected"], "z": row.get("z"), "detail": row["detail"]})
            done.append(seed)
            write(args.out, {"seeds": sorted(done), "alarms": alarms, "per_check": per_check})
            elapsed = time.time() - started
            print(f"seed {seed}: {len(rows)} verdicts, {sum(r['as_expected'] is False for r in rows)} alarms "
                  f"[{count}/{len(seeds)}, {elapsed / 60:.1f} min]", flush=True)
    summarise({"seeds": sorted(done), "alarms": alarms, "per_check": per_check})
    print(f"{(time.time() - started) / 60:.0f} min")
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
