"""The gRPC channel to sparrowd and the calling conventions of the C++ client (client/lib):
a bearer token in the ``authorization`` metadata, a deadline on every unary call, retries of
UNAVAILABLE only, with exponential backoff, and the channel settings sparrowd expects
(keepalive pings it permits, no receive size limit, quick reconnects after a restart)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import grpc
from sparrow.v1 import datasets_pb2_grpc, jobs_pb2_grpc, model_service_pb2_grpc

from .errors import InvalidArgument, NotFound, from_rpc_error

DEFAULT_ADDRESS = "127.0.0.1:50051"

# As client/lib/client.cc: agree with sparrowd's keepalive policy (it permits pings every 10 s),
# take answers of any size, and reconnect quickly after a server restart.
CHANNEL_OPTIONS: List[Tuple[str, Any]] = [
    ("grpc.keepalive_time_ms", 30000),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


@dataclass
class Options:
    """How to reach sparrowd and how patiently (the C++ ClientOptions and their defaults)."""

    address: str = DEFAULT_ADDRESS
    token: str = ""
    tls: bool = False
    ca: Optional[str] = None
    #: Seconds each unary call attempt may take (uploads get 10x); None = no deadline.
    timeout: Optional[float] = 30.0
    #: Attempts of a call answered UNAVAILABLE (1 = no retries), and the backoff between them:
    #: initial, doubling, capped (seconds).
    max_attempts: int = 5
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    #: Upload chunk size (bytes).
    chunk_bytes: int = 1 << 20
    #: Watch: how long to keep reconnecting to an unreachable server before giving up (seconds).
    watch_reconnect_for: float = 120.0


def resolve_options(address: Optional[str], token: Optional[str], **kwargs: Any) -> Options:
    """Options with the CLI's defaults: address from SPARROW_ADDR (else 127.0.0.1:50051), token
    from SPARROW_TOKEN; ``ca`` implies TLS."""
    if address is None:
        address = os.environ.get("SPARROW_ADDR") or DEFAULT_ADDRESS
    if token is None:
        token = os.environ.get("SPARROW_TOKEN", "")
    options = Options(address=address, token=token, **kwargs)
    options.tls = bool(options.tls or options.ca)
    if not options.address:
        raise InvalidArgument("no server address: pass address='HOST:PORT' or set SPARROW_ADDR")
    if options.max_attempts < 1:
        raise InvalidArgument("max_attempts must be at least 1")
    if options.chunk_bytes < 1:
        raise InvalidArgument("chunk_bytes must be positive")
    return options


def _credentials(options: Options) -> grpc.ChannelCredentials:
    pem = None
    if options.ca:
        try:
            with open(options.ca, "rb") as f:
                pem = f.read()
        except OSError:
            raise NotFound("cannot read the CA certificate '%s'" % options.ca) from None
    return grpc.ssl_channel_credentials(root_certificates=pem)


class Transport:
    """One channel and its stubs; thread-safe like the channel."""

    def __init__(self, options: Options,
                 channel_options: Sequence[Tuple[str, Any]] = ()) -> None:
        self.options = options
        args = CHANNEL_OPTIONS + list(channel_options)
        if options.tls:
            self.channel = grpc.secure_channel(options.address, _credentials(options), args)
        else:
            self.channel = grpc.insecure_channel(options.address, args)
        self.metadata: Tuple[Tuple[str, str], ...] = (
            (("authorization", "Bearer " + options.token),) if options.token else ())
        self.datasets = datasets_pb2_grpc.DatasetServiceStub(self.channel)
        self.jobs = jobs_pb2_grpc.JobServiceStub(self.channel)
        self.models = model_service_pb2_grpc.ModelServiceStub(self.channel)
        self.closed = False
        self.health_check = self.channel.unary_unary("/grpc.health.v1.Health/Check")

    def close(self) -> None:
        self.closed = True
        self.channel.close()

    def call(self, method: Callable[..., Any], request: Any, *, timeout_factor: float = 1) -> Any:
        """``method(request)`` with the deadline and the token, retried while UNAVAILABLE.

        ``request`` may be a function returning a fresh request (iterator) for each attempt.
        Raises the SparrowError of the last attempt's status.
        """
        o = self.options
        timeout = None if o.timeout is None else o.timeout * timeout_factor
        backoff = o.initial_backoff
        attempt = 1
        while True:
            try:
                message = request() if callable(request) else request
                return method(message, timeout=timeout, metadata=self.metadata)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or attempt >= o.max_attempts:
                    raise from_rpc_error(e, o.address, timeout) from None
            time.sleep(backoff)
            backoff = min(2 * backoff, o.max_backoff)
            attempt += 1

    def wait_before_reconnect(self, backoff: float) -> None:
        """Between watch reconnects: a live connection (a draining server answered UNAVAILABLE)
        backs off in full; a lost one waits at most ``backoff``, less if sparrowd is back."""
        start = time.monotonic()
        ready = grpc.channel_ready_future(self.channel)
        try:
            ready.result(timeout=backoff)
        except grpc.FutureTimeoutError:
            return
        finally:
            ready.cancel()
        if time.monotonic() - start < 0.01:  # it was connected all along
            time.sleep(max(0.0, backoff - (time.monotonic() - start)))
