"""Sparrow's ONNX export, run by an independent runtime.

For each case: train a model with `sparrow run --local`, export it with
`sparrow model export --local --format onnx` (the exporter runs onnx::checker and strict shape
inference on every model it writes), check it again with Python's onnx.checker (full check)
when python3-onnx is installed, predict held-out data with `sparrow predict --local`, run the
ONNX model on the same data in onnxruntime (npm onnxruntime-node, tests/onnx/run_onnx.mjs)
and compare: the largest |onnx - sparrow| over the largest |sparrow| must be at most 1e-9
(float64 graphs).

Cases on generated data always run; the benchmark models of docs/onnx.md (the MR damper
NAILS model, the cascaded-tanks SBDL NARX model, a B2LD MLP on CCPP) run when ../shared/data
is there, with short training (the export does not depend on how well a model fits).

Usage: onnx_test.py BIN_DIR   (from the repository root; exit 77 = skipped)
"""
import csv
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tests", "onnx", "run_onnx.mjs")
SHARED = os.path.join(ROOT, "..", "shared", "data")
TOLERANCE = 1e-9


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [[float(v) if v else float("nan") for v in r] for r in rows[1:] if r]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([repr(v) for v in r])


def columns(header, rows, names):
    at = [header.index(n) for n in names]
    return [[r[i] for i in at] for r in rows]


