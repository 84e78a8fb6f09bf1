#!/usr/bin/env bash
# End-to-end checks of the remote `sparrow` subcommands against real sparrowd processes that
# this script starts: upload, submit, watch, status, list, cancel, model get, predict JOB and
# health, each with its happy path, its --json output (valid JSON only, the documented keys)
# and its error paths with their exit codes (0 ok, 1 job failed/cancelled, 2 usage or input,
# 3 server or connection); bearer tokens and tenant isolation; and a `watch` that survives a
# graceful (SIGTERM) and a hard (SIGKILL) restart of sparrowd on the same port, seeing every
# event exactly once.
# Usage: remote_cli_test.sh BIN_DIR   (run from the repository root)
set -u
bin="$1/sparrow"
sparrowd="$1/sparrowd"
py=/usr/bin/python3
[[ -x $py ]] || py=python3
tmp=$(mktemp -d)
pids=()  # every process started in the background, killed on exit

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait_exit "$p" 5; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 143" TERM INT  # still clean up (the EXIT trap)

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() {  # check DESCRIPTION COMMAND...: passes when the command succeeds
  local what=$1
  shift
  if "$@"; then ok; else bad "$what"; fi
}
checkx() {  # checkx DESCRIPTION 'SHELL CONDITION': passes when the condition (eval'd) holds
  if eval "$2"; then ok; else bad "$1"; fi
}

# Every CLI call is bounded: nothing here may hang the test run.
sp() { timeout 40 "$bin" "$@"; }

# expect CODE NEEDLE command...: the exit code and a substring of stdout+stderr.
expect() {
  local code=$1 needle=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]]; then bad "$* -> exit $rc, want $code: $out"; return; fi
  if [[ -n "$needle" && "$out" != *"$needle"* ]]; then bad "$* -> missing '$needle' in: $out"; return; fi
  ok
}

# run command...: stdout in $tmp/out, stderr in $tmp/err, the exit code in $rc.
run() {
  "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
}

# expect_json CODE KEY... -- command...: exit code, and stdout is exactly one JSON object
# holding the keys (a copy stays in $tmp/out for further checks).
expect_json() {
  local code=$1
  shift
  local keys=()
  while [[ $1 != -- ]]; do keys+=("$1"); shift; done
  shift
  run "$@"
  if [[ $rc -ne $code ]]; then bad "$* -> exit $rc, want $code: $(cat "$tmp/out" "$tmp/err")"; return; fi
  if "$py" - "$tmp/out" "${keys[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert isinstance(d, dict), "not an object: %r" % (d,)
for k in sys.argv[2:]:
    assert k in d, "no key %r in %r" % (k, d)
PY
  then ok; else bad "$* -> stdout is not one JSON object with ${keys[*]}: $(cat "$tmp/out")"; fi
}

# jget FILE EXPR: evaluates a Python expression over d = the JSON in FILE.
jget() { "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# check_events FILE FIRST_SEQ FINAL_STATE [MIN_RESUMES]: FILE holds one JSON event per line,
# with the seqs FIRST_SEQ, FIRST_SEQ+1, ... each exactly once and in order, ending with the
# STATE event of FINAL_STATE (and at least MIN_RESUMES "resumed" RUNNING events).
cat > "$tmp/check_events.py" <<'PY'
import json, sys
path, first, final = sys.argv[1], int(sys.argv[2]), sys.argv[3]
min_resumes = int(sys.argv[4]) if len(sys.argv) > 4 else 0
events = []
for n, line in enumerate(open(path), 1):
    e = json.loads(line)
    assert isinstance(e, dict), "line %d is not an object" % n
    assert "seq" in e and "kind" in e, "line %d: %r" % (n, e)
    if e["kind"] == "ITERATION":
        assert "iteration" in e and "loss" in e, "line %d: %r" % (n, e)
    events.append(e)
assert events, "no events"
seqs = [int(e["seq"]) for e in events]
want = list(range(first, first + len(seqs)))
if seqs != want:
    dup = sorted({s for s in seqs if seqs.count(s) > 1})
    missing = sorted(set(range(first, max(seqs) + 1)) - set(seqs))
    raise SystemExit("seqs not dense from %d: duplicates %s, missing %s" % (first, dup[:10], missing[:10]))
last = events[-1]
assert last["kind"] == "STATE" and last["state"] == final, "last event %r, want %s" % (last, final)
for e in events[:-1]:
    assert not (e["kind"] == "STATE" and e["state"] in ("SUCCEEDED", "FAILED", "CANCELLED")), \
        "final state before the end: %r" % e
resumes = sum(1 for e in events if e["kind"] == "STATE" and e["state"] == "RUNNING"
              and "resumed" in e.get("reason", ""))
assert resumes >= min_resumes, "%d resumed events, want >= %d" % (resumes, min_resumes)
print(seqs[-1])
PY
check_events() { "$py" "$tmp/check_events.py" "$@"; }
events_ok() { check_events "$@" > /dev/null; }

# alive PID: the process exists and is not a zombie.
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ -n $st && $st != Z ]]
}
# wait_exit PID SECONDS: waits for a background child to end (SIGKILL after SECONDS); sets
# exit_status and forgets the pid. Not in $(...): only this shell can wait for its children.
wait_exit() {
  local pid=$1 i keep=()
  for ((i = 0; i < $2 * 10; i++)); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then
    { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
  else
    wait "$pid" 2>/dev/null
  fi
  exit_status=$?
  for i in "${pids[@]}"; do [[ $i == "$pid" ]] || keep+=("$i"); done
  pids=("${keep[@]}")
}
# wait_lines FILE N SECONDS: until FILE has at least N lines.
wait_lines() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    [[ -f $1 && $(wc -l < "$1") -ge $2 ]] && return 0
    sleep 0.1
  done
  return 1
}
# wait_state JOB STATE SECONDS: until `status JOB` says STATE.
wait_state() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    sp status "$1" --json > "$tmp/ws.json" 2>/dev/null && [[ $(jget "$tmp/ws.json" 'd["state"]') == "$2" ]] && return 0
    sleep 0.1
  done
  return 1
}

