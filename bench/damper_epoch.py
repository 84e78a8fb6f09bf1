#!/usr/bin/env python3
"""The MR-damper NAILS and NAILM epoch: ms per epoch of `sparrow run --local` on
examples/damper_nails.json and examples/damper_nailm.json (5 seeds, one after the other), with
the spec's `threads` at 1 and 2, for this build and, optionally, a baseline build (another
commit's `sparrow`), interleaved round by round so that both see the same machine.

Prints one line per case (median, min and max over the rounds of the 5-seed mean) and the
baseline's median over each case's median, then one JSON object.

Usage: bench/damper_epoch.py [--rounds N] [--sparrow BIN] [--baseline BIN]
  --rounds    repetitions of every case (default 5)
  --sparrow   this build's sparrow (default build/bin/sparrow)
  --baseline  e.g. a worktree of an older commit: git worktree add /tmp/base <commit>, then build
              its sparrow target there; its cases run with threads 1 only unless --baseline-threads 2
Exits 0 with a message when ../shared/data/mr_damper is absent.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spec_with_threads(method, threads, tmp):
    with open(os.path.join(ROOT, "examples", f"damper_{method}.json")) as f:
        spec = json.load(f)
    spec["optimizer"][method]["threads"] = threads
    # The data path is relative to the project root, where the runs start.
    path = os.path.join(tmp, f"damper_{method}_t{threads}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def ms_per_epoch(sparrow, spec):
    out = subprocess.run(
        [sparrow, "run", "--local", spec, "--seeds", "5", "--threads", "1", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    runs = json.loads(out)["runs"]
    return 1000.0 * sum(r["seconds"] for r in runs) / sum(r["epochs"] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sparrow", default=os.path.join(ROOT, "build", "bin", "sparrow"))
    parser.add_argument("--baseline")
    parser.add_argument("--baseline-threads", type=int, default=1, choices=[1, 2])
    args = parser.parse_args()
    if not os.path.exists(os.path.join(ROOT, "..", "shared", "data", "mr_damper", "mrdamper.csv")):
        print("damper_epoch: skipped: ../shared/data/mr_damper/mrdamper.csv is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for method in ("nails", "nailm"):
            if args.baseline:
                for t in range(1, args.baseline_threads + 1):
                    cases.append((f"baseline {method} threads {t}", args.baseline,
                                  spec_with_threads(method, t, tmp), method))
            for t in (1, 2):
                cases.append((f"{method} threads {t}", args.sparrow,
                              spec_with_threads(method, t, tmp), method))
        times = {name: [] for name, _, _, _ in cases}
        for _ in range(args.rounds):
            for name, sparrow, spec, _ in cases:
                times[name].append(ms_per_epoch(sparrow, spec))
    result = {"rounds": args.rounds, "cases": {}}
    for name, _, _, method in cases:
        v = times[name]
        med = statistics.median(v)
        line = f"{name:28s} {med:6.3f} ms/epoch (min {min(v):.3f}, max {max(v):.3f})"
        entry = {"median_ms": med, "min_ms": min(v), "max_ms": max(v)}
        base = f"baseline {method} threads 1"
        if args.baseline and not name.startswith("baseline"):
            ratio = statistics.median(times[base]) / med
            line += f"  baseline/this {ratio:.2f}x"
            entry["speedup_vs_baseline"] = ratio
        print(line)
        result["cases"][name] = entry
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
