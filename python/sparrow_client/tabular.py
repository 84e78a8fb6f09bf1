"""Arrays <-> the CSV text sparrowd reads and writes (core/data/csv.h's dialect).

Numbers are written with ``%.17g``, which reads back bit for bit; integers as integers, booleans
as 0/1, text (categorical columns) as is, double-quoted where it holds a comma or a quote. The
whole table is formatted by one ``%`` operation and predictions are parsed by numpy, so 100,000
rows take tens of milliseconds, not a Python loop per row.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .errors import InvalidArgument

#: What upload() and the data= of submit()/fit() take: a CSV file's path, CSV bytes, a dict of
#: columns {name: 1-D array}, or a 2-D array (with ``columns=``).
DataLike = Union[str, "os.PathLike[str]", bytes, Mapping[str, Any], np.ndarray]


def _quote(text: str) -> str:
    if "\n" in text or "\r" in text:
        raise InvalidArgument("CSV fields cannot span lines: %r" % text[:60])
    if "," in text or '"' in text or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _column(name: str, values: Any) -> Tuple[str, List[Any]]:
    """The % format and the values of one column."""
    a = np.asarray(values)
    if a.ndim != 1:
        raise InvalidArgument("column '%s' has shape %s; each column must be 1-D"
                              % (name, a.shape))
    if a.dtype.kind == "f":
        return "%.17g", a.astype(np.float64, copy=False).tolist()
    if a.dtype.kind == "b":
        return "%d", a.astype(np.int64).tolist()
    if a.dtype.kind in "iu":
        return "%d", a.tolist()
    if a.dtype.kind in "OUS":
        texts = [_quote(v.decode() if isinstance(v, bytes) else str(v)) for v in a.tolist()]
        return "%s", texts
    raise InvalidArgument("column '%s' has dtype %s; use numbers or text" % (name, a.dtype))


def _csv_from_columns(names: Sequence[str], formats: Sequence[str],
                      rows_major: Union[List[Any], Tuple[Any, ...]], rows: int) -> bytes:
    header = ",".join(_quote(str(n)) for n in names) + "\n"
    line = ",".join(formats) + "\n"
    return (header + (line * rows) % tuple(rows_major)).encode()


def columns_to_csv(columns: Mapping[str, Any]) -> bytes:
    """CSV bytes of a dict {name: 1-D array}, columns in the dict's order.

    >>> columns_to_csv({"u": [1.5, 2.0], "y": [3, 4]})
    b'u,y\\n1.5,3\\n2,4\\n'
    """
    if not columns:
        raise InvalidArgument("no columns: give at least one {name: values}")
    names, formats, lists = [], [], []
    for name, values in columns.items():
        fmt, values_list = _column(str(name), values)
        names.append(str(name))
        formats.append(fmt)
        lists.append(values_list)
    lengths = {len(v) for v in lists}
    if len(lengths) != 1:
        raise InvalidArgument("the columns have different lengths: %s" % ", ".join(
            "%s %d" % (n, len(v)) for n, v in zip(names, lists)))
    flat = list(itertools.chain.from_iterable(zip(*lists)))
    return _csv_from_columns(names, formats, flat, lengths.pop())


def array_to_csv(array: Any, columns: Optional[Sequence[str]]) -> bytes:
    """CSV bytes of an N x k numeric array (or a 1-D array, one column) with k column names.

    >>> array_to_csv(np.array([[0.1, 2.0]]), ["u", "y"])
    b'u,y\\n0.10000000000000001,2\\n'
    """
    a = np.asarray(array)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise InvalidArgument("expected a 1-D or 2-D array, got shape %s" % (a.shape,))
    if columns is None:
        raise InvalidArgument("an array has no column names: pass columns=[...] (one per array "
                              "column) or a dict {name: column}")
    if len(columns) != a.shape[1]:
        raise InvalidArgument("the array has %d columns but columns= names %d (%s)" % (
            a.shape[1], len(columns), ", ".join(map(str, columns))))
    if a.dtype.kind not in "fiub":
        return columns_to_csv({name: a[:, j] for j, name in enumerate(columns)})
    if a.dtype.kind == "f":
        fmt, flat = "%.17g", a.astype(np.float64, copy=False).ravel().tolist()
    else:
        fmt, flat = "%d", a.astype(np.int64, copy=False).ravel().tolist()
    return _csv_from_columns([str(c) for c in columns], [fmt] * a.shape[1], flat, a.shape[0])


def to_csv(data: DataLike, columns: Optional[Sequence[str]] = None) -> Tuple[bytes, str]:
    """The CSV bytes of upload()'s ``data`` and a display name (the file name, else data.csv)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), "data.csv"
    if isinstance(data, (str, os.PathLike)):
        from .spec import read_file

        return read_file(data, "the dataset"), os.path.basename(os.fspath(data))
    if isinstance(data, Mapping):
        if columns is not None:
            raise InvalidArgument("columns= is for arrays; a dict names its own columns")
        return columns_to_csv(data), "data.csv"
    if hasattr(data, "__array__") or isinstance(data, (list, tuple)):
        return array_to_csv(data, columns), "data.csv"
    raise InvalidArgument("data must be a CSV file's path, CSV bytes, a dict of columns or an "
                          "array, not %s" % type(data).__name__)


def parse_csv(csv: bytes) -> Tuple[List[str], np.ndarray]:
    """The header and the N x k values of a numeric CSV as sparrowd writes it (predictions).

    >>> parse_csv(b"y_pred\\n1.5\\n-2\\n")
    (['y_pred'], array([[ 1.5],
           [-2. ]]))
    """
    end = csv.find(b"\n")
    if end < 0:
        header, body = csv, b""
    else:
        header, body = csv[:end], csv[end + 1:]
    names = [n.strip() for n in header.decode().rstrip("\r").split(",") if n.strip()]
    values = np.array(body.replace(b",", b" ").split(), dtype=np.float64)
    if names and values.size % len(names) != 0:
        raise InvalidArgument("the prediction CSV has %d values for %d columns"
                              % (values.size, len(names)))
    return names, values.reshape(-1, max(1, len(names)))


def as_matrix(values: Any, what: str, width: int, rows: Optional[int] = None) -> np.ndarray:
    """``values`` as an N x width float array (a 1-D array is one column)."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2 or a.shape[1] != width:
        raise InvalidArgument("%s has shape %s; the model needs N x %d" % (what, a.shape, width))
    if rows is not None and a.shape[0] != rows:
        raise InvalidArgument("%s has %d rows but the inputs have %d" % (what, a.shape[0], rows))
    return a


def named_columns(names: Sequence[str], matrix: np.ndarray) -> Dict[str, np.ndarray]:
    """{name: column} of an N x len(names) array."""
    return {name: matrix[:, j] for j, name in enumerate(names)}
