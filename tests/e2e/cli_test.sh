#!/usr/bin/env bash
# End-to-end checks of the `sparrow` CLI: help texts, datagen, a small local run with --json,
# and every class of bad input giving a clear message and exit code 2 (never a crash).
# Usage: cli_test.sh BIN_DIR   (run from the repository root)
set -u
bin="$1/sparrow"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_exit CODE NEEDLE -- command...: the exit code and a substring of stdout+stderr.
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

# --- help with an example for every subcommand --------------------------------------------
expect 0 "Example" "$bin" --help
expect 0 "Example: sparrow run" "$bin" run --help
expect 0 "Example: sparrow datagen" "$bin" datagen --help
expect 2 "" "$bin" no-such-command
expect 2 "unknown subcommand 'trian'; did you mean 'run'?" "$bin" trian
expect 2 "unknown subcommand 'foo'; sparrow has run, datagen" "$bin" foo
expect 2 "unknown flag '--seed' for 'sparrow run'; did you mean '--seeds'?" "$bin" run --seed 3 x.json
expect 2 "unknown flag '--jsn' for 'sparrow model get'; did you mean '--json'?" "$bin" model get --jsn 1
expect 2 "unknown subcommand 'stat'; sparrow has run" "$bin" stat  # no fuzzy aliases
expect 2 "unknown subcommand 'train'; did you mean 'run'?" "$bin" train x.json
expect 2 "unknown flag '--server' for 'sparrow'; it belongs to 'sparrow health': put it after" \
  "$bin" --server 127.0.0.1:1 health
expect 2 "unknown flag '-s' for 'sparrow run'; it takes" "$bin" run -s x.json
expect 2 "--server: the address is empty: give HOST:PORT" "$bin" list --server ""  # not the default
expect 2 "unknown flag '---' for 'sparrow'" "$bin" ---  # all dashes: no crash
expect 2 "unknown flag '-' for 'sparrow'" "$bin" - run
expect 2 "" "$bin" datagen no-such-system -o "$tmp/x.csv"

# --- datagen -----------------------------------------------------------------------------
expect 0 '"samples": 600' "$bin" datagen cascaded-tanks --samples 600 --seed 3 -o "$tmp/tanks.csv" --json
expect 0 "wrote 300 samples" "$bin" datagen binary-system --samples 300 --noise 0.05 -o "$tmp/binary.csv"
[[ $(head -1 "$tmp/tanks.csv") == "u,y" ]] && ok || bad "tanks header: $(head -1 "$tmp/tanks.csv")"
[[ $(wc -l < "$tmp/tanks.csv") -eq 601 ]] && ok || bad "tanks rows"
expect 2 "noise" "$bin" datagen cascaded-tanks --noise -1 -o "$tmp/n.csv"

# --- a small local run ---------------------------------------------------------------------
spec() {  # spec FILE MODEL [EXTRA]: writes a spec for the tanks data
  cat > "$1" <<JSON
{
  "data": {"csv_path": "$tmp/tanks.csv", "inputs": ["u"], "outputs": ["y"]},
  "split": {"train": [{"first": 1, "last": 400}], "test": [{"first": 401, "last": 600}]},
  "model": $2,
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 20}${3:-}
}
JSON
}
spec "$tmp/ok.json" '{"state_space_rnn": {"nx": 2, "fx_hidden": [4], "fy_hidden": [4]}}'
out=$("$bin" run --local "$tmp/ok.json" --json 2>/dev/null)
rc=$?
if [[ $rc -eq 0 ]] && python3 - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
for k in ("train_rmse", "test_rmse", "train_bfr", "test_bfr", "sparsity_pct", "epochs", "seconds", "ms_per_epoch", "termination"):
    assert k in d, k
assert d["epochs"] <= 20
h = d["loss_history"]  # the progress records' loss, every run
assert len(h["iteration"]) == len(h["loss"]) == len(h["seconds"]) >= 1, h
assert h["iteration"][-1] == d["epochs"], h
PY
then ok; else bad "run --json: rc=$rc out=$out"; fi

