#!/usr/bin/env bash
# End-to-end: the SSE stream GET /api/v1/jobs/{id}/events resumes exactly across a SIGKILL and
# restart of sparrowd (same data dir and ports). The events read before the kill plus those read
# after the restart (with Last-Event-ID, and with ?after_seq=) are seqs 1, 2, 3, ... without gap
# or duplicate, the SUCCEEDED event last, equal to a replay from seq 0 and to events.csv.
# With SPARROW_E2E_STORE=postgres the store is on a PostgreSQL 15 server that the script starts
# (as the postgres user when run as root; skipped where postgresql-15 is missing), and the
# restarted sparrowd is the same replica (--replica-name), which resumes its job at once.
# Usage: sse_resume_test.sh BIN_DIR   (run from the repository root)
set -u
command -v curl > /dev/null || { echo "SKIP: curl is missing"; exit 77; }
bin="$1/sparrow"
sparrowd="$1/sparrowd"
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
pids=()  # every process started in the background, killed on exit

alive() {  # alive PID: the process exists and is not a zombie
  local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $st && $st != Z ]]
}
# wait_exit PID SECONDS: waits for a background child (SIGKILL after SECONDS); sets exit_status.
wait_exit() {
  local pid=$1 i keep=()
  for ((i = 0; i < $2 * 10; i++)); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null; else wait "$pid" 2>/dev/null; fi
  exit_status=$?
  for i in "${pids[@]}"; do [[ $i == "$pid" ]] || keep+=("$i"); done
  pids=("${keep[@]}")
}
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait_exit "$p" 5; done
  for p in ${orphans:-}; do alive "$p" && kill -KILL "$p"; done
  if [[ -n ${pgdir:-} ]]; then
    as_pg "$pgbin/pg_ctl -D $pgdir/data -m immediate stop" > /dev/null 2>&1
    rm -rf "$pgdir"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 143" TERM INT  # still clean up (the EXIT trap)

passed=0 failed=0
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() {  # check DESCRIPTION COMMAND...: passes when the command succeeds
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "PASS: $what"; else bad "$what"; fi
}
fatal() { echo "FAIL: $*"; for f in "$tmp"/d?.log; do echo "--- $f"; tail -n 15 "$f"; done; exit 1; }
started=$SECONDS

# --- the store: SQLite in the data dir, or PostgreSQL --------------------------------------
store_args=()
pgbin=/usr/lib/postgresql/15/bin
as_pg() { if [[ $(id -u) == 0 ]]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi; }
if [[ ${SPARROW_E2E_STORE:-sqlite} == postgres ]]; then
  [[ -x $pgbin/initdb ]] || { echo "SKIP: postgresql-15 is missing"; exit 77; }
  pgdir=$(mktemp -d /tmp/sparrow-e2e-pg.XXXXXX)
  [[ $(id -u) == 0 ]] && chown postgres "$pgdir"
  as_pg "$pgbin/initdb -D $pgdir/data -A trust -U postgres -E UTF8 --no-sync" > "$tmp/initdb.log" 2>&1 ||
    fatal "initdb: $(tail -n 5 "$tmp/initdb.log")"
  # No TCP: the socket is in $pgdir, so the port cannot collide with another server's.
  as_pg "$pgbin/pg_ctl -D $pgdir/data -l $pgdir/log -w -o '-p 5432 -k $pgdir -c listen_addresses=' start" \
    > /dev/null 2>&1 || fatal "PostgreSQL did not start: $(tail -n 5 "$pgdir/log")"
  store_args=(--store "postgresql:///postgres?host=$pgdir&port=5432&user=postgres"
    --replica-name e2e)
fi

# Two free ports below the ephemeral range: while sparrowd is down, no other process (e.g. a
# parallel test's sparrowd on port 0) is handed them.
read -r grpc_port http_port < <("$py" - <<'PY'
import random, socket
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
ports = [p for p in range(20000, 32768) if not lo <= p <= hi] or list(range(20000, 65536))
found = []
for p in random.sample(ports, min(500, len(ports))):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p)); found.append(p)
        except OSError:
            continue
    if len(found) == 2: break
print(*found)
PY
)
[[ -n ${http_port:-} ]] || fatal "no free ports"
http="http://127.0.0.1:$http_port/api/v1"
export SPARROW_ADDR=127.0.0.1:$grpc_port SPARROW_TOKEN=

