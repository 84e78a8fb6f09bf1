#!/usr/bin/env python3
"""Reproduce the NAILS/NAILM (ALGORITHMS.md §2.7) and SBDL (§1.6) paper experiments with Sparrow.

Usage: bench/reproduce.py [--seeds S] [--threads T] [--build-dir build] [--paper nails|sbdl|all]
                          [--ratios R1,R2,...] [EXAMPLE ...]

For every example (a spec in examples/, named with or without the .json suffix) it
runs, from the repository root,

    BUILD/bin/sparrow run --local examples/EXAMPLE.json --seeds S --threads T --json

and prints one table, ours against the published numbers of bench/paper_results.json:

    example | metric | ours mean (std) | paper mean (std) | ours ms/epoch | paper ms/epoch
            | our s/run | paper s/run

and writes the same as JSON to BUILD/reproduce.json (or --output PATH). "ours" is the mean and the sample standard
deviation (divides by S - 1) over the S seeds; ms/epoch and s/run are the means over the seeds of
Sparrow's `ms_per_epoch` and `seconds` (wall time of the optimizer loop of one run). Sparrow runs
the seeds in parallel on T threads, each seed single-threaded.

Without EXAMPLE it runs every example of paper_results.json whose data exists, except the long
Silverbox job (name it to run it). damper_group_lasso is a sweep over tau_g in {0.1, 1, 10, 100}
(temporary copies of the spec with regularization.group_lasso.tau set; ADMM rho follows as
10 tau_g unless the spec sets admm_rho) reported as test BFR against model order, as the
paper's Fig. 4.

SBDL (Zhou et al., Cascaded Tanks, ALGORITHMS.md §1.6): the entries of paper_results.json with
"source": "sbdl" (the tanks_* examples) get their own table, printed after the NAILS/NAILM one:

    example | metric | ours BEST | ours median | ours mean (std) | paper best | paper mean (std)
            | our s/run | our ms/iter | iter

BEST is the minimum over the seeds (the paper reports its best run), the RMSEs are Sparrow's
test_rmse (free-run simulation) and test_one_step_rmse, plus % remaining weights (remaining_pct);
ms/iter = ms_per_epoch, which for SBDL is one outer iteration (inner_epochs epochs + pruning) and
for Adam one epoch. tanks_sbdl_onestep and tanks_group_lasso_onestep are data-ratio sweeps over
split.train_fraction (default 0.05, 0.1, 0.2, ..., 1.0; --ratios 0.1,1.0 to restrict; temporary
copies of the spec), each reported per ratio as one-step RMSE BEST / median / mean (std) and mean %
remaining weights beside the paper's Table 2. --paper nails|sbdl restricts the default set to one
paper.

System identification (--paper sysid, bench/sysid_examples.py): wh_linear_nailm,
silverbox_linear_nailm, silverbox_encoder_linear_nailm, silverbox_narx_linear and
bouc_wen_linear_nailm, one `sparrow run` per seed so that each seed's
model can also be scored on further test records with `sparrow predict` (Bouc-Wen's sine sweep);
reported as simulation RMSE mean / median / best / worst and wall seconds per run.

A spec that fails is reported with Sparrow's error message and the runner goes on; the exit code
is 1 if any run failed, 0 otherwise (skipped examples do not count).
"""

import argparse
import copy
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import sysid_examples

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER = os.path.join(ROOT, "bench", "paper_results.json")
GROUP_LASSO = "damper_group_lasso.json"
DEFAULT_TAUS = [0.1, 1, 10, 100]
SBDL = "sbdl"
DEFAULT_RATIOS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- statistics


def mean_std(values):
    """Mean and sample std (None when fewer than 2 values) of the finite values."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return None, None
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, None
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def metric_value(run, metric, split):
    """The value of `metric` on `split` in one run's JSON, or None."""
    if metric == "sparsity_pct":
        return run.get("sparsity_pct")
    if metric == "rmse_mv":
        v = run.get(split + "_rmse")
        return None if v is None else 1000.0 * v
    return run.get("%s_%s" % (split, metric))


def fmt(m, s=None, digits=2):
    if m is None:
        return "—"
    if s is None:
        return "%.*f" % (digits, m)
    return "%.*f (%.*f)" % (digits, m, digits, s)


def fmt_num(v, digits=1):
    return "—" if v is None else "%.*f" % (digits, v)


def termination_counts(runs):
    counts = {}
    for r in runs:
        t = r.get("termination", "?")
        counts[t] = counts.get(t, 0) + 1
    return counts


