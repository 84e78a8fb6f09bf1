#!/usr/bin/python3
"""Prediction through sparrowd from Python vs. from C++: the Python client's predict() on
100,000 samples against `sparrow predict JOB --input FILE.csv -o OUT.csv` (the CLI, through the
C++ client library), on the same server, the same model and the same held-out record, in one
run, interleaved, several repeats; medians and the ratio Python / C++ (target: <= 1.5).

Both do the whole job of a user: the CLI starts, reads the CSV file, sends it, and writes the
predictions to a CSV file; Python formats the arrays as CSV, sends them, and parses the answer
into an N x 1 array. Python is timed with a warm client (its channel open and the model's
columns known, as in a program that predicts repeatedly) and with a new Client per call
(connect + GetModel + Predict, as the CLI's one-shot process). Its own share (formatting the
CSV and parsing the answer) is timed apart, and so is `sparrow health`: the CLI's start and
connection alone.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_predict.py [--bin build/bin]
           [--samples 100000] [--repeats 7] [--epochs 1500] [--json OUT.json]
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

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import sparrow_client
    from sparrow_client import tabular
except ImportError as e:
    sys.exit("bench/python_predict.py: %s\n(run python/gen_stubs.sh build/python, then "
             "PYTHONPATH=build/python /usr/bin/python3 bench/python_predict.py)" % e)


class Server:
    """sparrowd on ports the kernel picks, with its store in `tmp`."""

    def __init__(self, bin_dir, tmp):
        self.log_path = os.path.join(tmp, "sparrowd.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [os.path.join(bin_dir, "sparrowd"), "--listen", "127.0.0.1:0", "--http-listen",
                 "127.0.0.1:0", "--data-dir", os.path.join(tmp, "data"), "--workers", "2"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            with open(self.log_path) as f:
                for line in f:
                    if line.startswith("sparrowd: listening on "):
                        self.address = line.split()[-1]
                        return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("sparrowd did not start; see " + self.log_path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("%s: %s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return out.stdout


def train(client, sparrow, tmp, epochs):
    """The README tour's model: examples/demo.json on 2048 cascaded-tanks samples."""
    csv = os.path.join(tmp, "tanks.csv")
    run([sparrow, "datagen", "cascaded-tanks", "--samples", "2048", "--seed", "1", "-o", csv])
    with open(os.path.join(REPO, "examples", "demo.json")) as f:
        spec = json.load(f)
    spec["data"]["csv_path"] = csv
    spec["stopping"]["max_epochs"] = epochs
    return client.fit(spec)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def measure(args, client, model, sparrow, env, heldout, tmp):
    """{name: [seconds per repeat]}; the first round (a warm-up) is dropped."""
    data = np.loadtxt(heldout, delimiter=",", skiprows=1)
    u, y = data[:, 0], data[:, 1]
    out_csv = os.path.join(tmp, "pred.csv")
    cli = [sparrow, "predict", model.job_id, "--input", heldout, "-o", out_csv]

    def fresh_client():
        with sparrow_client.Client(client.address) as c:
            return c.predict(model.job_id, u, outputs=y)

    cases = {
        "C++ CLI": lambda: run(cli, env),
        "Python (warm client)": lambda: client.predict(model.job_id, u, outputs=y),
        "Python (new Client)": fresh_client,
        "  C++: sparrow health": lambda: run([sparrow, "health"], env),
        "  Python: format CSV": lambda: tabular.array_to_csv(np.column_stack([u, y]),
                                                             ["u", "y"]),
    }
    times = {name: [] for name in cases}
    for repeat in range(args.repeats + 1):
        order = list(cases) if repeat % 2 == 0 else list(reversed(cases))
        for name in order:
            seconds, result = timed(cases[name])
            if repeat > 0:
                times[name].append(seconds)
            if name == "Python (warm client)":
                answer = result
    pred = client.predict_full(model.job_id, u, outputs=y)
    with open(out_csv, "rb") as f:  # the server's answer, as the CLI wrote it
        answer_csv = f.read()
    times["  Python: parse answer"] = [timed(lambda: tabular.parse_csv(answer_csv))[0]
                                       for _ in range(args.repeats)]
    same = np.array_equal(answer, tabular.parse_csv(answer_csv)[1])
    return times, same, pred


def report(times, same, pred, args):
    cpp = statistics.median(times["C++ CLI"])
    print("\n%d samples, %d repeats" % (args.samples, args.repeats))
    print("%-26s %10s %10s %8s" % ("", "median s", "min s", "/ C++"))
    for name, t in times.items():
        med = statistics.median(t)
        print("%-26s %10.4f %10.4f %8.2f" % (name, med, min(t), med / cpp))
    print("predictions equal to the CLI's: %s; BFR %.2f" % (same, pred.bfr))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--samples", type=int, default=100000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=1500)
    parser.add_argument("--json", help="write every repetition's times here")
    args = parser.parse_args()
    sparrow = os.path.join(args.bin, "sparrow")
    tmp = tempfile.mkdtemp(prefix="sparrow-pybench.")
    server = Server(args.bin, tmp)
    try:
        env = dict(os.environ, SPARROW_ADDR=server.address, SPARROW_TOKEN="")
        with sparrow_client.Client(server.address, token="") as client:
            model = train(client, sparrow, tmp, args.epochs)
            heldout = os.path.join(tmp, "heldout.csv")
            run([sparrow, "datagen", "cascaded-tanks", "--samples", str(args.samples), "--seed",
                 "2", "-o", heldout])
            times, same, pred = measure(args, client, model, sparrow, env, heldout, tmp)
        report(times, same, pred, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"samples": args.samples, "times": times, "equal": same}, f, indent=1)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