class Harness:
    def __init__(self, bin_dir, tmp):
        self.bin = os.path.join(bin_dir, "sparrow")
        self.tmp = tmp
        self.results = []
        self.failures = []
        try:
            import onnx  # noqa: F401  (python3-onnx, Debian)
            self.onnx = onnx
        except ImportError:
            self.onnx = None

    def sparrow(self, *args):
        p = subprocess.run([self.bin, *args], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("sparrow %s: exit %d: %s%s" % (" ".join(args), p.returncode,
                                                              p.stdout, p.stderr))
        return p.stdout

    def train(self, name, spec):
        spec_path = os.path.join(self.tmp, name + ".json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        model = os.path.join(self.tmp, name + ".model.json")
        self.sparrow("run", "--local", spec_path, "-o", model)
        onnx_path = os.path.join(self.tmp, name + ".onnx")
        self.sparrow("model", "export", "--local", "--model", model, "--format", "onnx",
                     "-o", onnx_path)
        if self.onnx is not None:
            self.onnx.checker.check_model(self.onnx.load(onnx_path), full_check=True)
        return model, onnx_path

    def predict(self, model, data_csv, *flags):
        out = os.path.join(self.tmp, "pred.csv")
        printed = self.sparrow("predict", "--local", "--model", model, "--input", data_csv,
                               "-o", out, "--json", *flags)
        header, rows = read_csv(out)
        return header, rows, json.loads(printed)

    def run_onnx(self, onnx_path, inputs):
        request = {"model": onnx_path,
                   "inputs": {k: {"dims": [len(v)] if not isinstance(v[0], list)
                                  else [len(v), len(v[0])],
                                  "data": [x for r in v for x in (r if isinstance(r, list)
                                                                  else [r])]}
                              for k, v in inputs.items()}}
        path = os.path.join(self.tmp, "request.json")
        with open(path, "w") as f:
            json.dump(request, f)
        p = subprocess.run(["node", RUNNER, path], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            raise RuntimeError("onnxruntime: %s" % p.stderr[-3000:])
        return json.loads(p.stdout)["outputs"]

    def compare(self, name, onnx_out, expected, ops, tolerance=TOLERANCE):
        got = onnx_out["data"]
        flat = [x for r in expected for x in r]
        if len(got) != len(flat):
            self.failures.append("%s: onnx gave %d values, sparrow %d" % (name, len(got),
                                                                            len(flat)))
            return
        largest = max(abs(x) for x in flat) or 1.0
        diff = max(abs(a - b) for a, b in zip(got, flat)) / largest
        self.results.append((name, len(flat), diff, ops))
        if not diff <= tolerance:
            self.failures.append("%s: max relative difference %.3g > %g" % (name, diff,
                                                                            tolerance))


def ops_of(onnx_path, onnx_module):
    if onnx_module is None:
        return ""
    m = onnx_module.load(onnx_path)
    ops = set()

    def visit(g):
        for n in g.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.type == onnx_module.AttributeProto.GRAPH:
                    visit(a.g)
    visit(m.graph)
    return ",".join(sorted(ops))


def base_spec(csv_path, model, optimizer, epochs, inputs=("u",), outputs=("y",)):
    return {"data": {"csv_path": csv_path, "inputs": list(inputs), "outputs": list(outputs)},
            "split": {"train": [{"first": 1, "last": 1024}]},
            "model": model, "loss": {"kind": "LOSS_MSE"}, "optimizer": optimizer,
            "stopping": {"max_epochs": epochs}, "seed": 1}


def metadata(h, onnx_path, key):
    if h.onnx is None:
        return None
    return {p.key: p.value for p in h.onnx.load(onnx_path).metadata_props}.get(key)


def check_sequence(h, name, spec, data_csv, u_names, y_names, predict_flags=(), x0=None):
    model, onnx_path = h.train(name, spec)
    header, rows = read_csv(data_csv)
    _, pred, printed = h.predict(model, data_csv, *predict_flags)
    u = columns(header, rows, u_names)
    if "narx_mlp" in spec["model"]:
        y = columns(header, rows, y_names)
        out = h.run_onnx(onnx_path, {"u": u, "y": y})["y_pred"]
        first = len(rows) - out["dims"][0]
        stated = metadata(h, onnx_path, "sparrow.first_predicted_sample")
        if stated is not None and int(stated) != first:
            h.failures.append("%s: first predicted sample %s, the output starts at %d"
                              % (name, stated, first))
        h.compare(name, out, pred[first:], ops_of(onnx_path, h.onnx))
        return
    start = x0 if x0 is not None else printed["x0"]
    outs = h.run_onnx(onnx_path, {"u": u, "x0": start})
    h.compare(name, outs["y"], pred, ops_of(onnx_path, h.onnx))
    # The same record in two pieces, the second from the first's x_final.
    half = len(u) // 2
    first = h.run_onnx(onnx_path, {"u": u[:half], "x0": start})
    second = h.run_onnx(onnx_path, {"u": u[half:], "x0": first["x_final"]["data"]})
    pieces = {"data": first["y"]["data"] + second["y"]["data"]}
    h.compare(name + ", in two pieces via x_final", pieces, pred, "")


def generated_cases(h):
    data = os.path.join(h.tmp, "tanks.csv")
    h.sparrow("datagen", "cascaded-tanks", "--samples", "1536", "--seed", "3", "-o", data)
    header, rows = read_csv(data)
    held_out = os.path.join(h.tmp, "tanks_test.csv")
    write_csv(held_out, header, rows[1024:])
    lbfgs = {"lbfgs": {}}
    check_sequence(h, "narx one-step (generated)",
                   base_spec(data, {"narx_mlp": {"input_lags": 3, "output_lags": 2,
                                                 "hidden": [8]}}, lbfgs, 20),
                   held_out, ["u"], ["y"], ["--one-step"])
    check_sequence(h, "narx linear-plus-neural, one-step (generated)",
                   base_spec(data, {"narx_mlp": {"input_lags": 3, "output_lags": 2,
                                                 "hidden": [8], "linear": True}}, lbfgs, 20),
                   held_out, ["u"], ["y"], ["--one-step"])
    check_sequence(h, "state-space free x0 (generated)",
                   base_spec(data, {"state_space_rnn": {"nx": 2, "fx_hidden": [6],
                                                        "fy_hidden": [6]},
                                    "init_scale": 0.5}, lbfgs, 20),
                   held_out, ["u"], ["y"])
    check_sequence(h, "state-space linear, no feed-through, x0 = 0 (generated)",
                   base_spec(data, {"state_space_rnn": {"nx": 2, "fx_hidden": [4],
                                                        "fy_hidden": [4], "linear": True,
                                                        "no_feedthrough": True,
                                                        "activation": "ACTIVATION_RELU"}},
                             lbfgs, 10),
                   held_out, ["u"], ["y"], ["--x0", "zero"], x0=[0.0, 0.0])
    check_sequence(h, "state-space encoder, given x0 (generated)",
                   base_spec(data, {"state_space_rnn": {
                       "nx": 3, "fx_hidden": [5], "activation": "ACTIVATION_LEAKY_RELU",
                       "initial_state": "INITIAL_STATE_ENCODER",
                       "encoder": {"past_outputs": 3, "past_inputs": 3}}}, lbfgs, 10),
                   held_out, ["u"], ["y"], ["--x0", "0.25,-0.5,1"], x0=[0.25, -0.5, 1.0])
    multi_channel_cases(h, header, rows)
    name = "mlp, sigmoid hidden (generated)"
    model, onnx_path = h.train(name, base_spec(
        data, {"mlp": {"hidden": [7, 5], "activation": "ACTIVATION_SIGMOID"}}, lbfgs, 20))
    _, pred, _ = h.predict(model, held_out)
    out = h.run_onnx(onnx_path, {"input": columns(header, rows[1024:], ["u"])})["output"]
    h.compare(name, out, pred, ops_of(onnx_path, h.onnx))


def multi_channel_cases(h, header, rows):
    """Two inputs and two outputs: u, u2 = u^2 / 10 and y, y2 = y one sample earlier."""
    u, y = columns(header, rows, ["u"]), columns(header, rows, ["y"])
    table = [[u[k][0], u[k][0] ** 2 / 10, y[k][0], y[k - 1][0] if k else y[0][0]]
             for k in range(len(rows))]
    names = ["u", "u2", "y", "y2"]
    data = os.path.join(h.tmp, "two.csv")
    write_csv(data, names, table)
    held_out = os.path.join(h.tmp, "two_test.csv")
    write_csv(held_out, names, table[1024:])
    io = {"inputs": ("u", "u2"), "outputs": ("y", "y2")}
    lbfgs = {"lbfgs": {}}
    check_sequence(h, "narx 2 in 2 out, no feed-through (generated)",
                   base_spec(data, {"narx_mlp": {"input_lags": 2, "output_lags": 1,
                                                 "no_feedthrough": True, "hidden": [6]}},
                             lbfgs, 10, **io),
                   held_out, ["u", "u2"], ["y", "y2"], ["--one-step"])
    check_sequence(h, "state-space linear 2 in 2 out, feed-through (generated)",
                   base_spec(data, {"state_space_rnn": {"nx": 2, "fx_hidden": [4],
                                                        "fy_hidden": [4], "linear": True}},
                             lbfgs, 10, **io),
                   held_out, ["u", "u2"], ["y", "y2"], ["--x0", "0.1,-0.2"], x0=[0.1, -0.2])
    name = "stacked rnn, 2 steps, sequence output (generated)"
    model, onnx_path = h.train(name, base_spec(
        data, {"rnn": {"hidden": [5, 4], "steps": 2, "sequence_output": True}}, lbfgs, 10,
        **io))
    _, pred, _ = h.predict(model, held_out)
    out = h.run_onnx(onnx_path, {"input": [r[:2] for r in table[1024:]]})["output"]
    h.compare(name, out, pred, ops_of(onnx_path, h.onnx), 1e-5)


def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        spec = json.load(f)
    spec["data"]["csv_path"] = os.path.join(ROOT, spec["data"]["csv_path"])
    return spec


def shared_cases(h):
    damper = os.path.join(SHARED, "mr_damper", "mrdamper.csv")
    if os.path.exists(damper):
        spec = example("damper_nails.json")
        spec["stopping"]["max_epochs"] = 5
        header, rows = read_csv(damper)
        test = os.path.join(h.tmp, "damper_test.csv")
        write_csv(test, header, rows[2000:3499])
        check_sequence(h, "MR damper, NAILS state-space RNN", spec, test, ["V"], ["F"])
    tanks = os.path.join(SHARED, "cascaded_tanks", "dataBenchmark.csv")
    if os.path.exists(tanks):
        spec = example("tanks_sbdl_onestep.json")
        spec["optimizer"]["sbdl"].update({"outer_iterations": 2, "inner_epochs": 5})
        header, rows = read_csv(tanks)
        test = os.path.join(h.tmp, "tanks_val.csv")
        write_csv(test, ["uEst", "yEst"], columns(header, rows, ["uVal", "yVal"]))
        check_sequence(h, "cascaded tanks, SBDL NARX (one step)", spec, test, ["uEst"],
                       ["yEst"], ["--one-step"])
    ccpp = os.path.join(SHARED, "ccpp", "Folds5x2_pp.csv")
    if os.path.exists(ccpp):
        spec = example("bld_ccpp.json")
        spec["stopping"] = {"max_epochs": 5}
        name = "CCPP, B2LD bias-free MLP"
        model, onnx_path = h.train(name, spec)
        header, rows = read_csv(ccpp)
        test = os.path.join(h.tmp, "ccpp.csv")
        write_csv(test, header, rows[:2000])
        _, pred, _ = h.predict(model, test)
        x = columns(header, rows[:2000], spec["data"]["inputs"])
        out = h.run_onnx(onnx_path, {"input": x})["output"]
        h.compare(name, out, pred, ops_of(onnx_path, h.onnx))
    if not all(os.path.exists(p) for p in (damper, tanks, ccpp)):
        print("SKIPPED: a benchmark model's data in ../shared/data is absent (damper %s, tanks "
              "%s, ccpp %s)" % tuple(os.path.exists(p) for p in (damper, tanks, ccpp)))


def write_test_images(path, count):
    """The first `count` Fashion-MNIST test images as an IDX file; their pixels / 255."""
    with gzip.open(os.path.join(SHARED, "fashion_mnist", "t10k-images-idx3-ubyte.gz")) as f:
        data = f.read()
    _, _, rows, cols = struct.unpack(">IIII", data[:16])
    k = rows * cols
    pixels = data[16:16 + count * k]
    with open(path, "wb") as f:
        f.write(struct.pack(">IIII", 0x803, count, rows, cols) + pixels)
    return [[b / 255.0 for b in pixels[i * k:(i + 1) * k]] for i in range(count)]


def image_cases(h):
    """The Fashion-MNIST CNN and LSTM of examples/, trained briefly on 2000 images: class
    probabilities of 200 test images. Conv and LSTM run in float32 in the ONNX graph
    (onnxruntime has no float64 kernel for them), so they match to 1e-5."""
    if not os.path.exists(os.path.join(SHARED, "fashion_mnist")):
        print("SKIPPED: ../shared/data/fashion_mnist is absent: the CNN and LSTM were not checked")
        return
    idx = os.path.join(h.tmp, "images.idx")
    pixels = write_test_images(idx, 200)
    for file, name in (("fmnist_cnn_adam.json", "Fashion-MNIST CNN (float32 Conv)"),
                       ("fmnist_lstm_adam.json", "Fashion-MNIST LSTM (float32 LSTM)")):
        with open(os.path.join(ROOT, "examples", file)) as f:
            spec = json.load(f)
        images = spec["data"]["images"]
        for key in ("images", "labels"):
            images[key] = [os.path.join(ROOT, p) for p in images[key]]
        spec["split"] = {"train": [{"first": 1, "last": 2000}]}
        spec["stopping"] = {"max_epochs": 1}
        model, onnx_path = h.train(name, spec)
        out = os.path.join(h.tmp, "classes.csv")
        h.sparrow("predict", "--local", "--model", model, "--images", idx, "-o", out)
        header, rows = read_csv(out)
        expected = columns(header, rows, ["p%d" % c for c in range(10)])
        probabilities = h.run_onnx(onnx_path, {"input": pixels})["probabilities"]
        h.compare(name, probabilities, expected, ops_of(onnx_path, h.onnx), 1e-5)


def main():
    bin_dir = sys.argv[1]
    if shutil.which("node") is None or not os.path.isdir(
            os.path.join(ROOT, "tests", "onnx", "node_modules", "onnxruntime-node")):
        print("SKIP: onnxruntime-node is not installed (make deps installs it)")
        return 77
    tmp = tempfile.mkdtemp(prefix="sparrow-onnx-")
    try:
        h = Harness(bin_dir, tmp)
        if h.onnx is None:
            print("note: python3-onnx absent: only the exporter's own checker ran")
        generated_cases(h)
        shared_cases(h)
        image_cases(h)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name, n, diff, ops in h.results:
        print("%-58s %7d values  max rel diff %.2e  ops %s" % (name, n, diff, ops))
    for f in h.failures:
        print("FAIL:", f)
    return 1 if h.failures or not h.results else 0


if __name__ == "__main__":
    sys.exit(main())
