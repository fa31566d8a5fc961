"""Result-key compatibility: the one home of the rules that keep every committed result found after a code change.

A stored result is found by the hash of its config, ``maelab._records.config_hash`` (re-exported as
:func:`maelab.store.config_hash`): the first 16 hex digits of the SHA-256 of the config's canonical JSON (sorted
keys, no spaces, ASCII; tuples as lists, numpy scalars as Python numbers, dataclasses as dicts). A request whose
config hashes differently from a stored record recomputes it. So every change that adds an option, flips a default
or renames a setting must leave the configs of the results already computed byte-identical, and give a run that
computes something else a different config. The rules that do it, and why:

1. **The hash never changes.** ``config_hash`` and its canonical JSON stay as they are (``maelab._records``):
   any change there re-keys every committed record at once.
2. **A config lists what its computation reads.** A notebook's result config lists the settings that result reads
   (and ``seed`` only where it reads it), not the notebook's whole settings: a new setting elsewhere in the notebook
   keeps its keys. The committed records written before this rule were re-keyed once by
   ``scripts/migrate_result_keys.py`` (each carries ``provenance["migrated"]``, the hash it had before); that
   script reads the settings as :func:`settings_key` lists them.
3. **Official-code model choices in canonical form** (issue 15). maelab's first models departed from the
   official U-MAE / MAE code in three choices (:data:`LEGACY_CHOICES`); the official values
   (:data:`OFFICIAL_CHOICES`) became the default of :func:`maelab.models.create` later. Configs written before
   that lacked these keys, so in a config a choice at its *legacy* value is absent and any other value present
   (:func:`choices_config`, :func:`canonical_overrides`; back to model overrides with
   :func:`overrides_from_config`). A run pinned to the legacy choices keeps its old key; a run relying on
   today's (official) default hashes differently and recomputes; a run that named the official values explicitly
   hashes as before. :meth:`maelab.experiments.PretrainSpec.to_config` holds the overrides in this form; configs
   that list settings instead add ``**choices_config(...)`` at their top level.
4. **A model option added later is listed only when given.** A spec's ``model_overrides`` hold the options the
   caller set, not the model's resolved defaults, so an option added with its default at the earlier behaviour
   (e.g. ``uniformity_gather="official"``) leaves every config unchanged; setting it to anything else, even to the
   default value explicitly, is a new key.
5. **A setting added later is left out of keys at its earlier behaviour.** A settings field declared with
   ``setting(..., omit_at=v)`` (:func:`maelab.profiles.setting`; stored under the field metadata key
   :data:`OMIT_AT`) is absent from :func:`settings_key` while its value is ``v``, the behaviour results were
   computed with before the field existed; any other value changes the keys. :func:`settings_key` is what the
   claims records (:mod:`maelab.book.context`) and the plan tables (:mod:`maelab.book.plan`) list as the settings.
   The ``model_choices`` setting (:func:`maelab.profiles.model_choices_setting`) is one: it is left out of keys
   at :data:`MODEL_CHOICES_OMITTED` ("legacy"), and a profile whose committed results were computed with the legacy
   choices pins it there, saying why (:data:`LEGACY_PIN_REASON`).

Not result keys, but the same concern: a pre-training run's cache folder is named by
:attr:`maelab.experiments.PretrainSpec.key` (another hash of the same canonical config: SHA-256 of
``json.dumps(config, sort_keys=True, default=str)``, first 12 hex digits), so the rules above keep checkpoint folders
too; ``maelab.train.checkpoint.adopt_legacy_checkpoint`` upgrades a checkpoint written before checkpoints recorded
their model, where such a folder name vouches for it. Records of the store's first format get their checksum from
``python -m maelab.store migrate`` (:mod:`maelab.store_admin`); that changes no key.

This module imports neither torch nor the models (:mod:`maelab.profiles` imports it, and a settings object must be
cheap to build); :mod:`maelab.models` takes its defaults from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ._validate import ParameterError, one_of

__all__ = [
    "LEGACY_CHOICES",
    "OFFICIAL_CHOICES",
    "CHOICE_DEFAULTS",
    "CHOICE_SETS",
    "MODEL_CHOICES_OMITTED",
    "LEGACY_PIN_REASON",
    "OMIT_AT",
    "choice_set",
    "choices_config",
    "canonical_overrides",
    "overrides_from_config",
    "settings_key",
]

#: maelab's first values of the three choices where it departed from the official U-MAE / MAE code (issue 15),
#: one LayerNorm before the uniformity term (not two), no ``fc_norm`` and a zero patch-embedding bias. They stay an
#: option because committed results were computed with them (a pinned re-run reproduces them), and they are the
#: values a config leaves out (:func:`choices_config`).
LEGACY_CHOICES: dict[str, Any] = {
    "uniformity_double_norm": False,
    "uniformity_fc_norm": False,
    "patch_embed_bias": "zeros",
}
#: The official code's values of the same choices, the default of :func:`maelab.models.create` and of the model
#: classes, listed in every config that uses them.
OFFICIAL_CHOICES: dict[str, Any] = {
    "uniformity_double_norm": True,
    "uniformity_fc_norm": True,
    "patch_embed_bias": "conv_default",
}
#: The choices a model built without overrides uses (the official ones), what :func:`choices_config` resolves an
#: absent choice to.
CHOICE_DEFAULTS: dict[str, Any] = dict(OFFICIAL_CHOICES)
#: The named sets of the choices a notebook's ``model_choices`` setting picks
#: (:func:`maelab.profiles.model_choices_setting`).
CHOICE_SETS: dict[str, dict[str, Any]] = {"official": dict(OFFICIAL_CHOICES), "legacy": dict(LEGACY_CHOICES)}
#: The ``model_choices`` value left out of settings keys ("legacy"), the behaviour before the setting existed.
MODEL_CHOICES_OMITTED = "legacy"
#: Why a profile pins the legacy choices, the reason given in the ``model_choices`` setting's one-line doc.
LEGACY_PIN_REASON = "committed cpu results computed before the flip; re-run pending, issue 15"
#: The settings field metadata key holding the value at which :func:`settings_key` leaves the field out.
OMIT_AT = "omit_at"


def choice_set(name: str) -> dict[str, Any]:
    """The choices of the named set (``"official"`` or ``"legacy"``, :data:`CHOICE_SETS`) as model overrides."""
    one_of("model_choices", name, CHOICE_SETS)
    return dict(CHOICE_SETS[name])


def _overrides(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise ParameterError("overrides", "a dict of model overrides or None", type(overrides).__name__)
    return dict(overrides)


def choices_config(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The official-code choices (``uniformity_double_norm``, ``uniformity_fc_norm``, ``patch_embed_bias``) that
    a model built with ``overrides`` would use and that differ from the legacy values (:data:`LEGACY_CHOICES`):
    their canonical form in a result config (rule 3 of this module), a choice at its legacy value absent.

    Configs that do not hold the model's overrides (e.g. a list of settings) add ``**choices_config(overrides)`` at
    their top level; configs that hold them use :func:`canonical_overrides`."""
    overrides = _overrides(overrides)
    resolved = {k: overrides.get(k, CHOICE_DEFAULTS[k]) for k in LEGACY_CHOICES}
    return {k: v for k, v in resolved.items() if v != LEGACY_CHOICES[k]}


