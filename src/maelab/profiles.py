"""The three run profiles and the engine for every notebook's typed settings.

* ``smoke``: CI. Seconds per notebook, tiny models; asserts the pipeline, not the science.
* ``cpu``: a laptop. <= 60 min per notebook on 2 cores (up to 2.5 h where claims need models that learn, computed
  once in the background and committed); meaningful trends.
* ``gpu``: one H100-class GPU. <= 30 min per notebook (whole book <= 4 h); closest to the papers. Each
  notebook's gpu values are sized with the cost model (:mod:`maelab.cost`, ``python -m maelab.book plan --profile
  gpu``: predicted H100 minutes), as its settings class says; ``python -m maelab.book run --profile gpu --dry-run``
  checks on any CPU that they run.

Each profile is one :class:`Profile` record (name, rank, budget, description, target, whether its results are
committed) in ``PROFILES``; every list of profile names is derived from that tuple (:data:`PROFILE_NAMES`,
:data:`PROFILE_ORDER` best first, :data:`COMMITTED_PROFILES`).

A notebook's settings are a frozen dataclass in its paper package (``maelab/papers/<paper>/settings.py``, which
exports ``NOTEBOOKS = {notebook name: class}``). Field defaults are the ``cpu`` values, each field carries its
one-line meaning, and the class-level ``SMOKE`` / ``GPU`` dicts override a few fields for those profiles::

    @notebook_settings
    class MaskingSettings(NotebookSettings):
        '''How the values were chosen (kept with the class).'''
        SMOKE = {"D": 64}
        GPU = {"D": 512}
        D: int = setting(256, "length of the 1-D signal", is_int(2))

        def validate(self):                      # optional cross-field checks
            ...

    S = MaskingSettings.for_profile("smoke", mask_ratio=0.25)   # S.D == 64, S.mask_ratio == 0.25

:func:`notebook_settings` checks the class when its module is imported: every field documented, every override
key a field, every profile's values valid. Lists become tuples and dicts :class:`FrozenDict`, so a settings object
is immutable. A wrong value is a one-line :class:`maelab.ParameterError`.

The core receives the classes from the paper registry an entry point installed (:func:`registry`,
:mod:`maelab.registry`); it never imports a paper. A notebook without settings (the scoreboard) gets
:class:`NoSettings`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from . import paths, result_keys
from ._validate import ParameterError, in_range, one_of, positive_int
from ._validate import is_bool as _is_bool
from .options import DryRunLimits
from .registry import PaperRegistry, installed


@dataclasses.dataclass(frozen=True)
class Profile:
    """One run profile, the one record every list of profiles is derived from (``PROFILES``).

    Attributes:
        name: "smoke" | "cpu" | "gpu", the name in record files (``<name>.<profile>.json``) and on command lines.
        rank: 0 is the best; where a result is stored under several profiles, the book shows the best-ranked one
            (:data:`PROFILE_ORDER`).
        budget_min: the minutes per notebook its settings are sized for.
        description: one line for people.
        target: the machine it is sized for.
        committed: its results are kept: stored under the committed ``data/results``, computed on the lent GPU
            machine (``maelab.device``), planned in stored plan tables. False (smoke): they stay in the gitignored
            ``.cache/results-smoke`` (:func:`maelab.paths.smoke_results`) and never leave this machine.
    """

    name: str
    rank: int
    budget_min: float
    description: str
    target: str
    committed: bool


PROFILES: tuple[Profile, ...] = (
    Profile(
        "smoke",
        rank=2,
        budget_min=1,
        description="CI: seconds per notebook, tiny models; proves the pipeline only",
        target="any machine",
        committed=False,
    ),
    Profile(
        "cpu",
        rank=1,
        budget_min=60,
        description=(
            "a laptop: <= 60 min per notebook on 2 cores (up to 2.5 h, computed once in the background and "
            "committed, where claims need models that learn); meaningful trends"
        ),
        target="2 CPU cores",
        committed=True,
    ),
    Profile(
        "gpu",
        rank=0,
        budget_min=30,
        description="one H100-class GPU: <= 30 min per notebook (predicted by maelab.cost); closest to the papers",
        target="1 GPU",
        committed=True,
    ),
)
#: The profile names, cheapest first, as pages and command lines list them.
PROFILE_NAMES = tuple(p.name for p in PROFILES)
#: The profile names, best first by rank. The book shows, for each result, the best profile that has it.
PROFILE_ORDER = tuple(p.name for p in sorted(PROFILES, key=lambda p: p.rank))
#: The profiles whose results are committed, best first. What the lent GPU machine may compute.
COMMITTED_PROFILES = tuple(p.name for p in sorted(PROFILES, key=lambda p: p.rank) if p.committed)


def profile_record(name: str) -> Profile:
    """The :class:`Profile` named ``name`` (a one-line :class:`maelab.ParameterError` for another name)."""
    one_of("profile", name, PROFILE_NAMES)
    return PROFILES[PROFILE_NAMES.index(name)]


CORE_PARAMS = ("profile", "seed", "device", "recompute", "progress")

Check = Callable[[str, Any], Any]


# ----------------------------------------------------------------------------------------------- immutable values
class FrozenDict(dict):
    """An immutable, hashable dict (a per-dataset setting such as ``{"shapes": 4000, "mnist10k": 5000}``).

    A ``dict`` subclass, so JSON, :func:`maelab.store.config_hash` and ``isinstance(v, dict)`` treat it as a dict.
    """

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        """Raises ``TypeError``: settings are immutable."""
        raise TypeError("settings are immutable: pass a changed value as a notebook parameter instead")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _immutable  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: str(kv[0]))))

    def __repr__(self) -> str:
        return repr(dict(self))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenDict:
        return self


def freeze(value: Any) -> Any:
    """Lists and tuples -> tuples, dicts -> :class:`FrozenDict`, recursively; anything else unchanged."""
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


# ----------------------------------------------------------------------------------------------- value checks
def is_int(minimum: int = 1) -> Check:
    """An integer >= ``minimum`` (not a bool)."""
    return lambda name, v: positive_int(name, v, minimum=minimum)


def is_number(
    low: float | None = None, high: float | None = None, *, low_open: bool = False, high_open: bool = False
) -> Check:
    """A finite number in the stated interval (ints accepted; the value is stored as given)."""
    return lambda name, v: in_range(name, v, low, high, low_open=low_open, high_open=high_open)


def is_ratio(*, zero: bool = False) -> Check:
    """A mask ratio: in (0, 1), or [0, 1) with ``zero=True``."""
    return is_number(0.0, 1.0, low_open=not zero, high_open=True)


def is_choice(*allowed: Any) -> Check:
    return lambda name, v: one_of(name, v, allowed)


def is_flag() -> Check:
    return _is_bool


def is_str() -> Check:
    def check(name: str, v: Any) -> str:
        if not isinstance(v, str) or not v:
            raise ParameterError(name, "a non-empty string", v)
        return v

    return check


def optional(check: Check) -> Check:
    """``None`` or a value passing ``check``."""
    return lambda name, v: None if v is None else check(name, v)


def is_list(item: Check, *, min_len: int = 1, increasing: bool = False, why: str = "") -> Check:
    """A list (stored as a tuple) of at least ``min_len`` items each passing ``item``; ``why`` says why the
    length is needed (appended to the error)."""

    def check(name: str, v: Any) -> tuple:
        if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, (list, tuple)):
            raise ParameterError(name, f"a list of at least {min_len} item(s)", v)
        if len(v) < min_len:
            raise ParameterError(name, f"a list of at least {min_len} items" + (f" ({why})" if why else ""), v)
        for i, x in enumerate(v):
            item(f"{name}[{i}]", x)
        if increasing and any(not a < b for a, b in zip(v, v[1:])):
            raise ParameterError(name, "a strictly increasing list", v)
        return tuple(v)

    return check


def is_mapping() -> Check:
    """A dict with string keys (stored as a :class:`FrozenDict`)."""

    def check(name: str, v: Any) -> Mapping:
        if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
            raise ParameterError(name, "a dict with string keys", v)
        return v

    return check


def per_key(item: Check, keys: tuple[str, ...] = ()) -> Check:
    """One value for all (e.g. datasets), or a dict ``{key: value}`` (keys among ``keys`` when given)."""

    def check(name: str, v: Any) -> Any:
        if isinstance(v, Mapping):
            if not v:
                raise ParameterError(name, "a value or a non-empty {key: value} dict", v)
            for k, x in v.items():
                if keys:
                    one_of(f"{name} key", k, keys)
                item(f"{name}[{k!r}]", x)
            return v
        return item(name, v)

    return check


def divides(name: str, values: Any, total: int, total_name: str) -> None:
    """Every value in ``values`` (an int or a sequence) divides ``total`` (e.g. patch sizes and an image side)."""
    for i, p in enumerate(values if isinstance(values, (list, tuple)) else (values,)):
        if total % p:
            where = name if not isinstance(values, (list, tuple)) else f"{name}[{i}]"
            raise ParameterError(where, f"a divisor of {total_name}={total}", p)


_NOT_OMITTED = object()  # the ``omit_at`` default of :func:`setting`: the field is always part of keys


def setting(
    default: Any, doc: str, check: Check | None = None, *, repeats: bool = False, omit_at: Any = _NOT_OMITTED
) -> Any:
    """A settings field: its ``cpu`` default, its one-line meaning and an optional value check.

    ``repeats=True`` declares a number or list of independent repetitions (seeds, mask draws, random images per
    estimate, Monte-Carlo samples): a dry run cuts it to ``maelab.options.DryRunLimits.repeats`` (see
    :func:`dry_run_value`). A field named as :data:`REPEAT_FIELD_NAMES` says (``seeds``, ``mc_draws``, ``n_masks``)
    is one whether declared or not. Never declare a field that sets a model, an image side or a sweep: those a dry
    run keeps exactly.

    ``omit_at``: a value at which the field is left out of :func:`maelab.result_keys.settings_key` (what result
    keys -- claims records, plan tables -- list of the settings): a field added later with ``omit_at`` at the
    behaviour results were computed with before it existed keeps their keys, and any other value changes them (the
    rule and its reason live in :mod:`maelab.result_keys`).
    """
    if not isinstance(doc, str) or not doc.strip() or "\n" in doc.strip():
        raise ParameterError("doc", "a one-line description", doc)
    if not isinstance(repeats, bool):
        raise ParameterError("repeats", "True or False", repeats)
    meta = {"doc": doc.strip(), "check": check, "repeats": repeats}
    if omit_at is not _NOT_OMITTED:
        meta[result_keys.OMIT_AT] = freeze(omit_at)
    return dataclasses.field(default=freeze(default), metadata=meta)


def model_choices_setting(default: str = "official") -> Any:
    """The ``model_choices`` setting of a notebook that trains models: "official" (the official U-MAE / MAE code's
    choices, the library default) or "legacy" (maelab's first ones), the names of
    :data:`maelab.result_keys.CHOICE_SETS`, resolved by :func:`maelab.result_keys.choice_set`. ``default`` is the
    cpu value; "legacy" only where committed cpu results were computed with the legacy choices (the doc then says
    so, :data:`maelab.result_keys.LEGACY_PIN_REASON`): one mechanism for every notebook. The field is left out of
    result keys at :data:`maelab.result_keys.MODEL_CHOICES_OMITTED` ("legacy", the behaviour before the setting
    existed), so the keys of results computed before it are unchanged."""
    names = tuple(result_keys.CHOICE_SETS)
    one_of("model_choices", default, names)
    doc = "official-code model choices: 'official' (the library default) | 'legacy' (maelab.result_keys.CHOICE_SETS)"
    if default == "legacy":
        doc += f"; cpu 'legacy': {result_keys.LEGACY_PIN_REASON}"
    return setting(default, doc, is_choice(*names), omit_at=result_keys.MODEL_CHOICES_OMITTED)


#: Names that make a field a repetitions field (:meth:`NotebookSettings.repeat_fields`) in every notebook's settings,
#: declared or not: ``seeds`` and ``*_seeds`` (independent runs), ``*_draws`` (Monte-Carlo draws), ``n_masks`` and
#: ``*n_masks*`` (random masks per estimate).
REPEAT_FIELD_NAMES = re.compile(r"(.+_)?seeds|.+_draws|(.*_)?n_masks(_.+)?")


def dry_run_value(value: Any, cap: int) -> Any:
    """A repetitions setting under a dry run's cap: a list or tuple keeps its first ``cap`` items, a number
    becomes ``min(value, cap)``, a per-key dict caps each value; anything else (None, a string) is unchanged."""
    if isinstance(value, Mapping):
        return FrozenDict({k: dry_run_value(v, cap) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(value[:cap])
    if isinstance(value, int) and not isinstance(value, bool):
        return min(value, cap)
    return value


# ----------------------------------------------------------------------------------------------- settings classes
class NotebookSettings:
    """Base of every notebook's settings class (decorate subclasses with :func:`notebook_settings`)."""

    SMOKE: ClassVar[Mapping[str, Any]] = {}
    GPU: ClassVar[Mapping[str, Any]] = {}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = freeze(getattr(self, f.name))
            object.__setattr__(self, f.name, value)
            check = f.metadata.get("check")
            if check is not None:
                check(f.name, value)
        self.validate()

    def validate(self) -> None:
        """Cross-field checks (override); raise a one-line ParameterError naming the setting."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def docs(cls) -> dict[str, str]:
        """``{field: one-line meaning}``."""
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def overrides(cls, profile: str) -> Mapping[str, Any]:
        one_of("profile", profile, PROFILE_NAMES)
        return {"smoke": cls.SMOKE, "cpu": {}, "gpu": cls.GPU}[profile]

    @classmethod
    def repeat_fields(cls) -> tuple[str, ...]:
        """The fields a dry run caps: declared ``setting(..., repeats=True)`` or named as
        :data:`REPEAT_FIELD_NAMES` says."""
        return tuple(
            f.name
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.metadata.get("repeats") or REPEAT_FIELD_NAMES.fullmatch(f.name)
        )

    @classmethod
    def for_profile(cls, profile: str, *, caps: DryRunLimits | None = None, **params: Any) -> NotebookSettings:
        """The settings of ``profile``, with ``params`` (notebook parameters naming fields) applied on top.

        In a dry run (``caps``: the run's :class:`maelab.options.DryRunLimits`, ``ctx.caps``) the profile's values
        are checked first, as they are, and then the :meth:`repeat_fields` are cut to the dry run's ``repeats``
        (:meth:`dry_run`): a gpu setting that cannot run fails the dry run whatever the cap.
        """
        allowed = cls.field_names()
        for k in params:
            if k not in allowed:
                raise ParameterError(k, f"a setting of {cls.__name__} (" + ", ".join(allowed) + ")", params[k])
        if caps is not None and not isinstance(caps, DryRunLimits):
            raise ParameterError("caps", "None or a maelab.options.DryRunLimits", type(caps).__name__)
        full = cls(**{**cls.overrides(profile), **params})
        return full if caps is None else full.dry_run(caps.repeats)

    def dry_run(self, cap: int) -> NotebookSettings:
        """These settings with every :meth:`repeat_fields` value cut to ``cap`` repetitions (checked again: a
        field whose check needs more than ``cap`` values fails here, naming it)."""
        changed = {n: dry_run_value(getattr(self, n), cap) for n in self.repeat_fields()}
        try:
            return dataclasses.replace(self, **changed)  # type: ignore[type-var]
        except ParameterError as e:
            raise ParameterError(
                f"{type(self).__name__} repeats field", f"valid with {cap} repetitions in a dry run ({e})", changed
            ) from None

    def pick(self, *names: str) -> dict[str, Any]:
        """``{name: value}`` for the named settings: what a result's config lists as the settings it reads."""
        allowed = self.field_names()
        for n in names:
            one_of(f"{type(self).__name__} setting", n, allowed)
        return {n: getattr(self, n) for n in names}

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self.field_names()}


def notebook_settings(cls: type) -> type:
    """Class decorator: make ``cls`` a frozen dataclass and check it at import.

    Fails (ParameterError naming the class and key) when a field has no one-line doc, an override dict names a
    field that does not exist, or a profile's values do not pass the checks.
    """
    if not issubclass(cls, NotebookSettings):
        raise ParameterError("settings class", "a subclass of maelab.profiles.NotebookSettings", cls.__name__)
    cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for f in dataclasses.fields(cls):
        if "doc" not in f.metadata:
            raise ParameterError(
                f"{cls.__name__}.{f.name}", "declared with maelab.profiles.setting(default, doc)", f.default
            )
    for attr in ("SMOKE", "GPU"):
        for key in getattr(cls, attr):
            if key not in names:
                raise ParameterError(f"{cls.__name__}.{attr} key", "a field (" + ", ".join(names) + ")", key)
    for profile in PROFILE_NAMES:
        cls.for_profile(profile).dry_run(DryRunLimits().repeats)  # the dry run's cut must be valid too
    return cls


@notebook_settings
class NoSettings(NotebookSettings):
    """A notebook without settings of its own (e.g. the scoreboard)."""


# ----------------------------------------------------------------------------------------------- registry
_REGISTRY: tuple[PaperRegistry, dict[str, type]] | None = None  # (the installed paper registry, its checked classes)


def registry() -> dict[str, type]:
    """``{notebook: settings class}`` of every paper's ``maelab.papers.<paper>.settings`` module (its ``NOTEBOOKS``),
    as the installed paper registry hands them down (:func:`maelab.registry.installed`), checked here once."""
    global _REGISTRY
    source = installed()
    if _REGISTRY is None or _REGISTRY[0] is not source:
        found: dict[str, type] = {}
        for name, notebooks in source.settings().values():
            if not isinstance(notebooks, dict):
                raise ParameterError(f"{name}.NOTEBOOKS", "a dict {notebook name: settings class}", notebooks)
            for nb, klass in notebooks.items():
                if nb in found:
                    raise ParameterError("notebook", f"declared by one paper package only ({name} repeats it)", nb)
                if not (
                    isinstance(klass, type) and issubclass(klass, NotebookSettings) and dataclasses.is_dataclass(klass)
                ):
                    raise ParameterError(
                        f"{name}.NOTEBOOKS[{nb!r}]", "a class decorated with @notebook_settings", klass
                    )
                found[nb] = klass
        _REGISTRY = (source, found)
    return _REGISTRY[1]


def notebook_names(root: Path | None = None) -> list[str]:
    """Notebooks with settings, plus those under ``notebooks/`` without (sorted)."""
    folder = (root or paths.repo_root()) / "notebooks"
    on_disk = {p.stem for p in folder.glob("*.md")} if folder.exists() else set()
    return sorted(set(registry()) | on_disk)


def settings_class(notebook: str) -> type:
    """The settings class of ``notebook`` (:class:`NoSettings` for a notebook without any)."""
    reg = registry()
    if notebook in reg:
        return reg[notebook]
    one_of("notebook", notebook, notebook_names())
    return NoSettings


def settings(notebook: str, profile: str, *, caps: DryRunLimits | None = None, **params: Any) -> NotebookSettings:
    """``notebook``'s settings for ``profile`` (``params``: fields to override; ``caps``: a dry run's, see
    :meth:`NotebookSettings.for_profile`)."""
    one_of("profile", profile, PROFILE_NAMES)
    return settings_class(notebook).for_profile(profile, caps=caps, **params)


# ----------------------------------------------------------------------------------------------- core parameters
def _device(name: str, v: Any) -> str:
    if not isinstance(v, str) or not (v in ("auto", "cpu", "cuda") or v.startswith("cuda:")):
        raise ParameterError(name, "one of 'auto', 'cpu', 'cuda', 'cuda:N'", v)
    return v


def _progress(name: str, v: Any) -> bool | None:
    if v is not None and not isinstance(v, bool):
        raise ParameterError(name, "True, False or None (None: on unless CI)", v)
    return v


MAX_SEED = 2**32 - 1  # numpy's legacy seeding and scikit-learn take 32-bit seeds (torch 64-bit)


def _seed(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SEED:
        raise ParameterError(name, f"an integer >= 0 and <= {MAX_SEED} (2**32 - 1)", v)
    return v


CORE_RULES: dict[str, Check] = {
    "profile": lambda n, v: one_of(n, v, PROFILE_NAMES),
    "seed": _seed,
    "device": _device,
    "recompute": _is_bool,
    "progress": _progress,
}


def validate_core(params: dict[str, Any]) -> dict[str, Any]:
    """Check the parameters every notebook has (profile, seed, device, recompute, progress)."""
    for name, value in params.items():
        one_of("core parameter", name, CORE_PARAMS)
        CORE_RULES[name](name, value)
    return dict(params)