# wait_attempt JOB N SECONDS: until `status JOB` says RUNNING in attempt N (or later).
wait_attempt() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    sp status "$1" --json > "$tmp/ws.json" 2>/dev/null &&
      [[ $(jget "$tmp/ws.json" 'd["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") or d["state"] == "RUNNING" and int(d.get("attempts", 0)) >= '"$2") == True ]] && return 0
    sleep 0.1
  done
  return 1
}

# start_sparrowd LOG LISTEN ARGS...: starts sparrowd, waits (bounded) for its
# "sparrowd: listening on HOST:PORT" line; sets server_pid and server_addr.
start_sparrowd() {
  local log=$1 listen=$2 i
  shift 2
  : > "$log"
  # Every iteration an event: the restart checks count them.
  "$sparrowd" --listen "$listen" --http-listen 127.0.0.1:0 --min-event-interval-ms 0 "$@" > "$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  server_addr=""
  for ((i = 0; i < 150; i++)); do
    server_addr=$(sed -n 's/^sparrowd: listening on //p' "$log")
    [[ -n $server_addr ]] && return 0
    alive "$server_pid" || break
    sleep 0.1
  done
  echo "FATAL: sparrowd did not start ($listen): $(cat "$log")"
  exit 1
}

started_ms=$(($(date +%s%N) / 1000000))
elapsed() { printf '%d.%ds' $((($(date +%s%N) / 1000000 - started_ms) / 1000)) $((($(date +%s%N) / 1000000 - started_ms) % 1000 / 100)); }
section() { echo "[$(elapsed)] $*"; }

# --- help texts: every subcommand has an example ------------------------------------------
section "help texts"
for cmd in upload submit watch status list cancel model "model get" predict health run datagen; do
  # shellcheck disable=SC2086
  expect 0 "Example" sp $cmd --help
done