# ---------------------------------------------------------------- running sparrow


def run_sparrow(sparrow, spec_path, seeds, threads):
    """Runs one spec; returns (runs, error). runs is a list of per-seed dicts."""
    cmd = [sparrow, "run", "--local", spec_path, "--seeds", str(seeds),
           "--threads", str(threads), "--json"]
    try:
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    except OSError as e:
        return None, "cannot run %s: %s" % (sparrow, e)
    if p.returncode != 0:
        msg = p.stderr.strip() or p.stdout.strip() or "(no output)"
        lines = msg.splitlines()
        if len(lines) > 8:
            lines = ["..."] + lines[-8:]
        return None, "sparrow exited with %d: %s" % (p.returncode, "\n".join(lines))
    try:
        out = json.loads(p.stdout)
    except ValueError as e:
        return None, "sparrow printed no valid JSON (%s): %.300s" % (e, p.stdout)
    runs = out.get("runs") if isinstance(out, dict) and "runs" in out else [out]
    if not runs:
        return None, "sparrow reported no runs"
    return runs, None


def summarize_runs(runs):
    """Mean/std of everything the tables use."""
    s = {}
    for key in ("ms_per_epoch", "seconds", "epochs", "model_order", "sparsity_pct"):
        m, sd = mean_std([r.get(key) for r in runs])
        if m is not None:
            s[key] = {"mean": m, "std": sd}
    epochs = [r.get("epochs") for r in runs if r.get("epochs") is not None]
    if epochs:
        s["epochs"]["min"] = min(epochs)
        s["epochs"]["max"] = max(epochs)
    s["termination"] = termination_counts(runs)
    return s


# ---------------------------------------------------------------- one example


def data_problem(spec):
    """A message when the spec's data file is missing, else None."""
    path = spec.get("data", {}).get("csv_path")
    if not path:
        return None
    full = path if os.path.isabs(path) else os.path.join(ROOT, path)
    if os.path.exists(full):
        return None
    norm = os.path.normpath(path)
    if norm.startswith(os.path.join("build", "data")):
        return ("missing %s: run scripts/make-binary-system-data first" % path)
    return "missing data file %s" % path


def paper_rows(name, paper, runs, summary):
    """Table rows for one example: one per (metric, split) of the paper entry."""
    rows = []
    metrics = paper.get("metrics") if paper else None
    if not metrics:
        # Not in the paper table: show whatever quality metric Sparrow reports.
        metrics = {}
        for m in ("bfr", "accuracy"):
            if any(metric_value(r, m, "test") is not None for r in runs):
                metrics[m] = {"train": None, "test": None}
    for metric, splits in metrics.items():
        for split, pub in splits.items():
            om, osd = mean_std([metric_value(r, metric, split) for r in runs])
            label = metric if split == "model" else "%s %s" % (metric, split)
            rows.append({
                "example": name, "metric": label,
                "ours_mean": om, "ours_std": osd,
                "paper_mean": pub.get("mean") if pub else None,
                "paper_std": pub.get("std") if pub else None,
            })
    for i, row in enumerate(rows):
        row["ours_ms_per_epoch"] = summary.get("ms_per_epoch", {}).get("mean")
        row["paper_ms_per_epoch"] = paper.get("ms_per_epoch") if paper else None
        row["ours_seconds_per_run"] = summary.get("seconds", {}).get("mean")
        row["paper_seconds_per_run"] = (paper.get("cpu_seconds") or {}).get("mean") if paper else None
    return rows


def run_example(name, paper, args, sparrow):
    spec_path = os.path.join("examples", name)
    result = {"example": name, "spec": spec_path, "paper": paper}
    try:
        with open(os.path.join(ROOT, spec_path)) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        result.update(status="error", message="cannot read %s: %s" % (spec_path, e), rows=[])
        return result
    problem = data_problem(spec)
    if problem:
        result.update(status="skipped", message=problem, rows=[])
        return result

    if name == GROUP_LASSO:
        return run_group_lasso(name, spec, paper, args, sparrow, result)

    log("running %s (%d seeds, %d threads) ..." % (name, args.seeds, args.threads))
    t0 = time.time()
    runs, err = run_sparrow(sparrow, spec_path, args.seeds, args.threads)
    wall = time.time() - t0
    result["wall_seconds"] = wall
    if err:
        log("  FAILED after %.1f s" % wall)
        result.update(status="error", message=err, rows=[])
        return result
    log("  done in %.1f s" % wall)
    summary = summarize_runs(runs)
    result.update(status="ok", runs=runs, summary=summary,
                  rows=paper_rows(name, paper, runs, summary))
    return result


