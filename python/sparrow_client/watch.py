"""Watching a job: its progress stream, reconnected and resumed after the last seq delivered,
as the C++ client's Watch (client/lib/client.cc)."""

from __future__ import annotations

import time
from typing import Iterator, Optional

import grpc
from sparrow.v1 import jobs_pb2

from .errors import Cancelled, DeadlineExceeded, Unavailable, from_rpc_error
from .transport import Transport

Job = jobs_pb2.Job
ProgressEvent = jobs_pb2.ProgressEvent
FINAL_STATES = (Job.SUCCEEDED, Job.FAILED, Job.CANCELLED)
# A stream that ends with one of these dropped its connection or met a restarting server.
_RECONNECT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
              grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)


def is_final_event(event: ProgressEvent) -> bool:
    """Whether ``event`` says its job has ended (the last event of a job).

    Example::

        last = [e for e in client.watch(job_id) if is_final_event(e)][0]
    """
    return (event.kind == ProgressEvent.STATE and event.state in FINAL_STATES
            and not event.HasField("trial"))


class Watch:
    """One watch of a job: the stream, reconnected and resumed after the last seq seen."""

    def __init__(self, transport: Transport, job_id: str, after_seq: int,
                 deadline: Optional[float]) -> None:
        self.t, self.job_id, self.last, self.deadline = transport, job_id, after_seq, deadline
        self.backoff = self.t.options.initial_backoff
        self.unreachable_since: Optional[float] = None

    def _remaining(self) -> Optional[float]:
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("job %s did not end within the timeout (last seq %d)"
                                   % (self.job_id, self.last))
        return left

    def events(self) -> Iterator[ProgressEvent]:
        try:
            yield from self._events()
        except ValueError as e:  # grpc: "Cannot invoke RPC: Channel closed!"
            if not self.t.closed:
                raise
            raise self._closed() from None

    def _closed(self) -> Cancelled:
        return Cancelled("the client was closed while watching job %s (last seq %d); resume "
                         "with watch(%r, after_seq=%d) on a new Client"
                         % (self.job_id, self.last, self.job_id, self.last))

    def _events(self) -> Iterator[ProgressEvent]:
        while True:
            request = jobs_pb2.WatchJobRequest(id=self.job_id, after_seq=self.last)
            stream = self.t.jobs.Watch(request, timeout=self._remaining(),
                                       metadata=self.t.metadata)
            try:
                for event in stream:
                    self.unreachable_since, self.backoff = None, self.t.options.initial_backoff
                    if event.seq <= self.last:
                        continue  # never deliver twice
                    self.last = event.seq
                    yield event
                    if is_final_event(event):
                        return
                return  # the server ended the stream: the job has ended
            except grpc.RpcError as e:
                self._check_retry(e)
            finally:
                stream.cancel()
            self._pause()

    def _check_retry(self, e: grpc.RpcError) -> None:
        if self.t.closed:
            raise self._closed() from None
        code = e.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and self.deadline is not None:
            raise DeadlineExceeded("job %s did not end within the timeout (last seq %d)"
                                   % (self.job_id, self.last))
        if code not in _RECONNECT:
            raise from_rpc_error(e, self.t.options.address, None) from None

    def _pause(self) -> None:
        """Before a reconnect: give up after watch_reconnect_for seconds without the server."""
        o = self.t.options
        now = time.monotonic()
        if self.unreachable_since is None:
            self.unreachable_since = now
        if now - self.unreachable_since > o.watch_reconnect_for:
            raise Unavailable(
                "lost sparrowd at %s for more than %gs while watching job %s (last seq %d); "
                "resume later with watch(%r, after_seq=%d)"
                % (o.address, o.watch_reconnect_for, self.job_id, self.last, self.job_id,
                   self.last))
        left = self._remaining()
        self.t.wait_before_reconnect(self.backoff if left is None else min(self.backoff, left))
        self.backoff = min(2 * self.backoff, o.max_backoff)
