"""Trained models on sparrowd: fetch, export and run them (ModelService)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Union

import numpy as np
from sparrow.v1 import jobs_pb2, model_pb2, model_service_pb2

from .errors import InvalidArgument
from .results import Prediction
from .tabular import array_to_csv, as_matrix, columns_to_csv, named_columns, parse_csv
from .transport import Transport

#: export() formats: ExportModelRequest.Format values.
EXPORT_FORMATS = {"proto": 1, "json": 2, "onnx": 3}

Inputs = Union[np.ndarray, Sequence[Any], Mapping[str, Any]]
InitialState = Union[str, Sequence[float], np.ndarray]

_SEQUENCE_KINDS = ("narx_mlp", "state_space_rnn")


@dataclass(frozen=True)
class _Columns:
    """What a job's model reads and writes."""

    inputs: List[str]
    outputs: List[str]
    kind: str  # the ModelSpec oneof: mlp, narx_mlp, state_space_rnn, ...

    @property
    def sequence(self) -> bool:
        return self.kind in _SEQUENCE_KINDS


def _initial_state(x0: InitialState) -> Dict[str, Any]:
    """PredictRequest's initial_state and x0 fields of predict()'s ``x0``."""
    P = model_service_pb2.PredictRequest
    if isinstance(x0, str):
        if x0 == "estimate":
            return {"initial_state": P.X0_ESTIMATE}
        if x0 == "zero":
            return {"initial_state": P.X0_ZERO}
        raise InvalidArgument("x0 '%s': use 'estimate', 'zero' or the initial state's nx values "
                              "(e.g. x0=[0.1, -0.3], as a previous Prediction.x0)" % x0)
    values = np.asarray(x0, dtype=np.float64).ravel()
    return {"initial_state": P.X0_GIVEN, "x0": values.tolist()}


def _needs_outputs(cols: _Columns, one_step: bool, x0: InitialState) -> bool:
    """Whether the model reads the measured outputs: sequence models, except a state-space
    simulation from a zero or given x0."""
    if not cols.sequence:
        return False
    return one_step or cols.kind == "narx_mlp" or (isinstance(x0, str) and x0 == "estimate")


class ModelCalls:
    """The ModelService methods of :class:`sparrow_client.Client`."""

    _t: Transport
    _columns_cache: Dict[str, _Columns]

    def get_model(self, job_id: str) -> model_pb2.TrainedModel:
        """The trained model of an ended job (a cancelled or failed job's is partial).

        Raises FailedPrecondition while the job has not ended, NotFound for an unknown job.

        Example::

            model = client.get_model("job-1a2b3c4d5e6f7a8b")
            print(model.metrics.test_bfr, list(model.input_scaling.names))
        """
        model = self._t.call(self._t.models.Get,
                             model_service_pb2.GetModelRequest(job_id=job_id))
        self._columns_cache[job_id] = _Columns(list(model.input_scaling.names),
                                               list(model.output_scaling.names),
                                               model.model.WhichOneof("kind") or "")
        return model

    def export(self, job_id: str, format: str = "proto") -> bytes:
        """The model of an ended job as a file's bytes: ``"proto"`` (binary
        sparrow.v1.TrainedModel), ``"json"`` (its protobuf JSON mapping) or ``"onnx"`` (an ONNX
        model, opset 17, docs/onnx.md: rows in, outputs out for mlp, cnn, rnn and lstm;
        narx_mlp one step ahead; state_space_rnn as a simulation from a given x0).

        Example::

            pathlib.Path("model.onnx").write_bytes(client.export(job_id, "onnx"))
        """
        code = EXPORT_FORMATS.get(str(format).lower())
        if code is None:
            raise InvalidArgument("format '%s': use proto, json or onnx" % format)
        request = model_service_pb2.ExportModelRequest(job_id=job_id, format=code)
        return self._t.call(self._t.models.Export, request).data

    def predict(self, job_id: str, inputs: Inputs, *, outputs: Any = None,
                one_step: bool = False, x0: InitialState = "estimate", x0_samples: int = 0,
                intervals: bool = False) -> np.ndarray:
        """Runs a job's model on one trace; returns the N x ny predictions (data units).

        ``inputs``: N x nu array (N for one input) in the order of the model's inputs, or a dict
        {column name: values}. Sequence models (narx_mlp, state_space_rnn) also read the measured
        ``outputs`` (N x ny): the NARX history, the x0 estimate, and the fit; a state-space
        simulation from ``x0="zero"`` or given values reads the inputs alone. ``one_step``: NARX
        one-step-ahead prediction instead of free-run simulation. ``x0``: state_space_rnn:
        ``"estimate"`` (from the first ``x0_samples`` measured outputs; 0 = the model's
        setting), ``"zero"``, or the nx values of the initial state. ``intervals``: with
        one_step, for SBDL NARX models (see :meth:`predict_full` for the band).

        Example::

            y_hat = client.predict(job_id, u_new, outputs=y_new)   # arrays of N samples
        """
        return self.predict_full(job_id, inputs, outputs=outputs, one_step=one_step, x0=x0,
                                 x0_samples=x0_samples, intervals=intervals).y

    def predict_full(self, job_id: str, inputs: Inputs, *, outputs: Any = None,
                     one_step: bool = False, x0: InitialState = "estimate",
                     x0_samples: int = 0, intervals: bool = False) -> Prediction:
        """As :meth:`predict`, with everything the server answers: the fit (BFR, RMSE) on the
        measured outputs, the initial state x0, and the 95 % band of ``intervals``.

        Example::

            p = client.predict_full(job_id, u_new, outputs=y_new)
            print(p.samples, p.bfr, p.rmse, p.x0)
            again = client.predict(job_id, u_new, x0=p.x0)        # the same start, no outputs
        """
        cols = self._model_columns(job_id)
        csv = self._predict_csv(job_id, cols, inputs, outputs, one_step, x0)
        request = model_service_pb2.PredictRequest(
            job_id=job_id, csv=csv, one_step=one_step, intervals=intervals,
            x0_samples=x0_samples, **_initial_state(x0))
        response = self._t.call(self._t.models.Predict, request)
        return _prediction(response)

    def _model_columns(self, job_id: str) -> _Columns:
        cols = self._columns_cache.get(job_id)
        if cols is None:
            self.get_model(job_id)
            cols = self._columns_cache[job_id]
        return cols

    def _predict_csv(self, job_id: str, cols: _Columns, inputs: Inputs, outputs: Any,
                     one_step: bool, x0: InitialState) -> bytes:
        if isinstance(inputs, Mapping):
            table = dict(inputs)
            if outputs is not None:
                rows = len(next(iter(table.values()))) if table else None
                table.update(named_columns(cols.outputs, as_matrix(
                    outputs, "outputs", len(cols.outputs), rows)))
            self._check_outputs(job_id, cols, set(table), one_step, x0)
            return columns_to_csv(table)
        u = as_matrix(inputs, "inputs", len(cols.inputs))
        if outputs is None:
            self._check_outputs(job_id, cols, set(), one_step, x0)
            return array_to_csv(u, cols.inputs)
        y = as_matrix(outputs, "outputs", len(cols.outputs), u.shape[0])
        return array_to_csv(np.hstack([u, y]), cols.inputs + cols.outputs)

    @staticmethod
    def _check_outputs(job_id: str, cols: _Columns, given: set, one_step: bool,
                       x0: InitialState) -> None:
        if not _needs_outputs(cols, one_step, x0) or set(cols.outputs) <= given:
            return
        why = ("its NARX history (the first output lags)" if cols.kind == "narx_mlp" else
               "the estimate of its initial state")
        raise InvalidArgument(
            "the %s model of %s reads the measured outputs (%s) for %s: pass outputs= (N x %d)%s"
            % (cols.kind, job_id, ", ".join(cols.outputs), why, len(cols.outputs),
               "" if cols.kind == "narx_mlp" else ", or x0='zero' or x0=[...]"))


