"""Checks deploy/compose.yaml offline (no Docker here): it parses as YAML without duplicate
keys, its ${...} interpolations are well formed, the default profile is one sparrowd on a named
volume, and the postgres profile is PostgreSQL with a healthcheck plus three sparrowd replicas
on it (distinct replica names, no password in the URI, started once the database is healthy).
Flags are checked against BIN_DIR/sparrowd --help when it exists.

Usage: /usr/bin/python3 compose_test.py BIN_DIR   (run from the repository root; Debian's
python3-yaml)
"""

import os
import re
import subprocess
import sys

import yaml

COMPOSE = "deploy/compose.yaml"
problems = []


def fail(msg):
    problems.append(msg)


class StrictLoader(yaml.SafeLoader):
    """Rejects duplicate keys, which PyYAML would silently resolve to the last one."""


def _no_duplicates(loader, node, deep=False):
    # Before merge keys (<<) are flattened: a service may override what it merges.
    keys = [k.value for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise yaml.constructor.ConstructorError(None, None, f"duplicate keys {dup}", node.start_mark)
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def flags(service):
    """The --flag=value arguments of a service's command as a dict."""
    out = {}
    for arg in service.get("command") or []:
        m = re.fullmatch(r"(--[a-z-]+)(?:=(.*))?", str(arg))
        if not m:
            fail(f"{service['_name']}: argument {arg!r} is not --flag=value")
            continue
        out[m.group(1)] = m.group(2)
    return out


def seconds(duration):
    m = re.fullmatch(r"(\d+)(s|m)", str(duration))
    return int(m.group(1)) * (60 if m.group(2) == "m" else 1) if m else 0


def check_sparrowd(name, s, known_flags):
    f = flags(s)
    if not str(s.get("image", "")).startswith("${SPARROW_IMAGE"):
        fail(f"{name}: image is not ${{SPARROW_IMAGE...}}")
    if known_flags is not None:
        for flag in f:
            if flag not in known_flags:
                fail(f"{name}: sparrowd has no {flag}")
    port = (f.get("--listen") or "").rpartition(":")[2]
    test = s.get("healthcheck", {}).get("test", [])
    if "health" not in test or f"127.0.0.1:{port}" not in test:
        fail(f"{name}: healthcheck {test} is not `sparrow health` on the --listen port {port}")
    if seconds(s.get("stop_grace_period")) < 60:
        fail(f"{name}: stop_grace_period {s.get('stop_grace_period')} is under 60 s")
    if "--data-dir" not in f:
        fail(f"{name}: no --data-dir")
    build = s.get("build", {})
    dockerfile = os.path.join(os.path.dirname(COMPOSE), build.get("context", "."),
                              build.get("dockerfile", "Dockerfile"))
    if not os.path.isfile(dockerfile):
        fail(f"{name}: build dockerfile {dockerfile} does not exist")
    return f


def main():
    bin_dir = sys.argv[1]
    text = open(COMPOSE).read()
    # Compose interpolation: $$ escapes, else ${NAME}, ${NAME:-default}, ${NAME:?message}.
    # Comments are not interpolated.
    values = re.sub(r"^\s*#.*$", "", text, flags=re.M).replace("$$", "")
    for m in re.finditer(r"\$(\{[^}]*\}|\w*)", values):
        if not re.fullmatch(r"\{[A-Za-z_]\w*(?:(?::?[-?])[^}]*)?\}", m.group(1)):
            fail(f"malformed interpolation ${m.group(1)}")
    doc = yaml.load(text, Loader=StrictLoader)
    services = doc["services"]
    for name, s in services.items():
        s["_name"] = name
    known_flags = None
    if os.access(os.path.join(bin_dir, "sparrowd"), os.X_OK):
        help_text = subprocess.run([os.path.join(bin_dir, "sparrowd"), "--help"], check=True,
                                   capture_output=True, text=True).stdout
        known_flags = set(re.findall(r"--[a-z][a-z-]+", help_text))

    declared_volumes = set(doc.get("volumes") or {})
    host_ports = []
    for name, s in services.items():
        for v in s.get("volumes", []):
            source = v.split(":")[0]
            if not source.startswith((".", "/")) and source not in declared_volumes:
                fail(f"{name}: volume {source} is not declared")
        host_ports += [p.rsplit(":", 2)[-2] for p in s.get("ports", [])]
    dup_ports = {p for p in host_ports if host_ports.count(p) > 1}
    if dup_ports:
        fail(f"host ports published twice: {sorted(dup_ports)}")

    default = [n for n, s in services.items() if not s.get("profiles")]
    if len(default) != 1:
        fail(f"default profile: services {default}, want one sparrowd")
    else:
        s = services[default[0]]
        f = check_sparrowd(default[0], s, known_flags)
        if "--store" in f:
            fail(f"{default[0]}: --store set; the default profile keeps SQLite")
        data_mounts = [v.split(":")[0] for v in s.get("volumes", [])
                       if v.split(":")[1] == f.get("--data-dir")]
        if not data_mounts or data_mounts[0] not in declared_volumes:
            fail(f"{default[0]}: --data-dir {f.get('--data-dir')} is not on a named volume")

    pg = {n: s for n, s in services.items() if "postgres" in (s.get("profiles") or [])}
    dbs = [n for n, s in pg.items() if str(s.get("image", "")).startswith("${POSTGRES_IMAGE")]
    if len(dbs) != 1:
        fail(f"postgres profile: database services {dbs}, want one with image ${{POSTGRES_IMAGE...}}")
        return
    db = dbs[0]
    if "pg_isready" not in " ".join(pg[db].get("healthcheck", {}).get("test", [])):
        fail(f"{db}: no pg_isready healthcheck")
    replicas = {n: s for n, s in pg.items() if n != db}
    if len(replicas) != 3:
        fail(f"postgres profile: {len(replicas)} sparrowd replicas, want 3")
    names = []
    for name, s in replicas.items():
        f = check_sparrowd(name, s, known_flags)
        uri = f.get("--store") or ""
        m = re.fullmatch(r"postgresql://([^@/]+)@([^:/]+)(?::\d+)?/\w+", uri)
        if not m:
            fail(f"{name}: --store {uri!r} is not postgresql://USER@HOST/DB")
        elif ":" in m.group(1):
            fail(f"{name}: --store carries a password; use PGPASSWORD")
        elif m.group(2) != db:
            fail(f"{name}: --store host {m.group(2)} is not the {db} service")
        names.append(f.get("--replica-name"))
        password = (s.get("environment") or {}).get("PGPASSWORD", "")
        if not re.fullmatch(r"\$\{\w+(:-)?\}", str(password)):
            fail(f"{name}: PGPASSWORD {password!r} is not a variable (with no default)")
        if (s.get("depends_on") or {}).get(db, {}).get("condition") != "service_healthy":
            fail(f"{name}: does not wait for {db} to be healthy")
    if None in names or len(set(names)) != len(names):
        fail(f"replica names {names} are not set and distinct")


if __name__ == "__main__":
    main()
    for p in problems:
        print(f"FAIL {p}")
    print(f"compose: {len(problems)} problems")
    sys.exit(1 if problems else 0)
