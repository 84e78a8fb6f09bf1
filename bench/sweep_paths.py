#!/usr/bin/env python3
"""Regularization paths chosen on validation data, one path per seed.

For each *_path.json example and each seed, runs `sparrow run --local` on a copy of the spec with
`seed` set (the sweep then trains that seed's whole path) and reads the chosen trial from
`--json`: its regularization weight, validation and test metrics, sparsity, model order and the
lags it removed. Prints one line per seed and a summary per example. For narx_lags_sbdl_path the
true lags are known (y(t-1), u(t-1), u(t-3); `sparrow datagen narx-lags`), and the summary counts
the seeds whose chosen model keeps exactly those.

Usage (from the repository root, after building):
  build/bin/sparrow datagen narx-lags --noise 0.05 --seed 1 -o build/data/narx_lags.csv
  bench/sweep_paths.py [--seeds 10] [--threads 2] [EXAMPLE.json ...]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["narx_lags_sbdl_path.json", "damper_group_lasso_path.json",
           "tanks_sbdl_onestep_path.json", "tanks_sbdl_sim_path.json"]
TRUE_LAGS = {"narx_lags_sbdl_path.json": {"y(t-1)", "u(t-1)", "u(t-3)"}}


def regressors(na, nb, feedthrough=True):
    """The NARX regressor names of input_lags na and output_lags nb."""
    u = ["u(t)"] if feedthrough else []
    return set(u + ["u(t-%d)" % k for k in range(1, na + 1)] +
               ["y(t-%d)" % k for k in range(1, nb + 1)])


def run_seed(spec, seed, threads, tmp):
    s = json.loads(json.dumps(spec))
    s["seed"] = seed
    path = os.path.join(tmp, "spec.json")
    json.dump(s, open(path, "w"))
    start = time.time()
    p = subprocess.run([os.path.join(ROOT, "build/bin/sparrow"), "run", "--local", path,
                        "--threads", str(threads), "--json"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.exit("sparrow run failed for seed %d: %s" % (seed, p.stderr.strip()[-2000:]))
    report = json.loads(p.stdout)
    if "runs" not in report:  # a single trial: the report is that run
        return report, time.time() - start
    return report["runs"][report["chosen"]], time.time() - start


def test_key(spec):
    """The test metric that matches the sweep's choice: one-step RMSE when it chooses by it."""
    one_step = spec.get("sweep", {}).get("metric") == "METRIC_ONE_STEP_RMSE"
    return "test_one_step_rmse" if one_step else "test_rmse"


def describe(name, spec, chosen):
    """(line, weight, test RMSE, kept-lags set or None) of a chosen trial."""
    weight = list(chosen.get("settings", {"none": float("nan")}).values())[-1]
    weight = weight[0] if isinstance(weight, list) else weight
    test = chosen.get(test_key(spec), float("nan"))
    line = "weight %-9.4g val %-9.4g test_rmse %-9.4g zeros %5.1f%%" % (
        weight, chosen.get("validation", float("nan")), test, chosen.get("sparsity_pct", 0))
    if "test_one_step_rmse" in chosen:
        line += "  test_one_step_rmse %.4g" % chosen["test_one_step_rmse"]
    if "test_bfr" in chosen:
        line += "  test_bfr %.2f" % chosen["test_bfr"]
    if "model_order" in chosen:
        line += "  order %d" % chosen["model_order"]
    kept = None
    narx = spec["model"].get("narx_mlp")
    if narx:
        removed = {r for r in chosen.get("removed", []) if not r.startswith("hidden")}
        lags = regressors(narx.get("input_lags", 0), narx.get("output_lags", 0),
                          not narx.get("no_feedthrough", False))
        # The data's column names may differ from u and y: count, and name only u/y lags.
        line += "  kept %d of %d lags" % (len(lags) - len(removed), len(lags))
        if removed <= lags:
            kept = lags - removed
            if len(kept) <= 6:
                line += " " + ",".join(sorted(kept))
    return line, weight, test, kept


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*", default=DEFAULT)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="sparrow-paths.")
    try:
        run_examples(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_examples(args, tmp):
    for name in args.examples:
        spec = json.load(open(os.path.join(ROOT, "examples", os.path.basename(name))))
        missing = [f for f in [spec["data"].get("csv_path", "")]
                   if f and not os.path.exists(os.path.join(ROOT, f))]
        if missing:
            print("%s: skipped, missing %s" % (name, missing[0]))
            continue
        print("== %s (%d seeds)" % (name, args.seeds), flush=True)
        tests, weights, seconds, right = [], [], [], 0
        for seed in range(1, args.seeds + 1):
            chosen, secs = run_seed(spec, seed, args.threads, tmp)
            line, weight, test, kept = describe(name, spec, chosen)
            truth = TRUE_LAGS.get(os.path.basename(name))
            if truth is not None:
                right += kept == truth
                line += "  (true lags)" if kept == truth else "  (not the true lags)"
            print("seed %2d  %s  %.1f s" % (seed, line, secs), flush=True)
            tests.append(test)
            weights.append(weight)
            seconds.append(secs)
        print("   %s mean %.4g median %.4g best %.4g worst %.4g; chosen weights %s; "
              "%.1f s per path" % (test_key(spec), statistics.mean(tests), statistics.median(tests), min(tests),
                                   max(tests), sorted(set("%.4g" % w for w in weights)),
                                   statistics.mean(seconds)))
        if os.path.basename(name) in TRUE_LAGS:
            print("   the chosen model keeps exactly the true lags on %d of %d seeds"
                  % (right, args.seeds))


if __name__ == "__main__":
    main()
