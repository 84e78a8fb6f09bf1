"""The Python client (python/sparrow_client) against real sparrowd processes: the README's tour
(upload, submit, watch, status, model, predict, export), uploads of arrays and dicts, watch
resumption, predictions equal to the CLI's, cancel, failures, and errors worded as the CLI's."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import Server, cli_error, narx_spec, write_json


def load_csv(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def same_model(sc, exported, model):
    """Whether the exported bytes hold `model` (compared serialized: its metrics have NaNs)."""
    parsed = sc.TrainedModel.FromString(exported)
    return (parsed.SerializeToString(deterministic=True)
            == model.SerializeToString(deterministic=True))


def test_tour(sc, client, server, tanks_csv, tmp_root):
    """README's five-minute tour: upload, submit, watch to the end, status, model, predict,
    export."""
    assert client.health() == "SERVING"
    ds = client.upload(tanks_csv)
    assert ds.rows == 600 and ds.columns == ["u", "y"] and ds.name == "tanks.csv"
    code, out, _ = server.cli("upload", tanks_csv)
    assert code == 0 and out.strip() == ds.id
    assert client.upload(tanks_csv).already_existed

    spec_path = write_json(tmp_root, "tour.json", narx_spec(tanks_csv))
    job = client.submit(spec_path)
    assert job.id.startswith("job-") and job.spec.data.dataset_id == ds.id
    events = list(client.watch(job.id))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert (events[0].kind, events[0].state) == (sc.ProgressEvent.STATE, sc.Job.QUEUED)
    assert sc.is_final_event(events[-1]) and events[-1].state == sc.Job.SUCCEEDED
    assert max(e.iteration for e in events) == 200

    status = client.status(job.id)
    assert sc.state_name(status.state) == "succeeded"
    assert status.last_seq == events[-1].seq and status.summary.startswith("max_iterations")
    assert job.id in [j.id for j in client.list_jobs("succeeded").jobs]

    model = client.get_model(job.id)
    assert list(model.input_scaling.names) == ["u"] and model.epochs == 200
    data = load_csv(tanks_csv)
    y_hat = client.predict(job.id, data[:, :1], outputs=data[:, 1])
    assert y_hat.shape == (600, 1) and np.all(np.isfinite(y_hat))

    exported = client.export(job.id, "proto")
    assert same_model(sc, exported, model)
    as_json = json.loads(client.export(job.id, "json"))
    assert as_json["epochs"] == 200 and len(as_json["parameters"]) == len(model.parameters)
    onnx_path = os.path.join(tmp_root, "tour.onnx")
    with open(onnx_path, "wb") as f:
        f.write(client.export(job.id, "onnx"))
    code, _, err = server.cli("model", "export", job.id, "--format", "onnx", "-o",
                              onnx_path + ".cli")
    assert code == 0, err
    with open(onnx_path, "rb") as a, open(onnx_path + ".cli", "rb") as b:
        assert a.read() == b.read()


def test_export_onnx(sc, client, narx_job, ss_job):
    for job in (narx_job, ss_job):
        exported = client.export(job.id, "onnx")
        assert exported[:1] == b"\x08"  # ModelProto field 1, ir_version
        try:
            import onnx
        except ImportError:
            continue
        onnx.checker.check_model(onnx.load_from_string(exported), full_check=True)
    with pytest.raises(sc.InvalidArgument, match="use proto, json or onnx"):
        client.export(narx_job.id, "pickle")


def test_upload_array_and_dict_are_exact(sc, client, tanks_csv):
    """Arrays and dicts are written with %.17g: the same bytes as the file, hence its id."""
    data = load_csv(tanks_csv)
    by_file = client.upload(tanks_csv)
    by_dict = client.upload({"u": data[:, 0], "y": data[:, 1]}, name="tanks from a dict")
    by_array = client.upload(data, columns=["u", "y"])
    assert by_dict.id == by_array.id == by_file.id
    assert by_dict.already_existed and by_array.already_existed

    mixed = client.upload({"x": np.array([0.1, 1e-300, -2.5]), "n": np.arange(3),
                           "ok": np.array([True, False, True]), "color": ["red", "a,b", 'q"']})
    assert mixed.rows == 3 and mixed.columns == ["x", "n", "ok", "color"]
    assert not mixed.already_existed and mixed.name == "data.csv"

    with pytest.raises(sc.InvalidArgument, match="columns="):
        client.upload(data)
    with pytest.raises(sc.InvalidArgument, match="different lengths"):
        client.upload({"u": [1.0, 2.0], "y": [1.0]})
    with pytest.raises(sc.NotFound, match="cannot read the dataset"):
        client.upload(os.path.join(os.path.dirname(tanks_csv), "missing.csv"))


def test_upload_in_chunks(sc, server):
    """A multi-chunk upload (offsets, SHA-256 with the last chunk) arrives whole."""
    rng = np.random.default_rng(7)
    table = {"a": rng.normal(size=3000), "b": rng.normal(size=3000)}
    with sc.Client(server.address, token="", chunk_bytes=4096) as c:
        ds = c.upload(table, name="chunked.csv")
        csv = sc.tabular.columns_to_csv(table)
        assert len(csv) > 20 * 4096 and ds.id == hashlib.sha256(csv).hexdigest()
        assert (ds.rows, ds.size_bytes, ds.already_existed) == (3000, len(csv), False)
        assert c.get_dataset(ds.id).name == "chunked.csv"
        assert ds.id in [d.id for d in c.list_datasets(page_size=1000).datasets]
        c.delete_dataset(ds.id)
        with pytest.raises(sc.NotFound):
            c.get_dataset(ds.id)


def test_fit_on_a_dict(sc, client, tanks_csv):
    data = load_csv(tanks_csv)
    spec = narx_spec(tanks_csv, epochs=50)
    del spec["data"]["csv_path"]
    seen = []
    model = client.fit(spec, {"u": data[:, 0], "y": data[:, 1]}, on_event=seen.append)
    assert isinstance(model, sc.Model) and model.job.state == sc.Job.SUCCEEDED
    assert model.input_names == ["u"] and model.output_names == ["y"]
    assert seen[-1].seq == model.job.last_seq and model.metrics.test_rmse > 0
    assert model.job.spec.data.dataset_id == client.upload(tanks_csv).id
    assert model.predict(data[:, 0], outputs=data[:, 1]).shape == (600, 1)
    assert same_model(sc, model.export(), model.model)


def test_watch_resumes_after_seq(client, narx_job):
    last = narx_job.last_seq
    assert [e.seq for e in client.watch(narx_job.id, after_seq=5)] == list(range(6, last + 1))
    stream = client.watch(narx_job.id)
    first = [next(stream) for _ in range(3)]
    stream.close()  # stop early, as after a disconnect ...
    rest = list(client.watch(narx_job.id, after_seq=first[-1].seq))  # ... and resume
    assert [e.seq for e in first + rest] == list(range(1, last + 1))
    assert list(client.watch(narx_job.id, after_seq=last)) == []


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_watch_survives_a_restart(sc, tmp_root, tanks_csv, kill):
    """A watch goes on through a restart of sparrowd and yields every event exactly once."""
    server = Server(tmp_root, "restart-%s" % kill)
    try:
        with sc.Client(server.address, initial_backoff=0.05) as c:
            job = c.submit(narx_spec(tanks_csv, epochs=100000000, max_seconds=2,
                                     stall_epochs=-1))
            events = c.watch(job.id, timeout=60)
            seen = []
            for e in events:
                seen.append(e)
                if e.kind == e.ITERATION:
                    break
            server.stop(kill=kill)
            server.start()
            seen.extend(events)
            assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
            assert seen[-1].state == sc.Job.SUCCEEDED and sc.is_final_event(seen[-1])
            assert c.status(job.id).attempts == 2
    finally:
        server.stop()


def test_predict_equals_cli(sc, client, server, narx_job, ss_job, tanks_csv, tmp_root):
    """Python predictions are the CLI's `sparrow predict JOB --input FILE` to the last bit."""
    data = load_csv(tanks_csv)
    out = os.path.join(tmp_root, "cli_pred.csv")
    cases = [(narx_job, []), (narx_job, ["--one-step"]), (ss_job, [])]
    for job, flags in cases:
        code, text, err = server.cli("predict", job.id, "--input", tanks_csv, "-o", out, *flags)
        assert code == 0, err
        p = client.predict_full(job.id, data[:, 0], outputs=data[:, 1],
                                one_step="--one-step" in flags)
        assert p.y.shape == (600, 1) and p.output_names == ["y"] and p.samples == 600
        np.testing.assert_array_equal(p.y, load_csv(out))
        assert "BFR %.2f" % p.bfr in text
    by_dict = client.predict(ss_job.id, {"u": data[:, 0], "y": data[:, 1]})
    np.testing.assert_array_equal(by_dict, load_csv(out))


