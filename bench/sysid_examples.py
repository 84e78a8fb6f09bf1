"""System-identification benchmarks for bench/reproduce.py (--paper sysid).

Each example is trained once per seed (temporary copies of the spec with `seed` set, `sparrow
run --local COPY --json -o MODEL`), so every seed's model exists; each model is then run with
`sparrow predict --local` on the benchmark's further test records (Bouc-Wen's sine sweep), since a
spec has one test split. The table gives, per example and test record, the simulation RMSE's
mean, median, best and worst over the seeds, with the wall time of a whole run (`sparrow run`,
data loading and the linear start included) and how the runs ended.

These benchmarks have no paper of ours to match: TARGETS are the acceptance numbers we hold
ourselves to (issue "system identification that works out of the box"), and NOTES say what the
literature reports, in words.
"""

import json
import os
import statistics
import subprocess
import tempfile
import time

SOURCE = "sysid"

# example -> how to read and judge it. scale: output units -> reported units.
EXAMPLES = {
    "wh_linear_nailm.json": {
        "system": "Wiener-Hammerstein 2009",
        "unit": "mV", "scale": 1e3,
        "target": "median <= 1.0, best <= 0.5, run <= 600 s",
        "note": "best black-box models in the literature: about 0.25-0.3 mV",
        "records": [],
    },
    "silverbox_linear_nailm.json": {
        "system": "Silverbox, one record, no encoder",
        "unit": "mV", "scale": 1e3,
        "target": "<= 0.5",
        "note": "test = the arrow (rows 1-40000), extrapolation included",
        "records": [],
    },
    "silverbox_encoder_linear_nailm.json": {
        "system": "Silverbox, encoder, 9 multisine traces (the 10th validates)",
        "unit": "mV", "scale": 1e3,
        "target": "<= 0.35",
        "note": "test = the arrow (rows 9-40000: 8 feed the encoder), extrapolation included",
        "records": [],
    },
    "silverbox_narx_linear.json": {
        "system": "Silverbox, one record, linear-plus-neural NARX",
        "unit": "mV", "scale": 1e3,
        "target": "<= 0.5",
        "note": "test = the arrow (rows 1-40000), extrapolation included",
        "records": [],
    },
    "bouc_wen_linear_nailm.json": {
        "system": "Bouc-Wen (official validation records)",
        "unit": "um", "scale": 1e6,
        "target": "none set",
        "note": "trained on dynoNet's noise-free simulated multisine record",
        "records": [("sine sweep",
                     "../shared/data/bouc_wen/validation_sinesweep.csv")],
    },
}


def log(msg):
    import sys
    print(msg, file=sys.stderr, flush=True)


def _run(cmd, root):
    p = subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip() or "(no output)").splitlines()[-8:]
        return None, "%s exited with %d: %s" % (cmd[1], p.returncode, "\n".join(msg))
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, "no valid JSON from %s (%s)" % (cmd[1], e)


def data_missing(spec, root):
    paths = [spec.get("data", {}).get("csv_path")]
    for field in ("validation_data", "test_data"):
        paths.append(spec.get(field, {}).get("csv_path"))
    for p in paths:
        if p and not os.path.exists(os.path.join(root, p)):
            return "data file %s is absent" % p
    return None


def run_seed(sparrow, root, spec, seed, tmp):
    """One seed: its run's JSON plus {record: predict JSON}, or an error."""
    copy = dict(spec, seed=seed)
    spec_path = os.path.join(tmp, "spec_%d.json" % seed)
    model_path = os.path.join(tmp, "model_%d.json" % seed)
    with open(spec_path, "w") as f:
        json.dump(copy, f)
    start = time.time()
    run, err = _run([sparrow, "run", "--local", spec_path, "--json", "-o", model_path], root)
    if err:
        return None, err
    run["wall_seconds"] = time.time() - start
    return run, None


def predict(sparrow, root, model_path, csv):
    out, err = _run([sparrow, "predict", "--local", "--model", model_path, "--input", csv,
                     "--json", "-o", os.devnull], root)
    return (out or {}).get("rmse"), err


def stats(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"mean": statistics.mean(v), "median": statistics.median(v), "best": min(v),
            "worst": max(v), "n": len(v)}


def run_example(name, root, sparrow, seeds):
    entry = EXAMPLES[name]
    spec_path = os.path.join(root, "examples", name)
    with open(spec_path) as f:
        spec = json.load(f)
    result = {"example": name, "source": SOURCE, "entry": entry, "runs": [], "errors": []}
    missing = data_missing(spec, root)
    if missing:
        result.update(status="skipped", message=missing)
        return result
    base = spec.get("seed", 1)
    with tempfile.TemporaryDirectory(prefix="sparrow-sysid-") as tmp:
        for k in range(seeds):
            seed = base + k
            log("%s: seed %d" % (name, seed))
            run, err = run_seed(sparrow, root, spec, seed, tmp)
            if err:
                result["errors"].append("seed %d: %s" % (seed, err))
                continue
            run["records"] = {}
            for label, csv in entry["records"]:
                rmse, err = predict(sparrow, root, os.path.join(tmp, "model_%d.json" % seed),
                                    csv)
                if err:
                    result["errors"].append("seed %d, %s: %s" % (seed, label, err))
                run["records"][label] = rmse
            run.pop("loss_history", None)
            result["runs"].append(run)
    result["status"] = "ok" if not result["errors"] else (
        "partial" if result["runs"] else "error")
    if result["errors"]:
        result["message"] = "\n".join(result["errors"])
    return result


def rows(result):
    entry = result["entry"]
    runs = result["runs"]
    scale = entry["scale"]
    records = [("test", [r.get("test_rmse") for r in runs])]
    records.append(("linear start, test", [r.get("linear_test_rmse") for r in runs]))
    for label, _ in entry["records"]:
        records.append((label, [r["records"].get(label) for r in runs]))
    wall = stats([r["wall_seconds"] for r in runs])
    ends = {}
    for r in runs:
        ends[r.get("termination")] = ends.get(r.get("termination"), 0) + 1
    out = []
    for label, values in records:
        st = stats([v * scale for v in values if v is not None])
        out.append({"record": label, "unit": entry["unit"], "stats": st, "wall": wall,
                    "terminations": ends})
    return out


def print_report(results):
    def f(v):
        return "-" if v is None else ("%.3f" % v)
    print("| example | record | RMSE unit | mean | median | best | worst | s/run mean | max "
          "| ended | target | literature |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    for res in results:
        if res.get("status") == "skipped":
            print("| %s | skipped: %s ||||||||||" % (res["example"], res["message"]))
            continue
        entry = res["entry"]
        for i, row in enumerate(rows(res)):
            st = row["stats"] or {}
            wall = row["wall"] or {}
            ends = ", ".join("%s %d" % kv for kv in sorted(row["terminations"].items()))
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                res["example"] if i == 0 else "", row["record"], row["unit"],
                f(st.get("mean")), f(st.get("median")), f(st.get("best")),
                f(st.get("worst")), f(wall.get("mean")) if i == 0 else "",
                f(wall.get("worst")) if i == 0 else "",
                ends if i == 0 else "", entry["target"] if i == 0 else "",
                entry["note"] if i == 0 else ""))