def run_group_lasso(name, spec, paper, args, sparrow, result):
    taus = (paper or {}).get("sweep", {}).get("values") or DEFAULT_TAUS
    sweep, all_runs, errors = [], [], []
    tmpdir = tempfile.mkdtemp(prefix="sparrow-reproduce-")
    try:
        for tau in taus:
            s = copy.deepcopy(spec)
            s.setdefault("regularization", {}).setdefault("group_lasso", {})["tau"] = tau
            s["name"] = "%s (tau_g = %g)" % (spec.get("name", name), tau)
            path = os.path.join(tmpdir, "group_lasso_tau_%g.json" % tau)
            with open(path, "w") as f:
                json.dump(s, f, indent=2)
            log("running %s with tau_g = %g (%d seeds, %d threads) ..."
                % (name, tau, args.seeds, args.threads))
            t0 = time.time()
            runs, err = run_sparrow(sparrow, path, args.seeds, args.threads)
            wall = time.time() - t0
            entry = {"tau": tau, "wall_seconds": wall}
            if err:
                log("  FAILED after %.1f s" % wall)
                entry.update(status="error", message=err)
                errors.append("tau_g = %g: %s" % (tau, err))
            else:
                log("  done in %.1f s" % wall)
                for r in runs:
                    r["tau"] = tau
                all_runs.extend(runs)
                summary = summarize_runs(runs)
                orders = [r.get("model_order") for r in runs if r.get("model_order") is not None]
                tm, ts = mean_std([r.get("test_bfr") for r in runs])
                rm, rs = mean_std([r.get("train_bfr") for r in runs])
                entry.update(status="ok", runs=runs, summary=summary,
                             test_bfr={"mean": tm, "std": ts},
                             train_bfr={"mean": rm, "std": rs},
                             model_order={"mean": summary.get("model_order", {}).get("mean"),
                                          "min": min(orders) if orders else None,
                                          "max": max(orders) if orders else None,
                                          "counts": order_counts(orders)})
            sweep.append(entry)
    finally:
        for fn in os.listdir(tmpdir):
            os.remove(os.path.join(tmpdir, fn))
        os.rmdir(tmpdir)

    by_order = []
    for order in sorted({int(round(r["model_order"])) for r in all_runs
                         if r.get("model_order") is not None}):
        rs = [r for r in all_runs if r.get("model_order") is not None
              and int(round(r["model_order"])) == order]
        m, sd = mean_std([r.get("test_bfr") for r in rs])
        best = max((r.get("test_bfr") for r in rs if r.get("test_bfr") is not None), default=None)
        by_order.append({"model_order": order, "runs": len(rs), "test_bfr_mean": m,
                         "test_bfr_std": sd, "test_bfr_best": best,
                         "taus": sorted({r["tau"] for r in rs})})
    result.update(sweep=sweep, by_model_order=by_order)
    # The model order with the best mean test BFR, among the orders at least two runs reached
    # (a single lucky run is not a trend) when there are any.
    candidates = [o for o in by_order if o["test_bfr_mean"] is not None]
    if any(o["runs"] >= 2 for o in candidates):
        candidates = [o for o in candidates if o["runs"] >= 2]
    best_order = max(candidates, key=lambda o: o["test_bfr_mean"], default=None)
    rows = []
    if best_order:
        rows.append({
            "example": name, "metric": "model order at best mean test BFR",
            "ours_mean": best_order["model_order"], "ours_std": None,
            "paper_mean": (paper or {}).get("best_model_order"), "paper_std": None,
            "ours_ms_per_epoch": mean_std([r.get("ms_per_epoch") for r in all_runs])[0],
            "paper_ms_per_epoch": None,
            "ours_seconds_per_run": mean_std([r.get("seconds") for r in all_runs])[0],
            "paper_seconds_per_run": None, "digits": 0,
        })
    result["rows"] = rows
    if errors and not all_runs:
        result.update(status="error", message="\n".join(errors))
    elif errors:
        result.update(status="partial", message="\n".join(errors))
    else:
        result["status"] = "ok"
    return result


def order_counts(orders):
    counts = {}
    for o in orders:
        k = str(int(round(o)))
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))


# ---------------------------------------------------------------- reporting


