#!/usr/bin/env python3
"""Reproduce the win/defeat tables of Palagi & Seccia (ALGORITHMS.md §4.5) with Sparrow.

Usage: bench/bld_tables.py [--datasets ccpp,california,...] [--nets 5x50,10x50,...]
                           [--seeds 10] [--first-seed 1] [--budget 10] [--minibatch-budget 5]
                           [--tables b2ld,bling] [--jobs 2] [--build-dir build] [--sparrow PATH]
                           [--template DATASET=SPEC.json] [--output PATH] [--markdown PATH]

Tables 3/4: B2LD against L-BFGS on the whole network; Table 7: BLInG against IG. For every
dataset, net and seed the two methods start from the same point, minimize the same objective

    f(w) = (1/P) sum_p ||yhat_p(w) - y_p||^2 + rho ||w||^2,     rho = 1e-3 / n

(P training rows, n weights; data scaled by the trainer as the spec says: z-score or min-max) under the same wall-clock budget,
and "a method beats the other if its value is better by more than 5 %": a beats b when
a < 0.95 b. The counts are [wins ; defeats] of the block method, on the final objective and on
the test error.

Specs: examples/bld_DATASET.json (the [5x50] bias-free sigmoid B2LD example of each dataset) is
the template; only model.mlp.hidden (activation sigmoid and no_bias are enforced), optimizer,
regularization, stopping and seed are rewritten, the data and split are kept. --template
DATASET=PATH uses another file. Datasets without a template are skipped with a message.

How the two methods are made to minimize the same f (checked at run time, see calibrate()):
- B2LD / BLInG / IG use rho = 0 -> 1e-3 / n of their options (LayeredObjective, f as above).
- L-BFGS minimizes the TableObjective (sum of squared errors + 0.5 rho_theta ||w||^2) / P
  (core/train/objectives.cc; the MSE loss has no 1/2, core/losses/loss.cc), which is f when
  regularization.rho_theta = 2 P rho.
- P, the training rows, is not in the CLI output; it is recovered, with the training output's
  standard deviation, from runs that stop at the initial point (no iteration): B2LD with a huge
  epsilon (every block skipped) gives f(w0); L-BFGS with a huge gradient_tolerance gives the
  TableObjective at w0, with rho_theta = 0 (SSE/P) and 1. Then L-BFGS with rho_theta = 2 P rho
  must give f(w0) again (same seed, same w0, same objective); the runner stops if it does not.
- L-BFGS stopping as in the paper: stopping.tolerance 1e-4 (LBFGS++: |f_{k-1} - f_k| <= 1e-4
  max(1, |f_k|, |f_{k-1}|), the paper's (ii)); gradient: Sparrow's gradient_tolerance is relative,
  |g| <= tol max(1, |w|), the paper's (i) is |g| <= 1e-3; with --lbfgs-gradient scaled (default)
  tol = 1e-3 / max(1, |w0|) (|w0| of the first seed, from the calibration), so that the test
  is the paper's at the start; --lbfgs-gradient literal passes 1e-3.
- B2LD keeps its defaults (gradient 1e-3 absolute, relative decrease 1e-4 per block).
- Test error: the CLI reports test_rmse in data units; test MSE in standardized units is
  (test_rmse / sd_y)^2 with sd_y the trainer's output scale (standard deviation for z-score,
  range for min-max), recovered in the calibration. The win counts do not depend on the scale.

Every run is `sparrow run --local SPEC --seeds 1 --threads 1 --json` from the repository root,
--jobs at a time; the two methods of one seed are queued next to each other so that they run
at the same time under the same load. The sparrow binary is copied first, so a rebuild while
the tables run does not change it. Finished runs are cached (--cache, keyed by the spec only),
so a second invocation with more datasets or seeds only runs what is new; --fresh ignores the
cache (use it after changing Sparrow).

Writes a JSON report (--output, default BUILD/bld_tables.json) and the Markdown tables
(--markdown, default BUILD/bld_tables.md; also printed).
"""

import argparse
import concurrent.futures
import copy
import datetime
import hashlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NETS = {
    "1x50": [50],
    "3x20": [20, 20, 20],
    "200,50,200": [200, 50, 200],
    "5x50": [50] * 5,
    "10x50": [50] * 10,
}
NET_ORDER = ["1x50", "3x20", "200,50,200", "5x50", "10x50"]
DATASETS = ["mv", "bike", "pm25", "ccpp", "ailerons", "california", "bank"]
PAPER_NAMES = {"mv": "Mv", "bike": "Bikes", "pm25": "Beijing", "ccpp": "CCPP",
               "ailerons": "Ailerons", "california": "California", "bank": "Bank"}
TIE = 0.05  # "better by more than 5 %"

