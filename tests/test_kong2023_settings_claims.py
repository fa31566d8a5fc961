"""Kong settings and claim rows follow the conventions (documented fields, valid overrides, unique ids)."""
import dataclasses

from maelab.claims import Claim, Criterion
from maelab.papers.kong2023 import claims, settings


def test_settings_are_frozen_documented_and_overrides_name_fields():
    assert set(settings.NOTEBOOKS) == {"kong_theory", "kong_reconstruction", "kong_representations"}
    for cls in settings.NOTEBOOKS.values():
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert all(f.metadata.get("doc") for f in fields.values())
        for prof in (cls.SMOKE, cls.GPU):
            assert set(prof) <= set(fields)
            cls(**prof)  # the overrides build a valid instance


def test_claim_rows():
    ids = [c.id for c in claims.CLAIMS]
    assert len(ids) >= 12 and len(set(ids)) == len(ids)
    for c in claims.CLAIMS:
        assert isinstance(c, Claim) and isinstance(c.criterion, Criterion)
        assert c.id.startswith("kong.") and c.paper == "kong2023" and c.notebook in settings.NOTEBOOKS
        assert c.statement and c.paper_value and c.measure and c.where
    per_nb = {nb: sum(c.notebook == nb for c in claims.CLAIMS) for nb in settings.NOTEBOOKS}
    assert min(per_nb.values()) >= 4
