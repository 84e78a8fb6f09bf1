#!/usr/bin/env bash
# Refactoring equivalence check (issue 16): runs the acceptance examples with two builds of
# `sparrow` and checks that every run gives the same results to the last printed digit.
#
# Usage: bench/equivalence.sh OLD_BIN_DIR NEW_BIN_DIR [--quick]
#   OLD_BIN_DIR / NEW_BIN_DIR hold a `sparrow` binary (a build directory with bin/sparrow works too).
#   Specs (the real examples, unchanged), each `sparrow run --local SPEC --seeds K --threads 2 --json`:
#     examples/damper_nails.json, examples/damper_nailm.json          seeds 1..10
#     examples/tanks_sbdl_onestep.json, examples/tanks_sbdl_sim.json  seeds 1..10
#     examples/bld_ccpp.json                                          seed 1
#   --quick: seeds 1..2 of the damper and tanks examples (same specs, same epochs), CCPP seed 1.
#   EQUIV_THREADS (default 2) and EQUIV_TANKS_SEEDS (default 10, quick 2) override the defaults.
# Prints a markdown table (spec, seed, epochs, final loss old/new, test metric old/new, same or
# DIFFERENT), a table of wall times, and exits 1 if any run differs or fails, 2 on a usage error,
# 0 when all agree or when ../shared/data is missing (skipped). Every field of each run in the
# --json output except the timings (seconds, ms_per_epoch) is compared as the printed text.
# The per-run JSON outputs are kept in a temporary directory whose path is printed at the end.
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }

QUICK=0
POS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "equivalence.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) POS+=("$1"); shift ;;
  esac
