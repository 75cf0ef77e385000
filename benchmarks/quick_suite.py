"""How long the checks take: the whole `verify.py all --quick` run and each check.

    python benchmarks/quick_suite.py [--tier quick|default] [--repeat N]

Speed targets live here, not in timed tests.  Target for the quick tier of the
core claims: the whole run (imports included) under 20 s on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_SECONDS = {"quick": 20.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", choices=("quick", "default"), default="quick")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    walls, per_check = [], {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "run.json")
            tier = ["--quick"] if args.tier == "quick" else []
            start = time.perf_counter()
            subprocess.run([sys.executable, "verify.py", "all", *tier, "--json", out], cwd=ROOT, check=False,
                           capture_output=True)
            walls.append(time.perf_counter() - start)
            for result in json.load(open(out))["results"]:
                per_check.setdefault(result["id"], []).append(result["seconds"])
    print(f"verify.py all --{args.tier}: median {statistics.median(walls):.2f} s wall over {args.repeat} runs "
          f"(imports included; min {min(walls):.2f} s)")
    for claim, seconds in per_check.items():
        print(f"  {claim:32s} {statistics.median(seconds):7.2f} s")
    target = TARGET_SECONDS.get(args.tier)
    if target is not None:
        verdict = "meets" if statistics.median(walls) <= target else "MISSES"
        print(f"target {target:.0f} s: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