out=$("$bin" run --local "$tmp/ok.json" --seeds 3 --threads 2 --json -o "$tmp/model.json" 2>/dev/null)
if python3 - "$out" "$tmp/model.json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert len(d["runs"]) == 3 and d["best_seed"] in [r["seed"] for r in d["runs"]]
for k in ("mean", "std", "median", "best"):
    assert k in d["summary"]["test_bfr"], k
m = json.load(open(sys.argv[2]))
assert len(m["parameters"]) > 0 and m["metrics"]["test_bfr"] == m["metrics"]["test_bfr"]
PY
then ok; else bad "run --seeds 3: $out"; fi
expect 0 "termination" "$bin" run --local "$tmp/ok.json"
# Several trials print a line as each ends (their epochs print none).
expect 0 "(2 of 2 trials done)" "$bin" run --local "$tmp/ok.json" --seeds 2
expect 2 "takes --local to say so: sparrow run --local $tmp/ok.json" "$bin" run "$tmp/ok.json"
expect 0 "termination" "$bin" run --local "$tmp/ok.json"

# A misspelt spec field, a bare string for a list, an enum by its short name.
spec_error() {  # spec_error SED_SCRIPT NEEDLE: ok.json edited by SED_SCRIPT is refused
  sed "$1" "$tmp/ok.json" > "$tmp/typo.json"
  expect 2 "$2" "$bin" run --local "$tmp/typo.json"
}
spec_error 's|"stopping"|"stoping"|' "stoping: unknown field 'stoping'; did you mean 'stopping'?"
spec_error 's|"inputs": \["u"\]|"inputs": "u"|' 'data.inputs: expected a list [...], got the string "u"'
spec_error 's|"nx": 2,|"nx": 2, "activation": "tanh",|' 'use "ACTIVATION_TANH"'

# A run whose memory estimate passes the limit is refused before it trains, the limit named:
# --max-memory here, else the machine's memory, ulimit -v or the container's limit.
expect 2 "of memory, mostly for" "$bin" run --local "$tmp/ok.json" --max-memory 0.01
expect 2 "is 10 MiB" "$bin" run --local "$tmp/ok.json" --max-memory 0.01
spec "$tmp/huge.json" '{"state_space_rnn": {"nx": 20000, "fx_hidden": [4], "fy_hidden": [4]}}'
sed -i 's|"lbfgs": {}|"nails": {}|' "$tmp/huge.json"  # 180k parameters: a 260 GB matrix
expect 2 "Gauss-Newton matrices" "$bin" run --local "$tmp/huge.json"

# --- SIGTERM (timeout, SLURM, Kubernetes) and SIGINT stop a local run with its results -----
spec "$tmp/long.json" '{"state_space_rnn": {"nx": 2, "fx_hidden": [4], "fy_hidden": [4]}}'
sed -i 's|"optimizer": {"lbfgs": {}}|"optimizer": {"adam": {}}|; s|"max_epochs": 20|"max_epochs": 10000000, "stall_epochs": -1|' \
  "$tmp/long.json"
for sig in TERM INT; do
  "$bin" run --local "$tmp/long.json" -o "$tmp/stopped_$sig.json" >"$tmp/stop.out" 2>"$tmp/stop.err" &
  pid=$!
  for _ in $(seq 100); do grep -q "epoch" "$tmp/stop.err" && break; sleep 0.1; done
  sleep 0.5
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  if [[ $rc -eq 1 ]] && grep -q "user_abort" "$tmp/stop.out" &&
     grep -q "stopped by SIG$sig" "$tmp/stop.err" && grep -q "eta " "$tmp/stop.err" &&
     grep -q "stopping at the end of the current iteration" "$tmp/stop.err" &&
     [[ $(grep "epoch" "$tmp/stop.err" | tail -1) != *"eta "* ]] &&  # the last epoch's line
     [[ $(grep "epoch" "$tmp/stop.err" | tail -1 | awk '{print $2}') == \
        $(awk 'NR == 2 {print $(NF-3)}' "$tmp/stop.out") ]] &&
     /usr/bin/python3 -c "import json, sys; m = json.load(open(sys.argv[1])); assert m['parameters']" \
       "$tmp/stopped_$sig.json"
  then ok; else bad "SIG$sig: rc=$rc out=$(cat "$tmp/stop.out") err=$(cat "$tmp/stop.err")"; fi
