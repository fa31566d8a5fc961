"""Settings of the synthesis page: the shared zoo's (:class:`maelab.zoo.ZooSettings`, same values in every profile,
so the page reads the records the Kong pages computed) plus the measurements of
:mod:`maelab.papers.synthesis.geometry`."""

from __future__ import annotations

from ...profiles import is_int, is_number, is_ratio, notebook_settings, setting
from ...zoo import ZooSettings


@notebook_settings
class SynthesisSettings(ZooSettings):
    """The shared zoo read through four papers. ``eval_ratio``: every model's masked-pixel Jacobians are taken
    under the *same* masks at this ratio (drawn from one seeded generator), so the spread compares what the models
    learned, not how many pixels their own training ratio leaves visible. ``n_jac_images`` test images,
    ``n_jac_pixels`` masked output pixels per image; ``n_attn_images`` unmasked test images for the attention
    distance. smoke: a handful; gpu: more images."""

    SMOKE = {**ZooSettings.SMOKE, "n_jac_images": 4, "n_jac_pixels": 2, "n_attn_images": 8}
    GPU = {**ZooSettings.GPU, "n_jac_images": 256, "n_attn_images": 2000}

    eval_ratio: float = setting(0.75, "mask ratio of the common masks of the Jacobian maps", is_ratio())
    n_jac_images: int = setting(64, "test images whose masked-pixel Jacobians are measured", is_int())
    n_jac_pixels: int = setting(4, "masked output pixels per image (one backward pass each)", is_int())
    n_attn_images: int = setting(500, "unmasked test images of the attention distance", is_int())
    loss_margin: float = setting(
        0.05,
        "precondition of every row: masked-patch loss drop below min(random-init, patch-mean) loss "
        "(kong_reconstruction's margin)",
        is_number(0.0, 1.0),
    )


NOTEBOOKS: dict[str, type] = {"synthesis": SynthesisSettings}
