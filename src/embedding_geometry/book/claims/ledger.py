"""The claims ledger: each chapter's claims as data (its package's ``chapters/<package>/ledger.yaml``,
whose ``chapter:`` names its slug; :func:`path` finds it), checked when read.

    claims:
      - id: short-kebab-id
        kind: published          # | hypothesis (the book's own) | pipeline (a check)
        statement, source        # the text's words, and where it says them
        headline: true           # in the post's title, TL;DR or key takeaways (chosen before any run)
        caveat: "…"              # what a reader must know to read the verdict
        home: <slug>             # judged here, counted at its home chapter (same id; takes its home's says)
        metric: a.b              # key path into the chapter's metrics
        reduce: last             # how the metric becomes one number (claims.reduce)
        series: depths           # or blocks: what the metric's last axis runs over
        published: {value: 0.88, model: org/model}
        tolerance: 0.01          # |this run − published| allowed for the numeric verdict
        shape: {test: above, args: {bound: 0.5}, statement: the model-agnostic form}  # tests: claims.reduce
        says: {holds: "…", fails: "…"}   # the finding for each outcome, read after "On MiniLM, "
        measured_on: org/model   # the metric is another model's run
        unit: sentences          # the sampling unit (UNITS)
        samples: <spec>          # per-unit values that rebuild the statistic (claims.samples.find), or
                                 # {draws: <path>, n_units: <path>}: resamples the chapter drew itself
        null: {kind: control, samples: <spec>}  # random-init controls unit by unit (≥ 10 seeds), or
                                 # {kind: …, draws: <path>} (permutation), or {kind: chance, value: 0.25};
                                 # side: above | below, for a between test
        no_null: paired          # why a counted claim has no null: a key of NO_NULL, or a sentence
        fraction: 0.5            # the bound is f · published (above) or published / f (below) …
        fraction_reason: "…"     # … and why
        by_construction | description | not_measured: "<why>"   # shown, not counted
    errata: [{id, statement, prose_value, data_value, evidence}]
    left_out: [{id, home, why}]  # other chapters' claims a re-judging ledger leaves out
    parameters: {name: {integer: [3, 1000]}}   # a chapter's own rules (book.parameters.declared)

The published claims with a shape test at their home form one family per model; its size m
(:func:`family_size`) scales each chapter's Benjamini–Hochberg adjustment (claims.pvalues).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ...core import relative_depth
from ...core.errors import BookError
from . import reduce as reducers

KINDS = ("published", "hypothesis", "pipeline")
"""A distinct published claim, the book's own hypothesis, or a check of the pipeline."""
UNITS = ("sentences", "pairs", "queries", "texts", "documents", "tokens", "dimensions", "topics", "keys",
         "compounds", "seeds")
"""The sampling units a claim's test resamples or enumerates."""
OUTCOMES = ("holds", "fails")
"""The outcomes a claim's ``says`` words: its shape test holds, or its opposite is shown."""

NULL_KINDS = {"control": "random-init control", "chance": "chance", "permuted_labels": "permuted labels",
              "uniform_attention": "uniform attention", "random_positions": "random positions"}
NO_NULL = {
    "paired": "a paired difference: no difference, 0, is its null and its bound",
    "own-curve": "the curve against itself: no change, 0, is its null and its bound",
    "location": "a location claim: the window the text states is the test",
    "size": "a size claim: the bound the text states is the test",
    "equivalence": "an equivalence claim: the band the text states is the test",
}
"""Why a claim has no null, the common reasons by name (``no_null: <name>``, or a sentence of its own)."""
EXACT_NULLS = {"chance", "uniform_attention"}
"""Nulls whose value is an exact expectation (closed form): a number is their distribution's mean,
and the claim's own interval carries the noise."""