done

# Stopped while the data is read (a FIFO without a writer blocks there): said, nothing trained.
mkfifo "$tmp/fifo.csv"
sed "s|$tmp/tanks.csv|$tmp/fifo.csv|" "$tmp/long.json" > "$tmp/fifo.json"
"$bin" run --local "$tmp/fifo.json" >"$tmp/stop.out" 2>"$tmp/stop.err" &
pid=$!
sleep 2
kill -s TERM "$pid"
wait "$pid"
rc=$?
if [[ $rc -eq 143 ]] && grep -q "stopped before training started (while reading the data)" \
     "$tmp/stop.err"; then ok; else bad "SIGTERM while reading: rc=$rc err=$(cat "$tmp/stop.err")"; fi

# A stopped run's model says so.
if /usr/bin/python3 -c "import json, sys; m = json.load(open(sys.argv[1])); assert m['partial'] and m['termination'] == 'user_abort', m['termination']" \
     "$tmp/stopped_TERM.json"; then ok; else bad "the SIGTERM model is not marked partial"; fi

# --- warm start from a model file ----------------------------------------------------------
warm_spec() {  # warm_spec FILE SOURCE_JSON: ok.json starting from SOURCE_JSON
  sed 's|"stopping"|"warm_start": {"model_path": "'"$2"'"}, "stopping"|' "$tmp/ok.json" > "$1"
}
warm_spec "$tmp/warm.json" "$tmp/model.json"
cold=$("$bin" run --local "$tmp/ok.json" --json 2>/dev/null)
warm=$("$bin" run --local "$tmp/warm.json" --json 2>/dev/null)
if python3 - "$cold" "$warm" "$tmp/model.json" <<'PY'
import json, sys
cold, warm = json.loads(sys.argv[1]), json.loads(sys.argv[2])
start = json.load(open(sys.argv[3]))
# The warm run starts where the 20-epoch model ended: its first loss is below the cold run's,
# and it ends no worse than that model on the training data.
assert warm["loss_history"]["loss"][0] < cold["loss_history"]["loss"][0], (warm, cold)
assert warm["train_rmse"] <= start["metrics"]["train_rmse"] * (1 + 1e-9), (warm, start["metrics"])
PY
then ok; else bad "warm start: cold=$cold warm=$warm"; fi
sed 's|"fx_hidden": \[4\]|"fx_hidden": [5]|' "$tmp/warm.json" > "$tmp/warm_wide.json"
expect 2 "parameter blocks" "$bin" run --local "$tmp/warm_wide.json"
# A sweep some of whose trials fail (a width the warm start does not fit) still prints the
# sweep's JSON shape, with the failures; when every trial fails, {"runs": [], "failed": [...]}.
for widths in "[[4], [5]]" "[[5], [6]]"; do
  python3 - "$tmp/warm.json" "$tmp/warm_grid.json" "$widths" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["split"]["train"] = [{"first": 1, "last": 300}]
s["split"]["validation"] = [{"first": 301, "last": 400}]
s["sweep"] = {"grid": [{"field": "model.state_space_rnn.fx_hidden",
                        "values": json.loads(sys.argv[3])}]}
json.dump(s, open(sys.argv[2], "w"))
PY
  out=$("$bin" run --local "$tmp/warm_grid.json" --json 2>/dev/null)
  rc=$?
  if [[ $rc -eq 1 ]] && python3 - "$out" "$widths" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
every = sys.argv[2] == "[[5], [6]]"
assert len(d["failed"]) == (2 if every else 1), d
assert len(d["runs"]) == (0 if every else 1), d
if not every:
    assert d["runs"][0]["trial"] == 0 and d["chosen_trial"] == 0, d