def canonical_overrides(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``overrides`` (for :func:`maelab.models.create`) in the canonical form of result configs: the choice keys at
    their legacy value dropped, the resolved non-legacy choices (:func:`choices_config`, defaults included) added;
    every other key unchanged. Inverse: :func:`overrides_from_config`.

    Not for a dict already in canonical form: there an absent choice means legacy, here today's default (official),
    so a second pass would turn a legacy-pinned config into an official one; rebuild the overrides with
    :func:`overrides_from_config` first."""
    overrides = _overrides(overrides)
    out = {k: v for k, v in overrides.items() if k not in LEGACY_CHOICES}
    out.update(choices_config(overrides))
    return out


def overrides_from_config(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Model overrides rebuilt from their canonical form in a stored config (:func:`canonical_overrides`): a choice
    absent from it was at its legacy value, so it is added as such (a stored config rebuilds the model it was
    computed with, whatever today's defaults)."""
    return {**LEGACY_CHOICES, **_overrides(overrides)}


def settings_key(settings: Any) -> dict[str, Any]:
    """``{field: value}`` of a settings object (a :class:`maelab.profiles.NotebookSettings`) as result keys list
    the settings (claims records, plan tables): every field but those at the value their :data:`OMIT_AT` metadata
    names (rule 5 of this module), so that adding such a field keeps the existing keys."""
    if not dataclasses.is_dataclass(settings) or isinstance(settings, type):
        raise ParameterError("settings", "a settings object (a maelab.profiles.NotebookSettings)", settings)
    out = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if OMIT_AT in f.metadata and value == f.metadata[OMIT_AT]:
            continue
        out[f.name] = value
    return out