class LedgerError(BookError, ValueError):
    """A claims ledger entry is malformed."""


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    source: str
    metric: str
    kind: str = "published"
    reduce: str = "value"
    published: Mapping[str, Any] | None = None
    tolerance: float | None = None
    shape: Mapping[str, Any] | None = None
    measured_on: str | None = None
    series: str = "depths"
    unit: str | None = None
    samples: Any = None
    null: Mapping[str, Any] | None = None
    fraction: float | None = None
    fraction_reason: str | None = None
    by_construction: str | None = None
    description: str | None = None
    not_measured: str | None = None
    headline: bool = False
    caveat: str | None = None
    home: str | None = None
    no_null: str | None = None
    says: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        try:
            reducers.parse(self.reduce)
        except ValueError as error:
            self._refuse(str(error))
        self._check_fields()
        self._check_shape()
        self._check_null()

    def _refuse(self, message: str) -> None:
        raise LedgerError(f"claim '{self.id}': {message}")

    def _check_fields(self) -> None:
        for name, options in (("kind", KINDS), ("series", relative_depth.SERIES_KINDS), ("unit", UNITS)):
            if getattr(self, name) not in options and not (name == "unit" and self.unit is None):
                self._refuse(f"{name} must be one of {options}; got {getattr(self, name)!r}")
        if self.samples is not None and self.unit is None:
            self._refuse("samples needs a unit (what one row of the samples is)")
        for name in ("by_construction", "description", "not_measured", "fraction_reason", "caveat", "no_null"):
            if getattr(self, name) is not None and not str(getattr(self, name)).strip():
                self._refuse(f"{name} must say why")
        says = self.says
        if says is not None and (set(says) != set(OUTCOMES) or not all(str(v).strip() for v in says.values())):
            self._refuse(f"says needs exactly {OUTCOMES}, each a clause; got {sorted(says)}")

    def _check_null(self) -> None:
        if self.null is None:
            if self.no_null is not None and self.shape is None:
                self._refuse("no_null says why a shape test has no null: give a shape test, or no no_null")
            if self.in_family and self.no_null is None:
                self._refuse(f"a counted claim without a null must say why it has none: no_null: one of "
                             f"{sorted(NO_NULL)}, or a sentence")
            return
        kind, given = self.null.get("kind"), {"metric", "value", "samples", "draws"} & set(self.null)
        if kind not in NULL_KINDS or not given:
            self._refuse(f"null needs kind (one of {sorted(NULL_KINDS)}) and a value, samples, draws or metric; "
                         f"got {dict(self.null)}")
        if "value" in self.null and kind not in EXACT_NULLS:
            self._refuse(f"a '{kind}' null is a distribution, not a number: give samples or draws")
        if self.no_null is not None:
            self._refuse("a claim with a null takes no no_null")
        if self.null.get("side") not in (None, "above", "below"):
            self._refuse(f"null side must be above or below (the side of the null a between test's value lies on); "
                         f"got {self.null.get('side')!r}")

    def _check_shape(self) -> None:
        if self.shape is None:
            if self.fraction is not None:
                self._refuse("fraction needs a shape test")
            return
        test, args = self.shape.get("test"), self.shape.get("args", {})
        if test not in reducers.SHAPES:
            self._refuse(f"shape test must be one of {sorted(reducers.SHAPES)}; got {test!r}")
        if self.fraction is not None:
            if not 0 < float(self.fraction) <= 1 or not self.fraction_reason:
                self._refuse("fraction must be in (0, 1] and come with fraction_reason")
            if test not in ("above", "below") or "bound" in args or not self.published:
                self._refuse("fraction derives the bound of an above/below test from the published value; "
                             "give no args.bound")
        elif test in ("above", "below") and "bound" not in args:
            self._refuse(f"shape test '{test}' needs args.bound (or a fraction of the published value)")
        elif test == "between" and not {"low", "high"} <= set(args):
            self._refuse("shape test 'between' needs args.low and args.high")
        elif test == reducers.LOCATION:
            window = args.get("window")
            if not (isinstance(window, (list, tuple)) and len(window) == 2 and 0 <= window[0] <= window[1] <= 1):
                self._refuse("shape test 'location' needs args.window: [a, b] with 0 ≤ a ≤ b ≤ 1 (relative depth)")
            if args.get("at", "max") not in ("max", "min", "trough"):
                self._refuse("shape test 'location' takes at: max, min or trough")
            among = args.get("among", [0, 1])
            if not (isinstance(among, (list, tuple)) and len(among) == 2 and 0 <= among[0] <= window[0]
                    and window[1] <= among[1] <= 1):
                self._refuse("shape test 'location' takes args.among: [c, d] with 0 ≤ c ≤ a and b ≤ d ≤ 1 "
                             "(the depths the peak is sought among, around its window [a, b])")

    @property
    def test(self) -> tuple[str, dict[str, Any]] | None:
        """(test, args) with the bound a ``fraction`` derives: above f · published, below
        published / f."""
        if not self.shape:
            return None
        test, args = self.shape["test"], dict(self.shape.get("args", {}))
        if self.fraction is not None:
            magnitude = float(self.published["value"])
            args["bound"] = self.fraction * magnitude if test == "above" else magnitude / self.fraction
        return test, args

    @property
    def bound_source(self) -> str | None:
        """Where an above/below bound comes from: "fraction" (of the published value), "typed"
        (a number written into the ledger), or "sign" (0: the claim is about a direction)."""
        if not self.test or self.test[0] not in ("above", "below"):
            return None
        if self.fraction is not None:
            return "fraction"
        return "sign" if float(self.shape["args"]["bound"]) == 0 else "typed"

    @property
    def no_null_reason(self) -> str | None:
        """Why the claim has no null, in words (:data:`NO_NULL`, or the ledger's own sentence)."""
        return NO_NULL.get(self.no_null, self.no_null) if self.no_null else None

    @property
    def in_family(self) -> bool:
        """Whether this claim counts in the multiplicity family: a published claim at its home,
        with a shape test, not true by construction, not described instead (``description``)."""
        return (self.kind == "published" and self.home is None and self.test is not None and not self.by_construction
                and not self.description)


    def reducer(self):
        """[B, …] → [B]: the claim's reduce, its series test's statistic, or its location."""
        test = self.test[0]
        if test in reducers.SERIES_SHAPES:
            return lambda x: reducers.statistic(test, x)
        if test == reducers.LOCATION:
            args = self.shape["args"]
            return lambda x: reducers.located(x, args.get("at", "max"), self.series, args.get("among", (0.0, 1.0)))
        return lambda x: np.asarray(reducers.reduce_array(x, self.reduce, self.series), dtype=float).reshape(len(x))

    def too_short(self, raw: Any) -> str | None:
        """Why the claim's series test, or its window, cannot run on a series this short (a shallow
        model), or None."""
        test = self.test[0] if self.test else None
        if np.ndim(raw) == 1 and (narrow := reducers.too_narrow(self.reduce, np.shape(raw)[-1], self.series)):
            return narrow
        if test == reducers.LOCATION and np.ndim(raw) > 0 and "among" in self.shape["args"]:
            among, n = self.shape["args"]["among"], np.shape(raw)[-1]
            if (k := relative_depth.window(among, n, self.series).sum()) < 2:
                return (f"the depths l/L in [{among[0]:.3g}, {among[1]:.3g}] hold {k} of the "
                        f"{relative_depth.depth_count(n, self.series)}-block model's depths: a location among them "
                        "needs two")
        fewest = reducers.MIN_ENTRIES.get(test, 3)
        if test in reducers.SERIES_SHAPES and np.ndim(raw) > 0 and np.shape(raw)[-1] < fewest:
            return f"a series of {np.shape(raw)[-1]} entries: the '{test}' test needs at least {fewest}"
        return None

    def point_of(self, raw: Any) -> float:
        """The tested statistic on the run's own metric."""
        return float(self.reducer()(np.asarray(raw, dtype=float)[None])[0])

    @property
    def statistic_name(self) -> str:
        test = self.test[0]
        if test in reducers.STATISTICS:
            return reducers.STATISTICS[test][0]
        if test == reducers.LOCATION:
            return "relative depth of the " + reducers.AT[self.shape["args"].get("at", "max")]
        return "value"