# --- data and specs ------------------------------------------------------------------------
expect 0 "wrote 600 samples" sp datagen cascaded-tanks --samples 600 -o "$tmp/tanks.csv"
# spec FILE OPTIMIZER STOPPING: a NARX MLP on the tanks data
spec() {
  cat > "$1" <<JSON
{
  "name": "remote-e2e",
  "data": {"csv_path": "$tmp/tanks.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 400}], "test": [{"first": 401, "last": 600}]},
  "model": {"narx_mlp": {"input_lags": 2, "output_lags": 2, "hidden": [${HIDDEN:-8}]}},
  "optimizer": $2,
  "stopping": $3,
  "seed": 1
}
JSON
}
spec "$tmp/quick.json" '{"adam": {"learning_rate": 0.01}}' '{"max_epochs": 200, "report_every": 10}'
# Long jobs: bounded by wall time, not by epochs, so they last as long on a loaded machine.
HIDDEN="64, 64" spec "$tmp/long.json" '{"adam": {"learning_rate": 0.001}}' \
  '{"max_epochs": 100000000, "max_seconds": 20, "report_every": 10, "stall_epochs": -1}'
HIDDEN="64, 64" spec "$tmp/restart.json" '{"adam": {"learning_rate": 0.001}}' \
  '{"max_epochs": 100000000, "max_seconds": 10, "report_every": 10, "stall_epochs": -1}'
sed 's/"learning_rate": 0.01/"learning_rate": -1/' "$tmp/quick.json" > "$tmp/bad_option.json"
sed 's/"inputs": \["u"\]/"inputs": ["v"]/' "$tmp/quick.json" > "$tmp/bad_column.json"
sed 's/"stopping"/"stoping"/' "$tmp/quick.json" > "$tmp/bad_field.json"
sed 's/"max_epochs": 200/"max_epochs": 300/' "$tmp/quick.json" > "$tmp/quick300.json"
sed 's|"csv_path": "[^"]*"|"csv_path": "/nonexistent/tanks.csv"|' "$tmp/quick.json" > "$tmp/elsewhere.json"
sed 's|"csv_path": "[^"]*", ||' "$tmp/quick.json" > "$tmp/nodata.json"
sed 's/"adam": {"learning_rate": 0.01}/"sgd": {"learning_rate": 1e30}/' "$tmp/quick.json" > "$tmp/diverge.json"
printf 'u,y\n1,2\nNaN,3\n4,5\n' > "$tmp/nan.csv"
printf 'u,y\n1,2\n3,4,5\n' > "$tmp/ragged.csv"
cut -d, -f1 "$tmp/tanks.csv" > "$tmp/only_u.csv"
cut -d, -f2 "$tmp/tanks.csv" > "$tmp/only_y.csv"
mkdir "$tmp/adir"

# --- no server: every remote command exits 3 ------------------------------------------------
section "no-server commands (in the background)"
# Each takes ~3 s (5 attempts with backoff), so they run in the background meanwhile.
dead=127.0.0.1:1
dead_names=()
dead_case() {  # dead_case NAME ARGS...
  local name=$1
  shift
  ( SPARROW_ADDR=$dead SPARROW_TOKEN='' timeout 40 "$bin" "$@" > "$tmp/dead.$name.out" 2> "$tmp/dead.$name.err"
    echo $? > "$tmp/dead.$name.rc" ) &
  pids+=($!)
  dead_names+=("$name")
}
dead_case health_flag health --server "$dead" --json
dead_case upload upload "$tmp/tanks.csv"
dead_case submit submit "$tmp/quick.json"
dead_case watch watch job-0000000000000000
dead_case status status job-0000000000000000 --json
dead_case list list
dead_case cancel cancel job-0000000000000000
dead_case model model get job-0000000000000000 -o "$tmp/dead.json"
dead_case predict predict job-0000000000000000 --input "$tmp/tanks.csv"
dead_pids=("${pids[@]}")

# --- server A: one worker (so a second job waits in the queue) ------------------------------
section "server A: upload, submit, watch, status, model get, predict, cancel, list"
start_sparrowd "$tmp/a1.log" 127.0.0.1:0 --data-dir "$tmp/a" --workers 1
a_pid=$server_pid
export SPARROW_ADDR=$server_addr
export SPARROW_TOKEN=

# health
expect 0 "serving" sp health
expect_json 0 status server -- sp health --json
check "health --json status" [ "$(jget "$tmp/out" 'd["status"]')" == SERVING ]

# upload: twice (the second finds it), missing file, NaN, directory, empty
expect_json 0 dataset_id already_existed rows size_bytes columns -- sp upload "$tmp/tanks.csv" --json
dataset=$(jget "$tmp/out" 'd["dataset_id"]')
check "first upload: already_existed false" [ "$(jget "$tmp/out" 'd["already_existed"]')" == False ]
check "upload: rows" [ "$(jget "$tmp/out" 'd["rows"]')" == 600 ]
check "dataset id is the SHA-256" [ "$dataset" == "$(sha256sum < "$tmp/tanks.csv" | cut -d' ' -f1)" ]
expect_json 0 dataset_id already_existed -- sp upload "$tmp/tanks.csv" --json
check "second upload: already_existed true" [ "$(jget "$tmp/out" 'd["already_existed"]')" == True ]
check "second upload: same id" [ "$(jget "$tmp/out" 'd["dataset_id"]')" == "$dataset" ]
run sp upload "$tmp/tanks.csv"
check "upload prints the id alone on stdout" [ $rc -eq 0 -a "$(cat "$tmp/out")" == "$dataset" ]
expect 0 "already on the server" sp upload "$tmp/tanks.csv"
expect 2 "cannot read the dataset" sp upload "$tmp/missing.csv"
expect 0 "" sp upload "$tmp/nan.csv"  # values are read by the job that selects them
expect 2 "line 3" sp upload "$tmp/ragged.csv"
expect 2 "directory" sp upload "$tmp/adir"
: > "$tmp/empty.csv"
expect 2 "empty" sp upload "$tmp/empty.csv"
expect 2 "" sp upload  # no file

# submit
expect_json 0 job_id state dataset_id -- sp submit "$tmp/quick.json" --json
job1=$(jget "$tmp/out" 'd["job_id"]')
check "submit --json dataset_id" [ "$(jget "$tmp/out" 'd["dataset_id"]')" == "$dataset" ]
expect 0 "succeeded" sp submit "$tmp/elsewhere.json" --data "$tmp/tanks.csv" --watch
expect 2 "cannot read --data" sp submit "$tmp/quick.json" --data "$tmp/missing.csv"
expect 2 "--data '$tmp/ragged.csv': " sp submit "$tmp/quick.json" --data "$tmp/ragged.csv"
# A record file the server cannot read is named by its field.
head -1 "$tmp/tanks.csv" > "$tmp/header_only.csv"
"$py" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
s = json.load(open(tmp + "/quick.json"))
s.setdefault("split", {}).pop("test", None)
s["test_data"] = {"csv_path": tmp + "/header_only.csv"}
json.dump(s, open(tmp + "/header_test.json", "w"))
PY
expect 2 "test_data.csv_path '$tmp/header_only.csv': " sp submit "$tmp/header_test.json"
sed "s|\"data\": {|\"data\": {\"dataset_id\": \"$dataset\", |" "$tmp/nodata.json" > "$tmp/by_id.json"
expect 0 "" sp submit "$tmp/by_id.json" --priority 3
expect 2 "has no data" sp submit "$tmp/nodata.json"
run sp submit "$tmp/quick.json" --watch
checkx "submit --watch: exit 0 and the final state ($rc: $(cat "$tmp/out" "$tmp/err"))" \
  '[[ $rc -eq 0 && $(cat "$tmp/out") == *"succeeded: finished"* ]]'
run sp submit "$tmp/quick.json" --watch --json
check "submit --watch --json: exit 0 ($rc)" [ $rc -eq 0 ]
head -1 "$tmp/out" > "$tmp/submit_head.json"
tail -n +2 "$tmp/out" > "$tmp/submit_events.json"
check "submit --watch --json: first line has job_id" [ -n "$(jget "$tmp/submit_head.json" 'd["job_id"]')" ]
check "submit --watch --json: one event per line" events_ok "$tmp/submit_events.json" 1 SUCCEEDED
expect 2 "optimizer.adam.learning_rate" sp submit "$tmp/bad_option.json"
expect 2 "unknown column 'v'" sp submit "$tmp/bad_column.json"
expect 2 "stoping" sp submit "$tmp/bad_field.json"
expect 2 "cannot read the job spec" sp submit "$tmp/missing.json"
expect 2 "directory" sp submit "$tmp/adir"
run sp submit "$tmp/quick.json" --request-id e2e-retry-1
r1=$(cat "$tmp/out")
run sp submit "$tmp/quick.json" --request-id e2e-retry-1
check "--request-id twice: same job ($r1 vs $(cat "$tmp/out"))" [ $rc -eq 0 -a -n "$r1" -a "$(cat "$tmp/out")" == "$r1" ]
expect 2 "request_id" sp submit "$tmp/quick300.json" --request-id e2e-retry-1
run sp submit "$tmp/diverge.json" --watch
checkx "a diverging job fails: exit 1 ($rc: $(cat "$tmp/out" "$tmp/err"))" \
  '[[ $rc -eq 1 && $(cat "$tmp/out") == *"failed: the loss became"* ]]'

# watch a finished job
wait_state "$job1" SUCCEEDED 20 || bad "job $job1 did not succeed"
expect_json 0 state last_seq -- sp status "$job1" --json
last1=$(jget "$tmp/out" 'int(d["last_seq"])')
run sp watch "$job1"
check "watch: exit 0 ($rc)" [ $rc -eq 0 ]
check "watch: every state event" grep -q "^\[1\] queued: submitted" "$tmp/out"
check "watch: running" grep -q "^\[2\] running: started" "$tmp/out"
check "watch: the final event" grep -q "^\[$last1\] succeeded: finished" "$tmp/out"
check "watch: iterations" grep -q "^iter 200/200" "$tmp/out"
run sp watch "$job1" --json
check "watch --json: exit 0 ($rc)" [ $rc -eq 0 ]
check "watch --json: seqs 1..$last1 once each" [ "$(check_events "$tmp/out" 1 SUCCEEDED)" == "$last1" ]
run sp watch "$job1" --json --after 5
check "watch --after 5: exit 0 ($rc)" [ $rc -eq 0 ]
check "watch --after 5: seqs 6..$last1" [ "$(check_events "$tmp/out" 6 SUCCEEDED)" == "$last1" ]
run sp watch "$job1" --after 2
checkx "watch --after 2 (text): no early events" \
  '[[ $rc -eq 0 ]] && ! grep -q "^\[[12]\]" "$tmp/out" && grep -q "succeeded" "$tmp/out"'
expect 2 "--after" sp watch "$job1" --after -1
expect 2 "not found" sp watch job-0000000000000000
expect 2 "" sp watch  # no job

# status
expect 0 "succeeded" sp status "$job1"
expect 0 "metrics: train_rmse" sp status "$job1"  # a finished job's model metrics
expect_json 0 id state spec history metrics -- sp status "$job1" --json
check "status --json state" [ "$(jget "$tmp/out" 'd["state"]')" == SUCCEEDED ]
check "status --json metrics" [ "$(jget "$tmp/out" '"train_rmse" in d["metrics"]')" == True ]
expect 2 "not found" sp status job-0000000000000000
run sp status job-0000000000000000 --json
check "status --json error: nothing on stdout" [ $rc -eq 2 -a ! -s "$tmp/out" ]

# model get and predict of the finished job
expect 0 "written to" sp model get "$job1" -o "$tmp/model.json"
check "model.json is a model" [ "$(jget "$tmp/model.json" 'len(d["parameters"]) > 0')" == True ]
expect 0 "binary protobuf model of $job1 (a name ending in .json writes JSON) written to" \
  sp model get "$job1" -o "$tmp/model.txt"
expect_json 0 job_id file bytes format -- sp model get "$job1" -o "$tmp/model.pb" --json
check "model get --json: protobuf" [ "$(jget "$tmp/out" 'd["format"]')" == protobuf ]
check "model.pb size" [ "$(jget "$tmp/out" 'd["bytes"]')" == "$(stat -c %s "$tmp/model.pb")" ]
run sp predict "$job1" --input "$tmp/tanks.csv"
remote_pred=$(cat "$tmp/out")
checkx "predict JOB: BFR ($rc: $remote_pred $(cat "$tmp/err"))" '[[ $rc -eq 0 && $remote_pred == "predicted 600 samples: BFR"* ]]'
run sp predict --local --model "$tmp/model.json" --input "$tmp/tanks.csv"
check "predict --local model.json = predict JOB ($(cat "$tmp/out") vs $remote_pred)" [ $rc -eq 0 -a "$(cat "$tmp/out")" == "$remote_pred" ]
run sp predict --local --model "$tmp/model.pb" --input "$tmp/tanks.csv"
check "predict --local model.pb = predict JOB ($(cat "$tmp/out") vs $remote_pred)" [ $rc -eq 0 -a "$(cat "$tmp/out")" == "$remote_pred" ]
expect 0 "predicted 600 samples: BFR" sp predict "$job1" --input "$tmp/tanks.csv" --one-step
expect_json 0 samples bfr rmse file -- sp predict "$job1" --input "$tmp/tanks.csv" --one-step --json -o "$tmp/pred.csv"
check "predict -o: header and rows" [ "$(head -1 "$tmp/pred.csv")" == y_pred -a "$(wc -l < "$tmp/pred.csv")" -eq 601 ]
expect 2 "the file has no measured outputs (y)" sp predict "$job1" --input "$tmp/only_u.csv"
expect 2 "unknown column 'u'" sp predict "$job1" --input "$tmp/only_y.csv"
expect 2 "NaN" sp predict "$job1" --input "$tmp/nan.csv"
expect 2 "cannot read --input" sp predict "$job1" --input "$tmp/missing.csv"
expect 2 "exclude each other" sp predict "$job1" --input "$tmp/tanks.csv" --one-step --simulate
expect 2 "not found" sp predict job-0000000000000000 --input "$tmp/tanks.csv"
expect 2 "name a job" sp predict --input "$tmp/tanks.csv"
expect 2 "not found" sp model get job-0000000000000000 -o "$tmp/x.json"
expect 2 "cannot write" sp model get "$job1" -o "$tmp/no/such/dir/model.json"
expect 2 "" sp model get "$job1"  # no -o

# images: upload --images/--labels (packed), submit on the image dataset, predict --images
"$py" - "$tmp" <<'PY'
import gzip, struct, sys
tmp = sys.argv[1]
pix, lab = bytearray(), bytearray()
for i in range(90):  # 90 images of 4 x 4 in 3 classes: row `label` bright
    label = i % 3
    for r in range(4):
        for c in range(4):
            pix.append(200 + 10 * c if r == label else (7 * i + c) % 30)
    lab.append(label)
with gzip.open(tmp + "/img.gz", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 90, 4, 4) + pix)
with open(tmp + "/lab", "wb") as f:
    f.write(struct.pack(">II", 0x801, 90) + lab)