done
if [[ ${#POS[@]} -ne 2 ]]; then
  usage >&2
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# A directory holding sparrow, or a build directory holding bin/sparrow; printed absolute.
resolve_bin() {
  local d="$1"
  [[ "$d" = /* ]] || d="$PWD/$d"
  if [[ -x "$d/sparrow" ]]; then
    echo "$d/sparrow"
  elif [[ -x "$d/bin/sparrow" ]]; then
    echo "$d/bin/sparrow"
  else
    echo "equivalence.sh: no executable sparrow in $1 (or $1/bin)" >&2
    return 1
  fi
}
OLD_BIN="$(resolve_bin "${POS[0]}")" || exit 2
NEW_BIN="$(resolve_bin "${POS[1]}")" || exit 2

cd "$ROOT"  # the example specs name their data as ../shared/data/... relative to the repo root
if [[ ! -d ../shared/data ]]; then
  echo "equivalence: skipped: ../shared/data is missing"
  exit 0
fi

THREADS="${EQUIV_THREADS:-2}"
if [[ $QUICK -eq 1 ]]; then
  DAMPER_SEEDS=2
  TANKS_SEEDS="${EQUIV_TANKS_SEEDS:-2}"
else
  DAMPER_SEEDS=10
  TANKS_SEEDS="${EQUIV_TANKS_SEEDS:-10}"
fi
# spec name (examples/NAME.json), number of seeds (spec seed 1 .. K)
SPECS=(
  "damper_nails $DAMPER_SEEDS"
  "damper_nailm $DAMPER_SEEDS"
  "tanks_sbdl_onestep $TANKS_SEEDS"
  "tanks_sbdl_sim $TANKS_SEEDS"
  "bld_ccpp 1"
)

OUT="$(mktemp -d "${TMPDIR:-/tmp}/sparrow-equiv.XXXXXX")"
printf 'old\t%s\nnew\t%s\n' "$OLD_BIN" "$NEW_BIN" > "$OUT/binaries.tsv"
: > "$OUT/times.tsv"
echo "equivalence: old = $OLD_BIN, new = $NEW_BIN, --threads $THREADS$([[ $QUICK -eq 1 ]] && echo ', quick')" >&2
for entry in "${SPECS[@]}"; do
  read -r name seeds <<< "$entry"
  spec="examples/$name.json"
  for side in old new; do
    bin="$OLD_BIN"
    [[ $side = new ]] && bin="$NEW_BIN"
    start=$(date +%s.%N)
    rc=0
    "$bin" run --local "$spec" --seeds "$seeds" --threads "$THREADS" --json \
      > "$OUT/$name.$side.json" 2> "$OUT/$name.$side.stderr" || rc=$?
    end=$(date +%s.%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$seeds" "$side" "$secs" "$rc" >> "$OUT/times.tsv"
    echo "equivalence: $name ($seeds seed$([[ $seeds -gt 1 ]] && echo s)) $side: ${secs} s$([[ $rc -ne 0 ]] && echo ", FAILED (exit $rc)")" >&2
  done
done

status=0
python3 - "$OUT" <<'EOF' || status=$?
import json, os, sys

out = sys.argv[1]
# The test metric shown in the table (all fields are compared).
SHOWN = {"damper_nails": "test_bfr", "damper_nailm": "test_bfr",
         "tanks_sbdl_onestep": "test_one_step_rmse", "tanks_sbdl_sim": "test_rmse",
         "bld_ccpp": "test_rmse"}
TIMING = {"seconds", "ms_per_epoch"}  # differ from run to run; not compared


def load(path):
    # Numbers are kept as the exact text sparrow printed, so comparing them compares the
    # printed digits (nlohmann::json prints doubles as the shortest text that round-trips).
    try:
        with open(path) as f:
            d = json.load(f, parse_float=str, parse_int=str)
    except (OSError, ValueError):
        return None, None
    runs = d.get("runs", [d]) if isinstance(d, dict) else None
    return runs, d.get("data") if isinstance(d, dict) else None


def flat(x, prefix=""):
    """Leaf fields of a run as {path: text}."""
    if isinstance(x, dict):
        r = {}
        for k, v in x.items():
            r.update(flat(v, f"{prefix}.{k}" if prefix else k))
        return r
    if isinstance(x, list):
        r = {}
        for i, v in enumerate(x):
            r.update(flat(v, f"{prefix}[{i}]"))
        if not x:
            r[prefix] = "[]"
        return r
    return {prefix: str(x)}


def fmtf(a, b):
    return a if a == b else f"{a} → {b}"


times = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "times.tsv")) if l.strip()]
specs = []
for name, seeds, side, secs, rc in times:
    if name not in [s[0] for s in specs]:
        specs.append((name, int(seeds)))
rcs = {(n, side): int(rc) for n, _, side, _, rc in times}
secs = {(n, side): s for n, _, side, s, _ in times}

rows, notes, ms = [], [], {}
bad = 0
for name, seeds in specs:
    runs = {}
    data = {}
    for side in ("old", "new"):
        runs[side], data[side] = load(os.path.join(out, f"{name}.{side}.json"))
        if rcs[(name, side)] != 0 or runs[side] is None:
            err = open(os.path.join(out, f"{name}.{side}.stderr")).read().strip().splitlines()
            notes.append(f"- {name} {side}: run FAILED (exit {rcs[(name, side)]})"
                         + (f": {err[-1]}" if err else ""))
            runs[side] = None
        else:
            vals = [float(r["ms_per_epoch"]) for r in runs[side] if "ms_per_epoch" in r]
            ms[(name, side)] = sum(vals) / len(vals) if vals else float("nan")
    if runs["old"] is None or runs["new"] is None:
        rows.append(f"| {name} | all | | | | | | | FAILED |")
        bad += 1
        continue
    if flat(data["old"]) != flat(data["new"]):
        notes.append(f"- {name}: the data summary differs: {data['old']} → {data['new']}")
        bad += 1
    by_seed = {side: {r["seed"]: r for r in runs[side]} for side in ("old", "new")}
    metric = SHOWN.get(name, "test_rmse")
    for seed in sorted(set(by_seed["old"]) | set(by_seed["new"]), key=int):
        o, n = by_seed["old"].get(seed), by_seed["new"].get(seed)
        if o is None or n is None:
            rows.append(f"| {name} | {seed} | | | | | | | DIFFERENT (run missing) |")
            bad += 1
            continue
        fo = {k: v for k, v in flat(o).items() if k not in TIMING}
        fn = {k: v for k, v in flat(n).items() if k not in TIMING}
        diff = sorted(k for k in set(fo) | set(fn) if fo.get(k) != fn.get(k))
        same = not diff
        if not same:
            bad += 1
            shown = ", ".join(f"{k}: {fo.get(k, '(none)')} → {fn.get(k, '(none)')}" for k in diff[:8])
            notes.append(f"- {name} seed {seed}: {len(diff)} field(s) differ: {shown}"
                         + (", ..." if len(diff) > 8 else ""))
        for side, r in (("old", o), ("new", n)):
            if r.get("termination") == "deadline":
                notes.append(f"- {name} seed {seed} {side}: stopped at the time limit "
                             "(max_seconds), so its result depends on the machine's speed")
        rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            name, seed, fmtf(o.get("epochs", ""), n.get("epochs", "")),
            o.get("final_loss", ""), n.get("final_loss", ""), metric,
            o.get(metric, ""), n.get(metric, ""), "same" if same else "**DIFFERENT**"))

print("| spec | seed | epochs | final loss old | final loss new | test metric | old | new | result |")
print("|---|---:|---:|---:|---:|---|---:|---:|---|")
print("\n".join(rows))
print()
if notes:
    print("\n".join(notes))
    print()
print("| spec | seeds | wall s old | wall s new | mean ms_per_epoch old | mean ms_per_epoch new |")
print("|---|---:|---:|---:|---:|---:|")
for name, seeds in specs:
    m = [f"{ms[(name, s)]:.4g}" if (name, s) in ms else "-" for s in ("old", "new")]
    print(f"| {name} | {seeds} | {secs[(name, 'old')]} | {secs[(name, 'new')]} | {m[0]} | {m[1]} |")
print()
total = sum(1 for r in rows)
if bad:
    print(f"**DIFFERENT**: {bad} of {total} rows/checks differ or failed.")
    sys.exit(1)
print(f"All {total} runs are the same (every field but the timings, to the last printed digit).")
EOF
echo
echo "JSON outputs: $OUT"
exit "$status"
