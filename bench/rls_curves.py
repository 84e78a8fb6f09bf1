#!/usr/bin/python3
"""RLS against Adam on Fashion-MNIST: learning curves of examples/fmnist_<model>_<variant>.json.

For each model, seed and variant (seed by seed), one after the other in this invocation:
  build/bin/sparrow run --local SPEC --threads 1 --json
where SPEC is a temporary copy of examples/fmnist_<model>_<variant>.json with absolute data paths,
stopping.max_epochs = --epochs and seed = the seed. Variants: adam, rls, rls_m, rls_mr, hrls (the
files next to each other in examples/). All variants of a model start from the same initial
weights (the same init law and seed) and draw the same minibatches (the order depends on the seed
and the update count only).

Per run it keeps, per epoch, the mean minibatch training loss, the test accuracy and the
optimizer's seconds (`per_epoch` of sparrow's JSON). It prints a markdown table per model:
variant | s/epoch | s/epoch / Adam's | train loss after 1 and N epochs | test accuracy after 1 and
N epochs, each cell "mean (min-max)" over the seeds, then one JSON line with every curve.

--validation trains on training images 1-50000 and reports the accuracy on 50001-60000 instead of
the test images (what k and eta may be chosen on). --sweep k=0.01,0.1,1,10 or eta=... runs the
--sweep-variant (default rls) once per value (the paper's sensitivity study is on the FNN).
--train N keeps the first N training images (a smoke run). --from-json FILE reprints the tables
(and --plot) of an earlier run's output; --from-logs DIR,... those of every finished run kept by
--keep DIR, also of an interrupted invocation or of several (e.g. --first-seed 3 --seeds 3 for
seeds 3-5 in a second one); give it the runs' --epochs (and --validation), it reads no other
options. --torch hrls,... also runs
bench/rls_torch.py (the same RLS step written in PyTorch) for those variants, same seeds and
epochs, in this invocation: rows "torch <variant>" (--torch-dtype, default float32). --plot DIR writes one PNG per model
(train loss and test accuracy against epochs and against seconds) when matplotlib is installed
(Debian: python3-matplotlib).

Usage: /usr/bin/python3 bench/rls_curves.py [--models fnn] [--variants adam,rls,rls_m,rls_mr,hrls]
         [--epochs 5] [--seeds 5] [--first-seed 1] [--validation] [--sweep k=0.01,0.1,1,10] [--sweep-variant rls]
         [--train N] [--torch hrls] [--torch-dtype float32] [--plot DIR] [--build-dir build]
         [--data DIR] [--keep DIR] [--from-json FILE] [--from-logs DIR,...]
Exit status 0, or 1 when a run failed; "skipped" and 0 when the data are absent.
"""
import argparse
import datetime
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import fmnist  # noqa: E402  (find_sparrow, commit, DATA_FILES)

VARIANTS = ("adam", "rls", "rls_m", "rls_mr", "hrls")


def spec_for(model, variant, args, seed, sweep, path):
    with open(os.path.join(ROOT, "examples", f"fmnist_{model}_{variant}.json")) as f:
        spec = json.load(f)
    images = spec["data"]["images"]
    for key in ("images", "labels"):
        images[key] = [os.path.join(args.data, os.path.basename(p)) for p in images[key]]
    spec["stopping"]["max_epochs"] = args.epochs
    spec["seed"] = seed
    last_train = args.train if args.train > 0 else (50000 if args.validation else 60000)
    held_out = [{"first": 50001, "last": 60000}] if args.validation else \
        [{"first": 60001, "last": 70000}]
    spec["split"] = {"train": [{"first": 1, "last": last_train}], "test": held_out}
    if sweep is not None:
        name, value = sweep
        rls = spec["optimizer"]["rls"]
        if name == "k":
            rls["ratio_factor"] = value
        else:
            rls["eta"] = [value]
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)


def run(sparrow, spec, log):
    p = subprocess.run([sparrow, "run", "--local", spec, "--threads", "1", "--json"], cwd=ROOT,
                       capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["(no stderr)"])[-1]
    return parse_run(p.stdout)


def parse_run(stdout):
    """One curve from `sparrow run --json`'s output."""
    r = json.loads(stdout)
    r = r["runs"][0] if "runs" in r else r
    e = r.get("per_epoch", {})
    if "loss" not in e:
        return None, "sparrow's JSON has no per_epoch.loss (rebuild sparrow)"
    return {"loss": e["loss"], "accuracy": e.get("test_accuracy", []),
            "seconds": e["seconds"], "ms_per_epoch": r["ms_per_epoch"]}, None