def markdown_table(header, rows, align):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def print_report(results, args):
    header = ["example", "metric", "ours mean (std)", "paper mean (std)", "ours ms/epoch",
              "paper ms/epoch", "our s/run", "paper s/run"]
    body = []
    for res in results:
        name = res["example"].replace(".json", "")
        if res["status"] in ("error", "skipped") and not res.get("rows"):
            first = res["message"].splitlines()[0] if res.get("message") else ""
            body.append([name, res["status"].upper(), first, "", "", "", "", ""])
            continue
        for i, row in enumerate(res["rows"]):
            d = row.get("digits", 2)
            body.append([
                name if i == 0 else "", row["metric"],
                fmt(row["ours_mean"], row["ours_std"], d),
                fmt(row["paper_mean"], row["paper_std"], d),
                fmt_num(row["ours_ms_per_epoch"], 2) if i == 0 else "",
                fmt_num(row["paper_ms_per_epoch"], 1) if i == 0 else "",
                fmt_num(row["ours_seconds_per_run"], 2) if i == 0 else "",
                fmt_num(row["paper_seconds_per_run"], 2) if i == 0 else "",
            ])
    print("Sparrow vs. paper (Bemporad NAILS/NAILM, ALGORITHMS.md §2.7): %d seeds, --threads %d"
          % (args.seeds, args.threads))
    print("ours: mean (sample std) over the seeds; paper: mean (std) over its runs; "
          "s/run = wall time of one run's optimizer loop\n")
    print(markdown_table(header, body, ["l", "l", "r", "r", "r", "r", "r", "r"]))

    notes = []
    for res in results:
        s = res.get("summary")
        if s and "epochs" in s:
            e = s["epochs"]
            term = ", ".join("%s %d" % kv for kv in sorted(s["termination"].items()))
            notes.append("- %s: epochs %.1f [%d–%d]; termination %s"
                         % (res["example"].replace(".json", ""), e["mean"], e["min"], e["max"], term))
    if notes:
        print("\nEpochs (mean [min–max]) and termination per example:")
        print("\n".join(notes))

    for res in results:
        if "sweep" not in res:
            continue
        print("\n%s: sweep over tau_g (ADMM rho = 10 tau_g unless the spec sets admm_rho)\n"
              % res["example"])
        rows = []
        for e in res["sweep"]:
            if e["status"] != "ok":
                rows.append(["%g" % e["tau"], "ERROR", e["message"].splitlines()[0], "", "", "", ""])
                continue
            mo = e["model_order"]
            counts = ", ".join("%s: %d" % kv for kv in mo["counts"].items())
            rows.append(["%g" % e["tau"], fmt(e["train_bfr"]["mean"], e["train_bfr"]["std"]),
                         fmt(e["test_bfr"]["mean"], e["test_bfr"]["std"]),
                         fmt_num(mo["mean"], 2), counts,
                         fmt_num(e["summary"].get("ms_per_epoch", {}).get("mean"), 2),
                         fmt_num(e["summary"].get("seconds", {}).get("mean"), 2)])
        print(markdown_table(["tau_g", "train BFR", "test BFR", "mean model order",
                              "model order: runs", "ms/epoch", "s/run"], rows,
                             ["r", "r", "r", "r", "l", "r", "r"]))
        print("\nTest BFR against model order (all runs of the sweep pooled; paper Fig. 4: "
              "nx = 3 is best)\n")
        rows = [["%d" % o["model_order"], "%d" % o["runs"],
                 fmt(o["test_bfr_mean"], o["test_bfr_std"]), fmt_num(o["test_bfr_best"], 2),
                 ", ".join("%g" % t for t in o["taus"])] for o in res["by_model_order"]]
        print(markdown_table(["model order", "runs", "test BFR mean (std)", "best test BFR",
                              "tau_g"], rows, ["r", "r", "r", "r", "l"]))



def print_problems(results):
    problems = [r for r in results if r["status"] in ("error", "skipped", "partial")]
    if problems:
        print("\nNot run or failed:")
        for r in problems:
            msg = r.get("message", "").replace("\n", "\n    ")
            print("- %s [%s]: %s" % (r["example"], r["status"], msg))


# ---------------------------------------------------------------- SBDL (Zhou et al., Cascaded Tanks)


def stats(values):
    """BEST (min), median, mean and sample std of the finite values; {} when there are none."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return {}
    m, sd = mean_std(v)
    return {"best": min(v), "median": statistics.median(v), "mean": m, "std": sd, "n": len(v)}


def iteration_kind(spec):
    """What one `ms_per_epoch` of the spec's optimizer is."""
    opt = spec.get("optimizer") or {}
    if "sbdl" in opt:
        inner = opt["sbdl"].get("inner_epochs")
        return "SBDL outer it." + (" (%s epochs)" % inner if inner is not None else "")
    if opt:
        return "%s epoch" % next(iter(opt))
    return "epoch"