PY
expect_json 0 dataset_id rows image_shape -- sp upload --images "$tmp/img.gz" --labels "$tmp/lab" --name tiny --json
img_dataset=$(jget "$tmp/out" 'd["dataset_id"]')
check "upload --images: rows" [ "$(jget "$tmp/out" 'd["rows"]')" == 90 ]
check "upload --images: shape" [ "$(jget "$tmp/out" 'd["image_shape"]')" == "[1, 4, 4]" ]
expect 0 "90 images of 1 x 4 x 4" sp upload --images "$tmp/img.gz" --labels "$tmp/lab"
expect 2 "--images names 1 image files and --labels 0" sp upload --images "$tmp/img.gz"
expect 2 "not both" sp upload "$tmp/tanks.csv" --images "$tmp/img.gz" --labels "$tmp/lab"
img_spec() {  # img_spec FILE LAST: an mlp classifier on the image dataset, test rows 61-LAST
  cat > "$1" <<JSON
{"data": {"dataset_id": "$img_dataset"},
 "split": {"train": [{"first": 1, "last": 60}], "test": [{"first": 61, "last": $2}]},
 "model": {"mlp": {"hidden": [6]}}, "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
 "optimizer": {"lbfgs": {}}, "stopping": {"max_epochs": 60}, "seed": 2}
JSON
}
img_spec "$tmp/img_ok.json" 90
img_spec "$tmp/img_range.json" 91
expect 2 "split.test" sp submit "$tmp/img_range.json"
run sp submit "$tmp/img_ok.json" --watch
img_job=$(head -1 "$tmp/out")
check "submit on images: succeeded ($rc $(tail -2 "$tmp/out"))" [ $rc -eq 0 ]
expect 0 "1 0 " sp predict "$img_job" --images "$tmp/img.gz"
expect 0 "1 0 " sp predict --model "$img_job" --images "$tmp/img.gz"
expect_json 0 images -- sp predict "$img_job" --images "$tmp/img.gz" --json
check "predict --images --json: 90 images" [ "$(jget "$tmp/out" 'len(d["images"])')" == 90 ]
expect 2 "not trained as a classifier" sp predict "$job1" --images "$tmp/img.gz"