@dataclass(frozen=True)
class Ledger:
    chapter: str
    claims: list[Claim]
    errata: list[Mapping[str, Any]] = field(default_factory=list)
    parameters: Mapping[str, Any] = field(default_factory=dict)
    left_out: list[Mapping[str, Any]] = field(default_factory=list)


CHAPTER_LEDGER = "ledger.yaml"
"""A chapter package's ledger: ``chapters/<package>/ledger.yaml``, its ``chapter:`` the slug."""


@functools.cache
def ledgers() -> dict[str, Path]:
    """Every chapter package's ``ledger.yaml`` by its chapter's slug (its ``chapter:`` field), in slug
    order. A slug with two ledgers is an error."""
    found: dict[str, Path] = {}
    for ledger_path in sorted(_packages().glob(f"*/{CHAPTER_LEDGER}")):
        slug = _parse(ledger_path.read_text()).get("chapter")
        if not slug or slug in found:
            where = f"{slug!r} already has {found[slug]}" if slug else "it names no chapter: (its slug)"
            raise LedgerError(f"{ledger_path}: {where}")
        found[slug] = ledger_path
    return dict(sorted(found.items()))


def path(slug: str, folder: str | Path | None = None) -> Path:
    """Where chapter ``slug``'s ledger is: ``folder/<slug>.yaml`` with a ``folder``; else the packaged
    one (:func:`ledgers`), or ``chapters/ch<slug>/ledger.yaml``, where a new chapter's goes."""
    if folder is not None:
        return Path(folder) / f"{slug}.yaml"
    return ledgers().get(slug, _packages() / f"ch{slug}" / CHAPTER_LEDGER)