PY
  then ok; else bad "sweep with failed trials $widths: rc=$rc out=$out"; fi
done
sed 's|"model_path": "[^"]*"|"job_id": "job-1"|' "$tmp/warm.json" > "$tmp/warm_job.json"
expect 2 "sparrow model get JOB -o model.json" "$bin" run --local "$tmp/warm_job.json"
warm_spec "$tmp/warm_missing.json" "$tmp/none.json"
expect 2 "none.json" "$bin" run --local "$tmp/warm_missing.json"

# --- the test split from its own file: the same numbers as the row ranges ---------------------
{ head -1 "$tmp/tanks.csv"; sed -n '402,601p' "$tmp/tanks.csv"; } > "$tmp/tanks_test.csv"
sed 's|, "test": \[{"first": 401, "last": 600}\]}|}, "test_data": {"csv_path": "'"$tmp"'/tanks_test.csv"}|' \
  "$tmp/ok.json" > "$tmp/record.json"
ranges=$("$bin" run --local "$tmp/ok.json" --json 2>/dev/null)
record=$("$bin" run --local "$tmp/record.json" --json 2>/dev/null)
if python3 - "$ranges" "$record" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert b["data"]["test_rows"] == 200, b["data"]
assert a["test_rmse"] == b["test_rmse"], (a["test_rmse"], b["test_rmse"])
PY
then ok; else bad "test_data: ranges=$ranges record=$record"; fi
sed 's|"csv_path": "[^"]*tanks_test.csv"|"dataset_id": "abc"|' "$tmp/record.json" > "$tmp/record_id.json"
expect 2 "test_data.csv_path is required for sparrow run --local" "$bin" run --local "$tmp/record_id.json"

# --- stages: Adam, then L-BFGS from where Adam ended ---------------------------------------
sed 's|"optimizer": {"lbfgs": {}},|"stages": [{"name": "warm-up", "optimizer": {"adam": {"learning_rate": 0.01}}, "stopping": {"max_epochs": 5}}, {"optimizer": {"lbfgs": {}}}],|' \
  "$tmp/ok.json" > "$tmp/staged.json"