# cancel: a running job and a queued one behind it (one worker)
expect 2 "already succeeded" sp cancel "$job1"
expect 2 "not found" sp cancel job-0000000000000000
long=$(sp submit "$tmp/long.json")
queued=$(sp submit "$tmp/quick.json")
wait_state "$long" RUNNING 20 || bad "job $long did not start"
expect 2 "is running" sp model get "$long" -o "$tmp/x.json"
expect 2 "is running" sp predict "$long" --input "$tmp/tanks.csv"
expect 2 "is queued" sp model get "$queued" -o "$tmp/x.json"
expect_json 0 state -- sp status "$queued" --json
check "second job waits in the queue" [ "$(jget "$tmp/out" 'd["state"]')" == QUEUED ]
expect_json 0 id state -- sp cancel "$queued" --json
check "cancel of a queued job: CANCELLED at once" [ "$(jget "$tmp/out" 'd["state"]')" == CANCELLED ]
expect 1 "cancelled" sp watch "$queued"
for ((i = 0; i < 200; i++)); do  # a finished iteration, so that the job has a model to keep
  sp status "$long" --json > "$tmp/ws.json" 2>/dev/null &&
    [[ $(jget "$tmp/ws.json" 'int(d.get("iterations", 0))') -ge 1 ]] && break
  sleep 0.1
done
expect 0 "cancelling" sp cancel "$long"
run sp watch "$long" --json
check "watch of a cancelled job: exit 1 ($rc)" [ $rc -eq 1 ]
check "watch of a cancelled job: ends with CANCELLED, seqs dense" events_ok "$tmp/out" 1 CANCELLED
expect 2 "already" sp cancel "$long"
expect 1 "cancelled" sp watch "$long"
# The cancelled running job keeps the model it had reached, marked; the queued one has none.
expect 0 "note: the run did not finish (cancelled)" sp model get "$long" -o "$tmp/partial.json"
expect_json 0 partial termination epochs -- sp model get "$long" -o "$tmp/partial.pb" --json
check "model get --json of a cancelled job: partial" [ "$(jget "$tmp/out" 'd["partial"]')" == True ]
expect 0 "model: partial (the one reached after" sp status "$long"
expect 2 "is cancelled and kept no model" sp model get "$queued" -o "$tmp/x.json"
# Warm starts: from the cancelled job by its id, and from its model file (sent inline).
HIDDEN="64, 64" spec "$tmp/warm.json" '{"adam": {"learning_rate": 0.001}}' '{"max_epochs": 20}'
sed 's|"stopping"|"warm_start": {"job_id": "'"$long"'"}, "stopping"|' "$tmp/warm.json" > "$tmp/warm_id.json"
sed 's|"stopping"|"warm_start": {"model_path": "'"$tmp/partial.json"'"}, "stopping"|' "$tmp/warm.json" > "$tmp/warm_file.json"
expect 0 "succeeded" sp submit "$tmp/warm_id.json" --watch
expect 0 "succeeded" sp submit "$tmp/warm_file.json" --watch
sed 's|"job_id": "[^"]*"|"job_id": "job-0000000000000000"|' "$tmp/warm_id.json" > "$tmp/warm_none.json"
expect 2 "warm_start.job_id: job job-0000000000000000 not found" sp submit "$tmp/warm_none.json"
sed 's|"stopping"|"warm_start": {"job_id": "'"$long"'"}, "stopping"|' "$tmp/quick.json" > "$tmp/warm_narrow.json"
expect 1 "parameter blocks" sp submit "$tmp/warm_narrow.json" --watch

# list
expect 0 "$job1" sp list
expect 0 "JOB                    STATE        ITER LOSS" sp list  # a header over the columns
expect 0 "TEST" sp list
expect 0 "metrics: train_rmse" sp watch "$job1"  # an ended job's fit
expect 0 "(partial)" sp list  # the cancelled job's model
expect_json 0 jobs -- sp list --json
check "list --json: the test metric of $job1" [ "$(jget "$tmp/out" \
  "[j['test'] for j in d['jobs'] if j['job_id'] == '$job1'][0].startswith('rmse ')")" == True ]
expect_json 0 jobs next_page_token -- sp list --json
all_jobs=$(jget "$tmp/out" 'len(d["jobs"])')
check "list --json: the documented keys of each job" [ "$(jget "$tmp/out" \
  'all(set(j) >= {"job_id", "name", "state", "iterations", "loss", "reason"} for j in d["jobs"])')" == True ]