# ALGORITHMS.md §4.5, [wins, defeats] of the block method per net (NET_ORDER).
PAPER_T34 = {  # B2LD vs L-BFGS: objective, test error
    'ailerons': (
        [(0, 0), (6, 2), (8, 0), (10, 0), (9, 0)],
        [(0, 0), (6, 4), (7, 0), (10, 0), (9, 0)]),
    'bank': (
        [(0, 10), (5, 5), (4, 5), (8, 2), (10, 0)],
        [(0, 9), (5, 5), (2, 8), (8, 2), (10, 0)]),
    'pm25': (
        [(5, 0), (10, 0), (10, 0), (10, 0), (0, 0)],
        [(5, 0), (10, 0), (10, 0), (10, 0), (0, 0)]),
    'bike': (
        [(10, 0), (10, 0), (10, 0), (10, 0), (10, 0)],
        [(10, 0), (10, 0), (10, 0), (10, 0), (10, 0)]),
    'california': (
        [(8, 0), (10, 0), (10, 0), (10, 0), (10, 0)],
        [(8, 0), (9, 0), (10, 0), (10, 0), (10, 0)]),
    'ccpp': (
        [(2, 0), (2, 6), (8, 0), (10, 0), (10, 0)],
        [(0, 0), (1, 8), (8, 0), (9, 1), (10, 0)]),
    'mv': (
        [(3, 5), (5, 3), (10, 0), (10, 0), (10, 0)],
        [(3, 6), (4, 6), (10, 0), (8, 1), (10, 0)]),
}
PAPER_T7 = {  # BLInG vs IG
    'ailerons': (
        [(0, 1), (0, 0), (2, 3), (1, 4), (9, 1)],
        [(0, 3), (0, 0), (2, 3), (1, 4), (9, 1)]),
    'bank': (
        [(3, 7), (4, 6), (7, 3), (9, 1), (10, 0)],
        [(3, 7), (3, 7), (8, 2), (10, 0), (10, 0)]),
    'pm25': (
        [(10, 0), (0, 1), (4, 5), (1, 2), (6, 0)],
        [(10, 0), (0, 0), (4, 5), (1, 2), (6, 0)]),
    'bike': (
        [(10, 0), (0, 4), (8, 2), (4, 2), (10, 0)],
        [(10, 0), (0, 3), (8, 2), (3, 2), (10, 0)]),
    'california': (
        [(8, 0), (0, 0), (7, 3), (1, 1), (10, 0)],
        [(6, 0), (0, 0), (7, 3), (1, 1), (10, 0)]),
    'ccpp': (
        [(0, 0), (0, 1), (3, 6), (0, 2), (5, 0)],
        [(0, 0), (0, 1), (4, 6), (2, 2), (4, 0)]),
    'mv': (
        [(5, 1), (5, 5), (9, 0), (10, 0), (10, 0)],
        [(5, 1), (5, 5), (9, 0), (10, 0), (10, 0)]),
}
# Best of 10 runs (Tables 2 and 6): objective block / baseline, and for Table 6 test error.
PAPER_T2 = {  # (net, dataset): (B2LD obj, LBFGS obj, B2LD s, LBFGS s)
    ('1x50', 'mv'): (0.000293, 0.000268, 20.9, 23.78),
    ('1x50', 'bike'): (0.00204, 0.00301, 16.44, 11.58),
    ('1x50', 'pm25'): (0.00479, 0.00532, 9.16, 8.43),
    ('1x50', 'ccpp'): (0.00335, 0.00353, 0.08, 0.91),
    ('1x50', 'ailerons'): (0.00237, 0.00232, 0.18, 3.04),
    ('1x50', 'california'): (0.02, 0.02, 1.5, 2.99),
    ('1x50', 'bank'): (7.92e-05, 3.67e-05, 13.91, 29.77),
    ('3x20', 'mv'): (0.000292, 0.000217, 23.86, 37.44),
    ('3x20', 'bike'): (0.00188, 0.00281, 10.76, 16.54),
    ('3x20', 'pm25'): (0.00445, 0.0076, 6.24, 6.04),
    ('3x20', 'ccpp'): (0.00347, 0.00335, 1.51, 1.17),
    ('3x20', 'ailerons'): (0.00233, 0.00224, 3.5, 3.62),
    ('3x20', 'california'): (0.0202, 0.0225, 2.44, 1.56),
    ('3x20', 'bank'): (0.000109, 3.91e-05, 59.19, 17.45),
    ('200,50,200', 'mv'): (0.000249, 0.000973, 145.32, 185.38),
    ('200,50,200', 'bike'): (0.00201, 0.004, 146.89, 132.06),
    ('200,50,200', 'pm25'): (0.00459, 0.00576, 137.09, 113.77),
    ('200,50,200', 'ccpp'): (0.0035, 0.0037, 6.67, 16.39),
    ('200,50,200', 'ailerons'): (0.00233, 0.00256, 17.93, 36.77),
    ('200,50,200', 'california'): (0.0198, 0.0231, 17.37, 15.41),
    ('200,50,200', 'bank'): (0.000193, 0.000231, 184.34, 151.09),
    ('5x50', 'mv'): (0.000359, 0.000776, 131.44, 150.55),
    ('5x50', 'bike'): (0.00207, 0.0346, 74.3, 1.81),
    ('5x50', 'pm25'): (0.00503, 0.00726, 42.72, 27.26),
    ('5x50', 'ccpp'): (0.00379, 0.00445, 7.33, 8.61),
    ('5x50', 'ailerons'): (0.00237, 0.00489, 12.57, 10.52),
    ('5x50', 'california'): (0.0205, 0.0547, 12.56, 1.46),
    ('5x50', 'bank'): (0.000202, 9.19e-05, 110.51, 152.88),
    ('10x50', 'mv'): (0.0032, 0.0553, 167.36, 4.85),
    ('10x50', 'bike'): (0.00268, 0.0351, 158.46, 2.65),
    ('10x50', 'pm25'): (0.00859, 0.00874, 0.21, 5.08),
    ('10x50', 'ccpp'): (0.00489, 0.0516, 17.05, 1.16),
    ('10x50', 'ailerons'): (0.00265, 0.0131, 68.38, 1.95),
    ('10x50', 'california'): (0.0188, 0.055, 75.67, 2.65),
    ('10x50', 'bank'): (0.0021, 0.0628, 188.25, 6.77),
}
PAPER_T6 = {  # (net, dataset): (BLInG obj, IG obj, BLInG test, IG test)
    ('1x50', 'mv'): (7.4e-05, 8.03e-05, 7.72e-05, 8.22e-05),
    ('1x50', 'bike'): (0.00179, 0.00221, 0.00195, 0.00238),
    ('1x50', 'pm25'): (0.00426, 0.00463, 0.00398, 0.00428),
    ('1x50', 'ccpp'): (0.00317, 0.00321, 0.00314, 0.00318),
    ('1x50', 'ailerons'): (0.00201, 0.00199, 0.00198, 0.00193),
    ('1x50', 'california'): (0.0169, 0.0189, 0.0174, 0.0193),
    ('1x50', 'bank'): (2.45e-06, 2.01e-06, 2.83e-05, 1.29e-05),
    ('3x20', 'mv'): (1.46e-05, 2.1e-05, 1.51e-05, 2.15e-05),
    ('3x20', 'bike'): (0.00178, 0.0018, 0.00187, 0.00193),
    ('3x20', 'pm25'): (0.00412, 0.00419, 0.00383, 0.00394),
    ('3x20', 'ccpp'): (0.00314, 0.00313, 0.00307, 0.00307),
    ('3x20', 'ailerons'): (0.00202, 0.00205, 0.00194, 0.002),
    ('3x20', 'california'): (0.0161, 0.0165, 0.0168, 0.0174),
    ('3x20', 'bank'): (2.4e-07, 1.26e-06, 1.07e-06, 4.24e-06),
    ('200,50,200', 'mv'): (4.87e-05, 0.00054, 4.9e-05, 0.000533),
    ('200,50,200', 'bike'): (0.00252, 0.0031, 0.00253, 0.00311),
    ('200,50,200', 'pm25'): (0.0046, 0.00502, 0.00427, 0.00468),
    ('200,50,200', 'ccpp'): (0.00316, 0.00322, 0.0031, 0.00317),
    ('200,50,200', 'ailerons'): (0.00209, 0.00214, 0.00203, 0.00207),
    ('200,50,200', 'california'): (0.0181, 0.0215, 0.019, 0.0222),
    ('200,50,200', 'bank'): (7.14e-06, 0.000216, 1.59e-05, 0.000322),
    ('5x50', 'mv'): (1.14e-05, 5.01e-05, 1.14e-05, 5.07e-05),
    ('5x50', 'bike'): (0.00202, 0.00219, 0.00215, 0.00232),
    ('5x50', 'pm25'): (0.00422, 0.00435, 0.00392, 0.00403),
    ('5x50', 'ccpp'): (0.0031, 0.00315, 0.00304, 0.00309),
    ('5x50', 'ailerons'): (0.00204, 0.0021, 0.00199, 0.00204),
    ('5x50', 'california'): (0.0168, 0.0177, 0.0173, 0.0183),
    ('5x50', 'bank'): (6.99e-07, 1.18e-05, 2.46e-06, 2.13e-05),
    ('10x50', 'mv'): (0.000358, 0.000831, 0.000351, 0.000796),
    ('10x50', 'bike'): (0.00288, 0.00416, 0.00295, 0.00431),
    ('10x50', 'pm25'): (0.00475, 0.00868, 0.00445, 0.00815),
    ('10x50', 'ccpp'): (0.0033, 0.00349, 0.00321, 0.0034),
    ('10x50', 'ailerons'): (0.00213, 0.00217, 0.00212, 0.00212),
    ('10x50', 'california'): (0.018, 0.0549, 0.0188, 0.0581),
    ('10x50', 'bank'): (8.32e-07, 5.01e-05, 7.45e-07, 4.19e-05),
}