def test_state_space_initial_state(sc, client, ss_job, tanks_csv):
    data = load_csv(tanks_csv)
    u, y = data[:, 0], data[:, 1]
    estimated = client.predict_full(ss_job.id, u, outputs=y)
    assert estimated.x0.shape == (2,)
    again = client.predict_full(ss_job.id, u, x0=estimated.x0)  # inputs alone
    np.testing.assert_allclose(again.y, estimated.y, rtol=1e-12, atol=1e-12)
    assert again.bfr is None
    zero = client.predict_full(ss_job.id, u, x0="zero")
    np.testing.assert_array_equal(zero.x0, [0.0, 0.0])
    with pytest.raises(sc.InvalidArgument, match="reads the measured outputs"):
        client.predict(ss_job.id, u)
    with pytest.raises(sc.InvalidArgument, match="x0 'random'"):
        client.predict(ss_job.id, u, x0="random")
    with pytest.raises(sc.InvalidArgument, match="N x 1"):
        client.predict(ss_job.id, data, outputs=y)


def test_errors_match_cli(sc, client, server, tanks_csv, tmp_root):
    """Unknown job, unknown spec field, a bad value the server refuses, unknown column."""
    code, _, err = server.cli("status", "job-0000000000000000")
    with pytest.raises(sc.NotFound) as e:
        client.status("job-0000000000000000")
    assert code == 2 and str(e.value) == cli_error(err) == "job job-0000000000000000 not found"
    assert e.value.code.name == "NOT_FOUND"

    spec = narx_spec(tanks_csv)
    narx = spec["model"]["narx_mlp"]
    bad = {"bad_field": {("stoping" if k == "stopping" else k): v for k, v in spec.items()},
           "negative_hidden": dict(spec, model={"narx_mlp": dict(narx, hidden=[-3])}),
           "bad_column": dict(spec, data=dict(spec["data"], inputs=["v"])),
           "bad_rate": dict(spec, optimizer={"adam": {"learning_rate": -1}})}
    for name, bad_spec in bad.items():
        path = write_json(tmp_root, name + ".json", bad_spec)
        code, _, err = server.cli("submit", path)
        assert code == 2, (name, err)
        for given in (path, bad_spec):
            with pytest.raises(sc.InvalidArgument) as e:
                client.submit(given)
            assert str(e.value) == cli_error(err), name


