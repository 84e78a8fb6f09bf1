"""Checks deploy/runtime-packages.txt, the runtime image's packages, against what the built
sparrowd and sparrow link: ldd resolves every library, dpkg -S names the Debian package that
owns it, and

  - a library a binary links directly (ELF NEEDED) must come from a listed package or from the
    base image;
  - a library those pull in must come from a listed package, the base image, or a dependency
    of a listed package (apt installs those with it);
  - every listed package must exist here (a misspelt name would fail only in the image build).

A listed package that provides no library of the binaries is reported as a warning. "The base
image" is what every Debian bookworm base (debootstrap minbase, debian:bookworm-slim) holds:
the Essential packages and apt, with their dependencies, as recorded in this machine's dpkg
database. That is where libc6, libgcc-s1 and libstdc++6 come from.

Usage: /usr/bin/python3 runtime_packages_test.py BIN_DIR   (run from the repository root)
Exits 0 when the list is complete, 1 when not, 77 (skip) on a machine without dpkg.
"""

import os
import re
import shutil
import subprocess
import sys

LIST = "deploy/runtime-packages.txt"
BINARIES = ("sparrowd", "sparrow")
DPKG_STATUS = "/var/lib/dpkg/status"


def installed_packages():
    """Package -> its dependency groups (each a list of alternatives) and what it provides."""
    packages, provides = {}, {}
    with open(DPKG_STATUS) as f:
        for stanza in f.read().split("\n\n"):
            fields = dict(re.findall(r"^([\w-]+): (.*)$", stanza, re.M))
            if "install ok installed" not in fields.get("Status", ""):
                continue
            name = fields["Package"]
            groups = []
            for key in ("Pre-Depends", "Depends"):
                for group in filter(None, fields.get(key, "").split(",")):
                    groups.append([re.sub(r"\(.*?\)|:\w+", "", alt).strip() for alt in group.split("|")])
            packages[name] = {"depends": groups, "essential": fields.get("Essential") == "yes"}
            for p in filter(None, fields.get("Provides", "").split(",")):
                provides.setdefault(re.sub(r"\(.*?\)", "", p).strip(), name)
    return packages, provides


def closure(seeds, packages, provides):
    """The packages apt installs for seeds: each dependency group by its first installed
    alternative (a real package or one that provides the name)."""
    seen, todo = set(), list(seeds)
    while todo:
        name = todo.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        for group in packages[name]["depends"]:
            for alt in group:
                real = alt if alt in packages else provides.get(alt)
                if real:
                    todo.append(real)
                    break
    return seen


def linked_libraries(binary):
    """(soname -> resolved path, sonames the ELF NEEDED directly)."""
    ldd = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    resolved = {}
    for line in ldd.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            resolved[m.group(1)] = m.group(2)
    readelf = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True,
                             text=True).stdout
    return resolved, set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", readelf))


def owners(paths):
    """Path -> Debian package, trying each path as given, resolved and across the merged /usr
    (dpkg records a library under /lib or /usr/lib, whichever its package ships)."""
    candidates = {}
    for p in paths:
        for c in {p, os.path.realpath(p)}:
            for variant in {c, c.removeprefix("/usr"), "/usr" + c if not c.startswith("/usr") else c}:
                candidates.setdefault(variant, p)
    out = subprocess.run(["dpkg-query", "-S", *sorted(candidates)], capture_output=True,
                         text=True).stdout
    owner = {}
    for line in out.splitlines():
        pkgs, _, path = line.partition(": ")
        if path in candidates and "," not in pkgs:
            owner.setdefault(candidates[path], pkgs.split(":")[0])
    return owner


def main():
    if not shutil.which("dpkg-query") or not os.path.exists(DPKG_STATUS):
        print("SKIP: no dpkg database on this machine")
        return 77
    bin_dir = sys.argv[1]
    listed = []
    for line in open(LIST):
        listed += line.split("#")[0].split()
    packages, provides = installed_packages()
    base = closure([p for p, v in packages.items() if v["essential"]] + ["apt"], packages, provides)
    with_deps = closure(listed, packages, provides)

    problems, warnings = [], []
    for p in listed:
        if p not in packages:
            problems.append(f"{LIST}: {p} is not a package installed here (misspelt?)")
    libraries = {}  # path -> (soname, binaries linking it directly)
    for name in BINARIES:
        binary = os.path.join(bin_dir, name)
        if not os.access(binary, os.X_OK):
            problems.append(f"{binary} is missing: build it first")
            continue
        resolved, needed = linked_libraries(binary)
        for soname in needed - resolved.keys():
            problems.append(f"{name}: {soname} is not found by ldd")
        for soname, path in resolved.items():
            entry = libraries.setdefault(path, (soname, set()))
            if soname in needed:
                entry[1].add(name)
    owner = owners(libraries)
    used = set()
    missing = {}  # package -> (its sonames, binaries linking one of them directly)
    for path, (soname, direct_users) in sorted(libraries.items(), key=lambda x: x[1][0]):
        pkg = owner.get(path)
        if pkg is None:
            problems.append(f"{soname} ({path}) belongs to no Debian package")
            continue
        used.add(pkg)
        if pkg in base or (pkg in with_deps and not direct_users) or pkg in listed:
            continue
        sonames, users = missing.setdefault(pkg, ([], set()))
        sonames.append(soname)
        users |= direct_users
    for pkg, (sonames, users) in sorted(missing.items()):
        why = (f"linked directly by {' and '.join(sorted(users))}" if users
               else "no listed package depends on it")
        problems.append(f"missing from {LIST}: {pkg} (provides {', '.join(sonames)}; {why})")
    for p in listed if libraries else []:
        if p in packages and p not in used:
            warnings.append(f"{LIST}: {p} provides no library sparrowd or sparrow links")
    for w in warnings:
        print(f"WARN {w}")
    for p in problems:
        print(f"FAIL {p}")
    print(f"runtime packages: {len(libraries)} libraries from {len(used)} packages "
          f"({len(used & base)} in the base image), {len(listed)} listed, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
