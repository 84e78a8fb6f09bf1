"""Three sparrowd replicas on one real PostgreSQL 15, ten jobs, a watcher per job on every
replica, and failures (run by replicas_chaos_test.sh; usage: replicas_chaos.py BIN_DIR).

- SIGKILL the replica running a job: another replica takes the job over from its checkpoint
  within the lease expiry plus 5 s (the takeover time is measured and printed).
- SIGSTOP a replica running a job past its lease, then SIGCONT it: another replica has taken
  the job over, and every late write of the stopped one is refused (its log says so).
- A cancel sent to one replica stops the job another replica runs.
- Then: every job ends exactly once, every watcher (which reconnects to the next replica with
  Last-Event-ID when its replica dies, as a client behind a load balancer would) saw seqs
  1, 2, 3, ... with no gap or duplicate, and no dataset, job or model is lost.
"""
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from sparrow_cluster import (Postgres, Replica, job_view, make_data, postgres_installed, spec,
                             submit, wait_for)

BIN = sys.argv[1]
LEASE_RENEW, LEASE_EXPIRY = 1, 4  # seconds (sparrowd's defaults: 5 and 30)
JOBS = 10
started = time.time()
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS:", what, flush=True)
    else:
        failed += 1
        print("FAIL:", what, detail, flush=True)


class Watcher(threading.Thread):
    """Reads a job's SSE stream from one replica; when the connection breaks before the final
    event, reconnects to the next replica that is up with Last-Event-ID."""

    def __init__(self, job, replicas, first):
        super().__init__(daemon=True)
        self.job, self.replicas, self.at = job, replicas, first
        self.seqs, self.finals, self.reconnects, self.error = [], 0, 0, None

    def run(self):
        deadline = time.time() + 240
        while time.time() < deadline:
            r = self.replicas[self.at % len(self.replicas)]
            try:
                if self.stream(r):
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            self.at += 1
            self.reconnects += 1
            time.sleep(0.2)
        self.error = "no final event within 240 s"

    def stream(self, r):
        headers = {"Last-Event-ID": str(self.seqs[-1])} if self.seqs else {}
        req = urllib.request.Request(
            "http://127.0.0.1:%d/api/v1/jobs/%s/events" % (r.http, self.job), headers=headers)
        with urllib.request.urlopen(req, timeout=LEASE_EXPIRY + 20) as resp:
            data = None
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                elif line == "" and data is not None:
                    self.seqs.append(int(data["seq"]))
                    if data.get("kind") == "STATE" and data.get("state") in (
                            "SUCCEEDED", "FAILED", "CANCELLED"):
                        self.finals += 1
                        return True
                    data = None
        return False


def running_on(replicas, jobs, name, min_iterations):
    for job in jobs:
        j = job_view(replicas, job)
        if (j.get("state") == "RUNNING" and j.get("replica") == name
                and int(j.get("iterations", 0)) >= min_iterations):
            return job
    return None


