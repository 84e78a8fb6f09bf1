#!/usr/bin/python3
"""Identify a state-space model of the MR damper through sparrowd, from Python.

Trains examples/damper_nailm.json (a state-space RNN, nx 4, NAILM) on the damper record with
Client.fit(), prints its progress and fit, runs the model on the test rows (2001-3499) in
free-run simulation, and plots the training loss and the test fit with matplotlib when it is
installed (else prints them).

    build/bin/sparrowd --listen 127.0.0.1:50051 --data-dir ./sparrow-data &
    PYTHONPATH=build/python /usr/bin/python3 examples/python/identify_damper.py
    ... --epochs 50 --plot damper.png --server 127.0.0.1:50051 --data path/to/mrdamper.csv

The data is ../shared/data/mr_damper/mrdamper.csv beside the repository (columns V, F).
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SPEC = os.path.join(REPO, "examples", "damper_nailm.json")
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "data", "mr_damper",
                                             "mrdamper.csv"))

try:
    import sparrow_client
except ImportError as e:
    sys.exit("%s\nBuild the client first: python/gen_stubs.sh build/python, then run with "
             "PYTHONPATH=build/python /usr/bin/python3 %s" % (e, sys.argv[0]))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", help="sparrowd HOST:PORT (default: $SPARROW_ADDR, else "
                                    "127.0.0.1:50051)")
    p.add_argument("--spec", default=DEFAULT_SPEC, help="job spec (default: %(default)s)")
    p.add_argument("--data", default=DEFAULT_DATA, help="CSV with columns V, F (default: "
                                                        "%(default)s)")
    p.add_argument("--epochs", type=int, help="override stopping.max_epochs (e.g. 30 to try)")
    p.add_argument("--plot", default="damper_fit.png", help="figure file (default: %(default)s)")
    return p.parse_args()


def load_record(path):
    """The damper record as {"V": ..., "F": ...}, or a clear exit when it is absent."""
    if not os.path.isfile(path):
        sys.exit("no MR damper data at %s: check out the shared data beside the repository "
                 "(../shared/data/mr_damper/mrdamper.csv) or pass --data FILE.csv with columns "
                 "V, F" % path)
    with open(path) as f:
        header = f.readline().strip().split(",")
    values = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {name: values[:, j] for j, name in enumerate(header)}


def load_spec(path, epochs):
    with open(path) as f:
        spec = json.load(f)
    del spec["data"]["csv_path"]  # the record is sent from memory
    if epochs is not None:
        spec["stopping"]["max_epochs"] = epochs
    return spec


def train(client, spec, record):
    """fit() with live progress; returns the model and the (iteration, loss) curve."""
    curve = []
    tty = sys.stdout.isatty()

    def on_event(e):
        if e.kind == e.ITERATION:
            curve.append((e.iteration, e.loss))
            if tty:
                print("\riter %4d  loss %.6g" % (e.iteration, e.loss), end="", flush=True)
            elif e.iteration % 25 == 0:
                print("iter %4d  loss %.6g" % (e.iteration, e.loss))
        else:
            print("%s[%d] %s: %s" % ("\n" if tty and curve else "", e.seq,
                                     sparrow_client.state_name(e.state), e.reason))

    model = client.fit(spec, record, on_event=on_event)
    print(model.job.summary)
    return model, np.array(curve)


def test_rows(spec, record):
    """The test split's rows (1-based, inclusive ranges) of the record."""
    index = np.concatenate([np.arange(r["first"] - 1, r["last"]) for r in spec["split"]["test"]])
    return record["V"][index], record["F"][index]


def show(curve, f_test, f_sim, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no figure) the training loss:")
        for it, loss in curve[::max(1, len(curve) // 10)]:
            print("  iter %4d  loss %.6g" % (it, loss))
        print("test fit, first samples (measured F, simulated F):")
        for a, b in list(zip(f_test, f_sim))[:5]:
            print("  %10.4f  %10.4f" % (a, b))
        return
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7))
    ax1.semilogy(curve[:, 0], curve[:, 1])
    ax1.set(xlabel="iteration", ylabel="training loss", title="NAILM on the MR damper")
    ax2.plot(f_test, label="measured F", lw=1)
    ax2.plot(f_sim, label="simulated F", lw=1)
    ax2.set(xlabel="test sample", ylabel="force", title="free-run simulation, test rows")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("figure written to", path)


def main():
    args = parse_args()
    record = load_record(args.data)
    spec = load_spec(args.spec, args.epochs)
    with sparrow_client.Client(args.server) as client:
        model, curve = train(client, spec, record)
        m = model.metrics
        print("BFR train %.2f, test %.2f (the job's own metrics)" % (m.train_bfr, m.test_bfr))
        v_test, f_test = test_rows(spec, record)
        p = model.predict_full(v_test, outputs=f_test)  # x0 estimated from the first samples
        print("test simulation: %d samples, BFR %.2f, RMSE %.4g" % (p.samples, p.bfr, p.rmse))
    show(curve, f_test, p.y[:, 0], args.plot)


if __name__ == "__main__":
    try:
        main()
    except sparrow_client.SparrowError as e:
        sys.exit("error: %s" % e)
