"""sparrow_client.Client: the Python client of sparrowd (datasets, jobs, models).

It talks to the server as the C++ client (client/lib/client.h) and the ``sparrow`` CLI do: the
same address and token defaults, retries, upload protocol, resumable watch, and error messages.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from sparrow.v1 import datasets_pb2, jobs_pb2, spec_pb2

from . import spec as specs
from .errors import InvalidArgument, JobFailed, NotFound
from .models import Model, ModelCalls
from .results import Dataset
from .tabular import DataLike, to_csv
from .transport import Transport, resolve_options
from .watch import FINAL_STATES, Watch

Job = jobs_pb2.Job
ProgressEvent = jobs_pb2.ProgressEvent
_HEALTH = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def state_name(state: int) -> str:
    """A Job.State value's name as the CLI prints it: "queued", "running", "succeeded", ...

    Example::

        print(state_name(client.status(job_id).state))   # succeeded
    """
    return Job.State.Name(state).lower()


def _state(state: Union[None, str, int]) -> int:
    if state is None:
        return Job.STATE_UNSPECIFIED
    if isinstance(state, int):
        return state
    name = state.upper()
    if name not in Job.State.keys() or name == "STATE_UNSPECIFIED":
        raise InvalidArgument("state '%s' is not a job state; use queued, running, cancelling, "
                              "succeeded, failed or cancelled" % state)
    return Job.State.Value(name)


def _display_name(name: str) -> str:
    """A file name as valid UTF-8 (a proto string must be)."""
    return name.encode("utf-8", "replace").decode("utf-8")


class Client(ModelCalls):
    """A connection to sparrowd. Thread-safe; calls may run concurrently.

    ``address`` (HOST:PORT) defaults to $SPARROW_ADDR, else 127.0.0.1:50051; ``token`` to
    $SPARROW_TOKEN (sent as ``authorization: Bearer TOKEN``). ``tls`` connects with TLS, checking
    the server's certificate against ``ca`` (a PEM file; implies tls) or the system roots.
    ``timeout`` is each call's deadline in seconds (uploads get 10x). Calls answered UNAVAILABLE
    are retried ``max_attempts`` times in all, backing off from ``initial_backoff`` seconds,
    doubling, up to ``max_backoff``; no other error is retried. Uploads are streamed in
    ``chunk_bytes`` pieces. A watch keeps reconnecting to an unreachable server for
    ``watch_reconnect_for`` seconds. ``channel_options``: extra gRPC channel arguments, e.g.
    ``[("grpc.ssl_target_name_override", "sparrow.internal")]``. The channel is created at once;
    the first call connects.

    Example::

        from sparrow_client import Client
        with Client("127.0.0.1:50051") as client:
            job = client.submit("examples/demo.json")
            for event in client.watch(job.id):
                print(event.seq, event.iteration, event.loss)
    """

    def __init__(self, address: Optional[str] = None, *, token: Optional[str] = None,
                 tls: bool = False, ca: Optional[str] = None, timeout: Optional[float] = 30,
                 max_attempts: int = 5, initial_backoff: float = 0.2, max_backoff: float = 5.0,
                 chunk_bytes: int = 1 << 20, watch_reconnect_for: float = 120.0,
                 channel_options: Sequence[tuple] = ()) -> None:
        self.options = resolve_options(
            address, token, tls=tls, ca=ca, timeout=timeout, max_attempts=max_attempts,
            initial_backoff=initial_backoff, max_backoff=max_backoff, chunk_bytes=chunk_bytes,
            watch_reconnect_for=watch_reconnect_for)
        self._t = Transport(self.options, channel_options)
        self._columns_cache = {}

    @property
    def address(self) -> str:
        """The server's HOST:PORT: ``Client().address == "127.0.0.1:50051"`` without
        $SPARROW_ADDR."""
        return self.options.address

    def close(self) -> None:
        """Closes the channel (also at the end of a ``with`` block).

        Example::

            client = Client("127.0.0.1:50051")
            ...
            client.close()
        """
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Client(%r%s)" % (self.address, ", tls=True" if self.options.tls else "")

    # ---- datasets ---------------------------------------------------------------------------

    def upload(self, data: DataLike, *, name: Optional[str] = None,
               columns: Optional[Sequence[str]] = None) -> Dataset:
        """Uploads a CSV dataset and returns it; nothing is sent when the server already has
        the same bytes (the id is their SHA-256).

        ``data``: a CSV file's path, CSV bytes, a dict of columns {name: 1-D array}, or a 2-D
        array with ``columns=[names]``. Numbers are written exactly (%.17g). ``name``: a display
        name (default: the file name, else data.csv).

        Example::

            ds = client.upload({"u": u, "y": y}, name="tanks")
            print(ds.id, ds.rows, ds.columns, ds.already_existed)
        """
        content, default_name = to_csv(data, columns)
        return self._upload_bytes(content, name or default_name)

    def _upload_bytes(self, content: bytes, name: str) -> Dataset:
        sha = hashlib.sha256(content).hexdigest()
        try:  # content-addressed: skip the transfer when the server has these bytes
            return Dataset.from_proto(self._get_dataset(sha), already_existed=True)
        except NotFound:
            pass
        display = _display_name(name)
        step = self.options.chunk_bytes

        def chunks() -> Iterator[datasets_pb2.UploadDatasetRequest]:
            offset = 0
            while True:
                end = min(offset + step, len(content))
                last = end == len(content)
                yield datasets_pb2.UploadDatasetRequest(
                    name=display if offset == 0 else "", offset=offset,
                    data=content[offset:end], finish=last, sha256=sha if last else "")
                offset = end
                if last:
                    return

        response = self._t.call(self._t.datasets.Upload, chunks, timeout_factor=10)
        return Dataset.from_proto(response.dataset, response.already_existed)

    def _get_dataset(self, dataset_id: str) -> datasets_pb2.Dataset:
        return self._t.call(self._t.datasets.Get, datasets_pb2.GetDatasetRequest(id=dataset_id))

    def get_dataset(self, dataset_id: str) -> Dataset:
        """A dataset of this tenant by id (NotFound if there is none).

        Example::

            print(client.get_dataset(ds.id).rows)
        """
        return Dataset.from_proto(self._get_dataset(dataset_id), already_existed=True)

    def list_datasets(self, *, page_size: int = 0,
                      page_token: str = "") -> datasets_pb2.ListDatasetsResponse:
        """One page of this tenant's datasets (``.datasets``, ``.next_page_token``).

        Example::

            for d in client.list_datasets().datasets:
                print(d.id, d.name, d.rows)
        """
        request = datasets_pb2.ListDatasetsRequest(page_size=page_size, page_token=page_token)
        return self._t.call(self._t.datasets.List, request)

    def delete_dataset(self, dataset_id: str) -> None:
        """Deletes a dataset (FailedPrecondition while a queued or running job uses it).

        Example::

            client.delete_dataset(ds.id)
        """
        self._t.call(self._t.datasets.Delete, datasets_pb2.DeleteDatasetRequest(id=dataset_id))

    # ---- jobs -------------------------------------------------------------------------------

    def submit(self, spec: specs.SpecLike, *, data: Optional[DataLike] = None,
               columns: Optional[Sequence[str]] = None, request_id: Optional[str] = None,
               priority: int = 0) -> Job:
        """Submits a job and returns it (QUEUED).

        ``spec``: a JSON file's path, a dict of the JSON form of sparrow.v1.JobSpec, or a
        JobSpec; checked as the CLI checks it (unknown fields refused). As ``sparrow submit``:
        ``data`` (see :meth:`upload`), else the spec's ``data.csv_path``, is uploaded and
        replaced by its dataset id, and so are ``validation_data.csv_path`` and
        ``test_data.csv_path``; a ``warm_start.model_path`` file is sent inline. Paths are
        relative to the current directory. ``request_id`` makes a retry return the same job
        (one is made when None); ``priority``: higher runs first.

        Example::

            job = client.submit("examples/demo.json")
            job = client.submit({"data": {"inputs": ["u"], "outputs": ["y"]}, ...},
                                data={"u": u, "y": y})
        """
        job_spec = specs.to_job_spec(spec)
        specs.inline_warm_start(job_spec)
        self._upload_spec_data(job_spec, data, columns)
        request = jobs_pb2.SubmitJobRequest(spec=job_spec, priority=priority,
                                            request_id=request_id or "req-" + uuid.uuid4().hex)
        return self._t.call(self._t.jobs.Submit, request)

    def _upload_spec_data(self, job_spec: spec_pb2.JobSpec, data: Optional[DataLike],
                          columns: Optional[Sequence[str]]) -> None:
        source = job_spec.data.WhichOneof("source")
        if data is not None:
            job_spec.data.dataset_id = self.upload(data, columns=columns).id
        elif source == "csv_path":
            job_spec.data.dataset_id = self._upload_file(job_spec.data.csv_path, "data.csv_path")
        elif source == "images":
            raise InvalidArgument(
                "data.images: this client does not pack image files; upload them with `sparrow "
                "upload --images FILE --labels FILE` and set data.dataset_id to the id it prints")
        elif source != "dataset_id":
            raise InvalidArgument("the spec has no data: set data.csv_path or data.dataset_id, "
                                  "or pass data=")
        for field in ("validation_data", "test_data"):
            record = getattr(job_spec, field)
            if job_spec.HasField(field) and record.WhichOneof("source") == "csv_path":
                record.dataset_id = self._upload_file(record.csv_path, field + ".csv_path")

    def _upload_file(self, path: str, what: str) -> str:
        content = specs.read_file(path, what)
        return self._upload_bytes(content, path.rsplit("/", 1)[-1]).id

    def status(self, job_id: str) -> Job:
        """The job: state, reason, progress, history, metrics once it has ended.

        Example::

            job = client.status(job_id)
            print(sparrow_client.state_name(job.state), job.iterations, job.loss)
        """
        return self._t.call(self._t.jobs.Get, jobs_pb2.GetJobRequest(id=job_id))

    def list_jobs(self, state: Union[None, str, int] = None, *, page_size: int = 0,
                  page_token: str = "") -> jobs_pb2.ListJobsResponse:
        """One page of this tenant's jobs, oldest first (``.jobs``, ``.next_page_token``);
        ``state``: only jobs in it ("running", ... or a Job.State value).

        Example::

            for job in client.list_jobs("succeeded").jobs:
                print(job.id, job.spec.name)
        """
        request = jobs_pb2.ListJobsRequest(state=_state(state), page_size=page_size,
                                           page_token=page_token)
        return self._t.call(self._t.jobs.List, request)

    def iter_jobs(self, state: Union[None, str, int] = None) -> Iterator[Job]:
        """Every job of this tenant (in ``state``), page after page.

        Example::

            running = [j.id for j in client.iter_jobs("running")]
        """
        token = ""
        while True:
            page = self.list_jobs(state, page_size=1000, page_token=token)
            yield from page.jobs
            token = page.next_page_token
            if not token:
                return

    def cancel(self, job_id: str) -> Job:
        """Cancels a queued or running job (FailedPrecondition once it has ended); it stops
        within one iteration. Returns the job (CANCELLING or CANCELLED).

        Example::

            client.cancel(job_id)
        """
        return self._t.call(self._t.jobs.Cancel, jobs_pb2.CancelJobRequest(id=job_id))

    def watch(self, job_id: str, after_seq: int = 0, *,
              timeout: Optional[float] = None) -> Iterator[ProgressEvent]:
        """The job's progress events with seq > ``after_seq``, in order and each once, stored
        ones first and then live ones, until the event of its final state (the last one yielded).

        Survives dropped connections and server restarts: it reconnects and resumes after the
        last seq it yielded (for up to ``watch_reconnect_for`` seconds of absence). ``timeout``:
        raise DeadlineExceeded if the job has not ended within that many seconds.

        Example::

            for e in client.watch(job.id):
                if e.kind == e.ITERATION:
                    print("iter", e.iteration, "loss", e.loss)
                else:
                    print(e.seq, sparrow_client.state_name(e.state), e.reason)
        """
        if after_seq < 0:
            raise InvalidArgument("after_seq must be >= 0")
        deadline = None if timeout is None else time.monotonic() + timeout
        watch = Watch(self._t, job_id, after_seq, deadline)
        return watch.events()

    def wait(self, job_id: str, timeout: Optional[float] = None, *,
             on_event: Optional[Callable[[ProgressEvent], Any]] = None) -> Job:
        """Waits for the job to end and returns it; raises JobFailed if it failed or was
        cancelled, DeadlineExceeded after ``timeout`` seconds. ``on_event`` is called with each
        progress event on the way.

        Example::

            job = client.wait(job.id, on_event=lambda e: print(e.iteration, e.loss))
            print(job.summary)
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        watch = Watch(self._t, job_id, 0, deadline)
        while True:
            for event in watch.events():
                if on_event is not None:
                    on_event(event)
            job = self.status(job_id)
            if job.state in FINAL_STATES:
                break
        if job.state in (Job.FAILED, Job.CANCELLED):
            raise JobFailed(job)
        return job

    def fit(self, spec: specs.SpecLike, data: Optional[DataLike] = None, *,
            columns: Optional[Sequence[str]] = None, request_id: Optional[str] = None,
            priority: int = 0, timeout: Optional[float] = None,
            on_event: Optional[Callable[[ProgressEvent], Any]] = None) -> Model:
        """Trains on sparrowd: uploads the data, submits the spec, waits for the job (see
        :meth:`submit` and :meth:`wait`) and returns its Model. Raises JobFailed if the job
        failed or was cancelled.

        Example::

            model = client.fit("examples/damper_nailm.json", {"V": v, "F": f})
            print(model.metrics.test_bfr)
            f_hat = model.predict(v_new, outputs=f_new)
        """
        job = self.submit(spec, data=data, columns=columns, request_id=request_id,
                          priority=priority)
        job = self.wait(job.id, timeout, on_event=on_event)
        return Model(self, job, self.get_model(job.id))

    # ---- server -----------------------------------------------------------------------------

    def health(self) -> str:
        """The server's grpc.health.v1 status: "SERVING", "NOT_SERVING", ...

        Example::

            assert client.health() == "SERVING"
        """
        answer = self._t.call(self._t.health_check, b"")
        status = answer[1] if len(answer) >= 2 and answer[0] == 0x08 else 0
        return _HEALTH.get(status, str(status))