# Table 5: B2LD updates per layer (0 = input side .. 10 = output), best run, [10x50].
PAPER_T5 = {
    "mv": [30, 30, 48, 8, 2, 2, 2, 2, 2, 2, 14], "bike": [120, 62, 35, 6, 62, 5, 4, 4, 4, 4, 18],
    "pm25": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5], "ccpp": [11, 2, 2, 31, 2, 2, 2, 2, 2, 2, 4],
    "ailerons": [33, 16, 24, 63, 4, 7, 4, 4, 4, 4, 21], "california": [28, 28, 39, 11, 2, 2, 2, 2, 2, 2, 13],
    "bank": [30, 30, 30, 30, 1, 6, 2, 30, 1, 1, 5],
}
TABLE5_MAX_SWEEPS = 19  # the CLI prints every epoch's progress line when max_epochs < 20

TABLES = {
    "b2ld": {"block": "b2ld", "baseline": "lbfgs", "title": "B2LD vs L-BFGS (Tables 3/4)",
             "paper": PAPER_T34, "labels": ("B2LD", "L-BFGS")},
    "bling": {"block": "bling", "baseline": "ig", "title": "BLInG vs IG (Table 7)",
              "paper": PAPER_T7, "labels": ("BLInG", "IG")},
}

_print_lock = threading.Lock()