# start_sparrowd LOG: starts sparrowd on the two ports, waits (bounded) for both its lines.
start_sparrowd() {
  local i
  "$sparrowd" --listen "$SPARROW_ADDR" --http-listen "127.0.0.1:$http_port" --data-dir "$tmp/data" \
    "${store_args[@]}" --workers 1 --min-event-interval-ms 0 --checkpoint-every 5 \
    --checkpoint-min-seconds 0 > "$1" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for ((i = 0; i < 150; i++)); do
    grep -q "^sparrowd: listening on $SPARROW_ADDR" "$1" &&
      grep -q "^sparrowd: dashboard on http://127.0.0.1:$http_port/" "$1" && return 0
    alive "$server_pid" || break
    sleep 0.1
  done
  fatal "sparrowd did not start on $SPARROW_ADDR and $http_port: $(cat "$1")"
}
# events SSE_FILE: the complete events (ended by a blank line) of an SSE capture as JSON lines,
# checking that every id: equals the data's seq. A partial last event (cut by the kill) is
# dropped, as EventSource does.
events() {
  "$py" - "$1" <<'PY'
import json, sys
for frame in open(sys.argv[1]).read().split("\n\n")[:-1]:
    f = {}
    for line in frame.split("\n"):
        if line and not line.startswith(":"):
            k, _, v = line.partition(":")
            f[k] = v[1:] if v.startswith(" ") else v
    if "data" not in f: continue  # retry:, keep-alive
    e = json.loads(f["data"])
    assert int(f["id"]) == e["seq"], "id %s but seq %s" % (f["id"], e["seq"])
    print(json.dumps(e, sort_keys=True))
PY
}
# dense FILE: JSON events with seqs 1, 2, 3, ... once each, the final SUCCEEDED state event
# last (and only there), and one RUNNING event "resumed ... from the checkpoint at iteration K"
# followed by iteration K + 1.
dense() {
  "$py" - "$1" <<'PY'
import json, re, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
seqs = [e["seq"] for e in ev]
if seqs != list(range(1, len(seqs) + 1)):
    dup = sorted({s for s in seqs if seqs.count(s) > 1})
    missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
    sys.exit("seqs not 1..n: duplicates %s, missing %s" % (dup[:10], missing[:10]))
final = [i for i, e in enumerate(ev) if e.get("state") in ("SUCCEEDED", "FAILED", "CANCELLED")]
assert final == [len(ev) - 1] and ev[-1]["kind"] == "STATE" and ev[-1]["state"] == "SUCCEEDED", \
    "final state events at %s of %d: %r" % (final, len(ev), ev[-1])
r = [i for i, e in enumerate(ev) if e.get("state") == "RUNNING" and "resumed" in e.get("reason", "")]
assert len(r) == 1, "want one resumed RUNNING event, got %s" % r
k = int(re.search(r"checkpoint at iteration (\d+)", ev[r[0]]["reason"]).group(1))
assert ev[r[0] + 1].get("iteration") == k + 1, "resumed at %d, then %r" % (k, ev[r[0] + 1])
PY
}

