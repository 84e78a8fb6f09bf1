"""The exceptions of the Sparrow client.

Every failed call raises a :class:`SparrowError`. A gRPC error becomes the subclass of its status
code (:class:`NotFound` for ``NOT_FOUND``, ...), and ``str(error)`` is the server's message, the
same text the ``sparrow`` CLI prints after ``sparrow: error:``::

    try:
        client.status("job-0000000000000000")
    except sparrow_client.NotFound as e:
        print(e)        # job job-0000000000000000 not found
        print(e.code)   # grpc.StatusCode.NOT_FOUND

A job that ends FAILED or CANCELLED makes :meth:`Client.wait` and :meth:`Client.fit` raise
:class:`JobFailed`, which carries the job.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

import grpc


class SparrowError(Exception):
    """A call to sparrowd failed: ``code`` is its gRPC status code (None for errors found by the
    client itself or for :class:`JobFailed`), ``message`` the server's message (also ``str(e)``).
    """

    #: The status code this class stands for (None: any).
    grpc_code: Optional[grpc.StatusCode] = None

    def __init__(self, code: Optional[grpc.StatusCode], message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%r, %r)" % (type(self).__name__, self.code, self.message)

    def __reduce__(self):  # picklable (e.g. across multiprocessing) whatever __init__ takes
        return _restore, (type(self), dict(self.__dict__))


def _restore(cls: type, state: dict) -> "SparrowError":
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class _CodedError(SparrowError):
    """A SparrowError of one status code: constructed from the message alone."""

    def __init__(self, message: str) -> None:
        super().__init__(self.grpc_code, message)


class Cancelled(_CodedError):
    """The call was cancelled."""

    grpc_code = grpc.StatusCode.CANCELLED


class Unknown(_CodedError):
    """An error the server did not classify."""

    grpc_code = grpc.StatusCode.UNKNOWN


class InvalidArgument(_CodedError):
    """A bad spec, option, CSV or argument; the message names it and what to write instead."""

    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(_CodedError):
    """sparrowd did not answer within the call's timeout, or a wait's timeout passed."""

    grpc_code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(_CodedError):
    """No such job, dataset or model (for this token's tenant), or no such local file."""

    grpc_code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(_CodedError):
    """A request_id used again with a different spec or priority."""

    grpc_code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(_CodedError):
    """The token may not do this."""

    grpc_code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(_CodedError):
    """A limit of the server: queue length, memory, message size."""

    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(_CodedError):
    """Not in this state: the model of a job that has not ended, cancelling an ended job,
    deleting a dataset that a job uses."""

    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(_CodedError):
    """The call was aborted."""

    grpc_code = grpc.StatusCode.ABORTED


class OutOfRange(_CodedError):
    """A value out of range."""

    grpc_code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(_CodedError):
    """The server does not implement this (an older sparrowd)."""

    grpc_code = grpc.StatusCode.UNIMPLEMENTED


class Internal(_CodedError):
    """A server error, or an answer this client cannot read."""

    grpc_code = grpc.StatusCode.INTERNAL


class Unavailable(_CodedError):
    """sparrowd cannot be reached (after the client's retries), or is shutting down."""

    grpc_code = grpc.StatusCode.UNAVAILABLE


class DataLoss(_CodedError):
    """Unrecoverable data loss."""

    grpc_code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(_CodedError):
    """No token, or a token the server does not know."""

    grpc_code = grpc.StatusCode.UNAUTHENTICATED


class JobFailed(SparrowError):
    """A job ended FAILED or CANCELLED (raised by :meth:`Client.wait` and :meth:`Client.fit`).

    ``job`` is the ended ``sparrow.v1.Job``; ``str(e)`` says which job, its state and why
    ("job job-1a2b: failed: the loss became NaN at epoch 12; ...").
    """

    def __init__(self, job) -> None:  # job: sparrow.v1.Job
        from sparrow.v1 import jobs_pb2  # the stubs are on sys.path once the package is imported

        state = jobs_pb2.Job.State.Name(job.state).lower()
        why = job.reason or job.summary
        super().__init__(None, "job %s: %s%s" % (job.id, state, ": " + why if why else ""))
        self.job = job

    @property
    def state(self) -> int:
        """The job's final state (a ``sparrow.v1.Job.State`` value)."""
        return self.job.state


_BY_CODE: Dict[grpc.StatusCode, Type[SparrowError]] = {
    cls.grpc_code: cls for cls in (
        Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
        PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange,
        Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated)
}


def error_for(code: grpc.StatusCode, message: str) -> SparrowError:
    """The exception of a status code and message (SparrowError itself for an unmapped code).

    >>> error_for(grpc.StatusCode.NOT_FOUND, "job x not found")
    NotFound(<StatusCode.NOT_FOUND: (5, 'not found')>, 'job x not found')
    """
    cls = _BY_CODE.get(code)
    if cls is None:
        return SparrowError(code, message)
    return cls(message)


def from_rpc_error(error: grpc.RpcError, address: str, timeout: Optional[float]) -> SparrowError:
    """The exception of a failed gRPC call, with the C++ client's wording for an unreachable
    server and for a call that ran out of time."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable("cannot reach sparrowd at %s: %s (is it running? check the address "
                           "/ SPARROW_ADDR)" % (address, details))
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and timeout is not None:
        return DeadlineExceeded("sparrowd at %s did not answer within %gs" % (address, timeout))
    return error_for(code, details)


__all__ = [
    "SparrowError", "JobFailed", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded",
    "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
    "Unauthenticated", "error_for", "from_rpc_error",
]