def set_field(spec, dotted, value):
    node = spec
    keys = dotted.split(".")
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def ratio_lookup(table, ratio):
    """table[str(r)] for the key r equal to ratio (keys like "0.05", "1.0"), or None."""
    for k, v in (table or {}).items():
        try:
            if abs(float(k) - ratio) < 1e-9:
                return v
        except ValueError:
            pass
    return None


def time_stats(runs):
    s = stats([r.get("seconds") for r in runs])
    ms = stats([r.get("ms_per_epoch") for r in runs])
    return (s.get("mean"), ms.get("mean"))


def sbdl_row(name, metric, ours, pub, kind, runs, label=None):
    pub = pub or {}
    sec, it = time_stats(runs)
    return {"example": name, "metric": label or metric, "ours": ours,
            "paper_best": pub.get("best"), "paper_mean": pub.get("mean"),
            "paper_std": pub.get("std"), "ours_seconds_per_run": sec,
            "ours_ms_per_iteration": it, "iteration": kind}


def layer_summary(runs):
    """Mean remaining_pct per layer over the runs, when Sparrow reports `layers`."""
    per = {}
    for r in runs:
        for i, l in enumerate(r.get("layers") or []):
            per.setdefault(i, []).append(l.get("remaining_pct"))
    return [stats(per[i]).get("mean") for i in sorted(per)]


def run_sbdl_example(name, paper, args, sparrow):
    spec_path = os.path.join("examples", name)
    result = {"example": name, "spec": spec_path, "paper": paper, "source": SBDL}
    try:
        with open(os.path.join(ROOT, spec_path)) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        result.update(status="error", message="cannot read %s: %s" % (spec_path, e), rows=[])
        return result
    problem = data_problem(spec)
    if problem:
        result.update(status="skipped", message=problem, rows=[])
        return result
    kind = iteration_kind(spec)
    result["iteration"] = kind
    sweep = (paper or {}).get("sweep")
    if sweep and sweep.get("field") == "split.train_fraction":
        return run_ratio_sweep(name, spec, paper, args, sparrow, result, kind)

    log("running %s (%d seeds, %d threads) ..." % (name, args.seeds, args.threads))
    t0 = time.time()
    runs, err = run_sparrow(sparrow, spec_path, args.seeds, args.threads)
    wall = time.time() - t0
    result["wall_seconds"] = wall
    if err:
        log("  FAILED after %.1f s" % wall)
        result.update(status="error", message=err, rows=[])
        return result
    log("  done in %.1f s" % wall)
    summary = summarize_runs(runs)
    rows = []
    metrics = (paper or {}).get("metrics") or {"rmse": {"test": None}}
    for metric, splits in metrics.items():
        for split, pub in splits.items():
            ours = stats([metric_value(r, metric, split) for r in runs])
            rows.append(sbdl_row(name, "%s %s" % (metric, split), ours, pub, kind, runs))
    rows.append(sbdl_row(name, "remaining_pct", stats([r.get("remaining_pct") for r in runs]),
                         None, kind, runs, label="% remaining weights"))
    result.update(status="ok", runs=runs, summary=summary, rows=rows,
                  layers_remaining_pct=layer_summary(runs))
    return result


