#!/usr/bin/python3
"""A seeds sweep through sparrowd against the same trials as sequential jobs: the MR damper
NAILS spec (examples/damper_nails.json, with a validation split) with --seeds seeds, each trial
on --threads threads, on one sparrowd with --workers workers. Arm "sweep" submits one job with
sweep.seeds and waits for it; arm "sequential" submits the same seeds one job at a time, each
after the one before has ended. Both arms run in this invocation on the same server, in the
order sequential, sweep (then again for --rounds > 1). Times come from the server's records, not
from this script's polling: a sequential job counts from its start to its end (the gaps between
jobs are left out, in the sequential arm's favour), the sweep from its submission to its end.
Prints both and the ratio sweep / sequential (the issue's target: <= 0.55 on 2 workers).

Usage: bench/sweep_service.py [--bin build/bin] [--seeds 10] [--workers 2] [--threads 1]
                              [--epochs 250] [--rounds 1]
Needs ../shared/data/mr_damper/mrdamper.csv.
"""
import argparse
import calendar
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "..", "shared", "data", "mr_damper", "mrdamper.csv")
FINAL = ("SUCCEEDED", "FAILED", "CANCELLED")


def seconds(rfc3339):
    """Unix seconds of a UTC time as the CLI's JSON writes it (2026-11-28T16:44:43.123456Z)."""
    whole, _, frac = rfc3339.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


class Server:
    """sparrowd on a fresh data directory, on ports the kernel picks."""

    def __init__(self, bin_dir, tmp, workers):
        self.bin_dir = bin_dir
        self.log = os.path.join(tmp, "sparrowd.log")
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "sparrowd"), "--listen", "127.0.0.1:0", "--http-listen",
             "127.0.0.1:0", "--data-dir", os.path.join(tmp, "data"), "--workers",
             str(workers)], stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        self.addr = None
        for _ in range(200):
            for line in open(self.log):
                if line.startswith("sparrowd: listening on "):
                    self.addr = line.split()[-1]
            if self.addr or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if not self.addr:
            raise RuntimeError("sparrowd did not start: " + open(self.log).read()[-2000:])

    def cli(self, *args):
        out = subprocess.run([os.path.join(self.bin_dir, "sparrow"), *args, "--server",
                              self.addr], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("sparrow %s: %s%s" % (" ".join(args), out.stdout, out.stderr))
        return out.stdout

    def wait(self, job):
        while True:
            d = json.loads(self.cli("status", job, "--json"))
            if d["state"] in FINAL:
                return d
            # Each poll starts a CLI process: rarely, so as not to take CPU from the workers
            # (the times come from the server's records, not from here).
            time.sleep(2.0)

    def cpu_seconds(self):
        """CPU time of sparrowd itself (not its worker processes)."""
        fields = open("/proc/%d/stat" % self.proc.pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def spec_file(tmp, dataset, a, seed, sweep):
    s = json.load(open(os.path.join(ROOT, "examples", "damper_nails.json")))
    s["data"] = {"dataset_id": dataset, "inputs": ["V"], "outputs": ["F"]}
    s["split"] = {"train": [{"first": 1, "last": 1600}],
                  "validation": [{"first": 1601, "last": 2000}],
                  "test": [{"first": 2001, "last": 3499}]}
    s["optimizer"]["nails"]["threads"] = a.threads
    s["stopping"] = {"max_epochs": a.epochs, "stall_epochs": -1, "report_every": a.report_every}
    s["seed"] = seed
    if sweep:
        s["sweep"] = {"seeds": a.seeds}
    path = os.path.join(tmp, "sweep.json" if sweep else "seed%d.json" % seed)
    json.dump(s, open(path, "w"))
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--epochs", type=int, default=250)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--report-every", type=int, default=1, help="epochs between progress events")
    a = p.parse_args()
    if not os.path.exists(DATA):
        print("skipped: %s is not here" % DATA)
        return 0
    tmp = tempfile.mkdtemp(prefix="sparrow-sweep-bench.")
    server = Server(a.bin, tmp, a.workers)
    try:
        dataset = server.cli("upload", DATA).strip()
        ratios = {"batch": [], "sweep": []}
        for r in range(a.rounds):
            sequential = 0.0
            seq_val = []
            for seed in range(1, a.seeds + 1):
                job = server.cli("submit", spec_file(tmp, dataset, a, seed, False)).strip()
                d = server.wait(job)
                assert d["state"] == "SUCCEEDED", d
                sequential += seconds(d["end_time"]) - seconds(d["start_time"])
                seq_val.append(d["metrics"]["validation_rmse"])
            # The same jobs submitted at once: what the workers give without the sweep.
            jobs = [server.cli("submit", spec_file(tmp, dataset, a, seed, False)).strip()
                    for seed in range(1, a.seeds + 1)]
            ds = [server.wait(j) for j in jobs]
            batch = (max(seconds(d["end_time"]) for d in ds) -
                     min(seconds(d["create_time"]) for d in ds))
            job = server.cli("submit", spec_file(tmp, dataset, a, 1, True)).strip()
            d = server.wait(job)
            assert d["state"] == "SUCCEEDED", d
            swept = seconds(d["end_time"]) - seconds(d["create_time"])
            val = [t["metrics"]["validation_rmse"] for t in d["trials"]]
            same = all(abs(x - y) <= 1e-12 * max(1.0, abs(y)) for x, y in zip(val, seq_val))
            cpu = server.cpu_seconds()
            print("round %d: %d seeds, %d workers, %d thread(s) per trial, %d epochs, an event "
                  "every %d; sparrowd's own CPU so far %.1f s" %
                  (r + 1, a.seeds, a.workers, a.threads, a.epochs, a.report_every, cpu))
            print("  sequential jobs %.1f s; the same jobs at once %.1f s (ratio %.3f); sweep "
                  "%.1f s (ratio %.3f)" % (sequential, batch, batch / sequential, swept,
                                          swept / sequential))
            print("  chosen trial %d (validation RMSE %.4g, test BFR %.2f); trials equal the "
                  "sequential jobs: %s" % (d["chosen_trial"], val[d["chosen_trial"]],
                                           d["metrics"].get("test_bfr", float("nan")), same))
            ratios["batch"].append(batch / sequential)
            ratios["sweep"].append(swept / sequential)
            sys.stdout.flush()
        if a.rounds > 1:
            print("median ratio over %d rounds: the same jobs at once %.3f, sweep %.3f" %
                  (a.rounds, statistics.median(ratios["batch"]),
                   statistics.median(ratios["sweep"])))
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
