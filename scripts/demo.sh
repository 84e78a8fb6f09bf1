#!/usr/bin/env bash
# The quick start (`make demo`): a real sparrowd with its embedded store in a
# temporary directory, the demo data from Sparrow's own simulator, the demo job
# submitted and watched through the CLI (and live in the browser dashboard, whose
# URL it prints), the model fetched and run on held-out data, then the server
# stopped. The dashboard listens on SPARROW_DEMO_HTTP (default 127.0.0.1:8080;
# a free port when that one is taken). With SPARROW_DEMO_KEEP=1 the demo waits
# for Enter before stopping sparrowd, so the finished job can be browsed.
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

# start_sparrowd HTTP_LISTEN: starts sparrowd and waits until it listens; fails
# (returns 1) when sparrowd exits first, e.g. because the HTTP port is taken.
start_sparrowd() {
  "$bin/sparrowd" --listen 127.0.0.1:0 --http-listen "$1" --data-dir "$work/data" \
    --workers 2 --log-level warn >"$work/sparrowd.out" 2>"$work/sparrowd.log" &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q "dashboard on" "$work/sparrowd.out" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || { server_pid=""; return 1; }
    sleep 0.1
  done
  return 1
}

step "starting sparrowd (store in $work/data)"
if ! start_sparrowd "${SPARROW_DEMO_HTTP:-127.0.0.1:8080}"; then
  echo "($(cat "$work/sparrowd.log")) - trying a free port"
  start_sparrowd 127.0.0.1:0 || { cat "$work/sparrowd.log"; exit 3; }
fi
export SPARROW_ADDR="$(sed -n 's/^sparrowd: listening on //p' "$work/sparrowd.out")"
dashboard="$(sed -n 's/^sparrowd: dashboard on //p' "$work/sparrowd.out")"
"$bin/sparrow" health

step "generating the demo data: cascaded tanks (training record and a held-out one)"
mkdir -p build/demo
"$bin/sparrow" datagen cascaded-tanks --samples 2048 --seed 1 -o build/demo/cascaded_tanks.csv
"$bin/sparrow" datagen cascaded-tanks --samples 1024 --seed 2 -o "$work/heldout.csv"

step "sparrow submit examples/demo.json, then sparrow watch JOB"
job="$("$bin/sparrow" submit examples/demo.json --json | sed -n 's/.*"job_id": "\(.*\)".*/\1/p')"
echo "job $job: follow it live at ${dashboard}#/job/$job"
"$bin/sparrow" watch "$job"

step "sparrow model get $job -o build/demo/model.json"
"$bin/sparrow" model get "$job" -o build/demo/model.json

step "sparrow predict $job on a held-out record (seed 2, never trained on)"
"$bin/sparrow" predict "$job" --input "$work/heldout.csv" -o build/demo/heldout_pred.csv

if [[ "${SPARROW_DEMO_KEEP:-0}" == 1 ]]; then
  step "the dashboard stays at $dashboard: press Enter to stop sparrowd"
  read -r
fi

step "stopping sparrowd"
kill -TERM "$server_pid" && wait "$server_pid"
server_pid=""
echo "done: model in build/demo/model.json, predictions in build/demo/heldout_pred.csv"