def run_ratio_sweep(name, spec, paper, args, sparrow, result, kind):
    sweep_cfg = paper["sweep"]
    ratios = args.ratios or sweep_cfg.get("values") or DEFAULT_RATIOS
    paper_remaining = sweep_cfg.get("paper_remaining_pct") or {}
    sweep, all_runs, errors = [], [], []
    tmpdir = tempfile.mkdtemp(prefix="sparrow-reproduce-")
    try:
        for ratio in ratios:
            s = copy.deepcopy(spec)
            set_field(s, sweep_cfg["field"], ratio)
            s["name"] = "%s (train_fraction = %g)" % (spec.get("name", name), ratio)
            path = os.path.join(tmpdir, "%s_ratio_%g.json" % (name.replace(".json", ""), ratio))
            with open(path, "w") as f:
                json.dump(s, f, indent=2)
            log("running %s with train_fraction = %g (%d seeds, %d threads) ..."
                % (name, ratio, args.seeds, args.threads))
            t0 = time.time()
            runs, err = run_sparrow(sparrow, path, args.seeds, args.threads)
            wall = time.time() - t0
            entry = {"ratio": ratio, "wall_seconds": wall,
                     "paper_remaining_pct": ratio_lookup(paper_remaining, ratio)}
            if err:
                log("  FAILED after %.1f s" % wall)
                entry.update(status="error", message=err)
                errors.append("train_fraction = %g: %s" % (ratio, err))
            else:
                log("  done in %.1f s" % wall)
                for r in runs:
                    r["ratio"] = ratio
                all_runs.extend(runs)
                sec, it = time_stats(runs)
                entry.update(status="ok", runs=runs, summary=summarize_runs(runs),
                             test_one_step_rmse=stats([r.get("test_one_step_rmse") for r in runs]),
                             test_rmse=stats([r.get("test_rmse") for r in runs]),
                             remaining_pct=stats([r.get("remaining_pct") for r in runs]),
                             seconds_per_run=sec, ms_per_iteration=it,
                             layers_remaining_pct=layer_summary(runs))
            sweep.append(entry)
    finally:
        for fn in os.listdir(tmpdir):
            os.remove(os.path.join(tmpdir, fn))
        os.rmdir(tmpdir)
    result["sweep"] = sweep

    # Main-table rows: the one-step RMSE at the ratio with the lowest BEST, and at the paper's
    # ratio when that is another one.
    rows = []
    ok = [e for e in sweep if e["status"] == "ok" and e["test_one_step_rmse"]]
    metrics = (paper or {}).get("metrics") or {}
    pub = (metrics.get("one_step_rmse") or {}).get("test")
    at = (pub or {}).get("at_ratio")
    if ok:
        best = min(ok, key=lambda e: e["test_one_step_rmse"]["best"])
        shown = [best] + [e for e in ok if at is not None and abs(e["ratio"] - at) < 1e-9
                          and e is not best]
        for e in shown:
            tags = ["our best ratio"] if e is best else []
            if at is not None and abs(e["ratio"] - at) < 1e-9:
                tags.append("paper's ratio")
            label = "one_step_rmse test @ ratio %g (%s)" % (e["ratio"], ", ".join(tags))
            rows.append(sbdl_row(name, "one_step_rmse test", e["test_one_step_rmse"], pub, kind,
                                 e["runs"], label=label))
        if pub and at is not None:
            rows[0]["paper_at_ratio"] = at
    result["rows"] = rows
    if errors and not all_runs:
        result.update(status="error", message="\n".join(errors))
    elif errors:
        result.update(status="partial", message="\n".join(errors))
    else:
        result["status"] = "ok"
    return result


def fmt_sd(st, key="mean", digits=4):
    if not st or st.get(key) is None:
        return "—"
    return fmt(st[key], st.get("std"), digits)


def fmt_key(st, key, digits=4):
    return fmt_num(st.get(key) if st else None, digits)