def _prediction(response: model_service_pb2.PredictResponse) -> Prediction:
    names, values = parse_csv(response.csv)

    def block(suffix: str):
        idx = [j for j, n in enumerate(names) if n.endswith(suffix)]
        return values[:, idx] if idx else None

    y = block("_pred")
    return Prediction(
        y=y if y is not None else values,
        output_names=[n[:-len("_pred")] for n in names if n.endswith("_pred")],
        samples=response.samples,
        bfr=response.bfr if response.HasField("bfr") else None,
        rmse=response.rmse if response.HasField("rmse") else None,
        x0=np.array(response.x0, dtype=np.float64),
        lower=block("_lower95"), upper=block("_upper95"))


class Model:
    """A trained model on sparrowd, as :meth:`Client.fit` returns it: the ended ``job``
    (sparrow.v1.Job), its ``model`` (sparrow.v1.TrainedModel) and shortcuts to run and export
    it.

    Example::

        m = client.fit("examples/demo.json")
        print(m.job_id, m.metrics.test_bfr)
        y_hat = m.predict(u_new, outputs=y_new)
        pathlib.Path("model.onnx").write_bytes(m.export("onnx"))
    """

    def __init__(self, client: ModelCalls, job: jobs_pb2.Job,
                 model: model_pb2.TrainedModel) -> None:
        self.client = client
        self.job = job
        self.model = model

    @property
    def job_id(self) -> str:
        """The job's id (the model's id too)."""
        return self.job.id

    @property
    def metrics(self) -> model_pb2.Metrics:
        """The model's fit on the train / validation / test splits."""
        return self.model.metrics

    @property
    def input_names(self) -> List[str]:
        """The model's input columns, in the order predict() reads an array's columns."""
        return list(self.model.input_scaling.names)

    @property
    def output_names(self) -> List[str]:
        """The model's output columns."""
        return list(self.model.output_scaling.names)

    def predict(self, inputs: Inputs, **kwargs: Any) -> np.ndarray:
        """:meth:`Client.predict` with this model: ``m.predict(u, outputs=y)``."""
        return self.client.predict(self.job_id, inputs, **kwargs)

    def predict_full(self, inputs: Inputs, **kwargs: Any) -> Prediction:
        """:meth:`Client.predict_full` with this model: ``m.predict_full(u, outputs=y).bfr``."""
        return self.client.predict_full(self.job_id, inputs, **kwargs)

    def export(self, format: str = "proto") -> bytes:
        """:meth:`Client.export` of this model: ``m.export("onnx")``."""
        return self.client.export(self.job_id, format)

    def __repr__(self) -> str:
        return "Model(%s, %s, %s)" % (self.job_id, self.model.model.WhichOneof("kind"),
                                      self.model.termination)