out=$("$bin" run --local "$tmp/staged.json" --json 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert 5 < d["epochs"] <= 25, d["epochs"]
h = d["loss_history"]["iteration"]
assert h == sorted(h) and h[-1] == d["epochs"], h
PY
then ok; else bad "staged run: $out"; fi
expect 0 "warm-up (adam): max_iterations after 5; stage 2 (lbfgs)" "$bin" run --local "$tmp/staged.json"
sed 's|"stages"|"optimizer": {"adam": {}}, "stages"|' "$tmp/staged.json" > "$tmp/staged_both.json"
expect 2 "leave it unset when the spec has stages" "$bin" run --local "$tmp/staged_both.json"

# NAILM with an l1 penalty through ADMM: a sparse model, saved and run again by predict.
sed 's|"optimizer": {"lbfgs": {}}|"regularization": {"l1": {"tau": 2.0}}, "optimizer": {"nailm": {"admm_iterations": 15, "admm_rho": 10}}|' \
  "$tmp/ok.json" > "$tmp/sparse.json"
out=$("$bin" run --local "$tmp/sparse.json" --json -o "$tmp/sparse_model.json" 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert d["sparsity_pct"] > 0, d
assert d["epochs"] == 15, d
PY
then ok; else bad "nailm + l1: $out"; fi
expect 0 "predicted 600 samples: BFR" "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv"
cp "$tmp/tanks.csv" "$tmp/tanks_copy.csv"
expect 2 "is the input file: the predictions would overwrite the data" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks_copy.csv" -o "$tmp/./tanks_copy.csv"
cmp -s "$tmp/tanks.csv" "$tmp/tanks_copy.csv" && ok || bad "-o = --input changed the input"
expect 2 "sparrow writes this to a file, not to standard output" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv" -o -
[ ! -e ./- ] && ok || bad "-o - made a file named '-'"
expect 2 "is a file here, not a job id: to run a model file in this process, add --local" \
  "$bin" predict "$tmp/sparse_model.json" --input "$tmp/tanks.csv"
expect 2 "so the job id 'job-0123456789abcdef' would be ignored" \
  "$bin" predict job-0123456789abcdef --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv"
# The initial state: printed when estimated, given back it reproduces the run from the inputs
# alone; x0 = 0 needs no output column either.
cut -d, -f1 "$tmp/tanks.csv" > "$tmp/tanks_u.csv"
"$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv" --json \
  -o "$tmp/pred_est.csv" > "$tmp/pred_est.json" 2>&1
x0=$(python3 -c "import json, sys; print(','.join(repr(v) for v in json.load(open(sys.argv[1]))['x0']))" "$tmp/pred_est.json")
expect 0 "predicted 600 samples -> $tmp/pred_given.csv" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks_u.csv" --x0 "$x0" -o "$tmp/pred_given.csv"
cmp -s "$tmp/pred_est.csv" "$tmp/pred_given.csv" && ok || bad "--x0 of the estimate: other predictions"
expect 0 "initial state x0 = 0,0" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks_u.csv" --x0 zero
expect 2 "--x0 1,x: use estimate, zero" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks_u.csv" --x0 1,x
expect 2 "x0 has 1 values" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks_u.csv" --x0 0.5
expect 2 "--x0-samples -1: the initial state" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv" --x0-samples -1
expect 2 "--x0-samples 0: the initial state is estimated from at least 1 sample" \
  "$bin" predict --local --model "$tmp/sparse_model.json" --input "$tmp/tanks.csv" --x0-samples 0
cp "$tmp/tanks.csv" "$tmp/not_a_model.json"
expect 2 "not a sparrow.v1.TrainedModel" "$bin" predict --local --model "$tmp/not_a_model.json" --input "$tmp/tanks.csv"

# --- an mlp with a categorical input, rows with missing values and a random split ---------
python3 - "$tmp/cat.csv" <<'PY'
import math, sys
colors = ["red", "green", "blue"]
with open(sys.argv[1], "w") as f:
    f.write("u,color,y\n")
    for k in range(200):
        u = math.sin(0.1 * k)
        y = "NA" if k % 50 == 7 else "%.6f" % (u + k % 3)
        f.write("%.6f,%s,%s\n" % (u, colors[k % 3], y))
PY
cat > "$tmp/cat.json" <<JSON
{
  "data": {"csv_path": "$tmp/cat.csv", "inputs": ["u", "color"], "outputs": ["y"],
           "categorical": ["color"], "drop_missing": true},
  "split": {"test_fraction": 0.2, "shuffle_seed": 2024},
  "model": {"mlp": {"hidden": [4]}},
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 20}
}
JSON
out=$("$bin" run --local "$tmp/cat.json" --json -o "$tmp/cat_model.json" 2>/dev/null)
if python3 - "$out" "$tmp/cat_model.json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])["data"]
assert (d["file_rows"], d["dropped_rows"], d["train_rows"], d["test_rows"], d["inputs"]) == (200, 4, 157, 39, 4), d
m = json.load(open(sys.argv[2]))
assert m["input_scaling"]["names"] == ["u", "color=blue", "color=green", "color=red"], m["input_scaling"]
PY
then ok; else bad "categorical run --json: $out"; fi
expect 0 "196 of 200 rows (4 dropped for missing values); 157 train / 39 test; 4 inputs" \
  "$bin" run --local "$tmp/cat.json"
printf 'color,u\nblue,0.5\nred,-0.5\n' > "$tmp/cat_new.csv"
expect 0 "predicted 2 samples" "$bin" predict --local --model "$tmp/cat_model.json" --input "$tmp/cat_new.csv"
printf 'color,u\npurple,0.5\n' > "$tmp/cat_bad.csv"
expect 2 "which the model was not trained on" "$bin" predict --local --model "$tmp/cat_model.json" --input "$tmp/cat_bad.csv"
sed 's|"drop_missing": true|"drop_missing": false|' "$tmp/cat.json" > "$tmp/cat_nodrop.json"
expect 2 "missing value 'NA'" "$bin" run --local "$tmp/cat_nodrop.json"

# --- a model unstable in free run: said, not hidden ------------------------------------------
# 100 short traces that grow by 1.3 per step, then one long trace: the one-step ARX fit is
# right on the short ones, and its simulation of the long one overflows.
python3 - "$tmp/grow.csv" "$tmp/grow.json" <<'PY'
import json, random, sys
random.seed(1)
rows = []
for _ in range(100):
    y = random.uniform(0.005, 0.01)
    for _ in range(20):
        u = random.uniform(0, 0.01)
        rows.append((u, y))
        y = 1.3 * y + u
rows += [(random.uniform(0, 0.01), 0.01) for _ in range(3000)]
with open(sys.argv[1], "w") as f:
    f.write("u,y\n" + "".join("%r,%r\n" % r for r in rows))
json.dump({"data": {"csv_path": sys.argv[1], "inputs": ["u"], "outputs": ["y"],
                    "trace_starts": list(range(1, 2002, 20))},
           "split": {"train": [{"first": 1, "last": 5000}]},
           "model": {"narx_mlp": {"input_lags": 1, "output_lags": 1, "hidden": [4],
                                  "linear": True}},
           "optimizer": {"adam": {}}, "stopping": {"max_epochs": 3}},
          open(sys.argv[2], "w"))
PY
expect 0 "the free-run simulation of the training split is not finite" \
  "$bin" run --local "$tmp/grow.json" -o "$tmp/grow_model.json"
expect 2 "the prediction is not finite from sample" \
  "$bin" predict --local --model "$tmp/grow_model.json" --input "$tmp/grow.csv"
expect 2 "but this narx_mlp model starts from its measured output lags; leave it out" \
  "$bin" predict --local --model "$tmp/grow_model.json" --input "$tmp/grow.csv" --x0-samples 5

# --- bad inputs: clear message, exit 2 ------------------------------------------------------
csv_case() {  # csv_case NAME CONTENT NEEDLE
  printf "$2" > "$tmp/$1.csv"
  sed "s|$tmp/tanks.csv|$tmp/$1.csv|; s|\"last\": 400|\"last\": 2|; s|\"first\": 401, \"last\": 600|\"first\": 3, \"last\": 3|" \
    "$tmp/ok.json" > "$tmp/$1.json"
  expect 2 "$3" "$bin" run --local "$tmp/$1.json"
}
csv_case nonnumeric 'u,y\n1,2\n1,abc\n3,4\n' "line 3"
csv_case nan 'u,y\n1,2\nNaN,2\n3,4\n' "column 'u'"
csv_case inf 'u,y\n1,2\n1,inf\n3,4\n' "line 3"
csv_case missing 'u,y\n1,2\n1,\n3,4\n' "line 3"
csv_case ragged 'u,y\n1,2\n1,2,3,4\n3,4\n' "line 3"
csv_case empty '' "empty"
csv_case unknowncol 'a,b\n1,2\n1,2\n3,4\n' "'u'"

cp "$tmp/ok.json" "$tmp/unknown_field.json"
sed -i 's|"stopping"|"stoping"|' "$tmp/unknown_field.json"
expect 2 "stoping" "$bin" run --local "$tmp/unknown_field.json"

spec "$tmp/neg.json" '{"mlp": {"hidden": [8, -3]}}'
expect 2 "hidden[1] is -3" "$bin" run --local "$tmp/neg.json"

spec "$tmp/lag.json" '{"narx_mlp": {"input_lags": 500, "output_lags": 2, "hidden": [4]}}'
expect 2 "lag 500 is longer than the data" "$bin" run --local "$tmp/lag.json"

sed 's|"first": 401, "last": 600|"first": 401, "last": 900|' "$tmp/ok.json" > "$tmp/split.json"
expect 2 "split.test" "$bin" run --local "$tmp/split.json"

sed 's|"csv_path": "[^"]*"|"csv_path": "/nonexistent/data.csv"|' "$tmp/ok.json" > "$tmp/nofile.json"
expect 2 "cannot read data.csv_path '/nonexistent/data.csv'" "$bin" run --local "$tmp/nofile.json"
expect 2 "cannot read the job spec" "$bin" run --local "$tmp/does-not-exist.json"
echo '{ not json' > "$tmp/garbage.json"
expect 2 "not valid" "$bin" run --local "$tmp/garbage.json"
expect 2 "seeds" "$bin" run --local "$tmp/ok.json" --seeds 0

# --- images: IDX files (gzip'd) for a local run and predict --images ------------------------
# 90 images of 4 x 4 in 3 classes (row `label` bright), written by Debian's Python.
/usr/bin/python3 - "$tmp" <<'PY'
import gzip, struct, sys
tmp = sys.argv[1]
pix, lab = bytearray(), bytearray()
for i in range(90):
    label = i % 3
    for r in range(4):
        for c in range(4):
            pix.append(200 + 10 * c if r == label else (7 * i + c) % 30)
    lab.append(label)
with gzip.open(tmp + "/img.gz", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 90, 4, 4) + pix)
with open(tmp + "/lab", "wb") as f:
    f.write(struct.pack(">II", 0x801, 90) + lab)