def log(msg):
    with _print_lock:
        print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- running sparrow


class Runner:
    """Runs specs through the copied sparrow binary, with a cache of finished runs."""

    def __init__(self, sparrow, cache_path, fresh):
        self.tmp = tempfile.mkdtemp(prefix="sparrow-bld-")
        self.sparrow = os.path.join(self.tmp, "sparrow")
        # What the runs use, recorded at copy time (build/bin/sparrow may be rebuilt meanwhile).
        self.source_mtime = datetime.datetime.fromtimestamp(
            os.path.getmtime(sparrow)).isoformat(timespec="seconds")
        shutil.copy2(sparrow, self.sparrow)
        with open(self.sparrow, "rb") as f:
            self.sha256 = hashlib.sha256(f.read()).hexdigest()
        self.cache_path = cache_path
        self.cache = {}
        self.lock = threading.Lock()
        if cache_path and os.path.exists(cache_path) and not fresh:
            with open(cache_path) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                        self.cache[e["key"]] = e["run"]
                    except (ValueError, KeyError):
                        pass
        self.count = 0

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _invoke(self, spec, key, json_output):
        path = os.path.join(self.tmp, key + ".json")
        with open(path, "w") as f:
            f.write(json.dumps(spec))
        cmd = [self.sparrow, "run", "--local", path, "--seeds", "1", "--threads", "1"]
        if json_output:
            cmd.append("--json")
        t0 = time.time()
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode not in (0, 1):
            raise RuntimeError("sparrow exited with %d on %s: %s"
                               % (p.returncode, spec.get("name"), (p.stderr or p.stdout).strip()[-600:]))
        return p, time.time() - t0

    def run(self, spec, use_cache=True):
        """One seed of one spec; returns the run's JSON dict or raises RuntimeError."""
        text = json.dumps(spec, sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()[:24]
        if use_cache:
            with self.lock:
                if key in self.cache:
                    return self.cache[key]
        p, wall = self._invoke(spec, key, True)
        try:
            run = json.loads(p.stdout)
        except ValueError:
            raise RuntimeError("no JSON from sparrow on %s: %.300s" % (spec.get("name"), p.stdout))
        run["wall_seconds"] = wall
        if use_cache:
            with self.lock:
                self.cache[key] = run
                if self.cache_path:
                    with open(self.cache_path, "a") as f:
                        f.write(json.dumps({"key": key, "name": spec.get("name"), "run": run}) + "\n")
        return run

    def progress(self, spec):
        """One seed without --json: the progress records (every epoch when max_epochs < 20) as
        dicts of their fields, and the result table's text."""
        key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:24] + "-p"
        p, _ = self._invoke(spec, key, False)
        records = []
        for line in p.stderr.splitlines():
            m = re.match(r"\s+epoch\s+(\d+)\s+(.*?)\s+([\d.]+) s$", line)
            if not m:
                continue
            rec = {"epoch": int(m.group(1)), "elapsed": float(m.group(3))}
            for name, value in re.findall(r"([a-z_0-9]+) +([-+0-9.eE]+|inf|nan)", m.group(2)):
                rec[name] = float(value)
            records.append(rec)
        return records, p.stdout


# ---------------------------------------------------------------- specs


def net_spec(template, net, init_scale=None):
    spec = copy.deepcopy(template)
    model = spec.setdefault("model", {})
    if init_scale:
        model["init_scale"] = init_scale
    mlp = dict(model.get("mlp", {}))
    mlp["hidden"] = NETS[net]
    mlp["activation"] = "ACTIVATION_SIGMOID"
    mlp["no_bias"] = True
    mlp.pop("output_activation", None)
    model["mlp"] = mlp
    spec.pop("regularization", None)
    return spec


def method_spec(template, dataset, net, method, seed, budget, cal, args):
    """The spec of one run; cal holds P, rho and |w0| for the L-BFGS baseline."""
    spec = net_spec(template, net, args.init_scale)
    spec["name"] = "bld-%s-%s-%s-seed%d" % (dataset, net, method, seed)
    spec["seed"] = seed
    stopping = {"max_epochs": 1000000, "max_seconds": budget}
    template_opt = template.get("optimizer", {})
    if method == "b2ld":
        spec["optimizer"] = {"b2ld": dict(template_opt.get("b2ld", {}))}
    elif method == "lbfgs":
        if args.lbfgs_gradient == "scaled":
            gtol = 1e-3 / max(1.0, cal["w0_norm"][net])
        else:
            gtol = 1e-3
        spec["optimizer"] = {"lbfgs": {"gradient_tolerance": gtol}}
        spec["regularization"] = {"rho_theta": 2.0 * cal["P"] * cal["rho"][net]}
        stopping["tolerance"] = 1e-4
    elif method in ("bling", "ig"):
        opts = {}
        if args.batch_size:
            opts["batch_size"] = args.batch_size
        if method == "ig":
            opts["simultaneous"] = True
        spec["optimizer"] = {"bling": opts}
    else:
        raise ValueError(method)
    spec["stopping"] = stopping
    return spec


