#!/usr/bin/python3
"""Throughput of sparrowd replicas on one PostgreSQL: the wall time of a batch of identical
CPU-bound jobs (a NARX MLP trained by Adam for a fixed number of epochs, one thread each) on
one replica with one worker, then on three replicas with one worker each, each on a fresh
database, alternating for --rounds rounds. Prints the times and the ratio three / one (the
issue's target: <= 0.6 on the 2-core machine, where two cores bound the ideal at 0.5).

Usage: bench/replicas_throughput.py [--bin build/bin] [--jobs 12] [--epochs 6000] [--rounds 2]
                                    [--report-every 10]
"""
import argparse
import calendar
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "e2e"))
from sparrow_cluster import (Postgres, Replica, job_view, make_data, postgres_installed, spec,
                             submit, wait_for)


def parse_time(rfc3339):
    """Unix seconds of a UTC time as the JSON API writes it (2026-11-26T08:35:26.123Z)."""
    whole, _, frac = rfc3339.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


def batch(bin_dir, replicas_n, jobs_n, epochs, report_every):
    """Seconds from the first submit until every job has ended, on a fresh database."""
    tmp = tempfile.mkdtemp(prefix="sparrow-throughput.")
    pg, replicas = Postgres(), []
    try:
        replicas = [Replica(bin_dir, "r%d" % i, pg.uri, tmp, ["--workers", "1"])
                    for i in range(replicas_n)]
        for r in replicas:
            r.start()
        make_data(replicas[0], tmp)
        path = spec(tmp, "throughput", epochs=epochs, hidden=64, report_every=report_every)
        replicas[0].cli("upload", os.path.join(tmp, "tanks.csv"))
        started = time.time()
        jobs = [submit(replicas[i % replicas_n], path) for i in range(jobs_n)]
        ends = {}

        def all_ended():  # one listing every 0.5 s: the polling must not load the replicas
            time.sleep(0.4)
            for j in replicas[0].api("/jobs?page_size=1000")["jobs"]:
                if j["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    ends[j["id"]] = (j["state"], j.get("replica"), j["end_time"])
            return len(ends) == jobs_n

        wait_for("the batch", all_ended, 1800)
        last_end = max(parse_time(t) for _, _, t in ends.values())
        elapsed = last_end - started
        states = {s for s, _, _ in ends.values()}
        if states != {"SUCCEEDED"}:
            raise RuntimeError("jobs ended %s" % states)
        by_replica = {}
        for _, r, _ in ends.values():
            by_replica[r] = by_replica.get(r, 0) + 1
        return elapsed, by_replica
    finally:
        for r in replicas:
            r.stop()
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="build/bin")
    p.add_argument("--jobs", type=int, default=12)
    p.add_argument("--epochs", type=int, default=6000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--report-every", type=int, default=10,
                   help="epochs between progress events")
    a = p.parse_args()
    if not postgres_installed():
        sys.exit("postgresql-15 is not installed (scripts/install-deps)")
    one, three = [], []
    for round_ in range(a.rounds):
        for n, times in ((1, one), (3, three)):
            t, spread = batch(a.bin, n, a.jobs, a.epochs, a.report_every)
            times.append(t)
            print("round %d: %d replica(s): %.1f s for %d jobs (jobs per replica %s)" %
                  (round_ + 1, n, t, a.jobs, spread), flush=True)
    m1, m3 = statistics.median(one), statistics.median(three)
    print("median: one replica %.1f s, three replicas %.1f s, ratio three/one %.2f "
          "(target <= 0.6; %d cores)" % (m1, m3, m3 / m1, os.cpu_count()))


if __name__ == "__main__":
    main()