with open(tmp + "/lab_short", "wb") as f:
    f.write(struct.pack(">II", 0x801, 89) + lab[:89])
PY
cat > "$tmp/img.json" <<JSON
{
  "data": {"images": {"images": ["$tmp/img.gz"], "labels": ["$tmp/lab"]}},
  "split": {"train": [{"first": 1, "last": 60}], "test": [{"first": 61, "last": 90}]},
  "model": {"mlp": {"hidden": [6]}},
  "loss": {"kind": "LOSS_SOFTMAX_CROSS_ENTROPY"},
  "optimizer": {"lbfgs": {}},
  "stopping": {"max_epochs": 60},
  "seed": 2
}
JSON
expect 0 "data: 90 rows; 60 train / 30 test; 16 inputs, 1 output" \
  "$bin" run --local "$tmp/img.json" -o "$tmp/img_model.json"
expect 0 "1 0 " "$bin" predict --local --model "$tmp/img_model.json" --images "$tmp/img.gz"
out=$("$bin" predict --local --model "$tmp/img_model.json" --images "$tmp/img.gz" --json 2>/dev/null)
if /usr/bin/python3 - "$out" <<'PY'
import json, sys
images = json.loads(sys.argv[1])["images"]
assert len(images) == 90, len(images)
assert sum(im["class"] == (im["index"] - 1) % 3 for im in images) >= 85
assert all(abs(sum(im["probabilities"]) - 1) < 1e-9 for im in images)
PY
then ok; else bad "predict --images --json: $out"; fi
sed "s|$tmp/lab\"|$tmp/lab_short\"|" "$tmp/img.json" > "$tmp/img_short.json"
expect 2 "90 images but the label file 89 labels" "$bin" run --local "$tmp/img_short.json"
sed 's|"data": {|"data": {"inputs": ["u"], |' "$tmp/img.json" > "$tmp/img_inputs.json"
expect 2 "data.inputs is set but the data are images" "$bin" run --local "$tmp/img_inputs.json"
sed 's|"last": 90|"last": 91|' "$tmp/img.json" > "$tmp/img_range.json"
expect 2 "split.test" "$bin" run --local "$tmp/img_range.json"
expect 2 "is an IDX label file" "$bin" predict --local --model "$tmp/img_model.json" --images "$tmp/lab"
expect 2 "--input FILE.csv or --images" "$bin" predict --local --model "$tmp/img_model.json"

