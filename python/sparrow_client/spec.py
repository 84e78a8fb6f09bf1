"""Job specs: a JSON file or dict -> ``sparrow.v1.JobSpec``, refused with the same messages as the
``sparrow`` CLI (translate/json_shape.cc, translate/json.cc, translate/suggest.cc).

The check runs before protobuf's JSON parser, which would take "u" where ["u"] is meant and
answers ``stoping`` with "no field named"; here it is::

    the job spec: stoping: unknown field 'stoping'; did you mean 'stopping'?
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Union

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from sparrow.v1 import model_pb2, spec_pb2

from .errors import InvalidArgument, NotFound

SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any], spec_pb2.JobSpec]

_WHAT = "the job spec"


def edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance ignoring ASCII case (as translate::EditDistance)."""
    a, b = a.lower(), b.lower()
    before: List[int] = [0] * (len(b) + 1)
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
        before, prev = prev, row
    return prev[len(b)]


def closest_name(word: str, candidates: List[str]) -> str:
    """The candidate close enough to ``word`` to be a typo of it, else "" (ClosestName).

    >>> closest_name("stoping", ["split", "stopping", "seed"])
    'stopping'
    """
    if len(word) > 64:
        return ""
    limit = max(1, len(word) // 3)
    best, best_distance = "", limit + 1
    for c in candidates:
        if abs(len(c) - len(word)) > limit:
            continue
        d = edit_distance(word, c)
        if d < best_distance:
            best, best_distance = c, d
    return best


def _type_name(v: Any) -> str:
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "the string " + json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "the boolean " + ("true" if v else "false")
    if v is None:
        return "null"
    return "the number " + json.dumps(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _join(path: str, key: str) -> str:
    return key if not path else path + "." + key


def _find_field(t: Descriptor, key: str):
    return t.fields_by_name.get(key) or next(
        (f for f in t.fields if f.json_name == key), None)


def _error(path: str, message: str) -> InvalidArgument:
    return InvalidArgument("%s: %s: %s" % (_WHAT, path or "the top level", message))


def _check_message(v: Any, t: Descriptor, path: str) -> None:
    if not isinstance(v, dict):
        raise _error(path, "expected an object {...} (%s), got %s" % (t.full_name, _type_name(v)))
    seen = set()
    for key, value in v.items():
        field = _find_field(t, key)
        if field is None:
            raise _unknown_field(t, key, path)
        if field in seen:
            raise _error(_join(path, field.name),
                         "given twice (in snake_case and in lowerCamelCase); keep one")
        seen.add(field)
        if value is not None:
            _check_field(value, field, _join(path, key))
    _check_oneofs(v, t, path)


def _unknown_field(t: Descriptor, key: str, path: str) -> InvalidArgument:
    names = [f.name for f in t.fields]
    guess = closest_name(key, names)
    if guess:
        return _error(_join(path, key), "unknown field '%s'; did you mean '%s'?" % (key, guess))
    return _error(_join(path, key), "unknown field '%s'; the fields of %s are %s"
                  % (key, t.full_name, ", ".join(names)))


def _check_oneofs(v: Dict[str, Any], t: Descriptor, path: str) -> None:
    for oneof in t.oneofs:  # (a proto3 `optional` field's own oneof never has two set)
        given = [f.name for f in (_find_field(t, k) for k, x in v.items() if x is not None)
                 if f.containing_oneof is oneof]
        if len(given) > 1:
            raise _error(path, "sets both '%s' and '%s', which are alternatives (one of %s); "
                               "keep one" % (given[0], given[1], oneof.name))


def _is_map(field: FieldDescriptor) -> bool:
    t = field.message_type
    return (field.label == FieldDescriptor.LABEL_REPEATED and t is not None
            and t.GetOptions().map_entry)


def _check_field(v: Any, field: FieldDescriptor, path: str) -> None:
    if _is_map(field):
        if not isinstance(v, dict):
            raise _error(path, 'expected an object {"key": ...}, got ' + _type_name(v))
        for key, item in v.items():
            _check_single(item, field.message_type.fields_by_name["value"], path + "." + key)
        return
    if field.label != FieldDescriptor.LABEL_REPEATED:
        _check_single(v, field, path)
        return
    if not isinstance(v, list):
        hint = "; write [%s] for one item" % json.dumps(v) if not isinstance(
            v, (dict, list)) else ""
        raise _error(path, "expected a list [...], got %s%s" % (_type_name(v), hint))
    for i, item in enumerate(v):
        _check_single(item, field, "%s[%d]" % (path, i))


def _check_single(v: Any, field: FieldDescriptor, path: str) -> None:
    cpp = field.cpp_type
    if cpp == FieldDescriptor.CPPTYPE_MESSAGE:
        if not field.message_type.full_name.startswith("google.protobuf."):
            _check_message(v, field.message_type, path)
    elif cpp == FieldDescriptor.CPPTYPE_ENUM:
        _check_enum(v, field.enum_type, path)
    elif cpp == FieldDescriptor.CPPTYPE_STRING:
        if not isinstance(v, str):
            raise _error(path, "expected a string, got " + _type_name(v))
    elif cpp == FieldDescriptor.CPPTYPE_BOOL:
        if not isinstance(v, bool):
            raise _error(path, "expected true or false, got " + _type_name(v))
    elif cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        if not (_is_number(v) or isinstance(v, str)):
            raise _error(path, "expected an integer, got " + _type_name(v))
    elif cpp in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE) and v in (
            "NaN", "Infinity", "-Infinity"):
        return
    elif not _is_number(v):
        hint = "; write it without quotes" if isinstance(v, str) else ""
        raise _error(path, "expected a number, got %s%s" % (_type_name(v), hint))


def _check_enum(v: Any, t: EnumDescriptor, path: str) -> None:
    if isinstance(v, int) and not isinstance(v, bool) and v in t.values_by_number:
        return
    names = [value.name for value in t.values]
    if not isinstance(v, str):
        raise _error(path, "expected one of %s; got %s" % (", ".join(names), _type_name(v)))
    if v in t.values_by_name:
        return
    guess = _guess_enum(v, t, names)
    raise _error(path, "%s is not a valid %s%s (valid: %s)" % (
        json.dumps(v, ensure_ascii=False), t.name, '; use "%s"' % guess if guess else "",
        ", ".join(names)))


def _guess_enum(given: str, t: EnumDescriptor, names: List[str]) -> str:
    prefix = ""
    for name in names:
        if name.endswith("_UNSPECIFIED"):
            prefix = name[:-len("UNSPECIFIED")]
    upper = given.upper()
    if prefix and prefix + upper in t.values_by_name:
        return prefix + upper
    suffixed = [name for name in names if name.endswith("_" + upper)]
    if len(suffixed) == 1:
        return suffixed[0]
    return closest_name(given, names)


def check_spec_dict(spec: Mapping[str, Any]) -> None:
    """Raises InvalidArgument, worded as the CLI, unless ``spec`` has the shape of a JobSpec."""
    _check_message(dict(spec) if not isinstance(spec, dict) else spec,
                   spec_pb2.JobSpec.DESCRIPTOR, "")


def _reject_constant(name: str) -> None:
    raise ValueError("%s is not JSON (write \"NaN\", \"Infinity\" or \"-Infinity\")" % name)


def read_file(path: Union[str, "os.PathLike[str]"], what: str) -> bytes:
    """The bytes of a local file, or NotFound / InvalidArgument worded as the CLI's."""
    if os.path.isdir(path):
        raise InvalidArgument("cannot read %s '%s': it is a directory, not a file"
                              % (what, os.fspath(path)))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        raise NotFound("cannot read %s '%s': no such file or not readable (paths are relative "
                       "to the current directory)" % (what, os.fspath(path))) from None


def parse_spec_json(text: Union[str, bytes]) -> Dict[str, Any]:
    """A spec's JSON text as a dict, strict JSON (no NaN literals)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        raise InvalidArgument("%s is not valid JSON: %s (strict JSON: no trailing commas, no "
                              "comments, strings in double quotes)" % (_WHAT, e)) from None


def _plain(v: Any, path: str) -> Any:
    """``v`` as JSON's Python types: mappings as dicts with string keys, tuples and NumPy arrays
    as lists, NumPy scalars as int / float / bool."""
    if isinstance(v, Mapping):
        out = {}
        for key, value in v.items():
            if not isinstance(key, str):
                raise _error(path, "the key %r is not a string; field names are strings" % (key,))
            out[key] = _plain(value, _join(path, key))
        return out
    if isinstance(v, (list, tuple)) or type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        items = list(v) if isinstance(v, (list, tuple)) else v.tolist()
        if not isinstance(items, list):  # a NumPy scalar
            return items
        return [_plain(x, "%s[%d]" % (path, i)) for i, x in enumerate(items)]
    return v


def to_job_spec(spec: SpecLike) -> spec_pb2.JobSpec:
    """A JobSpec from a JobSpec (copied), a dict of its JSON form, or a JSON file's path; what
    submit() sends (before uploads). Raises InvalidArgument worded as the CLI.

    Example::

        spec = to_job_spec("examples/demo.json")
        print(spec.model.state_space_rnn.nx)   # 2
    """
    if isinstance(spec, spec_pb2.JobSpec):
        out = spec_pb2.JobSpec()
        out.CopyFrom(spec)
        return out
    if isinstance(spec, (str, os.PathLike)):
        spec = parse_spec_json(read_file(spec, "the job spec"))
    if not isinstance(spec, Mapping):
        raise InvalidArgument("the spec must be a dict, a JSON file's path or a "
                              "sparrow.v1.JobSpec, not %s" % type(spec).__name__)
    spec = _plain(spec, "")
    check_spec_dict(spec)
    try:
        return json_format.ParseDict(spec, spec_pb2.JobSpec(), ignore_unknown_fields=False)
    except json_format.ParseError as e:
        raise InvalidArgument("the job spec is not valid: %s (field names are those of "
                              "sparrow.v1.JobSpec in proto/sparrow/v1/spec.proto)" % e) from None


def read_model_file(path: str) -> model_pb2.TrainedModel:
    """A TrainedModel file as ``sparrow model get`` writes it (.json: JSON, else binary)."""
    data = read_file(path, "the model")
    model = model_pb2.TrainedModel()
    if len(path) > 5 and path.endswith(".json"):
        try:
            json_format.Parse(data, model)
        except json_format.ParseError as e:
            raise InvalidArgument("the model file %s is not a sparrow.v1.TrainedModel in JSON: "
                                  "%s" % (path, e)) from None
        return model
    try:
        model.ParseFromString(data)
    except Exception:  # DecodeError
        raise InvalidArgument("the model file %s is not a binary sparrow.v1.TrainedModel (use a "
                              ".json name for JSON)" % path) from None
    return model


def inline_warm_start(spec: spec_pb2.JobSpec) -> None:
    """warm_start.model_path -> warm_start.model (the file's model sent inline, as the CLI)."""
    if spec.warm_start.WhichOneof("source") == "model_path":
        model = read_model_file(spec.warm_start.model_path)
        spec.warm_start.model = model.SerializeToString()