def print_sbdl_report(results, args):
    print("Sparrow vs. paper (Zhou et al., SBDL, Cascaded Tanks, ALGORITHMS.md §1.6): "
          "%d seeds, --threads %d" % (args.seeds, args.threads))
    print("ours: BEST = min over the seeds, median, mean (sample std); paper: best run, "
          "mean (std) over its runs where given. rmse = free-run simulation RMSE (test_rmse), "
          "one_step_rmse = one-step-ahead RMSE, on the 1024 test samples. s/run = wall time "
          "of one run's optimizer loop; ms/iter = ms_per_epoch (iter says what one iteration "
          "is)\n")
    header = ["example", "metric", "ours BEST", "ours median", "ours mean (std)", "paper best",
              "paper mean (std)", "our s/run", "our ms/iter", "iter"]
    body = []
    for res in results:
        name = res["example"].replace(".json", "")
        if res["status"] in ("error", "skipped") and not res.get("rows"):
            first = res["message"].splitlines()[0] if res.get("message") else ""
            body.append([name, res["status"].upper(), first] + [""] * 7)
            continue
        for i, row in enumerate(res["rows"]):
            d = 2 if row["metric"].startswith("%") else 4
            pb = fmt_num(row["paper_best"], 4)
            if row.get("paper_at_ratio") is not None:
                pb += " @ %g" % row["paper_at_ratio"]
            body.append([
                name if i == 0 else "", row["metric"],
                fmt_key(row["ours"], "best", d), fmt_key(row["ours"], "median", d),
                fmt_sd(row["ours"], "mean", d), pb,
                fmt(row["paper_mean"], row["paper_std"], 4),
                fmt_num(row["ours_seconds_per_run"], 2) if i == 0 else "",
                fmt_num(row["ours_ms_per_iteration"], 2) if i == 0 else "",
                row["iteration"] if i == 0 else "",
            ])
    print(markdown_table(header, body, ["l", "l", "r", "r", "r", "r", "r", "r", "r", "l"]))

    notes = []
    for res in results:
        p = res.get("paper") or {}
        if p.get("note"):
            notes.append("- %s: %s" % (res["example"].replace(".json", ""), p["note"]))
        if p.get("table3_simulation_rmse"):
            notes.append("- paper Table 3 (simulation RMSE): " + ", ".join(
                "%s %.3f" % kv for kv in p["table3_simulation_rmse"].items()))
    if notes:
        print("\nPaper notes:")
        print("\n".join(notes))

    notes = []
    for res in results:
        runs = res.get("runs") or [r for e in res.get("sweep", []) for r in e.get("runs", [])]
        if not runs:
            continue
        s = summarize_runs(runs)
        e = s.get("epochs")
        term = ", ".join("%s %d" % kv for kv in sorted(s["termination"].items()))
        line = "- %s: iterations %s; termination %s" % (
            res["example"].replace(".json", ""),
            "%.1f [%d–%d]" % (e["mean"], e["min"], e["max"]) if e else "—", term)
        layers = res.get("layers_remaining_pct")
        if layers:
            line += "; %% remaining per layer (mean) %s" % ", ".join(fmt_num(v, 1) for v in layers)
        messages = sorted({r["message"] for r in runs if r.get("message")})
        if messages:
            line += "; message: " + " | ".join(messages)
        notes.append(line)
    if notes:
        print("\nIterations (mean [min–max]; SBDL: outer iterations) and termination per example"
              " (sweeps: all ratios pooled):")
        print("\n".join(notes))

    for res in results:
        if "sweep" not in res:
            continue
        p = res.get("paper") or {}
        pub = ((p.get("metrics") or {}).get("one_step_rmse") or {}).get("test") or {}
        at = pub.get("at_ratio")
        print("\n%s: data-ratio sweep over split.train_fraction (contiguous prefix of the training "
              "rows; paper: Table 2 %% remaining, %s repetitions per ratio%s)\n"
              % (res["example"], p.get("runs") or "?",
                 "; best one-step RMSE %.4f at ratio %g (Fig. 3)" % (pub["best"], at)
                 if pub.get("best") is not None and at is not None else ""))
        rows = []
        for e in res["sweep"]:
            if e["status"] != "ok":
                rows.append(["%g" % e["ratio"], "ERROR", e["message"].splitlines()[0]]
                            + [""] * 8)
                continue
            o = e["test_one_step_rmse"]
            paper_best = ("%.4f" % pub["best"] if pub.get("best") is not None and at is not None
                          and abs(e["ratio"] - at) < 1e-9 else "")
            rows.append(["%g" % e["ratio"], fmt_key(o, "best"), fmt_key(o, "median"),
                         fmt_sd(o), paper_best, fmt_sd(e["test_rmse"]),
                         fmt_sd(e["remaining_pct"], digits=2),
                         fmt_num(e["paper_remaining_pct"], 2),
                         "/".join(fmt_num(v, 0) for v in e.get("layers_remaining_pct") or [])
                         or "—",
                         fmt_num(e["seconds_per_run"], 2),
                         fmt_num(e["ms_per_iteration"], 1)])
        print(markdown_table(["ratio", "one-step RMSE BEST", "median", "mean (std)",
                              "paper best", "free-run RMSE mean (std)",
                              "% remaining mean (std)", "paper % remaining",
                              "% remaining per layer", "s/run", "ms/outer it."], rows,
                             ["r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"]))
        ok = [e for e in res["sweep"] if e["status"] == "ok" and e["test_one_step_rmse"]]
        if ok:
            b = min(ok, key=lambda e: e["test_one_step_rmse"]["best"])
            print("\nbest one-step RMSE over the sweep: %.4f at ratio %g%s"
                  % (b["test_one_step_rmse"]["best"], b["ratio"],
                     " (paper: %.4f at %g)" % (pub["best"], at)
                     if pub.get("best") is not None and at is not None else ""))


# ---------------------------------------------------------------- main


def parse_ratios(text):
    try:
        ratios = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("not a comma-separated list of numbers: %r" % text)
    if not ratios or any(not (0 < r <= 1) for r in ratios):
        raise argparse.ArgumentTypeError("ratios must be in (0, 1]: %r" % text)
    return ratios


