#!/usr/bin/python3
"""Chooses settings of the Cascaded Tanks simulation model on validation data only: every variant
of examples/tanks_sbdl_sim_wide.json listed below is trained on rows 1-820 of the estimation
record and scored by its simulation RMSE on rows 821-1024 (the trainer's validation_rmse), seeds
101-110 by default, never on the test record. Two variants run at a time, one thread each.

Prints one line per variant (median, mean, best, worst validation RMSE, seconds per run) and a
JSON object at the end. The variant with the lowest mean is the one to score once on the test
record (`sparrow run --local SPEC --seeds 10`, seeds 1-10, all 1024 rows).

With --multistart K it instead checks a multi-start rule for the committed spec: each seed trains
on rows 1-820 without a validation split (as the example trains: a validation split would change
which outer iterate SBDL keeps) and is scored on rows 821-1024; the seeds, taken K at a time in
order, are then chosen among by their final training loss (what a `sweep.seeds` sweep without
validation data does). Prints the held-out RMSE of single seeds and of the chosen ones.

Usage: bench/tanks_select.py [--sparrow build/bin/sparrow] [--seeds 101-110] [--only a,b]
       bench/tanks_select.py --multistart 3 --seeds 101-130
Needs ../shared/data/cascaded_tanks/dataBenchmark.csv.
"""
import argparse
import concurrent.futures
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "cascaded_tanks", "dataBenchmark.csv")
BASE = os.path.join(ROOT, "examples", "tanks_sbdl_sim_wide.json")


def variant(name, hidden=(40, 40), inner=200, outer=30, lam=10.0, lr=0.003,
            activation="ACTIVATION_TANH", lags=(19, 19), groups="element"):
    return name, {"hidden": list(hidden), "inner": inner, "outer": outer, "lambda": lam,
                  "lr": lr, "activation": activation, "lags": list(lags), "groups": groups}


VARIANTS = dict([
    variant("wide"),  # the example as committed
    variant("inner300", inner=300),
    variant("inner400", inner=400),
    variant("outer45", outer=45),
    variant("lambda3", lam=3.0),
    variant("lambda30", lam=30.0),
    variant("h60", hidden=(60, 60)),
    variant("h3x40", hidden=(40, 40, 40), inner=200),
    variant("lr002", lr=0.002),
    variant("lr005", lr=0.005),
    variant("leaky", activation="ACTIVATION_LEAKY_RELU"),
    variant("sigmoid", activation="ACTIVATION_SIGMOID"),
    variant("lags25", lags=(25, 25)),
    variant("rows", groups="row"),
])


def spec_for(settings, tmp, name, seed, held_out="validation"):
    s = json.load(open(BASE))
    s = copy.deepcopy(s)
    s["split"] = {"train": [{"first": 1, "last": 820}],
                  held_out: [{"first": 821, "last": 1024}]}
    for key in ("test_inputs", "test_outputs"):
        s["data"].pop(key, None)
    narx = s["model"]["narx_mlp"]
    narx["hidden"] = settings["hidden"]
    narx["activation"] = settings["activation"]
    narx["input_lags"], narx["output_lags"] = settings["lags"]
    sb = s["optimizer"]["sbdl"]
    sb["inner_epochs"] = settings["inner"]
    sb["outer_iterations"] = settings["outer"]
    sb["lambda"] = [settings["lambda"]]
    sb["learning_rate"] = settings["lr"]
    sb["groups"] = settings["groups"]
    s["seed"] = seed
    path = os.path.join(tmp, "%s_%d.json" % (name, seed))
    json.dump(s, open(path, "w"))
    return path


def run_json(sparrow, spec, seed):
    out = subprocess.run([sparrow, "run", "--local", spec, "--threads", "1", "--json"], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s seed %d: %s%s" % (spec, seed, out.stdout, out.stderr))
    return json.loads(out.stdout)  # one seed: the run itself, not a "runs" list


def run_one(sparrow, spec, seed):
    run = run_json(sparrow, spec, seed)
    return run["validation_rmse"], run["seconds"]


def summary(values):
    return "median %.4f mean %.4f best %.4f worst %.4f (%d)" % (
        statistics.median(values), statistics.mean(values), min(values), max(values),
        len(values))


def multistart(a, seeds):
    """Held-out RMSE of single seeds and of the lowest final training loss among K seeds."""
    k = a.multistart
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda seed: run_json(
            a.sparrow, spec_for(VARIANTS["wide"], tmp, "wide", seed, "test"), seed), seeds))
    rows = [(seed, r["final_loss"], r["test_rmse"]) for seed, r in zip(seeds, runs)]
    chosen = [min(rows[i:i + k], key=lambda row: row[1])
              for i in range(0, len(rows) - k + 1, k)]
    print("single seeds:           held-out RMSE " + summary([r[2] for r in rows]))
    print("best of %d by train loss: held-out RMSE %s" % (k, summary([r[2] for r in chosen])))
    print(json.dumps({"multistart": k, "runs": rows, "chosen": [r[0] for r in chosen]}))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sparrow", default=os.path.join(ROOT, "build", "bin", "sparrow"))
    p.add_argument("--seeds", default="101-110")
    p.add_argument("--only", default="", help="comma-separated variant names")
    p.add_argument("--multistart", type=int, default=0,
                   help="check choosing among K seeds by training loss (see above)")
    a = p.parse_args()
    if not os.path.exists(DATA):
        print("tanks_select: skipped: %s is absent" % DATA)
        return 0
    first, _, last = a.seeds.partition("-")
    seeds = list(range(int(first), int(last or first) + 1))
    if a.multistart > 0:
        return multistart(a, seeds)
    names = [n for n in a.only.split(",") if n] or list(VARIANTS)
    results = {}
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for name in names:
            runs = list(pool.map(
                lambda seed: run_one(a.sparrow, spec_for(VARIANTS[name], tmp, name, seed), seed),
                seeds))
            val = [r[0] for r in runs]
            results[name] = {"settings": VARIANTS[name], "validation_rmse": val,
                             "median": statistics.median(val), "mean": statistics.mean(val),
                             "seconds": statistics.mean(r[1] for r in runs)}
            print("%-10s validation RMSE median %.4f mean %.4f best %.4f worst %.4f, %.1f s/run" %
                  (name, statistics.median(val), statistics.mean(val), min(val), max(val),
                   results[name]["seconds"]), flush=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
