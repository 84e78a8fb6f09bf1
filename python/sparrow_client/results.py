"""Small result types: an uploaded dataset and a prediction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
from sparrow.v1 import datasets_pb2


@dataclass(frozen=True)
class Dataset:
    """A dataset on sparrowd: ``id`` is the SHA-256 of its bytes.

    ``already_existed`` is True when the server had these bytes before the upload (nothing was
    transferred); ``proto`` is the full ``sparrow.v1.Dataset`` (create_time, format, ...).
    """

    id: str
    name: str
    rows: int
    columns: List[str]
    size_bytes: int
    already_existed: bool
    proto: datasets_pb2.Dataset = field(repr=False, compare=False)

    @classmethod
    def from_proto(cls, d: datasets_pb2.Dataset, already_existed: bool) -> "Dataset":
        return cls(id=d.id, name=d.name, rows=d.rows, columns=list(d.columns),
                   size_bytes=d.size_bytes, already_existed=already_existed, proto=d)


@dataclass(frozen=True)
class Prediction:
    """A model's predictions on one trace (ModelService.Predict's answer).

    ``y``: N x ny predictions in data units, one row per input row (for sequence models the rows
    before the first predicted sample, the NARX history or encoder window, copy the measured
    outputs). ``lower`` / ``upper``: the 95 % band with ``intervals=True``, else None.
    ``bfr`` / ``rmse``: sequence models given the measured outputs: the fit over the predicted
    samples (None otherwise). ``x0``: state-space models: the initial state the simulation
    started from (normalized units), reusable as ``x0=`` (empty otherwise).
    """

    y: np.ndarray
    output_names: List[str]
    samples: int
    bfr: Optional[float] = None
    rmse: Optional[float] = None
    x0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lower: Optional[np.ndarray] = None
    upper: Optional[np.ndarray] = None