def num_weights(run):
    """n of a bias-free net, from the per-layer shapes the CLI reports."""
    return sum(l["neurons"] * l["inputs"] for l in run["layers"])


def calibrate(runner, template, dataset, nets, init_scale=None):
    """P, sd_y, rho and |w0| per net, and the check that L-BFGS minimizes the same f at w0.

    No iteration is taken: B2LD with epsilon 1e9 skips every block of its one sweep and reports
    f(w0); L-BFGS with gradient_tolerance 1e9 stops at the initial point and reports the
    TableObjective at w0."""
    def at_w0(net, optimizer, rho_theta=None):
        spec = net_spec(template, net, init_scale)
        spec["name"] = "bld-calibrate-%s-%s" % (dataset, net)
        spec["seed"] = 1
        spec["optimizer"] = optimizer
        spec["stopping"] = {"max_epochs": 1}
        if rho_theta is not None:
            spec["regularization"] = {"rho_theta": rho_theta}
        return runner.run(spec)

    cal = {"rho": {}, "w0_norm": {}, "n": {}, "checks": {}}
    for i, net in enumerate(nets):
        a = at_w0(net, {"b2ld": {"epsilon": 1e9}})
        b = at_w0(net, {"lbfgs": {"gradient_tolerance": 1e9}}, 0.0)
        n = num_weights(a)
        rho = 1e-3 / n
        w2 = (a["final_loss"] - b["final_loss"]) / rho
        if i == 0:
            c = at_w0(net, {"lbfgs": {"gradient_tolerance": 1e9}}, 1.0)
            p_float = 0.5 * w2 / (c["final_loss"] - b["final_loss"])
            cal["P"] = int(round(p_float))
            cal["P_recovered"] = p_float
            cal["sd_y"] = a["train_rmse"] / math.sqrt(b["final_loss"])
            rows = (a.get("data") or {}).get("train_rows")
            if rows is not None and rows != cal["P"]:
                raise RuntimeError("%s: the recovered P = %.6f but the CLI reports %d training rows"
                                   % (dataset, p_float, rows))
            if abs(p_float - cal["P"]) > 1e-3 * p_float:
                raise RuntimeError("%s: the recovered P = %.6f is not an integer; the objectives "
                                   "do not have the assumed form" % (dataset, p_float))
        d = at_w0(net, {"lbfgs": {"gradient_tolerance": 1e9}}, 2.0 * cal["P"] * rho)
        rel = abs(d["final_loss"] - a["final_loss"]) / abs(a["final_loss"])
        cal["rho"][net] = rho
        cal["n"][net] = n
        cal["w0_norm"][net] = math.sqrt(max(w2, 0.0))
        cal["checks"][net] = {"f_w0_b2ld": a["final_loss"], "f_w0_lbfgs": d["final_loss"],
                              "relative_difference": rel, "b2ld_epochs": a["epochs"],
                              "lbfgs_epochs": d["epochs"]}
        if rel > 1e-9:
            raise RuntimeError(
                "%s %s: L-BFGS with rho_theta = 2 P rho gives %.12g at the initial point, B2LD "
                "%.12g: not the same objective or not the same initial point"
                % (dataset, net, d["final_loss"], a["final_loss"]))
    return cal


# ---------------------------------------------------------------- statistics


def derived(run, cal):
    """Adds test/train MSE in standardized units and the regularization term."""
    sd = cal["sd_y"]
    r = dict(run)
    if run.get("test_rmse") is not None:
        r["test_mse"] = (run["test_rmse"] / sd) ** 2
    if run.get("train_rmse") is not None:
        r["train_mse"] = (run["train_rmse"] / sd) ** 2
        r["reg_term"] = run["final_loss"] - r["train_mse"]
    return r