# --- a sweep: an SBDL path chosen on validation data ----------------------------------------
expect 0 "wrote 600 samples of narx-lags" "$bin" datagen narx-lags --samples 600 --noise 0.05 -o "$tmp/lags.csv"
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
s = json.load(open("examples/narx_lags_sbdl_path.json"))
s["data"]["csv_path"] = tmp + "/lags.csv"
s["split"] = {"train": [{"first": 1, "last": 400}], "validation": [{"first": 401, "last": 500}],
              "test": [{"first": 501, "last": 600}]}
s["optimizer"]["sbdl"].update(outer_iterations=2, inner_epochs=10)
s["sweep"]["path"].update({"from": 1, "to": 100, "points": 3})
json.dump(s, open(tmp + "/sweep.json", "w"))
PY
out=$("$bin" run --local "$tmp/sweep.json" --json -o "$tmp/sweep_model.json" 2>/dev/null)
if python3 - "$out" "$tmp/sweep_model.json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
lams = [r["settings"]["optimizer.sbdl.lambda"] for r in d["runs"]]
assert lams == [[1], [10], [100]], lams
chosen = d["runs"][d["chosen"]]
assert all("validation_rmse" in r for r in d["runs"])
m = json.load(open(sys.argv[2]))  # the chosen trial's model
assert m["metrics"]["test_rmse"] == chosen["test_rmse"], (m["metrics"], chosen)
t = m["sweep_trial"]  # which trial it is, and its setting
assert [r["trial"] for r in d["runs"]] == [0, 1, 2] and d["chosen_trial"] == d["chosen"], d
assert t.get("index", 0) == d["chosen_trial"] and t["trials"] == 3, t  # proto3 JSON leaves out 0
assert [s["field"] for s in t["settings"]] == ["optimizer.sbdl.lambda"], t
assert json.loads(t["settings"][0]["value"]) == chosen["settings"]["optimizer.sbdl.lambda"], t
PY
then ok; else bad "sweep: $out"; fi
expect 0 "(chosen)" "$bin" run --local "$tmp/sweep.json"
# sweep.metric: the choice reads the one-step validation RMSE of every trial.
sed 's/"sweep": {/"sweep": {"metric": "METRIC_ONE_STEP_RMSE", /' "$tmp/sweep.json" > "$tmp/sweep_onestep.json"
out=$("$bin" run --local "$tmp/sweep_onestep.json" --json 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert all(r["validation"] == r["validation_one_step_rmse"] != r["validation_rmse"]
           for r in d["runs"]), d["runs"]
PY
then ok; else bad "sweep by one-step RMSE: $out"; fi
sed 's/"sweep": {/"sweep": {"metric": "METRIC_ACCURACY", /' "$tmp/sweep.json" > "$tmp/sweep_acc.json"
expect 2 "METRIC_ACCURACY needs a classifier" "$bin" run --local "$tmp/sweep_acc.json"
expect 0 "(6 trials on" "$bin" run --local "$tmp/sweep.json" --seeds 2  # 2 seeds x 3 points
sed 's/"sweep": {/"sweep": {"seeds": 2, /' "$tmp/sweep.json" > "$tmp/sweep_seeds.json"
expect 2 "keep one" "$bin" run --local "$tmp/sweep_seeds.json" --seeds 2
sed 's/"validation": \[[^]]*\], //' "$tmp/sweep.json" > "$tmp/sweep_noval.json"
expect 2 "never on the test split" "$bin" run --local "$tmp/sweep_noval.json"
# stopping.validation_metric without a sweep: one run tracks it, and --seeds chooses by it.
python3 - "$tmp" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/sweep.json"))
del s["sweep"]
s.setdefault("stopping", {})["validation_metric"] = "METRIC_ONE_STEP_RMSE"
json.dump(s, open(sys.argv[1] + "/tracked.json", "w"))
PY
out=$("$bin" run --local "$tmp/tracked.json" --seeds 2 --json 2>/dev/null)
if python3 - "$out" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert len(d["runs"]) == 2 and all(r["validation"] == r["validation_one_step_rmse"]
                                   for r in d["runs"]), d["runs"]
PY
then ok; else bad "stopping.validation_metric with --seeds: $out"; fi
expect 0 "seed" "$bin" run --local "$tmp/tracked.json"

echo "cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