def run_torch(model, variant, args, seed, log):
    """bench/rls_torch.py for one model, variant and seed: the same shape as run()'s result."""
    cmd = [sys.executable, os.path.join(ROOT, "bench", "rls_torch.py"), "--models", model,
           "--variant", variant, "--epochs", str(args.epochs), "--seed", str(seed),
           "--dtype", args.torch_dtype, "--data", args.data, "--threads", "2"]
    if args.train > 0:
        cmd += ["--limit", str(args.train)]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(f"{' '.join(cmd)}\nexit {p.returncode}\n--- stdout\n{p.stdout}\n"
                f"--- stderr\n{p.stderr}")
    lines = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or len(lines) != args.epochs:
        return None, (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    seconds = [r["seconds"] for r in lines]
    return {"loss": [r["train_loss"] for r in lines],
            "accuracy": [r["test_accuracy"] for r in lines],
            "seconds": [sum(seconds[:i + 1]) for i in range(len(seconds))],
            "ms_per_epoch": 1000 * sum(seconds) / len(seconds)}, None


def cell(values, fmt="{:.2f}"):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.mean(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def table(model, rows, epochs, validation):
    acc = "validation" if validation else "test"
    out = [f"\n{model}: mean (min-max) over seeds; accuracy on the {acc} images, %\n",
           f"| variant | s/epoch | / Adam | loss ep 1 | loss ep {epochs} | {acc} acc ep 1 | "
           f"{acc} acc ep {epochs} |", "|---|---:|---:|---:|---:|---:|---:|"]
    adam = [r["ms_per_epoch"] / 1000 for r in rows.get("adam", [])]
    for name, runs in rows.items():
        sec = [r["ms_per_epoch"] / 1000 for r in runs]
        ratio = cell([statistics.mean(sec) / statistics.mean(adam)]) if adam and sec else "-"
        first = lambda k: [r[k][0] if r[k] else None for r in runs]  # noqa: E731
        last = lambda k: [r[k][-1] if r[k] else None for r in runs]  # noqa: E731
        out.append(f"| {name} | {cell(sec)} | {ratio} | {cell(first('loss'), '{:.4f}')} | "
                   f"{cell(last('loss'), '{:.4f}')} | {cell(first('accuracy'))} | "
                   f"{cell(last('accuracy'))} |")
    return "\n".join(out)


def plot(model, rows, directory):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("rls_curves: --plot needs matplotlib (apt install python3-matplotlib)",
              file=sys.stderr)
        return
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for v, (name, runs) in enumerate(rows.items()):
        for i, r in enumerate(runs):
            epochs = range(1, len(r["loss"]) + 1)
            kw = {"label": name if i == 0 else None, "alpha": 0.7, "color": f"C{v}"}
            axes[0][0].plot(epochs, r["loss"], **kw)
            axes[0][1].plot(epochs, r["accuracy"], **kw)
            axes[1][0].plot(r["seconds"], r["loss"], **kw)
            axes[1][1].plot(r["seconds"], r["accuracy"], **kw)
    for ax, (x, y) in zip(axes.flat, [("epoch", "train loss"), ("epoch", "accuracy %"),
                                      ("seconds", "train loss"), ("seconds", "accuracy %")]):
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        if y == "train loss":
            ax.set_yscale("log")
        ax.legend()
    fig.suptitle(f"Fashion-MNIST {model}: RLS variants and Adam, one line per seed "
                 "\n(loss: cross-entropy for adam and hrls; for rls*, squared error summed over "
                 "the 10 outputs, mean over images)")
    os.makedirs(directory, exist_ok=True)
    fig.savefig(os.path.join(directory, f"rls_curves_{model}.png"), dpi=100)


def from_logs(args):
    """The tables of kept sparrow logs <model>_<variant>_s<seed>.log that finished."""
    found = {}
    for d in args.from_logs.split(","):
        for name in sorted(os.listdir(d)):
            m = re.fullmatch(r"([a-z]+)_(.+)_s(\d+)\.log", name)
            if not m or m.group(2).startswith("torch"):
                continue
            text = open(os.path.join(d, name)).read()
            if not text.startswith("exit 0\n"):
                continue
            stdout = text.split("--- stdout\n", 1)[1].rsplit("\n--- stderr\n", 1)[0]
            r, err = parse_run(stdout)
            if err is None:
                found.setdefault(m.group(1), {}).setdefault(m.group(2), {})[int(m.group(3))] = r
    for model, by_label in found.items():
        rows = {label: [runs[s] for s in sorted(runs)] for label, runs in by_label.items()}
        for label, runs in by_label.items():
            print(f"{model} {label}: seeds {sorted(runs)}", file=sys.stderr)
        print(table(model, rows, args.epochs, args.validation))
        if args.plot:
            plot(model, rows, args.plot)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="fnn")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=1, help="seeds first..first+seeds-1")
    ap.add_argument("--validation", action="store_true")
    ap.add_argument("--sweep", default="", help="k=v1,v2,... or eta=v1,v2,...")
    ap.add_argument("--sweep-variant", default="rls")
    ap.add_argument("--train", type=int, default=0)
    ap.add_argument("--torch", default="", help="variants to run in PyTorch too, e.g. hrls")
    ap.add_argument("--torch-dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--plot", default="")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "fashion_mnist"))
    ap.add_argument("--keep", default="")
    ap.add_argument("--from-json", default="",
                    help="print the tables (and --plot) of an earlier run's JSON line; run nothing")
    ap.add_argument("--from-logs", default="",
                    help="print the tables (and --plot) of the sparrow runs kept in these "
                         "comma-separated --keep directories, finished or not; run nothing")
    args = ap.parse_args()
    if args.from_logs:
        return from_logs(args)
    if args.from_json:
        with open(args.from_json) as f:
            done = [json.loads(line) for line in f if line.startswith('{"bench": "rls_curves"')][-1]
        for model, rows in done["runs"].items():
            print(table(model, rows, done["epochs"], done["validation"]))
            if args.plot:
                plot(model, rows, args.plot)
        return 0
    args.data = os.path.abspath(args.data)
    if not all(os.path.exists(os.path.join(args.data, f)) for f in fmnist.DATA_FILES):
        print(f"rls_curves: skipped: data absent ({args.data})")
        return 0
    sparrow = fmnist.find_sparrow(args.build_dir)
    if sparrow is None:
        print("rls_curves: sparrow not built", file=sys.stderr)
        return 1
    runs = [(v, None) for v in args.variants.split(",")]
    if args.sweep:
        name, values = args.sweep.split("=")
        if name not in ("k", "eta"):
            print("rls_curves: --sweep takes k=... or eta=...", file=sys.stderr)
            return 2
        runs = [("adam", None)] + [(args.sweep_variant, (name, float(v)))
                                   for v in values.split(",")]
    tmp = args.keep or tempfile.mkdtemp(prefix="rls_curves_")
    os.makedirs(tmp, exist_ok=True)
    everything, failed = {}, False
    for model in args.models.split(","):
        rows = {}
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        # Seed by seed, so that an interrupted invocation leaves whole seeds (--from-logs).
        for seed, (variant, sweep) in itertools.product(seeds, runs):
            label = variant if sweep is None else f"{variant} {sweep[0]}={sweep[1]:g}"
            tag = f"{model}_{label.replace(' ', '_')}_s{seed}"
            spec = os.path.join(tmp, f"{tag}.json")
            spec_for(model, variant, args, seed, sweep, spec)
            print(f"rls_curves: {tag} ...", file=sys.stderr, flush=True)
            r, err = run(sparrow, spec, os.path.join(tmp, f"{tag}.log"))
            if err:
                print(f"rls_curves: {tag}: {err}", file=sys.stderr)
                failed = True
                continue
            rows.setdefault(label, []).append(r)
        for variant in [v for v in args.torch.split(",") if v and not args.validation]:
            for seed in seeds:
                tag = f"{model}_torch_{variant}_s{seed}"
                print(f"rls_curves: {tag} ...", file=sys.stderr, flush=True)
                r, err = run_torch(model, variant, args, seed, os.path.join(tmp, f"{tag}.log"))
                if err:
                    print(f"rls_curves: {tag}: {err}", file=sys.stderr)
                    failed = True
                    continue
                rows.setdefault(f"torch {variant}", []).append(r)
        print(table(model, rows, args.epochs, args.validation))
        if args.plot:
            plot(model, rows, args.plot)
        everything[model] = rows
    print(json.dumps({"bench": "rls_curves", "date": str(datetime.date.today()),
                      "epochs": args.epochs, "seeds": args.seeds, "validation": args.validation,
                      "commit": fmnist.commit(),
                      "runs": everything}))
    print(f"rls_curves: logs in {tmp}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