def _packages() -> Path:
    return Path(str(resources.files("embedding_geometry") / "chapters"))


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed: ten times faster


@functools.lru_cache(maxsize=64)
def _parse(text: str) -> dict[str, Any]:
    """A ledger's YAML, parsed once per process for each text (a chapter reads its ledgers many times)."""
    return yaml.load(text, Loader=_LOADER) or {}


def _read(slug: str, folder: str | Path | None, missing_ok: bool = False) -> dict[str, Any]:
    found = path(slug, folder or None)
    return {} if missing_ok and not found.exists() else _parse(found.read_text())


def load(slug: str, folder: str | Path | None = None) -> Ledger:
    """Read chapter ``slug``'s ledger (:func:`path`: from the package, or from ``folder``). An entry that
    re-judges another chapter's claim (``home``) says what the claim says at its home."""
    data = _read(slug, folder)
    items = [{"null" if key is None else key: value for key, value in item.items()}  # YAML reads `null:` as None
             for item in data.get("claims", [])]
    for item in items:
        if unknown := sorted(set(item) - set(Claim.__dataclass_fields__)):
            raise LedgerError(f"claim '{item.get('id')}' in {slug}.yaml has unknown fields {unknown}")
        if item.get("home") and "says" not in item:
            home = _read(item["home"], folder, missing_ok=True).get("claims", [])
            item["says"] = next((h.get("says") for h in home if h.get("id") == item["id"]), None)
    ids = [item.get("id") for item in items]
    if len(ids) != len(set(ids)):
        raise LedgerError(f"{slug}.yaml repeats claim ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    left_out = list(data.get("left_out") or [])
    for entry in left_out:
        if set(entry) != {"id", "home", "why"} or not str(entry["why"]).strip():
            raise LedgerError(f"{slug}.yaml: a left_out entry needs id, home and why (no other fields); got {entry}")
    return Ledger(chapter=slug, claims=[Claim(**item) for item in items], errata=list(data.get("errata", [])),
                  parameters=dict(data.get("parameters") or {}), left_out=left_out)


@functools.cache
def family_size() -> int:
    """m: the published claims with a shape test across every ledger of the package, each at its
    home (:attr:`Claim.in_family`) — one family per model."""
    return sum(claim.in_family for slug in ledgers() for claim in load(slug).claims)


def lookup(metrics: Mapping[str, Any], path: str) -> Any:
    """``metrics["a"]["b"]`` for the path ``"a.b"``; None where the path passes through a None (a
    measurement the run did not make: a claim on it is *not measured*). A missing key is a
    KeyError (a misspelt path, not a measurement left out)."""
    value: Any = metrics
    for part in path.split("."):
        if value is None:
            return None
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"metric '{path}' is not in this chapter's metrics (missing '{part}')")
        value = value[part]
    return value