@pytest.mark.parametrize("change", [
    {"stoping": {}},
    {"data": {"inputs": "u"}},
    {"model": {"narx_mlp": {"activation": "tanh"}}},
    {"model": {"narx_mlp": {}, "mlp": {}}},
    {"stopping": {"max_epochs": "10"}},
    {"model": {"narx_mlp": {"hidden": [8], "hiden": [8]}}},
    {"optimizer": {"adam": {"learning_rate": True}}},
    {"split": {"train": {"first": 1}}},
    {"model": {"narx_mlp": {"hidden": [8], "activation": 42}}},
])
def test_spec_checks_word_as_cli(sc, server, tanks_csv, tmp_root, change):
    """The client-side spec check says what `sparrow submit` says (translate/json_shape.cc)."""
    spec = dict(narx_spec(tanks_csv), **change)
    path = write_json(tmp_root, "shape.json", spec)
    code, _, err = server.cli("submit", path)
    assert code == 2, err
    with pytest.raises(sc.InvalidArgument) as e:
        sc.to_job_spec(spec)
    assert str(e.value) == cli_error(err)


def test_spec_dicts_may_hold_numpy_and_tuples(sc, server, tanks_csv):
    spec = narx_spec(tanks_csv)
    spec["model"]["narx_mlp"]["hidden"] = np.array([8])
    spec["seed"] = np.int64(3)
    spec["data"]["inputs"] = ("u",)
    parsed = sc.to_job_spec(spec)
    assert list(parsed.model.narx_mlp.hidden) == [8] and parsed.seed == 3
    with pytest.raises(sc.InvalidArgument, match="the key 1 is not a string"):
        sc.to_job_spec({"model": {1: 2}})


