"""sparrow_client: the Python client of sparrowd, Sparrow's training service.

    from sparrow_client import Client
    client = Client()                        # $SPARROW_ADDR or 127.0.0.1:50051, $SPARROW_TOKEN
    model = client.fit("examples/demo.json")  # upload, submit, wait
    y_hat = model.predict(u, outputs=y)

See docs/python.md. The gRPC stubs (``sparrow.v1.*_pb2``) live in this package's ``_proto``
directory, made by ``python/gen_stubs.sh OUT_DIR`` (the CMake build runs it into
``build/python``); it is put on sys.path here, so ``from sparrow.v1 import jobs_pb2`` works once
this package is imported.
"""

import os as _os
import sys as _sys

_PROTO_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "_proto")
if not _os.path.isfile(_os.path.join(_PROTO_DIR, "sparrow", "v1", "jobs_pb2.py")):
    raise ImportError(
        "sparrow_client: the gRPC stubs are missing (%s has no sparrow/v1/jobs_pb2.py): run "
        "python/gen_stubs.sh OUT_DIR and put OUT_DIR on PYTHONPATH, or build with cmake and use "
        "PYTHONPATH=build/python" % _PROTO_DIR)
if _PROTO_DIR not in _sys.path:
    _sys.path.insert(0, _PROTO_DIR)

from sparrow.v1 import (datasets_pb2, jobs_pb2, model_pb2,  # noqa: E402
                        model_service_pb2, spec_pb2)

from .client import Client, state_name  # noqa: E402
from .errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded,  # noqa: E402
                     FailedPrecondition, Internal, InvalidArgument, JobFailed, NotFound,
                     OutOfRange, PermissionDenied, ResourceExhausted, SparrowError,
                     Unauthenticated, Unavailable, Unimplemented, Unknown)
from .models import EXPORT_FORMATS, Model  # noqa: E402
from .results import Dataset, Prediction  # noqa: E402
from .watch import is_final_event  # noqa: E402
from .spec import to_job_spec  # noqa: E402

Job = jobs_pb2.Job
ProgressEvent = jobs_pb2.ProgressEvent
JobSpec = spec_pb2.JobSpec
TrainedModel = model_pb2.TrainedModel

__all__ = [
    "Client", "Model", "Dataset", "Prediction", "Job", "ProgressEvent", "JobSpec",
    "TrainedModel", "EXPORT_FORMATS", "is_final_event", "state_name", "to_job_spec",
    "datasets_pb2", "jobs_pb2", "model_pb2", "model_service_pb2", "spec_pb2",
    "SparrowError", "JobFailed", "Aborted", "AlreadyExists", "Cancelled", "DataLoss",
    "DeadlineExceeded", "FailedPrecondition", "Internal", "InvalidArgument", "NotFound",
    "OutOfRange", "PermissionDenied", "ResourceExhausted", "Unauthenticated", "Unavailable",
    "Unimplemented", "Unknown",
]