expect_json 0 jobs -- sp list --state succeeded --json
check "list --state succeeded: only succeeded, $job1 among them" "$py" - "$tmp/out" "$job1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["jobs"] and all(j["state"] == "SUCCEEDED" for j in d["jobs"]), d
assert sys.argv[2] in [j["job_id"] for j in d["jobs"]]
PY
expect_json 0 jobs -- sp list --state cancelled --json
check "list --state cancelled: the two cancelled jobs" \
  [ "$(jget "$tmp/out" 'sorted(j["job_id"] for j in d["jobs"])')" == "$(jget "$tmp/out" "sorted(['$long', '$queued'])")" ]
expect_json 0 jobs next_page_token -- sp list --json --page-size 1
token1=$(jget "$tmp/out" 'd["next_page_token"]')
first_id=$(jget "$tmp/out" 'd["jobs"][0]["job_id"]')
check "list --page-size 1: one job and a next page" [ "$(jget "$tmp/out" 'len(d["jobs"])')" == 1 -a -n "$token1" ]
expect_json 0 jobs -- sp list --json --page-size 1000 --page-token "$token1"
check "list --page-token: the rest ($all_jobs jobs in all)" \
  [ "$(jget "$tmp/out" 'len(d["jobs"])')" == $((all_jobs - 1)) -a "$(jget "$tmp/out" "'$first_id' not in [j['job_id'] for j in d['jobs']]")" == True ]
expect 2 "not a job state" sp list --state bogus
expect 2 "page_size" sp list --page-size -1

# --- watch across restarts of sparrowd: SIGTERM, then SIGKILL, same data dir and port ------
section "watch across a SIGTERM and a SIGKILL restart"
# A fixed port that the kernel never hands out by itself (below the ephemeral range), so no
# other process can take it in the moments sparrowd is down. (sparrowd binds with
# SO_REUSEPORT: a second server on the same port would silently get half the connections.)
port=$("$py" - <<'PY'
import random, socket
lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
ports = [p for p in range(20000, 32768) if not lo <= p <= hi] or list(range(20000, 65536))
random.shuffle(ports)
for p in ports[:500]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        print(p)
        break
    except OSError:
        pass
    finally:
        s.close()
PY
)
[[ -n $port ]] || { echo "FATAL: no free port below the ephemeral range"; exit 1; }
# one_listener: nothing but our sparrowd listens on the port (when `ss` is there to tell).
one_listener() {
  command -v ss > /dev/null || return 0
  [[ $(ss -Hltn "sport = :$port" | wc -l) -eq 1 ]]
}
kill -TERM "$a_pid"
wait_exit "$a_pid" 15
check "sparrowd exits 0 on SIGTERM ($exit_status)" [ "$exit_status" == 0 ]
start_sparrowd "$tmp/a2.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 1
a_pid=$server_pid
export SPARROW_ADDR=$server_addr
check "restart: one listener on $port" one_listener
check "restart: the server listens where asked" [ "$server_addr" == "127.0.0.1:$port" ]
expect 0 "succeeded" sp status "$job1"  # the store kept the earlier jobs
restart=$(sp submit "$tmp/restart.json")
timeout 90 "$bin" watch "$restart" --json > "$tmp/restart_watch.json" 2> "$tmp/restart_watch.err" &
watch_pid=$!
pids+=("$watch_pid")
if wait_lines "$tmp/restart_watch.json" 20 20; then ok; else bad "restart: no events before the SIGTERM"; fi
kill -TERM "$a_pid"
wait_exit "$a_pid" 15
check "sparrowd exits 0 on SIGTERM, mid-job ($exit_status)" [ "$exit_status" == 0 ]
check "the watch outlives the server" alive "$watch_pid"
start_sparrowd "$tmp/a3.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 1
a_pid=$server_pid
check "restart: one listener on $port" one_listener
# SIGKILL once the job runs again (its second attempt); the watch needs not have caught up:
# at the end it must have seen every event once, both resumptions included.
if wait_attempt "$restart" 2 30; then ok; else bad "restart: the job did not resume after the graceful restart"; fi
check "the job is still running after the graceful restart" [ "$(jget "$tmp/ws.json" 'd["state"]')" == RUNNING ]
{ kill -KILL "$a_pid"; wait "$a_pid"; } 2>/dev/null  # together, or bash reports "Killed"
wait_exit "$a_pid" 5
start_sparrowd "$tmp/a4.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 1
a_pid=$server_pid
check "restart: one listener on $port" one_listener
wait_exit "$watch_pid" 60
check "restart: the watch exits 0 when the job succeeds ($exit_status)" [ "$exit_status" == 0 ]
expect_json 0 state attempts last_seq -- sp status "$restart" --json
restart_last=$(jget "$tmp/out" 'int(d["last_seq"])')
check "restart: the job ran 3 attempts" [ "$(jget "$tmp/out" 'd["attempts"]')" == 3 ]
check "restart: every seq 1..$restart_last exactly once, in order ($(cat "$tmp/restart_watch.err"))" \
  [ "$(check_events "$tmp/restart_watch.json" 1 SUCCEEDED 2)" == "$restart_last" ]
expect 0 "$restart" sp list --state succeeded

# A CNN job on the image dataset survives a SIGKILL of sparrowd: it resumes from its checkpoint,
# streams every progress event once, and its model classifies the uploaded images.
cat > "$tmp/cnn.json" <<JSON
{"data": {"dataset_id": "$img_dataset"},
 "split": {"train": [{"first": 1, "last": 60}], "test": [{"first": 61, "last": 90}]},
 "normalization": "NORMALIZATION_NONE",
 "model": {"cnn": {"layers": [{"conv": {"filters": 4, "padding": 1}}, {"max_pool": {}},
                              {"flatten": {"size": 16}}, {"dense": {"units": 8}}]},
           "init": "torch"},
 "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
 "optimizer": {"adam": {"learning_rate": 0.01, "batch": {"batch_size": 16, "threads": 2}}},
  "stopping": {"max_epochs": 100000000, "max_seconds": 6, "report_every": 10, "stall_epochs": -1}, "seed": 3}
