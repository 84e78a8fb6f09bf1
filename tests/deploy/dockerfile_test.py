"""Checks deploy/Dockerfile and .dockerignore without building the image (scripts/build-image
builds and smoke-tests it): both base images are build arguments, the runtime stage installs
deploy/runtime-packages.txt, runs as the numeric user the Kubernetes manifests expect, starts
sparrowd in exec form with flags sparrowd knows, exposes the ports it listens on, health-checks
the gRPC port, and the build context leaves out build trees, node_modules and .git.
Flags are checked against BIN_DIR/sparrowd --help when it exists.

Usage: /usr/bin/python3 dockerfile_test.py BIN_DIR   (run from the repository root)
"""

import json
import os
import re
import subprocess
import sys

DOCKERFILE = "deploy/Dockerfile"
USER_ID = "10001"  # deploy/k8s/base/deployment.yaml: runAsUser


def instructions(text):
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    out = []
    for line in re.sub(r"\\\n", " ", re.sub(r"^\s*#.*\n", "", text, flags=re.M)).splitlines():
        m = re.match(r"\s*([A-Z]+)\s+(.*)", line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return out


def main():
    problems = []
    steps = instructions(open(DOCKERFILE).read())
    froms = [a for i, a in steps if i == "FROM"]
    if len(froms) != 2 or not froms[0].startswith("${BASE}") or froms[1] != "${RUNTIME_BASE}":
        problems.append(f"FROM {froms}: want a build stage FROM ${{BASE}} and FROM ${{RUNTIME_BASE}}")
    args = {a.split("=")[0]: a for i, a in steps if i == "ARG"}
    for name in ("BASE", "RUNTIME_BASE"):
        if name not in args:
            problems.append(f"no ARG {name}")
    # The runtime stage: everything after the last FROM.
    last_from = max(k for k, (i, _) in enumerate(steps) if i == "FROM")
    runtime = steps[last_from:]
    last = {i: a for i, a in runtime}
    runs = " ".join(a for i, a in runtime if i == "RUN")
    copies = " ".join(a for i, a in runtime if i == "COPY")
    if "deploy/runtime-packages.txt" not in copies or "runtime-packages.txt" not in runs \
            or "apt-get install" not in runs:
        problems.append("the runtime stage does not apt-get install deploy/runtime-packages.txt")
    if "build-essential" in runs or "-dev" in runs:
        problems.append("the runtime stage installs build packages")
    if last.get("USER") != f"{USER_ID}:{USER_ID}":
        problems.append(f"USER {last.get('USER')}: want {USER_ID}:{USER_ID} (numeric, for runAsNonRoot)")
    try:
        entrypoint = json.loads(last.get("ENTRYPOINT", ""))
        cmd = json.loads(last.get("CMD", ""))
        health = json.loads(last.get("HEALTHCHECK", "").partition("CMD")[2])
    except ValueError as e:
        return print(f"FAIL ENTRYPOINT, CMD and HEALTHCHECK must be exec form (JSON): {e}") or 1
    if entrypoint != ["/usr/local/bin/sparrowd"]:
        problems.append(f"ENTRYPOINT {entrypoint}")
    flags = dict(zip(cmd[::2], cmd[1::2]))
    sparrowd = os.path.join(sys.argv[1], "sparrowd")
    if os.access(sparrowd, os.X_OK):
        known = set(re.findall(r"--[a-z][a-z-]+", subprocess.run(
            [sparrowd, "--help"], check=True, capture_output=True, text=True).stdout))
        problems += [f"CMD: sparrowd has no {f}" for f in flags if f not in known]
    ports = {flags.get(f, "").rpartition(":")[2] for f in ("--listen", "--http-listen", "--metrics-listen")}
    exposed = set(" ".join(a for i, a in runtime if i == "EXPOSE").split())
    if ports != exposed:
        problems.append(f"EXPOSE {sorted(exposed)} is not the CMD's ports {sorted(ports)}")
    if any(not flags.get(f, "").startswith("0.0.0.0:") for f in ("--listen", "--http-listen")):
        problems.append("CMD: gRPC and HTTP must listen on 0.0.0.0 in a container")
    data_dir = flags.get("--data-dir")
    if data_dir not in last.get("VOLUME", "") or last.get("WORKDIR") != data_dir:
        problems.append(f"--data-dir {data_dir} is not the VOLUME and WORKDIR")
    grpc = flags.get("--listen", "").rpartition(":")[2]
    if health[:2] != ["/usr/local/bin/sparrow", "health"] or f"127.0.0.1:{grpc}" not in health:
        problems.append(f"HEALTHCHECK {health} is not `sparrow health` on 127.0.0.1:{grpc}")

    ignored = {l.strip() for l in open(".dockerignore") if l.strip() and not l.startswith("#")}
    for pattern in (".git", "build*/", "**/node_modules"):
        if pattern not in ignored:
            problems.append(f".dockerignore does not exclude {pattern}")

    for p in problems:
        print(f"FAIL {p}")
    print(f"dockerfile: {len(steps)} instructions, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
