"""sparrowd replicas on a real PostgreSQL 15, for the replica tests (replicas_chaos.py) and
benchmarks (bench/replicas_throughput.py): a throw-away PostgreSQL server, sparrowd replicas
on it, and job specs on a generated data set. Use /usr/bin/python3."""
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

PGBIN = "/usr/lib/postgresql/15/bin"


def postgres_installed():
    return os.access(os.path.join(PGBIN, "initdb"), os.X_OK)


class Postgres:
    """A PostgreSQL server in a temporary directory, reached through its Unix socket only (no
    TCP port to collide with), run as the postgres user when we are root."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sparrow-pg.")
        if os.getuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run([PGBIN + "/initdb", "-D", self.dir + "/data", "-A", "trust", "-U",
                   "postgres", "-E", "UTF8", "--no-sync"], "initdb")
        self._run([PGBIN + "/pg_ctl", "-D", self.dir + "/data", "-l", self.dir + "/log", "-w",
                   "-o", "'-p 5432 -k %s -c listen_addresses='" % self.dir, "start"],
                  "pg_ctl start")
        self.uri = "postgresql:///postgres?host=%s&port=5432&user=postgres" % self.dir

    def _run(self, cmd, what):
        if os.getuid() == 0:
            cmd = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(cmd)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError("%s: %s%s" % (what, out.stdout, out.stderr))

    def stop(self):
        try:
            self._run([PGBIN + "/pg_ctl", "-D", self.dir + "/data", "-m", "immediate", "stop"],
                      "pg_ctl stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def free_ports(n):
    """n free ports below the ephemeral range, so that no other process is handed one while
    its replica is down."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = map(int, f.read().split())
    candidates = [p for p in range(20000, 32768) if not lo <= p <= hi]
    found = []
    for p in random.sample(candidates, 400):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
        found.append(p)
        if len(found) == n:
            return found
    raise RuntimeError("no free ports")


class Replica:
    """One sparrowd on the store `store`, its gRPC and HTTP ports, its log in `tmp`."""

    def __init__(self, bin_dir, name, store, tmp, flags=()):
        self.bin_dir, self.name, self.store, self.flags = bin_dir, name, store, list(flags)
        self.grpc, self.http = free_ports(2)
        self.log_path = os.path.join(tmp, name + ".log")
        self.data = os.path.join(tmp, name + "-data")
        self.proc = None

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [os.path.join(self.bin_dir, "sparrowd"), "--listen", "127.0.0.1:%d" % self.grpc,
             "--http-listen", "127.0.0.1:%d" % self.http, "--store", self.store,
             "--data-dir", self.data, "--replica-name", self.name, *self.flags],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if "sparrowd: dashboard on" in self.log():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError("replica %s did not start: %s" % (self.name, self.log()[-2000:]))

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(18)  # SIGCONT, in case it was stopped
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def up(self):
        return self.proc is not None and self.proc.poll() is None

    def api(self, path):
        url = "http://127.0.0.1:%d/api/v1%s" % (self.http, path)
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def cli(self, *args):
        env = dict(os.environ, SPARROW_ADDR="127.0.0.1:%d" % self.grpc, SPARROW_TOKEN="")
        return subprocess.run([os.path.join(self.bin_dir, "sparrow"), *args], env=env,
                              capture_output=True, text=True, timeout=60)


def make_data(replica, tmp):
    """cascaded-tanks data (600 samples) in tmp/tanks.csv."""
    out = replica.cli("datagen", "cascaded-tanks", "--samples", "600", "-o",
                      os.path.join(tmp, "tanks.csv"))
    if out.returncode != 0:
        raise RuntimeError("datagen: " + out.stderr)


def spec(tmp, name, seconds=0, epochs=100000000, hidden=32, report_every=1):
    """A NARX MLP trained by Adam on tmp/tanks.csv for `seconds` (0 = no limit) or `epochs`,
    an event every `report_every` epochs."""
    path = os.path.join(tmp, name + ".json")
    stopping = {"max_epochs": epochs, "report_every": report_every, "stall_epochs": -1}
    if seconds:
        stopping["max_seconds"] = seconds
    with open(path, "w") as f:
        json.dump({
            "name": name,
            "data": {"csv_path": os.path.join(tmp, "tanks.csv"), "inputs": ["u"],
                     "outputs": ["y"]},
            "split": {"train": [{"first": 1, "last": 400}],
                      "test": [{"first": 401, "last": 600}]},
            "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [hidden]}},
            "optimizer": {"adam": {"learning_rate": 0.001}},
            "stopping": stopping,
            "seed": 1}, f)
    return path


def submit(replica, path):
    out = replica.cli("submit", path, "--json")
    if out.returncode != 0:
        raise RuntimeError("submit: " + out.stderr)
    return json.loads(out.stdout)["job_id"]


def job_view(replicas, job):
    """The job as the first replica that answers sees it ({} when none does)."""
    for r in replicas:
        if r.up():
            try:
                return r.api("/jobs/" + job)["job"]
            except OSError:
                continue
    return {}


def wait_for(what, predicate, seconds):
    """predicate()'s first true value, polled every 0.1 s; TimeoutError after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError("%s within %d s" % (what, seconds))


if __name__ == "__main__":
    sys.exit("a module of replicas_chaos.py and bench/replicas_throughput.py")