def compare(a, b):
    """+1 when a beats b (a < 0.95 b), -1 when b beats a, 0 for a tie (lower is better)."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        if a is not None and math.isfinite(a) and not (b is not None and math.isfinite(b)):
            return 1
        if b is not None and math.isfinite(b) and not (a is not None and math.isfinite(a)):
            return -1
        return 0
    if a < (1.0 - TIE) * b:
        return 1
    if b < (1.0 - TIE) * a:
        return -1
    return 0


def wins(pairs, key):
    w = d = 0
    for a, b in pairs:
        c = compare(a.get(key), b.get(key))
        w += c > 0
        d += c < 0
    return w, d


def mean(values):
    v = [x for x in values if x is not None and math.isfinite(x)]
    return sum(v) / len(v) if v else None


def median(values):
    v = sorted(x for x in values if x is not None and math.isfinite(x))
    if not v:
        return None
    k = len(v)
    return v[k // 2] if k % 2 else 0.5 * (v[k // 2 - 1] + v[k // 2])


def terminations(runs):
    t = {}
    for r in runs:
        t[r.get("termination", "?")] = t.get(r.get("termination", "?"), 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(t.items()))


def g3(v):
    return "—" if v is None else "%.3g" % v


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- report


def summarize(results, args):
    """Per table, dataset and net: win counts, best values, means."""
    summary = {}
    for tname, tdef in TABLES.items():
        if tname not in args.tables:
            continue
        rows = []
        for ds in args.datasets:
            for net in args.nets:
                cell = results.get(ds, {}).get(net, {})
                block, base = cell.get(tdef["block"], {}), cell.get(tdef["baseline"], {})
                seeds = sorted(set(block) & set(base))
                if not seeds:
                    continue
                pairs = [(block[s], base[s]) for s in seeds]
                ni = NET_ORDER.index(net)
                paper = tdef["paper"].get(ds)
                row = {
                    "dataset": ds, "net": net, "seeds": len(seeds),
                    "objective": wins(pairs, "final_loss"), "test": wins(pairs, "test_mse"),
                    "paper_objective": paper[0][ni] if paper else None,
                    "paper_test": paper[1][ni] if paper else None,
                }
                for side, runs in (("block", [p[0] for p in pairs]), ("baseline", [p[1] for p in pairs])):
                    best = min(runs, key=lambda r: r["final_loss"] if math.isfinite(r["final_loss"]) else 1e300)
                    row[side] = {
                        "best_objective": best["final_loss"], "test_mse_of_best": best.get("test_mse"),
                        "best_test_mse": min(r.get("test_mse", float("inf")) for r in runs),
                        "median_objective": median([r["final_loss"] for r in runs]),
                        "median_test_mse": median([r.get("test_mse") for r in runs]),
                        "mean_seconds": mean([r["seconds"] for r in runs]),
                        "max_seconds": max(r["seconds"] for r in runs),
                        "mean_epochs": mean([r["epochs"] for r in runs]),
                        "terminations": terminations(runs),
                    }
                rows.append(row)
        summary[tname] = rows
    return summary


def wd(p):
    return "—" if p is None else "%d;%d" % tuple(p)


def markdown(summary, meta):
    parts = []
    for tname, rows in summary.items():
        tdef = TABLES[tname]
        lb, lbase = tdef["labels"]
        budget = meta["budget"] if tname == "b2ld" else meta["minibatch_budget"]
        parts.append("### %s, %d s budget, [wins ; defeats] of %s\n" % (tdef["title"], budget, lb))
        parts.append(md_table(
            ["dataset", "net", "seeds", "objective (ours)", "objective (paper)", "test MSE (ours)",
             "test MSE (paper)"],
            [[r["dataset"], "[%s]" % r["net"], r["seeds"], wd(r["objective"]), wd(r["paper_objective"]),
              wd(r["test"]), wd(r["paper_test"])] for r in rows]))
        parts.append("")
        parts.append("Best of the seeds (lowest objective; test MSE of that run), medians, mean "
                     "optimizer seconds and epochs (B2LD: sweeps; L-BFGS: improvements; BLInG/IG: "
                     "passes over the data); objective and test MSE in the trainer's normalized units:\n")
        hdr = ["dataset", "net", "%s best obj" % lb, "%s best obj" % lbase,
               "%s median obj" % lb, "%s median obj" % lbase,
               "%s test (best run)" % lb, "%s test (best run)" % lbase,
               "%s s (max)" % lb, "%s s (max)" % lbase, "%s epochs" % lb, "%s epochs" % lbase,
               "%s stops" % lb, "%s stops" % lbase]
        out = []
        for r in rows:
            b, s = r["block"], r["baseline"]
            out.append([r["dataset"], "[%s]" % r["net"], g3(b["best_objective"]), g3(s["best_objective"]),
                        g3(b["median_objective"]), g3(s["median_objective"]),
                        g3(b["test_mse_of_best"]), g3(s["test_mse_of_best"]),
                        "%.1f (%.1f)" % (b["mean_seconds"], b["max_seconds"]),
                        "%.1f (%.1f)" % (s["mean_seconds"], s["max_seconds"]),
                        "%.1f" % b["mean_epochs"], "%.1f" % s["mean_epochs"],
                        b["terminations"], s["terminations"]])
        parts.append(md_table(hdr, out))
        paper_best = PAPER_T2 if tname == "b2ld" else PAPER_T6
        pb = [[r["dataset"], "[%s]" % r["net"]] + [g3(v) for v in paper_best[(r["net"], r["dataset"])]]
              for r in rows if (r["net"], r["dataset"]) in paper_best]
        if pb:
            parts.append("")
            if tname == "b2ld":
                parts.append("Paper, Table 2 (best of 10; scaling of the data not given):\n")
                parts.append(md_table(["dataset", "net", "B2LD obj", "L-BFGS obj", "B2LD s", "L-BFGS s"], pb))
            else:
                parts.append("Paper, Table 6 (best of 10; scaling of the data not given):\n")
                parts.append(md_table(["dataset", "net", "BLInG obj", "IG obj", "BLInG test", "IG test"], pb))
        parts.append("")
    return "\n".join(parts)


def table5(runner, specs, cals, results, args):
    """B2LD updates per layer of the best [10x50] seed of each dataset (the paper's Table 5).

    The CLI's --json has no per-layer counts; its progress lines carry them (cumulative
    updates_layer_L extras, per-sweep lbfgs/armijo/skipped_blocks) and print every sweep when
    max_epochs < 20, so the best seed is run again without --json, capped at 19 sweeps."""
    out = {}
    for ds in specs:
        runs = results.get(ds, {}).get("10x50", {}).get("b2ld", {})
        if not runs:
            continue
        seed = min(runs, key=lambda k: runs[k]["final_loss"])
        spec = method_spec(specs[ds], ds, "10x50", "b2ld", seed, args.budget, cals[ds], args)
        spec["stopping"]["max_epochs"] = TABLE5_MAX_SWEEPS
        records, _ = runner.progress(spec)
        if not records:
            continue
        last = records[-1]
        layers = len(NETS["10x50"]) + 1
        out[ds] = {
            "seed": seed, "sweeps": last["epoch"], "sweeps_in_table_run": runs[seed]["epochs"],
            "capped": last["epoch"] >= TABLE5_MAX_SWEEPS and runs[seed]["epochs"] > TABLE5_MAX_SWEEPS,
            "updates": [int(last.get("updates_layer_%d" % l, 0)) for l in range(layers)],
            "lbfgs_accepted": int(sum(r.get("lbfgs_blocks", 0) for r in records)),
            "armijo_used": int(sum(r.get("armijo_blocks", 0) for r in records)),
            "skipped": int(sum(r.get("skipped_blocks", 0) for r in records)),
            "final_loss": last.get("loss"), "final_grad_norm": last.get("grad_norm"),
            "seconds": last["elapsed"], "records": records,
        }
        log("table 5 %s: seed %d, %d sweeps, updates %s" % (ds, seed, last["epoch"], out[ds]["updates"]))
    return out


def table5_markdown(t5):
    if not t5:
        return ""
    rows = []
    for ds, r in t5.items():
        rows.append([ds, r["seed"], "%d%s" % (r["sweeps"], " (capped)" if r["capped"] else "")]
                    + r["updates"] + ["%d / %d / %d" % (r["lbfgs_accepted"], r["armijo_used"], r["skipped"]),
                                      g3(r["final_loss"]), g3(r["final_grad_norm"])])
        if ds in PAPER_T5:
            rows.append(["paper", "", ""] + PAPER_T5[ds] + ["", "", ""])
    hdr = ["dataset", "seed", "sweeps"] + [str(l) for l in range(11)] + [
        "L-BFGS / Armijo / skipped", "f", "‖∇f‖"]
    return ("### B2LD updates per layer, best [10x50] run (Table 5; layer 0 = input side)\n\n"
            + md_table(hdr, rows) + "\n")


# ---------------------------------------------------------------- main


def parse_list(text, allowed, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    for it in items:
        if it not in allowed:
            raise argparse.ArgumentTypeError("unknown %s %r; use %s" % (what, it, ", ".join(allowed)))
    return items


def parse_nets(text):
    """'5x50,10x50,200,50,200' (or 200-50-200): the net names in NET_ORDER order."""
    tokens = [t.strip() for t in text.replace(";", ",").replace("-", ",").split(",") if t.strip()]
    names, i = [], 0
    while i < len(tokens):
        if tokens[i] in NETS:
            names.append(tokens[i])
            i += 1
        elif ",".join(tokens[i:i + 3]) in NETS:
            names.append(",".join(tokens[i:i + 3]))
            i += 3
        else:
            raise argparse.ArgumentTypeError("unknown net %r; use %s" % (tokens[i], " ".join(NET_ORDER)))
    return [n for n in NET_ORDER if n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    type=lambda t: parse_list(t, DATASETS, "dataset"),
                    help="comma-separated, of %s (default all; those without a template are skipped)"
                    % ",".join(DATASETS))
    ap.add_argument("--nets", default="5x50,10x50", type=parse_nets,
                    help="of %s (default 5x50,10x50)" % ",".join(NET_ORDER))
    ap.add_argument("--tables", default="b2ld,bling",
                    type=lambda t: parse_list(t, list(TABLES), "table"),
                    help="b2ld (Tables 3/4), bling (Table 7); default both")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per net and dataset (default 10)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=10.0,
                    help="max_seconds of B2LD and L-BFGS (paper 150 s on an i7-870; default 10)")
    ap.add_argument("--minibatch-budget", type=float, default=5.0,
                    help="max_seconds of BLInG and IG (paper 60 s; default 5)")
    ap.add_argument("--batch-size", type=int, default=0, help="BLInG/IG minibatch (0 = Sparrow's 128)")
    ap.add_argument("--lbfgs-gradient", choices=("scaled", "literal"), default="scaled",
                    help="L-BFGS gradient_tolerance: 1e-3 / max(1, |w0|) (default; the paper's "
                         "absolute test at the start) or 1e-3 (relative to max(1, |w|))")
    ap.add_argument("--init-scale", type=float, default=None,
                    help="model.init_scale of every run (Glorot-normal factor; default: the "
                         "template's, i.e. 1 unless it sets one)")
    ap.add_argument("--table5", action="store_true",
                    help="also rerun the best B2LD [10x50] seed per dataset for the per-layer "
                         "update counts (Table 5)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at the same time (default 2)")
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--sparrow", help="the sparrow binary (default BUILD/bin/sparrow)")
    ap.add_argument("--template", action="append", default=[], metavar="DATASET=PATH",
                    help="spec template of a dataset instead of examples/bld_DATASET.json")
    ap.add_argument("--output", help="JSON report (default BUILD/bld_tables.json)")
    ap.add_argument("--markdown", help="Markdown tables (default BUILD/bld_tables.md)")
    ap.add_argument("--cache", help="finished runs, one JSON per line (default BUILD/bld_runs.jsonl)")
    ap.add_argument("--fresh", action="store_true", help="ignore (and do not read) the cache")
    args = ap.parse_args()
    if args.seeds < 1 or args.jobs < 1:
        ap.error("--seeds and --jobs must be >= 1")

    build = args.build_dir if os.path.isabs(args.build_dir) else os.path.join(ROOT, args.build_dir)
    sparrow = args.sparrow or os.path.join(build, "bin", "sparrow")
    if not os.access(sparrow, os.X_OK):
        log("bld_tables: %s not found; build it: cmake --build %s --target sparrow" % (sparrow, args.build_dir))
        return 2
    templates = {}
    for t in args.template:
        ds, _, path = t.partition("=")
        if ds not in DATASETS or not path:
            ap.error("--template wants DATASET=PATH with DATASET in %s" % ",".join(DATASETS))
        templates[ds] = path
    runner = Runner(sparrow, args.cache or os.path.join(build, "bld_runs.jsonl"), args.fresh)

    specs, cals, skipped = {}, {}, {}
    for ds in args.datasets:
        path = templates.get(ds, os.path.join(ROOT, "examples", "bld_%s.json" % ds))
        if not os.path.exists(path):
            skipped[ds] = "no template %s" % os.path.relpath(path, ROOT)
            log("skipping %s: %s" % (ds, skipped[ds]))
            continue
        with open(path) as f:
            specs[ds] = json.load(f)
        if specs[ds].get("split", {}).get("validation"):
            log("warning: %s has a validation split; final_loss is then the objective at the "
                "best-validation iterate" % ds)
        try:
            cals[ds] = calibrate(runner, specs[ds], ds, args.nets, args.init_scale)
        except RuntimeError as e:
            skipped[ds] = str(e)
            log("skipping %s: %s" % (ds, e))
            del specs[ds]
            continue
        c = cals[ds]
        log("%s: P = %d (recovered %.6f), sd_y = %.6g, f(w0) identical for B2LD and L-BFGS on %s "
            "(max relative difference %.2e)"
            % (ds, c["P"], c["P_recovered"], c["sd_y"], ",".join(args.nets),
               max(v["relative_difference"] for v in c["checks"].values())))

    jobs = []
    for tname in args.tables:
        tdef = TABLES[tname]
        budget = args.budget if tname == "b2ld" else args.minibatch_budget
        for ds in specs:
            for net in args.nets:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    for method in (tdef["block"], tdef["baseline"]):
                        jobs.append((ds, net, method, seed,
                                     method_spec(specs[ds], ds, net, method, seed, budget, cals[ds], args)))
    results, errors = {}, []
    t_start = time.time()
    done = [0]

    def work(job):
        ds, net, method, seed, spec = job
        run = runner.run(spec)
        done[0] += 1
        log("[%d/%d] %s %s %s seed %d: f %.6g test_rmse %.6g, %s after %.1f s, %d epochs"
            % (done[0], len(jobs), ds, net, method, seed, run["final_loss"], run.get("test_rmse", float("nan")),
               run["termination"], run["seconds"], run["epochs"]))
        return job, run

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(work, j) for j in jobs]):
            try:
                (ds, net, method, seed, spec), run = fut.result()
            except RuntimeError as e:
                errors.append(str(e))
                log("error: %s" % e)
                continue
            results.setdefault(ds, {}).setdefault(net, {}).setdefault(method, {})[seed] = derived(run, cals[ds])
    t5 = table5(runner, specs, cals, results, args) if args.table5 and "b2ld" in args.tables else {}
    runner.close()

    summary = summarize(results, args)
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_at_end": list(os.getloadavg()),
        "sparrow": sparrow,
        "sparrow_mtime": runner.source_mtime, "sparrow_sha256": runner.sha256,
        "note": "cached runs keep the results of the binary that made them",
        "budget": args.budget, "minibatch_budget": args.minibatch_budget, "seeds": args.seeds,
        "first_seed": args.first_seed, "jobs": args.jobs, "nets": args.nets, "datasets": args.datasets,
        "lbfgs_gradient": args.lbfgs_gradient, "batch_size": args.batch_size or 128,
        "init_scale": args.init_scale,
        "tie_rule": "a beats b when a < 0.95 b", "wall_seconds": time.time() - t_start,
    }
    text = markdown(summary, meta) + table5_markdown(t5)
    print(text)
    for ds, why in skipped.items():
        print("skipped %s: %s" % (ds, why))
    report = {"meta": meta, "calibration": cals, "skipped": skipped, "errors": errors,
              "summary": summary, "table5": t5, "runs": results}
    out = args.output or os.path.join(build, "bld_tables.json")
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    md = args.markdown or os.path.join(build, "bld_tables.md")
    with open(md, "w") as f:
        f.write(text + "\n")
    log("wrote %s and %s (%.0f s)" % (os.path.relpath(out), os.path.relpath(md), meta["wall_seconds"]))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
