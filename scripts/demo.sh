#!/usr/bin/env bash
# The quick start (`make demo`): a real sparrowd with its embedded store in a
# temporary directory, the demo data from Sparrow's own simulator, the demo job
# submitted and watched through the CLI, the model fetched and run on held-out
# data, then the server stopped.
set -euo pipefail
bin="${1:-build/bin}"
work="$(mktemp -d -t sparrow-demo.XXXXXX)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" && wait "$server_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "starting sparrowd (store in $work/data)"
"$bin/sparrowd" --listen 127.0.0.1:0 --data-dir "$work/data" --workers 2 \
  --log-level warn >"$work/sparrowd.out" 2>"$work/sparrowd.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/sparrowd.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/sparrowd.log"; exit 3; }
  sleep 0.1
done
export SPARROW_ADDR="$(sed -n 's/^sparrowd: listening on //p' "$work/sparrowd.out")"
"$bin/sparrow" health

step "generating the demo data: cascaded tanks (training record and a held-out one)"
mkdir -p build/demo
"$bin/sparrow" datagen cascaded-tanks --samples 2048 --seed 1 -o build/demo/cascaded_tanks.csv
"$bin/sparrow" datagen cascaded-tanks --samples 1024 --seed 2 -o "$work/heldout.csv"

step "sparrow submit examples/demo.json, then sparrow watch JOB"
job="$("$bin/sparrow" submit examples/demo.json --json | sed -n 's/.*"job_id": "\(.*\)".*/\1/p')"
echo "job $job"
"$bin/sparrow" watch "$job"

step "sparrow model get $job -o build/demo/model.json"
"$bin/sparrow" model get "$job" -o build/demo/model.json

step "sparrow predict $job on a held-out record (seed 2, never trained on)"
"$bin/sparrow" predict "$job" --input "$work/heldout.csv" -o build/demo/heldout_pred.csv

step "stopping sparrowd"
kill -TERM "$server_pid" && wait "$server_pid"
server_pid=""
echo "done: model in build/demo/model.json, predictions in build/demo/heldout_pred.csv"