# --- a job of ~6 s, an event per epoch ------------------------------------------------------
timeout 30 "$bin" datagen cascaded-tanks --samples 600 -o "$tmp/tanks.csv" > /dev/null || fatal "datagen"
cat > "$tmp/job.json" <<JSON
{
  "name": "sse-resume-e2e",
  "data": {"csv_path": "$tmp/tanks.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 400}], "test": [{"first": 401, "last": 600}]},
  "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [64, 64]}},
  "optimizer": {"adam": {"learning_rate": 0.001}},
  "stopping": {"max_epochs": 100000000, "max_seconds": 6, "report_every": 1, "stall_epochs": -1},
  "seed": 1
}
JSON
start_sparrowd "$tmp/d1.log"
job=$(timeout 40 "$bin" submit "$tmp/job.json" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["job_id"])')
[[ -n $job ]] || fatal "submit"
echo "job $job, gRPC $grpc_port, HTTP $http_port"

# --- read the stream, SIGKILL sparrowd mid-job ---------------------------------------------
timeout 60 curl -sN "$http/jobs/$job/events" > "$tmp/pre.sse" &
pre_pid=$! && pids+=("$pre_pid")
for ((i = 0; i < 200; i++)); do [[ $(events "$tmp/pre.sse" 2>/dev/null | wc -l) -ge 60 ]] && break; sleep 0.1; done
orphans=$(pgrep -P "$server_pid")  # the job's worker process
[[ -n $orphans ]] || bad "no worker process of sparrowd before the kill"
{ kill -KILL "$server_pid"; wait "$server_pid"; } 2>/dev/null  # together, or bash reports "Killed"
wait_exit "$server_pid" 5
gone() { local p; for p in $orphans; do alive "$p" && return 1; done; return 0; }
for ((i = 0; i < 50; i++)); do gone && break; sleep 0.1; done
check "the worker process ($orphans) ends with the killed sparrowd" gone
wait_exit "$pre_pid" 10
events "$tmp/pre.sse" > "$tmp/pre.json" || fatal "the stream before the kill: $(tail -c 300 "$tmp/pre.sse")"
last=$("$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["seq"])' "$tmp/pre.json")
check "before the kill: >= 60 events, none final (last id $last)" \
  "$py" -c 'import sys; l = open(sys.argv[1]).read(); sys.exit(l.count("\n") < 60 or "SUCCEEDED" in l)' "$tmp/pre.json"

# --- restart on the same ports and data dir; resume two ways -------------------------------
start_sparrowd "$tmp/d2.log"
timeout 60 curl -sN -H "Last-Event-ID: $last" "$http/jobs/$job/events" > "$tmp/post_header.sse" &
h_pid=$! && pids+=("$h_pid")
timeout 60 curl -sN "$http/jobs/$job/events?after_seq=$last" > "$tmp/post_param.sse" &
q_pid=$! && pids+=("$q_pid")
wait_exit "$h_pid" 60
check "Last-Event-ID stream ends by itself (curl exit $exit_status)" [ "$exit_status" == 0 ]
wait_exit "$q_pid" 60
check "after_seq stream ends by itself (curl exit $exit_status)" [ "$exit_status" == 0 ]
for how in header param; do
  { cat "$tmp/pre.json"; events "$tmp/post_$how.sse"; } > "$tmp/union_$how.json"
  check "pre + post ($how): seqs 1..n once each, SUCCEEDED last, resumed" dense "$tmp/union_$how.json"
done
check "both resumed streams have the same events" cmp -s "$tmp/union_header.json" "$tmp/union_param.json"

# --- after the job: a replay from 0, the CSV and the job agree -------------------------------
timeout 30 curl -sN "$http/jobs/$job/events?after_seq=0" > "$tmp/full.sse"
check "replay from after_seq=0 ends by itself" [ $? == 0 ]
events "$tmp/full.sse" > "$tmp/full.json"
check "replay from 0 equals pre + post" cmp -s "$tmp/full.json" "$tmp/union_header.json"
timeout 30 curl -sf "$http/jobs/$job/events.csv" > "$tmp/events.csv"
check "events.csv: the same seqs, kinds and states" "$py" - "$tmp/events.csv" "$tmp/full.json" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ev = [json.loads(l) for l in open(sys.argv[2])]
got = [(int(r["seq"]), r["kind"], r["state"]) for r in rows]
want = [(e["seq"], e["kind"], e.get("state", "")) for e in ev]
assert got == want, "csv has %d rows, stream %d events; first difference %s" % (
    len(got), len(want), next(((a, b) for a, b in zip(got, want) if a != b), None))
PY
timeout 30 curl -sf "$http/jobs/$job" > "$tmp/job_view.json"
check "the job: SUCCEEDED, 2 attempts, last_seq = the stream's last" "$py" - "$tmp/job_view.json" "$tmp/full.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
n = sum(1 for _ in open(sys.argv[2]))
assert (s["state"], int(s["attempts"]), int(s["last_seq"])) == ("SUCCEEDED", 2, n), (s, n)
PY

echo "sse_resume (${SPARROW_E2E_STORE:-sqlite}): $(wc -l < "$tmp/full.json") events, killed after seq $last; $passed passed, $failed failed in $((SECONDS - started)) s"
[[ $failed -eq 0 ]] || { for f in "$tmp"/d?.log; do echo "--- $f"; tail -n 15 "$f"; done; exit 1; }
echo "PASS: sse_resume"