def main():
    if not postgres_installed():
        print("SKIP: postgresql-15 is missing")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="sparrow-chaos.")
    pg, replicas = None, []
    try:
        pg = Postgres()
        flags = ["--workers", "1", "--lease-renew-seconds", str(LEASE_RENEW),
                 "--lease-expiry-seconds", str(LEASE_EXPIRY), "--checkpoint-every", "5",
                 "--checkpoint-min-seconds", "0", "--min-event-interval-ms", "0"]
        replicas += [Replica(BIN, "r%d" % i, pg.uri, tmp, flags) for i in (1, 2, 3)]
        for r in replicas:
            r.start()
        run(tmp, replicas)
    except (TimeoutError, RuntimeError, KeyError, ValueError) as e:
        check("the chaos script ran to its end", False, repr(e))
    finally:
        for r in replicas:
            r.stop()
        if pg is not None:
            pg.stop()
        if failed:
            for r in replicas:
                print("--- %s" % r.log_path)
                print("\n".join(r.log().splitlines()[-25:]))
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, replicas):
    make_data(replicas[0], tmp)

    # --- ten jobs of ~4 s through all three replicas; watchers everywhere ---------------------
    jobs = [submit(replicas[i % 3], spec(tmp, "chaos-%d" % i, seconds=4))
            for i in range(JOBS)]
    watchers = [Watcher(job, replicas, k) for job in jobs for k in range(3)]
    for w in watchers:
        w.start()

    # --- SIGKILL the replica running a job that has a checkpoint -------------------------------
    victim = replicas[0]
    killed_job = wait_for("a job on r1 with a checkpoint",
                          lambda: running_on(replicas, jobs, victim.name, 10), 60)
    t_kill = time.time()
    victim.proc.kill()
    victim.proc.wait()
    resumed = wait_for(
        "the killed replica's job resumed elsewhere",
        lambda: (lambda j: j if j.get("state") != "RUNNING" or int(j.get("attempts", 0)) >= 2
                 else None)(job_view(replicas, killed_job)), LEASE_EXPIRY + 30)
    takeover = None
    for h in resumed.get("history", []):
        if h.get("state") == "RUNNING" and "resumed" in h.get("reason", ""):
            t = h["time"]
            stamp = time.mktime(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            frac = float("0." + t[20:].rstrip("Z")) if len(t) > 20 else 0.0
            takeover = stamp + frac - t_kill
    check("SIGKILL: job %s taken over by %s (%s)" % (killed_job, resumed.get("replica"),
                                                      resumed.get("reason")),
          resumed.get("replica") not in ("", victim.name) and takeover is not None,
          json.dumps(resumed)[:600])
    if takeover is not None:
        print("takeover after SIGKILL: %.2f s (lease expiry %d s, renew %d s)" %
              (takeover, LEASE_EXPIRY, LEASE_RENEW), flush=True)
        check("takeover within lease expiry + 5 s", takeover <= LEASE_EXPIRY + 5,
              "%.2f s" % takeover)
    victim.start()  # back under its name

    # --- SIGSTOP a replica past its lease, then SIGCONT ----------------------------------------
    paused = replicas[1]
    stopped_job = wait_for("a job running on r2",
                           lambda: running_on(replicas, jobs, paused.name, 3), 60)
    paused.proc.send_signal(signal.SIGSTOP)
    others = [r for r in replicas if r is not paused]
    taken = wait_for(
        "the stopped replica's job taken over",
        lambda: (lambda j: j if j.get("replica") not in ("", paused.name) or
                 j.get("state") not in ("RUNNING", "CANCELLING") else None)(
                     job_view(others, stopped_job)), LEASE_EXPIRY + 30)
    time.sleep(1)
    paused.proc.send_signal(signal.SIGCONT)
    check("SIGSTOP: job %s taken over by %s while r2 was stopped" %
          (stopped_job, taken.get("replica")),
          taken.get("replica") not in ("", paused.name), json.dumps(taken)[:600])
    # Two correct outcomes: r2's next write is fenced off ("lost the job"), or PostgreSQL has
    # already closed r2's connection (idle_in_transaction_session_timeout, 5 s, ended the
    # transaction it was stopped in) and r2 leaves the job to its lease. Either way nothing r2
    # wrote after the takeover may land; the exactly-once checks below verify that.
    def late_lines():
        return [l for l in paused.log().splitlines() if stopped_job in l and
                ("lost" in l or "left to its lease" in l)]
    late = wait_for("r2 noticing it lost the job", late_lines, 30)
    check("SIGCONT: r2's late writes for %s refused (%d log lines)" % (stopped_job, len(late)),
          len(late) >= 1, paused.log()[-1500:])

    # --- a cancel through one replica reaches the one running the job --------------------------
    cancel_job = submit(replicas[2], spec(tmp, "chaos-cancel", seconds=60))
    holder = wait_for("the long job running", lambda: (lambda j: j.get("replica") if
                      j.get("state") == "RUNNING" else None)(job_view(replicas, cancel_job)),
                      90)
    via = next(r for r in replicas if r.name != holder)
    out = via.cli("cancel", cancel_job)
    print("cancel via %s: %s" % (via.name, (out.stdout + out.stderr).strip()), flush=True)
    t_cancel = time.time()
    final = wait_for("the cancelled job ending", lambda: (lambda j: j if j.get("state") in (
        "CANCELLED", "FAILED", "SUCCEEDED") else None)(job_view(replicas, cancel_job)), 30)
    check("cancel via %s of the job on %s: %s after %.1f s" % (
        via.name, holder, final.get("state"), time.time() - t_cancel),
        final.get("state") == "CANCELLED", out.stdout + out.stderr)

    # --- everything ends exactly once; nothing lost --------------------------------------------
    for w in watchers:
        w.join(timeout=max(1, 240 - (time.time() - started)))
    bad = [(w.job, w.error or "seqs %s..." % w.seqs[:5]) for w in watchers
           if w.error or w.finals != 1 or w.seqs != list(range(1, len(w.seqs) + 1))]
    check("%d watchers (%d reconnects): dense seqs from 1, one final event each" % (
        len(watchers), sum(w.reconnects for w in watchers)), not bad, str(bad[:3]))
    for job in jobs:
        full = [json.loads(l[5:]) for l in urllib.request.urlopen(
            "http://127.0.0.1:%d/api/v1/jobs/%s/events?after_seq=0" % (replicas[2].http, job),
            timeout=30).read().decode().splitlines() if l.startswith("data:")]
        finals = [e for e in full if e.get("kind") == "STATE" and e.get("state") in (
            "SUCCEEDED", "FAILED", "CANCELLED")]
        seqs = [int(e["seq"]) for e in full]
        check("job %s: %d events, dense, ended once (%s)" % (
            job, len(full), finals[0]["state"] if finals else "-"),
            len(finals) == 1 and finals[0]["state"] == "SUCCEEDED" and
            full[-1] is finals[0] and seqs == list(range(1, len(seqs) + 1)))
    listed = replicas[1].api("/jobs?page_size=100")
    items = listed.get("jobs", listed.get("items", []))
    check("all %d jobs listed by a replica" % (JOBS + 1), len(items) == JOBS + 1,
          json.dumps(listed)[:300])
    models = [job for job in jobs if replicas[(jobs.index(job)) % 3].cli(
        "model", "get", job, "-o", os.path.join(tmp, job + ".model.json")).returncode == 0]
    check("every succeeded job has its model (%d of %d)" % (len(models), JOBS),
          len(models) == JOBS)
    out = replicas[0].cli("upload", os.path.join(tmp, "tanks.csv"))
    check("the dataset is still there (upload skipped)", out.returncode == 0 and
          "already" in (out.stdout + out.stderr).lower(), out.stdout + out.stderr)

    print("replicas_chaos: %d jobs + 1 cancelled, %d passed, %d failed in %d s" % (
        JOBS, passed, failed, time.time() - started))
    print("%d passed, %d failed" % (passed, failed))


if __name__ == "__main__":
    main()
    sys.exit(1 if failed else 0)
