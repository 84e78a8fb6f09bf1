#!/usr/bin/python3
"""Fashion-MNIST: Sparrow against PyTorch on the FNN, CNN, LSTM and RNN of examples/fmnist_*_adam.json.

For each model and seed, in the same invocation and one after the other (never in parallel):
  ours   build/bin/sparrow run --local SPEC --threads 1 --json, where SPEC is a temporary copy of
         examples/fmnist_<model>_adam.json with absolute data paths, stopping.max_epochs = --epochs,
         seed = the seed and optimizer.adam.batch.threads = --threads;
  torch  bench/fmnist_torch.py --models <model> --epochs N --seed S --threads T --dtype float32
         --normalization (zscore or none, the spec's) --init (the spec's model.init), then the
         same with --dtype float64.
Then it prints a markdown table: model | ours s/epoch | torch f32 s/epoch | torch f64 s/epoch |
ratio torch/ours (f32, f64) | test accuracy after 1 and after N epochs (ours, torch f32), then a
table of torch float64's accuracies and one JSON line with every number.

Ours: s/epoch = `ms_per_epoch` / 1000 of `sparrow run --json`: the optimizer loop's time / epochs
(data loading, the per-epoch test evaluation and the final metrics excluded). The accuracy after
epoch k is `per_epoch.test_accuracy[k-1]` of the same run (each epoch's model on the test split,
reported as progress only). By default each spec runs in its own `model.precision` (the cnn
example's is float32, the others' float64); --precisions float64,float32 runs the fnn and cnn
specs in both (rows "fnn" and "fnn f32"); lstm and rnn are float64 only. Torch: s/epoch =
the mean over the epochs of the training-loop time of each epoch (evaluation excluded),
accuracies from its per-epoch lines.

With --seeds K (the acceptance protocol: 3) the seeds are 1..K; every cell is "mean (seed 1 /
seed 2 / ...)". --quick trains on the first 300 training images and tests on the first 300 test
images, 1 epoch: a smoke run of the plumbing, not a measurement.

Exit status: 0 when every run succeeded, or with a "skipped" message when the data or the torch
peer is missing; 1 when a run failed (the table is printed anyway, the failed cells say "error" and
the errors are listed under it); 2 on bad arguments.

Usage: /usr/bin/python3 bench/fmnist.py [--models fnn,cnn,lstm,rnn] [--epochs 5] [--seeds 1]
         [--threads 2] [--quick] [--build-dir build] [--data DIR] [--no-ours] [--no-torch]
         [--dtypes float32,float64] [--blas-dir DIR] [--precisions float64,float32] [--keep DIR]
Run it under `nice` on a shared machine. --blas-dir is passed to the peer (see fmnist_torch.py:
without an optimized libblas.so.3 Debian's torch uses netlib's reference BLAS).
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("fnn", "cnn", "lstm", "rnn")
FLOAT32_MODELS = ("fnn", "cnn")  # model.precision applies to mlp and cnn models
DATA_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
              "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
QUICK_IMAGES = 300
PEER = os.path.join(ROOT, "bench", "fmnist_torch.py")
LOG_PREFIX = "fmnist:"


def log(msg):
    print(f"{LOG_PREFIX} {msg}", file=sys.stderr, flush=True)


def find_sparrow(build_dir):
    for rel in ("bin/sparrow", "client/cli/sparrow", "sparrow"):
        p = os.path.join(build_dir, rel)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def example(model):
    with open(os.path.join(ROOT, "examples", f"fmnist_{model}_adam.json")) as f:
        return json.load(f)


def peer_normalization(model):
    """The peer's --normalization for the example's `normalization` (unset means ZSCORE)."""
    norm = example(model).get("normalization", "NORMALIZATION_ZSCORE")
    if norm in ("NORMALIZATION_ZSCORE", "NORMALIZATION_UNSPECIFIED"):
        return "zscore"
    if norm == "NORMALIZATION_NONE":
        return "none"
    raise ValueError(f"examples/fmnist_{model}_adam.json: the peer has no {norm}")


def peer_init(model):
    """The peer's --init for the example's model.init."""
    init = example(model)["model"].get("init", "glorot")
    if init not in ("torch", "orthogonal"):
        raise ValueError(f"examples/fmnist_{model}_adam.json: the peer has no init {init!r}")
    return init


def ours_spec(model, data_dir, epochs, seed, threads, quick, path, precision):
    spec = example(model)
    images = spec["data"]["images"]
    images["images"] = [os.path.join(data_dir, os.path.basename(p)) for p in images["images"]]
    images["labels"] = [os.path.join(data_dir, os.path.basename(p)) for p in images["labels"]]
    spec["stopping"]["max_epochs"] = epochs
    spec["seed"] = seed
    spec["optimizer"]["adam"].setdefault("batch", {})["threads"] = threads
    if model in FLOAT32_MODELS:
        spec["model"]["precision"] = precision
    if quick:
        spec["split"] = {"train": [{"first": 1, "last": QUICK_IMAGES}],
                         "test": [{"first": 60001, "last": 60000 + QUICK_IMAGES}]}
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)


def run_ours(sparrow, model, data_dir, epochs, seed, threads, quick, tmp, precision):
    """One `sparrow run --local --json`; returns (result dict, None) or (None, error text)."""
    if sparrow is None:
        return None, "sparrow binary not found (build first: cmake --build build)"
    spec = os.path.join(tmp, f"fmnist_{model}_s{seed}_e{epochs}_{precision}.json")
    ours_spec(model, data_dir, epochs, seed, threads, quick, spec, precision)
    cmd = [sparrow, "run", "--local", spec, "--threads", "1", "--json"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    with open(os.path.join(tmp, f"ours_{model}_s{seed}_e{epochs}_{precision}.log"), "w") as f:
        f.write(" ".join(cmd) + f"\nexit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return None, f"sparrow exited {p.returncode}: {last}"
    try:
        r = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        return None, f"sparrow printed no JSON ({e})"
    if "runs" in r:  # several seeds in one call; we pass one
        r = r["runs"][0]
    if "ms_per_epoch" not in r:
        return None, "sparrow's JSON has no ms_per_epoch"
    if "test_accuracy" not in r:
        return None, "sparrow's JSON has no test_accuracy (is the loss softmax cross-entropy?)"
    if r.get("epochs") != epochs:
        return None, f"sparrow ran {r.get('epochs')} epochs, asked for {epochs} ({r.get('termination')})"
    r["wall_seconds"] = wall
    return r, None


def run_torch(py, model, dtype, epochs, seed, threads, quick, data_dir, blas_dir, tmp):
    """The peer for one model and dtype; returns (list of per-epoch dicts, None) or (None, error)."""
    cmd = [py, PEER, "--models", model, "--epochs", str(epochs), "--seed", str(seed),
           "--threads", str(threads), "--dtype", dtype, "--data", data_dir,
           "--normalization", peer_normalization(model), "--init", peer_init(model)]
    if quick:
        cmd += ["--limit", str(QUICK_IMAGES)]
    if blas_dir:
        cmd += ["--blas-dir", blas_dir]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    with open(os.path.join(tmp, f"torch_{model}_{dtype}_s{seed}.log"), "w") as f:
        f.write(" ".join(cmd) + f"\nexit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return None, f"fmnist_torch.py exited {p.returncode}: {last}"
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if "skipped" in p.stdout and not lines:
        return None, p.stdout.strip()
    if len(lines) != epochs:
        return None, f"fmnist_torch.py printed {len(lines)} epochs, expected {epochs}"
    return lines, None


def commit():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True)
    return p.stdout.strip() or "unknown"


def cell(values, digits):
    """mean (v1 / v2 / ...) of the values; None entries are failed runs."""
    vals = [v for v in values if v is not None]
    if not values or any(v is None for v in values):
        return "error" if values else "-"
    fmt = lambda v: f"{v:.{digits}f}"
    if len(vals) == 1:
        return fmt(vals[0])
    return f"{fmt(statistics.mean(vals))} ({' / '.join(fmt(v) for v in vals)})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 1..K (acceptance: 3)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_IMAGES} training and {QUICK_IMAGES} test images, 1 epoch")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "fashion_mnist"))
    ap.add_argument("--dtypes", default="float32,float64", help="torch dtypes to run")
    ap.add_argument("--no-ours", action="store_true", help="run the torch peer only")
    ap.add_argument("--no-torch", action="store_true", help="run ours only")
    ap.add_argument("--blas-dir", default=os.environ.get("PEER_BLAS_DIR", ""),
                    help="passed to fmnist_torch.py (default $PEER_BLAS_DIR)")
    ap.add_argument("--precisions", default="",
                    help="ours' model.precision for fnn and cnn: float64 and/or float32; "
                         "default: each example's own "
                         "(lstm and rnn always float64)")
    ap.add_argument("--keep", default="", help="keep specs and logs in this directory")
    a = ap.parse_args()

    models = [m.strip() for m in a.models.split(",") if m.strip()]
    if not models or any(m not in MODELS for m in models):
        ap.error(f"--models: choose from {','.join(MODELS)}")
    dtypes = [d.strip() for d in a.dtypes.split(",") if d.strip()]
    if any(d not in ("float32", "float64") for d in dtypes):
        ap.error("--dtypes: float32 and/or float64")
    precisions = [p.strip() for p in a.precisions.split(",") if p.strip()]
    if any(p not in ("float32", "float64") for p in precisions):
        ap.error("--precisions: float64 and/or float32")
    if a.epochs < 1 or a.seeds < 1 or a.threads < 1:
        ap.error("--epochs, --seeds and --threads must be at least 1")
    epochs = 1 if a.quick else a.epochs
    data_dir = os.path.abspath(a.data)
    missing = [f for f in DATA_FILES if not os.path.isfile(os.path.join(data_dir, f))]
    if missing:
        print(f"fmnist: skipped: data absent ({data_dir}: missing {', '.join(missing)})")
        return 0
    py = os.environ.get("PEER_PYTHON", "/usr/bin/python3")
    run_torch_side = not a.no_torch
    if run_torch_side and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode:
        print(f"fmnist: skipped: {py} cannot import torch (apt install python3-torch)")
        return 0
    sparrow = None if a.no_ours else find_sparrow(os.path.abspath(a.build_dir))

    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        tmp = os.path.abspath(a.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="fmnist-bench-")
    seeds = list(range(1, a.seeds + 1))
    log(f"{','.join(models)}; {epochs} epoch(s); seeds {seeds}; {a.threads} threads; "
        f"ours {'off' if a.no_ours else (sparrow or 'NOT FOUND')}; torch {'off' if a.no_torch else ','.join(dtypes)}"
        f"{'; QUICK (300 images)' if a.quick else ''}; logs in {tmp}")

    # model -> {"ours": {precision: [per seed]}, "torch": {dtype: [per seed]}}
    results = {}
    errors = []
    for model in models:
        own = example(model)["model"].get("precision", "float64")
        ours_precisions = (precisions or [own]) if model in FLOAT32_MODELS else ["float64"]
        res = results[model] = {"ours": {p: [] for p in ours_precisions},
                                "torch": {d: [] for d in dtypes}}
        for seed in seeds:
            for prec in ([] if a.no_ours else ours_precisions):
                log(f"{model} seed {seed}: sparrow {prec}, {epochs} epoch(s) ...")
                r, err = run_ours(sparrow, model, data_dir, epochs, seed, a.threads, a.quick, tmp,
                                  prec)
                res["ours"][prec].append(r)
                if err:
                    errors.append(f"{model} seed {seed} ours {prec}: {err}")
                    log(f"  error: {err}")
            if run_torch_side:
                for dt in dtypes:
                    log(f"{model} seed {seed}: torch {dt}, {epochs} epoch(s) ...")
                    lines, err = run_torch(py, model, dt, epochs, seed, a.threads, a.quick,
                                           data_dir, a.blas_dir, tmp)
                    res["torch"][dt].append(lines)
                    if err:
                        errors.append(f"{model} seed {seed} torch {dt}: {err}")
                        log(f"  error: {err}")

    # Per-seed numbers.
    def ours_s(r):
        return None if r is None else r["ms_per_epoch"] / 1000.0

    def ours_acc(r, epoch):
        """Test accuracy after `epoch` epochs, from the run's per-epoch records."""
        if r is None:
            return None
        accs = r.get("per_epoch", {}).get("test_accuracy", [])
        return accs[epoch - 1] if len(accs) >= epoch else None

    def torch_s(lines):
        return None if lines is None else statistics.mean(l["seconds"] for l in lines)

    def torch_acc(lines, epoch):
        return None if lines is None else lines[epoch - 1]["test_accuracy"]

    summary = {}  # row label ("fnn", "fnn f32", ...) -> numbers
    for model, res in results.items():
        torch_runs = {dt: res["torch"][dt] for dt in dtypes}
        torch_cols = {}
        for dt in dtypes:
            torch_cols[f"torch_{dt}_s_per_epoch"] = [torch_s(l) for l in torch_runs[dt]]
            torch_cols[f"torch_{dt}_acc_1"] = [torch_acc(l, 1) for l in torch_runs[dt]]
            torch_cols[f"torch_{dt}_acc_last"] = [torch_acc(l, epochs) for l in torch_runs[dt]]
        for prec, runs in (res["ours"].items() if not a.no_ours else [("float64", [])]):
            label = model if prec == "float64" else f"{model} f32"
            s = summary[label] = dict(torch_cols)
            s["precision"] = prec
            s["ours_s_per_epoch"] = [ours_s(r) for r in runs]
            s["ours_acc_1"] = [ours_acc(r, 1) for r in runs]
            s["ours_acc_last"] = [None if r is None else r["test_accuracy"] for r in runs]
            for dt in dtypes:
                s[f"ratio_{dt}"] = [None if (o is None or t is None or o <= 0) else t / o
                                    for o, t in zip(s["ours_s_per_epoch"],
                                                    torch_cols[f"torch_{dt}_s_per_epoch"])]

    def col(model, key, digits):
        return cell(summary.get(model, {}).get(key, []), digits)

    n = epochs
    head = ["model", "ours s/epoch", "torch f32 s/epoch", "torch f64 s/epoch",
            "torch/ours f32", "torch/ours f64", "acc 1 ep ours", "acc 1 ep torch f32",
            f"acc {n} ep ours", f"acc {n} ep torch f32"]
    if n == 1:
        head = head[:-2]  # after 1 epoch = after the last
    print()
    print(f"Fashion-MNIST, Adam lr 1e-3, batch 128, {n} epoch(s), {a.threads} threads, "
          f"seeds {','.join(map(str, seeds))}{', QUICK: 300 train / 300 test images' if a.quick else ''}; "
          f"test accuracy in %; ours float64 unless the row says f32 (model.precision)")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for model in summary:
        row = [model, col(model, "ours_s_per_epoch", 2), col(model, "torch_float32_s_per_epoch", 2),
               col(model, "torch_float64_s_per_epoch", 2), col(model, "ratio_float32", 2),
               col(model, "ratio_float64", 2), col(model, "ours_acc_1", 2),
               col(model, "torch_float32_acc_1", 2), col(model, "ours_acc_last", 2),
               col(model, "torch_float32_acc_last", 2)]
        print("| " + " | ".join(row[:len(head)]) + " |")
    if "float64" in dtypes and run_torch_side:
        print()
        cols = [("acc 1 ep torch f64", "torch_float64_acc_1")]
        if n > 1:
            cols.append((f"acc {n} ep torch f64", "torch_float64_acc_last"))
        print("| model | " + " | ".join(c[0] for c in cols) + " |")
        print("|---|" + "---:|" * len(cols))
        for model in models:
            label = next(l for l in summary if l.split()[0] == model)
            print(f"| {model} | " + " | ".join(col(label, c[1], 2) for c in cols) + " |")
    if errors:
        print()
        print("Errors:")
        for e in errors:
            print(f"- {e}")
    blas = sorted({l[0].get("blas", "?") for res in results.values() for runs in res["torch"].values()
                   for l in runs if l})
    print()
    print(json.dumps({"bench": "fmnist", "date": datetime.date.today().isoformat(), "epochs": n,
                      "seeds": seeds, "threads": a.threads, "quick": a.quick, "torch_blas": blas,
                      "commit": commit(),
                      "models": summary, "errors": errors}))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