JSON
cnn=$(sp submit "$tmp/cnn.json")
timeout 90 "$bin" watch "$cnn" --json > "$tmp/cnn_watch.json" 2> "$tmp/cnn_watch.err" &
watch_pid=$!
pids+=("$watch_pid")
if wait_lines "$tmp/cnn_watch.json" 20 30; then ok; else bad "cnn: no progress before the SIGKILL"; fi
sleep 1.5  # past --checkpoint-min-seconds, so a checkpoint exists
{ kill -KILL "$a_pid"; wait "$a_pid"; } 2>/dev/null
wait_exit "$a_pid" 5
start_sparrowd "$tmp/a5.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 1
a_pid=$server_pid
wait_exit "$watch_pid" 60
check "cnn: the watch exits 0 when the resumed job succeeds ($exit_status)" [ "$exit_status" == 0 ]
expect_json 0 state attempts last_seq -- sp status "$cnn" --json
cnn_last=$(jget "$tmp/out" 'int(d["last_seq"])')
check "cnn: the job ran 2 attempts" [ "$(jget "$tmp/out" 'd["attempts"]')" == 2 ]
check "cnn: every seq 1..$cnn_last exactly once, in order ($(cat "$tmp/cnn_watch.err"))" \
  [ "$(check_events "$tmp/cnn_watch.json" 1 SUCCEEDED 1)" == "$cnn_last" ]
expect_json 0 images -- sp predict "$cnn" --images "$tmp/img.gz" --json
check "cnn: predicts the 3 classes of the 90 images, 80 % or more right" \
  [ "$(jget "$tmp/out" 'sum(p["class"] == (p["index"] - 1) % 3 for p in d["images"]) >= 72')" == True ]

# --- a sweep on sparrowd: 4 seeds, 2 at a time, across a SIGKILL --------------------------
section "a sweep across a SIGKILL"
"$py" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
s = json.load(open(tmp + "/restart.json"))
s["split"] = {"train": [{"first": 1, "last": 300}], "validation": [{"first": 301, "last": 400}],
              "test": [{"first": 401, "last": 600}]}
s["stopping"]["max_seconds"] = 6
s["sweep"] = {"seeds": 4}
json.dump(s, open(tmp + "/sweep.json", "w"))
PY
kill -TERM "$a_pid"
wait_exit "$a_pid" 15
start_sparrowd "$tmp/a6.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 2
a_pid=$server_pid
sweep=$(sp submit "$tmp/sweep.json")
timeout 120 "$bin" watch "$sweep" --json > "$tmp/sweep_watch.json" 2> "$tmp/sweep_watch.err" &
watch_pid=$!
pids+=("$watch_pid")
if wait_lines "$tmp/sweep_watch.json" 30 30; then ok; else bad "sweep: no trial events before the SIGKILL"; fi
sleep 1.5  # past --checkpoint-min-seconds, so the trials have checkpoints
{ kill -KILL "$a_pid"; wait "$a_pid"; } 2>/dev/null
wait_exit "$a_pid" 5
start_sparrowd "$tmp/a7.log" "127.0.0.1:$port" --data-dir "$tmp/a" --workers 2
a_pid=$server_pid
wait_exit "$watch_pid" 120
check "sweep: the watch exits 0 when the sweep succeeds ($exit_status: $(cat "$tmp/sweep_watch.err"))" [ "$exit_status" == 0 ]
check "sweep: the watch saw every seq once, trial events tagged" \
  [ -n "$(check_events "$tmp/sweep_watch.json" 1 SUCCEEDED)" -a \
    "$("$py" -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; it=[x for x in e if x["kind"]=="ITERATION"]; print(bool(it) and all(x.get("trial") in (0,1,2,3) for x in it))' "$tmp/sweep_watch.json")" == True ]
check "sweep: one TRIAL_END per trial across the SIGKILL" \
  [ "$("$py" -c 'import json,sys; e=[json.loads(l) for l in open(sys.argv[1])]; print(sorted(x.get("trial", 0) for x in e if x["kind"]=="TRIAL_END"))' "$tmp/sweep_watch.json")" == "[0, 1, 2, 3]" ]
expect_json 0 state trials chosen_trial -- sp status "$sweep" --json
cp "$tmp/out" "$tmp/sweep_status.json"
for t in 0 1 2 3; do
  sp status "$(jget "$tmp/sweep_status.json" "d['trials'][$t]['job_id']")" --json > "$tmp/trial$t.json"
done
check "sweep: 4 trials, each ended once, the first two resumed after the SIGKILL" "$py" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
d = json.load(open(tmp + "/sweep_status.json"))
assert d["state"] == "SUCCEEDED", d["state"]
assert [t["index"] for t in d["trials"]] == [0, 1, 2, 3], d["trials"]
assert all("sparsity_pct" in t["metrics"] for t in d["trials"]), d["trials"]
assert "the best validation_rmse" in d["reason"], d["reason"]
ids = set()
for t in range(4):
    j = json.load(open("%s/trial%d.json" % (tmp, t)))
    ids.add(j["id"])
    assert j["state"] == "SUCCEEDED" and j["parent_id"] == d["id"], j
    ends = [h for h in j["history"] if h["state"] in ("SUCCEEDED", "FAILED", "CANCELLED")]
    assert len(ends) == 1, j["history"]
    if t < 2:
        assert j["attempts"] == 2, (t, j["attempts"])
assert len(ids) == 4
val = [t["metrics"]["validation_rmse"] for t in d["trials"]]
assert d["chosen_trial"] == val.index(min(val)), (d["chosen_trial"], val)
PY
expect 0 "(chosen)" sp status "$sweep"
expect 0 "written to" sp model get "$sweep" -o "$tmp/sweep_model.json"
chosen_job=$(jget "$tmp/sweep_status.json" "d['trials'][d['chosen_trial']]['job_id']")
expect 0 "written to" sp model get "$chosen_job" -o "$tmp/chosen_model.json"
check "sweep: its model is the chosen trial's, and names it" "$py" - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
d = json.load(open(tmp + "/sweep_status.json"))
sweep = json.load(open(tmp + "/sweep_model.json"))
trial = sweep.pop("sweep_trial")
assert trial.get("index", 0) == d["chosen_trial"] and trial["trials"] == 4, trial
assert trial["label"] == d["trials"][d["chosen_trial"]]["label"], trial
assert sweep == json.load(open(tmp + "/chosen_model.json"))
PY
check "sweep: status --json leaves out the metrics it did not measure (no \"NaN\" strings)" \
  [ "$(grep -c '"NaN"' "$tmp/sweep_status.json")" == 0 ]
