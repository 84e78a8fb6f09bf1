"""Fixtures of the Python client tests: real sparrowd processes (one open, one with bearer
tokens), the `sparrow` CLI to compare with, and small cascaded-tanks data and specs.

Run: PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python
The binaries are taken from $SPARROW_BIN_DIR, else <repo>/build/bin; the tests are skipped when
sparrowd or the client's generated stubs are missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# free_ports: ports below the ephemeral range, picked as the e2e tests pick them.
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from sparrow_cluster import free_ports  # noqa: E402
BIN_DIR = os.environ.get("SPARROW_BIN_DIR") or os.path.join(REPO, "build", "bin")
TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


class Server:
    """One sparrowd with its store and log in a temporary directory."""

    def __init__(self, tmp, name, flags=()):
        self.grpc, self.http = free_ports(2)
        self.address = "127.0.0.1:%d" % self.grpc
        self.log_path = os.path.join(tmp, name + ".log")
        self.args = [os.path.join(BIN_DIR, "sparrowd"), "--listen", self.address,
                     "--http-listen", "127.0.0.1:%d" % self.http, "--data-dir",
                     os.path.join(tmp, name + "-data"), "--workers", "2", *flags]
        self.start()

    def start(self):
        """Starts sparrowd (again: on the same ports and store) and waits until it serves."""
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if "sparrowd: dashboard on" in self.log():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("sparrowd did not start: " + self.log()[-2000:])

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, kill=False):
        """SIGTERM (a graceful stop) or SIGKILL, and waits for the process."""
        if self.proc.poll() is None:
            if kill:
                self.proc.kill()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cli(self, *args, token=""):
        """Runs `sparrow ARGS` against this server: (exit code, stdout, stderr)."""
        env = dict(os.environ, SPARROW_ADDR=self.address, SPARROW_TOKEN=token)
        out = subprocess.run([os.path.join(BIN_DIR, "sparrow"), *args], env=env,
                             capture_output=True, text=True, timeout=60)
        return out.returncode, out.stdout, out.stderr


def cli_error(stderr):
    """The message of the CLI's `sparrow: error: MESSAGE` line."""
    for line in stderr.splitlines():
        if line.startswith("sparrow: error: "):
            return line[len("sparrow: error: "):]
    raise AssertionError("no error line in: " + stderr)


@pytest.fixture(scope="session")
def tmp_root():
    path = tempfile.mkdtemp(prefix="sparrow-pytest.")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def sc():
    """The sparrow_client package (skips the tests when it or its stubs are missing)."""
    if not os.access(os.path.join(BIN_DIR, "sparrowd"), os.X_OK):
        pytest.skip("no sparrowd in %s (build it, or set SPARROW_BIN_DIR)" % BIN_DIR)
    try:
        import sparrow_client
    except ImportError as e:
        pytest.skip("sparrow_client is not importable (%s); run python/gen_stubs.sh OUT_DIR and "
                    "set PYTHONPATH=OUT_DIR" % e)
    return sparrow_client


@pytest.fixture(scope="session")
def server(sc, tmp_root):
    s = Server(tmp_root, "open")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def token_server(sc, tmp_root):
    path = os.path.join(tmp_root, "tokens.txt")
    with open(path, "w") as f:
        f.write("# tokens of the python client test\n")
        f.writelines("%s %s\n" % kv for kv in TOKENS.items())
    s = Server(tmp_root, "tokens", ["--tokens-file", path])
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(sc, server):
    with sc.Client(server.address, token="") as c:
        yield c


@pytest.fixture(scope="session")
def tanks_csv(server, tmp_root):
    """600 samples of the synthetic cascaded tanks (columns u, y)."""
    path = os.path.join(tmp_root, "tanks.csv")
    code, _, err = server.cli("datagen", "cascaded-tanks", "--samples", "600", "--seed", "1",
                              "-o", path)
    assert code == 0, err
    return path


def narx_spec(csv_path, epochs=200, **stopping):
    """A NARX MLP trained by Adam on the tanks data (tests/e2e/remote_cli_test.sh's quick)."""
    return {
        "name": "python-client-test",
        "data": {"csv_path": csv_path, "inputs": ["u"], "outputs": ["y"]},
        "split": {"train": [{"first": 1, "last": 400}], "test": [{"first": 401, "last": 600}]},
        "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [8]}},
        "optimizer": {"adam": {"learning_rate": 0.01}},
        "stopping": dict({"max_epochs": epochs, "report_every": 10}, **stopping),
        "seed": 1,
    }


def state_space_spec(csv_path, epochs=60):
    """examples/demo.json (a state-space RNN by L-BFGS) on the 600 samples, fewer epochs."""
    with open(os.path.join(REPO, "examples", "demo.json")) as f:
        spec = json.load(f)
    spec["data"]["csv_path"] = csv_path
    spec["split"] = {"train": [{"first": 1, "last": 400}], "test": [{"first": 401, "last": 600}]}
    spec["stopping"] = {"max_epochs": epochs, "report_every": 10}
    return spec


def write_json(tmp_root, name, obj):
    path = os.path.join(tmp_root, name)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
    return path


@pytest.fixture(scope="session")
def narx_job(client, tanks_csv):
    """An ended (succeeded) NARX job."""
    job = client.submit(narx_spec(tanks_csv))
    return client.wait(job.id, timeout=60)


@pytest.fixture(scope="session")
def ss_job(client, tanks_csv):
    """An ended (succeeded) state-space job."""
    job = client.submit(state_space_spec(tanks_csv))
    return client.wait(job.id, timeout=60)