def resolve(name):
    base = os.path.basename(name)
    return base if base.endswith(".json") else base + ".json"


def main():
    ap = argparse.ArgumentParser(
        description="Run the paper's examples with Sparrow and compare with the published numbers.")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per example (default 10)")
    ap.add_argument("--threads", type=int, default=0,
                    help="sparrow --threads: seeds run in parallel (default 0 = all cores)")
    ap.add_argument("--build-dir", default="build",
                    help="build directory holding bin/sparrow; the report goes to "
                         "BUILD_DIR/reproduce.json (default build)")
    ap.add_argument("--output", metavar="PATH",
                    help="write the JSON report here instead of BUILD_DIR/reproduce.json")
    ap.add_argument("--paper", choices=("all", "nails", SBDL, sysid_examples.SOURCE),
                    default="all",
                    help="without EXAMPLE: run the examples of this paper only (nails = Bemporad "
                         "NAILS/NAILM, sbdl = Zhou et al. SBDL on Cascaded Tanks, sysid = the "
                         "system-identification benchmarks of bench/sysid_examples.py: "
                         "Wiener-Hammerstein, Silverbox from one record, Bouc-Wen; default all "
                         "but sysid, whose runs take about an hour at 10 seeds)")
    ap.add_argument("--ratios", type=parse_ratios, metavar="R1,R2,...",
                    help="data ratios (split.train_fraction in (0, 1]) of the SBDL sweeps "
                         "(default 0.05,0.1,0.2,...,1.0)")
    ap.add_argument("examples", nargs="*", metavar="EXAMPLE",
                    help="example specs (examples/NAME.json or NAME); default: every example "
                         "of bench/paper_results.json whose data exists, without Silverbox")
    args = ap.parse_args()
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")

    build = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)
    sparrow = os.path.join(build, "bin", "sparrow")
    if not os.access(sparrow, os.X_OK):
        log("reproduce: %s not found; build it first: cmake --build %s --target sparrow"
            % (sparrow, args.build_dir))
        return 2
    with open(PAPER) as f:
        paper = json.load(f)["examples"]

    results = []
    if args.examples:
        names = [resolve(n) for n in args.examples]
    elif args.paper == sysid_examples.SOURCE:
        names = list(sysid_examples.EXAMPLES)
    else:
        names = []
        for name, entry in paper.items():
            source = entry.get("source", "nails")
            if args.paper != "all" and source != args.paper:
                continue
            if entry.get("long"):
                log("skipping %s (long; name it to run it)" % name)
                continue
            names.append(name)
    for name in names:
        if not os.path.exists(os.path.join(ROOT, "examples", name)):
            results.append({"example": name, "status": "error", "rows": [],
                            "source": (paper.get(name) or {}).get("source"),
                            "message": "no such spec examples/%s" % name})
            continue
        if name in sysid_examples.EXAMPLES:
            res = sysid_examples.run_example(name, ROOT, sparrow, args.seeds)
        elif (paper.get(name) or {}).get("source") == SBDL:
            res = run_sbdl_example(name, paper.get(name), args, sparrow)
        else:
            res = run_example(name, paper.get(name), args, sparrow)
        if res["status"] == "skipped" and not args.examples:
            log("skipping %s: %s" % (name, res["message"]))
        results.append(res)

    sysid = [r for r in results if r.get("source") == sysid_examples.SOURCE]
    nails = [r for r in results if r.get("source") not in (SBDL, sysid_examples.SOURCE)]
    sbdl = [r for r in results if r.get("source") == SBDL]
    if nails or not (sbdl or sysid):
        print_report(nails, args)
    if sbdl:
        if nails:
            print("\n")
        print_sbdl_report(sbdl, args)
    if sysid:
        if nails or sbdl:
            print("\n")
        sysid_examples.print_report(sysid)
    print_problems(results)
    report = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "seeds": args.seeds, "threads": args.threads, "sparrow": sparrow,
        "ratios": args.ratios,
        "sparrow_mtime": datetime.datetime.fromtimestamp(os.path.getmtime(sparrow))
        .isoformat(timespec="seconds"),
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "std": "sample (n - 1) over the seeds",
        "results": results,
    }
    out = args.output or os.path.join(build, "reproduce.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
    print("\nwrote %s" % os.path.relpath(out, os.getcwd()))
    return 1 if any(r["status"] in ("error", "partial") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