run sp list --json
cp "$tmp/out" "$tmp/sweep_list.json"
run sp list
cp "$tmp/out" "$tmp/sweep_list.txt"
check "sweep: list shows the sweep's chosen validation and its trials below it, indented" "$py" - "$tmp" "$sweep" <<'PY'
import json, sys
tmp, sweep = sys.argv[1], sys.argv[2]
d = json.load(open(tmp + "/sweep_status.json"))
jobs = {j["job_id"]: j for j in json.load(open(tmp + "/sweep_list.json"))["jobs"]}
parent = jobs[sweep]
assert parent["sweep"] is True and parent["parent_id"] is None, parent
assert parent["iterations"] is None and parent["sparsity_pct"] is not None, parent
chosen = d["trials"][d["chosen_trial"]]
assert abs(parent["best_validation_metric"] - chosen["metrics"]["validation_rmse"]) < 1e-9, parent
for t in d["trials"]:
    j = jobs[t["job_id"]]
    assert j["parent_id"] == sweep and j["trial_index"] == t.get("index", 0), j
lines = open(tmp + "/sweep_list.txt").read().splitlines()
at = [i for i, l in enumerate(lines) if l.startswith(sweep + " ")]
assert len(at) == 1, lines
below = [l.split()[0] for l in lines[at[0] + 1:at[0] + 5]]
assert below == ["%s-t%d" % (sweep, k) for k in range(4)], below
assert all(l.startswith("  ") for l in lines[at[0] + 1:at[0] + 5]), lines
assert lines[at[0]].split()[2:4] == ["-", "-"], lines[at[0]]  # ITER, LOSS
PY

# --- server B: bearer tokens and tenants ---------------------------------------------------
section "server B: tokens and tenants"
printf '# tokens of the e2e test\ntok-alice alice\n\ntok-bob bob\n' > "$tmp/tokens.txt"
start_sparrowd "$tmp/b.log" 127.0.0.1:0 --data-dir "$tmp/b" --workers 1 --tokens-file "$tmp/tokens.txt"
a_addr=$SPARROW_ADDR
export SPARROW_ADDR=$server_addr
unset SPARROW_TOKEN
expect 2 "token" sp list
expect 2 "token" sp upload "$tmp/tanks.csv"
expect 2 "token" sp submit "$tmp/quick.json"
expect 2 "token" sp status job-0000000000000000
expect 2 "not valid" sp list --token wrong-token
expect 0 "serving" sp health --token tok-alice
run sp submit "$tmp/quick.json" --token tok-alice --watch
alice_job=$(head -1 "$tmp/out")
check "tenant alice: submit --token --watch ($rc: $(cat "$tmp/out" "$tmp/err"))" [ $rc -eq 0 ]
SPARROW_TOKEN=tok-alice expect 0 "succeeded" sp status "$alice_job"
SPARROW_TOKEN=tok-bob expect 0 "succeeded" sp status "$alice_job" --token tok-alice  # --token wins
SPARROW_TOKEN=tok-alice expect 0 "$alice_job" sp list
SPARROW_TOKEN=tok-alice expect 0 "written to" sp model get "$alice_job" -o "$tmp/alice.json"
export SPARROW_TOKEN=tok-bob
expect 2 "not found" sp status "$alice_job"
expect 2 "not found" sp watch "$alice_job"
expect 2 "not found" sp cancel "$alice_job"
expect 2 "not found" sp model get "$alice_job" -o "$tmp/bob.json"
expect 2 "not found" sp predict "$alice_job" --input "$tmp/tanks.csv"
run sp list --json
checkx "tenant bob sees none of alice's jobs" '[[ $rc -eq 0 ]] && ! grep -q "$alice_job" "$tmp/out"'
# The dataset id is the content's hash, but bob must not learn that alice has the same bytes.
expect_json 0 dataset_id already_existed -- sp upload "$tmp/tanks.csv" --json
check "tenant bob: alice's dataset is not visible" [ "$(jget "$tmp/out" 'd["already_existed"]')" == False ]
export SPARROW_ADDR=$a_addr SPARROW_TOKEN=

# --- the no-server commands (started at the beginning) -----------------------------------------
section "no-server results"
for p in "${dead_pids[@]}"; do wait_exit "$p" 40; done
for name in "${dead_names[@]}"; do
  code=$(cat "$tmp/dead.$name.rc" 2>/dev/null)
  msg=$(cat "$tmp/dead.$name.err" 2>/dev/null)
  # health --json answers in JSON even then; the others print nothing on stdout.
  if [[ $name == health_flag ]]; then
    out_ok=$(/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["status"] == "UNREACHABLE" and d["code"] == "UNAVAILABLE" and d["server"] == sys.argv[2])' \
      "$tmp/dead.$name.out" "$dead" 2>&1)
  else
    out_ok=$([[ ! -s "$tmp/dead.$name.out" ]] && echo True)
  fi
  if [[ $code == 3 && $msg == *"cannot reach sparrowd at $dead"* && $out_ok == True ]]; then
    ok
  else
    bad "$name without a server: exit $code, want 3: $msg $(cat "$tmp/dead.$name.out" 2>/dev/null)"
  fi
done

if [[ $failed -gt 0 ]]; then  # for the CI log
  for f in "$tmp"/a?.log "$tmp"/b.log "$tmp"/restart_watch.err; do
    [[ -s $f ]] && { echo "--- ${f##*/} (last lines)"; tail -n 15 "$f"; }
  done
fi
echo "remote_cli: $passed passed, $failed failed in $(elapsed)"
[[ $failed -eq 0 ]]