def test_tokens_match_cli(sc, token_server, tanks_csv):
    """No token and a wrong token are Unauthenticated with the CLI's message; tenants are
    isolated."""
    for token in ("", "wrong-token"):
        code, _, err = token_server.cli("list", token=token)
        with sc.Client(token_server.address, token=token) as c:
            with pytest.raises(sc.Unauthenticated) as e:
                c.list_jobs()
        assert code == 2 and cli_error(err) == str(e.value)
    with sc.Client(token_server.address, token="tok-alice") as alice, \
            sc.Client(token_server.address, token="tok-bob") as bob:
        job = alice.submit(narx_spec(tanks_csv, epochs=20))
        assert alice.wait(job.id, timeout=60).state == sc.Job.SUCCEEDED
        with pytest.raises(sc.NotFound):
            bob.status(job.id)
        assert not bob.upload(tanks_csv).already_existed


def test_token_from_environment(sc, token_server, monkeypatch):
    monkeypatch.setenv("SPARROW_ADDR", token_server.address)
    monkeypatch.setenv("SPARROW_TOKEN", "tok-bob")
    with sc.Client() as c:
        assert c.address == token_server.address
        assert c.list_jobs() is not None


def test_cancel_and_timeouts(sc, client, tanks_csv):
    long_spec = narx_spec(tanks_csv, epochs=100000000, max_seconds=30, stall_epochs=-1)
    job = client.submit(long_spec)
    with pytest.raises(sc.DeadlineExceeded, match="did not end within"):
        client.wait(job.id, timeout=0.5)
    assert client.cancel(job.id).state in (sc.Job.CANCELLING, sc.Job.CANCELLED)
    started = time.monotonic()
    with pytest.raises(sc.JobFailed) as e:
        client.wait(job.id, timeout=30)
    assert time.monotonic() - started < 10
    assert e.value.job.state == sc.Job.CANCELLED and "cancelled" in str(e.value)
    with pytest.raises(sc.FailedPrecondition):
        client.cancel(job.id)


def test_failed_job_raises(sc, client, tanks_csv):
    spec = narx_spec(tanks_csv)
    spec["optimizer"] = {"sgd": {"learning_rate": 1e30}}
    with pytest.raises(sc.JobFailed, match="failed: the loss became") as e:
        client.fit(spec)
    assert e.value.job.state == sc.Job.FAILED and e.value.code is None


def test_request_id_makes_submit_idempotent(sc, client, tanks_csv):
    spec = narx_spec(tanks_csv, epochs=10)
    first = client.submit(spec, request_id="py-retry-1")
    assert client.submit(spec, request_id="py-retry-1").id == first.id
    assert client.submit(spec).id != first.id
    with pytest.raises(sc.AlreadyExists, match="request_id"):
        client.submit(narx_spec(tanks_csv, epochs=11), request_id="py-retry-1")


def test_closing_the_client_ends_a_watch_with_cancelled(sc, server, tanks_csv):
    c = sc.Client(server.address, token="")
    job = c.submit(narx_spec(tanks_csv, epochs=100000))
    events = c.watch(job.id)
    next(events)
    c.close()
    with pytest.raises(sc.Cancelled, match="the client was closed while watching"):
        for _ in events:
            pass
    with sc.Client(server.address, token="") as other:
        other.cancel(job.id)


def test_unreachable_server(sc):
    with sc.Client("127.0.0.1:1", max_attempts=2, initial_backoff=0.01) as c:
        with pytest.raises(sc.Unavailable, match="cannot reach sparrowd at 127.0.0.1:1"):
            c.status("job-0000000000000000")


def test_missing_stubs_message(sc, tmp_root):
    """Without its generated _proto directory the package says how to make it."""
    package = os.path.join(tmp_root, "nostubs", "sparrow_client")
    shutil.copytree(os.path.dirname(sc.__file__), package,
                    ignore=shutil.ignore_patterns("_proto", "__pycache__"))
    out = subprocess.run([sys.executable, "-c", "import sparrow_client"], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=os.path.dirname(package)))
    assert out.returncode != 0 and "ImportError" in out.stderr
    assert "run python/gen_stubs.sh" in out.stderr and "build with cmake" in out.stderr
