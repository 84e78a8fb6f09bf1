#!/usr/bin/env python3
"""Every example spec runs on sparrowd too, not only with `sparrow run --local`.

Starts one sparrowd (SQLite store in a temporary data dir, two workers), then submits every
examples/*.json whose data exists, each as a copy with a tiny budget (2 epochs, at most 3 s of
training; ADMM and SBDL outer loops cut to 2; a sweep's base spec alone), through `sparrow submit`, which uploads the spec's
data as it is. Every job must SUCCEED. Data that `make demo` or examples/README.md's datagen
commands write under build/ is generated in a temporary directory when absent; examples whose
other data is absent (the shared benchmark data) are skipped and listed. Usage: examples_on_service.py BIN_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sparrow_cluster import Replica  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(sys.argv[1])


def data_files(spec):
    d = spec.get("data", {})
    files = [d["csv_path"]] if d.get("csv_path") else []
    for record in ("validation_data", "test_data"):  # uploaded by submit too
        if spec.get(record, {}).get("csv_path"):
            files.append(spec[record]["csv_path"])
    images = d.get("images", {})
    return files + images.get("images", []) + images.get("labels", [])


# Data that `make demo` or the datagen commands in examples/README.md make under build/:
# generated here when absent, so that those examples run too.
GENERATED = {
    "build/demo/cascaded_tanks.csv": ["cascaded-tanks", "--samples", "2048", "--seed", "1"],
    "build/data/binary_system_s0.csv": ["binary-system", "--noise", "0"],
    "build/data/binary_system_s005.csv": ["binary-system", "--noise", "0.05"],
    "build/data/binary_system_s02.csv": ["binary-system", "--noise", "0.2"],
    "build/data/narx_lags.csv": ["narx-lags", "--noise", "0.05", "--seed", "1"],
}


def generate(spec, tmp):
    """Points the spec at a datagen copy in tmp when its data is generated data that is absent."""
    d = spec.get("data", {})
    path = d.get("csv_path")
    if path not in GENERATED or os.path.exists(os.path.join(ROOT, path)):
        return
    out = os.path.join(tmp, "generated", os.path.basename(path))
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([os.path.join(BIN, "sparrow"), "datagen", *GENERATED[path], "-o", out],
                       check=True, capture_output=True)
    d["csv_path"] = out


def tiny(spec):
    """The spec with a budget of seconds: 2 epochs, 3 s, 2 ADMM or SBDL outer iterations,
    256 training images."""
    s = json.loads(json.dumps(spec))
    s.pop("sweep", None)  # the base spec of a sweep; remote_cli_test.sh runs sweeps
    if s.get("data", {}).get("images"):
        # An epoch over 60,000 images takes minutes and max_seconds is checked between
        # epochs: train on 256 images, test on 256.
        s["split"] = {"train": [{"first": 1, "last": 256}],
                      "test": [{"first": 60001, "last": 60256}]}
    stop = s.setdefault("stopping", {})
    stop["max_epochs"] = 2
    stop["max_seconds"] = 3
    stop.pop("patience", None)
    penalty = any(k in s.get("regularization", {})
                  for k in ("l1", "l0", "group_lasso", "quantization", "binary"))
    optimizers = [s.get("optimizer", {})]
    for stage in s.get("stages", []):  # each stage with its own stopping, if any
        if "stopping" in stage:
            stage["stopping"].update(max_epochs=2, max_seconds=3)
            stage["stopping"].pop("patience", None)
        optimizers.append(stage.get("optimizer", {}))
    for optimizer in optimizers:
        for name, opt in optimizer.items():
            if name in ("nails", "nailm") and penalty:
                opt["admm_iterations"] = 2
            if name == "sbdl":
                opt["outer_iterations"] = 2
    return s


def main():
    tmp = tempfile.mkdtemp(prefix="sparrow-examples.")
    server = Replica(BIN, "examples", None, tmp, ["--workers", "2"])
    failed, passed, skipped = [], 0, []
    try:
        start_without_store(server)
        jobs = []
        for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.json"))):
            name = os.path.basename(path)
            spec = json.load(open(path))
            generate(spec, tmp)
            missing = [f for f in data_files(spec) if not os.path.exists(os.path.join(ROOT, f))]
            if missing:
                skipped.append("%s (%s)" % (name, ", ".join(missing)))
                continue
            copy = os.path.join(tmp, name)
            json.dump(tiny(spec), open(copy, "w"))
            out = server.cli("submit", copy, "--json")
            if out.returncode != 0:
                failed.append("%s: submit refused: %s" % (name, (out.stdout + out.stderr).strip()))
                continue
            jobs.append((name, json.loads(out.stdout)["job_id"]))
        deadline = time.time() + 600
        for name, job in jobs:
            while True:
                out = server.cli("status", job, "--json")
                state = json.loads(out.stdout).get("state", "") if out.returncode in (0, 1) else ""
                if state in ("SUCCEEDED", "FAILED", "CANCELLED") or time.time() > deadline:
                    break
                time.sleep(0.5)
            if state == "SUCCEEDED":
                passed += 1
            else:
                failed.append("%s: job %s ended %s: %s" % (name, job, state or "(timeout)",
                                                          out.stdout.strip()[:400]))
    finally:
        server.stop()
        if failed:
            print(server.log()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)
    for s in skipped:
        print("SKIP: %s: data absent" % s)
    for f in failed:
        print("FAIL: %s" % f)
    print("%d examples succeeded on sparrowd, %d failed, %d skipped" %
          (passed, len(failed), len(skipped)))
    return 1 if failed or passed == 0 else 0


def start_without_store(server):
    log = open(server.log_path, "a")
    server.proc = subprocess.Popen(
        [os.path.join(server.bin_dir, "sparrowd"), "--listen", "127.0.0.1:%d" % server.grpc,
         "--http-listen", "127.0.0.1:%d" % server.http, "--data-dir", server.data,
         *server.flags], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.time() + 20
    while time.time() < deadline:
        if "sparrowd: dashboard on" in server.log():
            return
        if server.proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError("sparrowd did not start: %s" % server.log()[-2000:])


if __name__ == "__main__":
    sys.exit(main())
