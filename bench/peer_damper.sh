#!/usr/bin/env bash
# Trains the NAILS MR-damper RNN with AMSGrad by full BPTT twice in the same invocation: with
# Sparrow (`sparrow run --local examples/damper_adam.json`) and with the PyTorch peer
# ../shared/peers/damper_rnn_torch.py, both single-threaded for the same number of epochs, and
# prints ms per epoch, test BFR and the ratio torch/ours as a table and as one JSON line.
#
# Usage: bench/peer_damper.sh [--epochs N] [--build-dir DIR]     (defaults: 200, build)
# Exits 0 with a message when the peer cannot run (no torch in /usr/bin/python3, no ../shared/data).
# PEER_PYTHON overrides the interpreter of the peer (default /usr/bin/python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EPOCHS=200
BUILD_DIR="${BUILD_DIR:-build}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) EPOCHS="$2"; shift 2 ;;
    --epochs=*) EPOCHS="${1#*=}"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --build-dir=*) BUILD_DIR="${1#*=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "peer_damper.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$EPOCHS" =~ ^[1-9][0-9]*$ ]]; then
  echo "peer_damper.sh: --epochs must be a positive integer, got '$EPOCHS'" >&2
  exit 2
fi

cd "$ROOT"
[[ "$BUILD_DIR" = /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
PY="${PEER_PYTHON:-/usr/bin/python3}"  # Debian's python3-torch; the pyenv python3 first on PATH has no torch
SPEC="$ROOT/examples/damper_adam.json"
PEER="$ROOT/../shared/peers/damper_rnn_torch.py"
DATA="$ROOT/../shared/data/mr_damper/mrdamper.csv"
SPARROW="$BUILD_DIR/bin/sparrow"

skip() {
  echo "peer_damper: skipped: $*"
  exit 0
}
[[ -d "$ROOT/../shared/data" ]] || skip "../shared/data is missing"
[[ -f "$DATA" ]] || skip "$DATA is missing"
[[ -f "$PEER" ]] || skip "$PEER is missing"
[[ -x "$PY" ]] || skip "$PY not found"
"$PY" -c 'import torch' >/dev/null 2>&1 || skip "$PY cannot import torch (apt install python3-torch)"
if [[ ! -x "$SPARROW" ]]; then
  echo "peer_damper.sh: $SPARROW not found; build first (cmake --build $BUILD_DIR)" >&2
  exit 1
fi

TMP_SPEC="$(mktemp --suffix=.json)"
trap 'rm -f "$TMP_SPEC"' EXIT
"$PY" - "$SPEC" "$TMP_SPEC" "$EPOCHS" "$DATA" <<'EOF'
import json, sys
src, dst, epochs, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
spec = json.load(open(src))
spec["stopping"]["max_epochs"] = epochs
spec["data"]["csv_path"] = data
# The peer weighs x0 like theta (0.5 rho / N with rho_x = 1): use the same objective here.
spec["regularization"]["rho_x0"] = 1.0
json.dump(spec, open(dst, "w"), indent=2)
EOF

echo "peer_damper: MR damper RNN, AMSGrad, full BPTT, $EPOCHS epochs, 1 thread each" >&2
echo "peer_damper: sparrow ..." >&2
OURS="$("$SPARROW" run --local "$TMP_SPEC" --threads 1 --json)"
echo "peer_damper: pytorch ($PEER) ..." >&2
TORCH="$(OMP_NUM_THREADS=1 "$PY" "$PEER" --data "$DATA" --amsgrad --epochs "$EPOCHS" --threads 1)"

"$PY" - "$OURS" "$TORCH" "$EPOCHS" <<'EOF'
import datetime, json, sys
ours, torch, epochs = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
if ours.get("epochs") != epochs or torch.get("epochs") != epochs:
    sys.exit(f"peer_damper: epoch mismatch: ours {ours.get('epochs')} torch {torch.get('epochs')} "
             f"requested {epochs}")
o_ms, t_ms = float(ours["ms_per_epoch"]), float(torch["ms_per_epoch"])
rows = [("sparrow", o_ms, ours.get("train_bfr"), ours.get("test_bfr")),
        (f"pytorch {torch.get('torch', '?')}", t_ms, torch.get("bfr_train"), torch.get("bfr_test"))]
fmt = lambda v: "-" if v is None else f"{v:.2f}"
print(f"{'MR damper, AMSGrad, ' + str(epochs) + ' epochs':<32} {'ms/epoch':>10} {'train BFR':>10} {'test BFR':>10}")
for name, ms, tr, te in rows:
    print(f"{name:<32} {ms:>10.3f} {fmt(tr):>10} {fmt(te):>10}")
ratio = t_ms / o_ms if o_ms > 0 else float("nan")
print(f"{'ratio torch/ours (ms/epoch)':<32} {ratio:>10.1f}")
print(json.dumps({
    "bench": "peer_damper", "date": datetime.date.today().isoformat(), "epochs": epochs,
    "threads": 1,
    "ours": {"ms_per_epoch": round(o_ms, 4), "train_bfr": ours.get("train_bfr"),
             "test_bfr": ours.get("test_bfr")},
    "torch": {"version": torch.get("torch"), "ms_per_epoch": t_ms, "train_bfr": torch.get("bfr_train"),
              "test_bfr": torch.get("bfr_test")},
    "ratio_torch_over_ours": round(ratio, 2)}))
EOF
