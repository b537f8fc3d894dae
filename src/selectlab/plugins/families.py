"""Score families written as plain functions or classes, and the annotator that runs them.

The contract (docs/your_method.md): the object is called with a list of texts and returns a
mapping of each declared column to one value per text, in order. A value is a number, or None
where the text has no score (an optional `missing_reason` entry, one string or None per text,
says why; otherwise the sidecar records "<column>: no value"). NaN is never a score: a family
refuses it (the job fails and says how many) unless its config says `nan: quarantine`, which
writes the value as missing with reason "nan: <column>" and counts it against the job's
`max_failure_rate`, like any document a model family could not score.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from selectlab.annotate.base import MISSING_REASON, Annotator
from selectlab.plugins.loading import MARK, PluginError, marker
from selectlab.shards import Document

TYPES = {"float64": pa.float64(), "int64": pa.int64()}
COLUMN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
RESERVED_COLUMNS = ("id", MISSING_REASON)
NAN_POLICIES = ("refuse", "quarantine")
# What the plan-time probe scores (selectlab.plugins.checks): prose, code and a line of digits.
PROBE_TEXTS = (
    "The river rose after three days of rain, and the village moved its boats uphill.",
    "def area(r):\n    return 3.14159 * r * r\n",
    "2024 1 17 0 0 42",
)


@dataclass(frozen=True)
class FamilySpec:
    columns: dict  # column -> "float64" | "int64", in sidecar order
    label: str  # the model column of the throughput table
    kind: str = "family"


def score_family(columns: Sequence[str] | Mapping[str, str], *, label: str = "rules"):
    """Mark a function or class as a score family writing `columns` (float64 each, or a
    mapping column -> "float64" | "int64")."""
    typed = dict(columns) if isinstance(columns, Mapping) else dict.fromkeys(columns, "float64")
    if not typed:
        raise PluginError("score_family: declare at least one column")
    for name, type_name in typed.items():
        if not COLUMN_NAME.match(name) or name in RESERVED_COLUMNS:
            raise PluginError(f"score_family: column {name!r} is not allowed (lower-case "
                              f"letters, digits and _; not {' or '.join(RESERVED_COLUMNS)})")
        if type_name not in TYPES:
            raise PluginError(f"score_family: column {name!r} has type {type_name!r}; "
                              f"known: {', '.join(TYPES)}")
    return marker(FamilySpec(typed, label))


def spec_of(obj) -> FamilySpec:
    return getattr(obj, MARK)


def accepts(function, name: str) -> bool:
    parameters = inspect.signature(function).parameters
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def check_signature(obj, options: dict, where: str) -> None:
    """The object takes the texts, the config's `options:` and (where it asks) the device, as
    the contract says."""
    kwargs = dict(options) | ({"device": "cpu"} if accepts(obj, "device") else {})
    try:
        if inspect.isclass(obj):
            inspect.signature(obj).bind(**kwargs)
            inspect.signature(obj.__call__).bind(None, ["text"])
        else:
            inspect.signature(obj).bind(["text"], **kwargs)
    except TypeError as error:
        shape = ("class(**options) whose __call__(self, texts)" if inspect.isclass(obj) else
                 "function(texts, **options)")
        raise PluginError(f"{where}: {obj.__qualname__}{inspect.signature(obj)} does not fit "
                          f"the score family contract, a {shape} returns the columns: "
                          f"{error}") from error


def scorer(obj, options: dict, device: str):
    """A callable texts -> columns from the plugin object, the device passed when asked for."""
    kwargs = dict(options) | ({"device": device} if accepts(obj, "device") else {})
    if inspect.isclass(obj):
        return obj(**kwargs)
    return lambda texts: obj(texts, **kwargs)


def numeric(value, type_name: str) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return type_name == "float64" or float(value).is_integer()


def checked_columns(out, spec: FamilySpec, texts: int, where: str,
                    nan: str = "refuse") -> tuple[dict[str, list], Counter]:
    """The sidecar columns of one batch (`missing_reason` included) and the NaN values
    quarantined per column; any breach of the contract raises a `PluginError`."""
    if not isinstance(out, Mapping):
        raise PluginError(f"{where}: returned {type(out).__name__}, not a mapping of column -> "
                          "values")
    declared = list(spec.columns)
    missing = [c for c in declared if c not in out]
    extra = [c for c in out if c not in declared and c != MISSING_REASON]
    if missing or extra:
        raise PluginError(f"{where}: returned columns {sorted(out)}; it declares {declared}"
                          + (f" (missing {missing})" if missing else "")
                          + (f" (undeclared {extra})" if extra else ""))
    given_reasons = list(out.get(MISSING_REASON, [None] * texts))
    if len(given_reasons) != texts:
        raise PluginError(f"{where}: {MISSING_REASON!r} has {len(given_reasons)} values for "
                          f"{texts} texts")
    columns, quarantined = {}, Counter()
    reasons: list[list[str]] = [[r] if r else [] for r in given_reasons]
    for name in declared:
        values = list(out[name])
        if len(values) != texts:
            raise PluginError(f"{where}: column {name!r} has {len(values)} values for {texts} "
                              "texts; return one value per text, in order")
        type_name = spec.columns[name]
        bad = next((i for i, v in enumerate(values) if not numeric(v, type_name)), None)
        if bad is not None:
            raise PluginError(f"{where}: column {name!r} is not {type_name}: value "
                              f"{values[bad]!r} for text {bad}; return numbers (None where a "
                              "text has no score)")
        values = [None if v is None else (float(v) if type_name == "float64" else int(v))
                  for v in values]
        for i, value in enumerate(values):
            if value is None and not given_reasons[i]:
                reasons[i].append(f"{name}: no value")
            elif value is not None and math.isnan(value):
                quarantined[name] += 1
                values[i] = None
                reasons[i].append(f"nan: {name}")
        columns[name] = values
    if quarantined and nan != "quarantine":
        counts = ", ".join(f"{n} in {c!r}" for c, n in quarantined.items())
        raise PluginError(f"{where}: NaN scores ({counts}) of {texts} texts; return None "
                          "where a text has no score, or set the family's `nan: quarantine` "
                          "to write them as missing and count them")
    columns[MISSING_REASON] = [";".join(dict.fromkeys(r)) or None for r in reasons]
    return columns, quarantined


class PluginAnnotator(Annotator):
    """A score family's object run as an annotator: the same sidecars, throughput and
    failure accounting as every other family."""

    def __init__(self, obj, options: dict, gpus: int, *, kind: str = "plugin",
                 nan: str = "refuse", where: str = "annotate"):
        self.obj, self.spec, self.options = obj, spec_of(obj), dict(options)
        self.kind, self.nan, self.where = kind, nan, where
        self.device = "cuda" if gpus > 0 else "cpu"
        self.model_label = self.spec.label
        self.quarantined: Counter = Counter()
        self.score = None

    def setup(self) -> None:
        self.score = scorer(self.obj, self.options, self.device)
        if hasattr(self.score, "setup"):
            self.score.setup()

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(name, TYPES[t]) for name, t in self.spec.columns.items()]
                         + [(MISSING_REASON, pa.string())])

    def score_texts(self, texts: list[str]) -> dict[str, list]:
        if self.score is None:
            self.setup()
        columns, quarantined = checked_columns(self.score(texts), self.spec, len(texts),
                                               self.where, self.nan)
        self.quarantined.update(quarantined)
        return columns

    def annotate_batch(self, docs: Sequence[Document]) -> dict[str, list]:
        return self.score_texts([doc.text for doc in docs])

    def failure_counts(self) -> dict[str, int]:
        return {f"nan: {column}": n for column, n in self.quarantined.items()}

    def peak_device_memory_gb(self) -> float | None:
        if self.device != "cuda":
            return None
        import torch

        return torch.cuda.max_memory_allocated() / 1e9


def probe(obj, options: dict, where: str, nan: str = "refuse") -> None:
    """Score the probe texts on the CPU, so a broken family fails before any job starts."""
    annotator = PluginAnnotator(obj, options, 0, nan=nan, where=f"{where} (probe texts)")
    try:
        annotator.score_texts(list(PROBE_TEXTS))
    except PluginError:
        raise
    except Exception as error:
        raise PluginError(f"{where}: scoring the probe texts raised {type(error).__name__}: "
                          f"{error}") from error
