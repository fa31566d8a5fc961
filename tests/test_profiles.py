"""The settings engine (maelab.profiles), notebook parameters and what a result's key depends on."""

import dataclasses
from pathlib import Path

import pytest

from maelab import book, paths, profiles, store
from maelab._validate import ParameterError
from maelab.device import pack
from maelab.profiles import (
    PROFILE_NAMES,
    FrozenDict,
    NotebookSettings,
    is_int,
    is_list,
    is_ratio,
    notebook_settings,
    setting,
)


@notebook_settings
class Toy(NotebookSettings):
    """A settings class for the tests."""

    SMOKE = {"n": 2}
    GPU = {"n": 50, "ratios": [0.25, 0.5, 0.75]}

    n: int = setting(10, "how many", is_int())
    ratios: tuple = setting([0.25, 0.75], "mask ratios", is_list(is_ratio(), min_len=2))
    per: dict = setting({"a": 1, "b": 2}, "one value per dataset")
    k: int = setting(2, "a rank, at most n", is_int())

    def validate(self):
        if self.k > self.n:
            raise ParameterError("k", f"at most n={self.n}", self.k)


def test_profiles_and_overrides():
    assert PROFILE_NAMES == ("smoke", "cpu", "gpu")
    assert Toy.for_profile("cpu").n == 10 and Toy.for_profile("smoke").n == 2
    gpu = Toy.for_profile("gpu")
    assert gpu.n == 50 and gpu.ratios == (0.25, 0.5, 0.75) and gpu.k == 2
    assert Toy.for_profile("smoke", k=1).k == 1
    assert Toy.docs() == {
        "n": "how many",
        "ratios": "mask ratios",
        "per": "one value per dataset",
        "k": "a rank, at most n",
    }
    assert Toy.for_profile("cpu").pick("n", "k") == {"n": 10, "k": 2}


def test_one_profile_record_gives_every_list_of_profiles():
    """Issue 23: one tuple of Profile records; the names, the best-first order (records, store, scoreboard) and the
    profiles the lent GPU machine computes (device) all come from it."""
    from maelab import _records
    from maelab.book import plan
    from maelab.device import __main__ as device_cli

    assert [(p.name, p.rank, p.budget_min, p.committed) for p in profiles.PROFILES] == [
        ("smoke", 2, 1, False),
        ("cpu", 1, 60, True),
        ("gpu", 0, 30, True),
    ]
    assert profiles.PROFILE_ORDER == ("gpu", "cpu", "smoke") and profiles.COMMITTED_PROFILES == ("gpu", "cpu")
    assert store.PROFILE_ORDER is profiles.PROFILE_ORDER and plan.PLAN_PROFILES == ("cpu", "gpu")
    assert not hasattr(_records, "PROFILES") and not hasattr(pack, "PROFILES")  # no second list left behind
    assert device_cli._parser().parse_args(["pack", "masking", "--profile", "cpu"]).profile == "cpu"
    with pytest.raises(SystemExit):  # the device's command line offers the committed profiles only
        device_cli._parser().parse_args(["pack", "masking", "--profile", "smoke"])
    assert profiles.profile_record("cpu").target == "2 CPU cores"
    with pytest.raises(dataclasses.FrozenInstanceError):
        profiles.profile_record("gpu").rank = 3
    with pytest.raises(ParameterError, match="profile") as e:
        profiles.profile_record("tpu")
    assert "\n" not in str(e.value)


def test_the_best_first_order_decides_what_the_book_shows(tmp_path):
    """A record's file name must name a profile of the record tuple; stored profiles come back best first."""
    from maelab import _records

    for prof in ("smoke", "gpu", "cpu"):
        store.save("r", {"k": 1}, {"v": 1.0}, notebook="nb", profile=prof, root=tmp_path)
    assert store.stored_profiles("nb", root=tmp_path) == ["gpu", "cpu", "smoke"]
    assert _records.location(tmp_path / "nb" / "r.cpu.json") == ("nb", "r", "cpu")
    with pytest.raises(_records.Untrusted, match="profile one of gpu, cpu, smoke"):
        _records.location(tmp_path / "nb" / "r.tpu.json")


def test_settings_are_immutable():
    s = Toy.for_profile("cpu", ratios=[0.1, 0.2])
    assert s.ratios == (0.1, 0.2) and isinstance(s.per, FrozenDict) and s.per["b"] == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n = 3
    with pytest.raises(TypeError, match="immutable"):
        s.per["a"] = 5
    # a frozen dict hashes like the plain dict it stands for
    assert store.config_hash({"per": s.per}) == store.config_hash({"per": {"b": 2, "a": 1}})


@pytest.mark.parametrize(
    "params, start",
    [
        ({"n": 0}, "n must be an integer >= 1; got 0"),
        ({"n": 2.5}, "n must be an integer >= 1"),
        ({"ratios": [0.5]}, "ratios must be a list of at least 2 items"),
        ({"ratios": [0.5, 1.0]}, "ratios[1] must be a number in (0.0, 1.0)"),
        ({"ratios": "0.5"}, "ratios must be a list"),
        ({"k": 11}, "k must be at most n=10"),
        ({"nn": 3}, "nn must be a setting of Toy (n, ratios, per, k)"),
    ],
)
def test_bad_values_fail_in_one_line(params, start):
    with pytest.raises(ParameterError) as e:
        Toy.for_profile("cpu", **params)
    assert "\n" not in str(e.value) and str(e.value).startswith(start)


def test_a_misspelt_override_or_a_bad_override_value_fails_when_the_class_is_defined():
    with pytest.raises(ParameterError, match=r"^Bad\.SMOKE key must be a field \(n\); got 'nn'"):

        @notebook_settings
        class Bad(NotebookSettings):
            SMOKE = {"nn": 1}
            n: int = setting(1, "n", is_int())

    with pytest.raises(ParameterError, match=r"^n must be an integer >= 1; got 0"):

        @notebook_settings
        class Bad2(NotebookSettings):
            GPU = {"n": 0}
            n: int = setting(1, "n", is_int())

    with pytest.raises(ParameterError, match=r"^Bad3\.n must be declared with maelab.profiles.setting"):

        @notebook_settings
        class Bad3(NotebookSettings):
            n: int = 1

    with pytest.raises(ParameterError, match="^doc must be a one-line description"):
        setting(1, "")


def test_registry_covers_every_notebook_and_documents_every_field():
    reg = profiles.registry()
    on_disk = set(book.notebooks_in_order())
    assert set(reg) == on_disk - {"scoreboard"}
    assert profiles.settings_class("scoreboard") is profiles.NoSettings
    for name, cls in reg.items():
        assert cls.__module__.startswith("maelab.papers."), name
        assert all(doc and "\n" not in doc for doc in cls.docs().values()), name
        for p in PROFILE_NAMES:
            assert isinstance(profiles.settings(name, p), cls)
    with pytest.raises(ParameterError, match="^notebook must be one of"):
        profiles.settings_class("nope")


def test_setup_validates_and_applies_overrides():
    ctx = book.setup("masking", profile="smoke", seed=1, device="cpu", mask_ratio=0.25)
    assert ctx.settings.mask_ratio == 0.25 and ctx.profile == "smoke" and str(ctx.device) == "cpu"
    # None keeps the profile's value
    assert book.setup("masking", profile="smoke", mask_ratio=None).settings == profiles.settings("masking", "smoke")
    with pytest.raises(ParameterError, match="^profile must be one of"):
        book.setup("masking", profile="huge")
    with pytest.raises(ParameterError, match="^mask_ratio must be"):
        book.setup("masking", profile="cpu", mask_ratio=1.5)
    with pytest.raises(ParameterError, match="^notebook must be one of"):
        book.setup("nope", profile="cpu")
    with pytest.raises(ParameterError, match=r"^patch_size must be a setting of MaskingSettings \(D, "):
        book.setup("masking", profile="cpu", patch_size=4)
    with pytest.raises(ParameterError, match="^recompute must be True or False"):
        book.setup("masking", profile="cpu", recompute=None)


# ----------------------------------------------------------------------------------------------- runner parameters
def test_runner_rejects_an_unknown_parameter_before_papermill(tmp_path, capsys):
    out = tmp_path / "executed"
    rc = book.main(["run", "--profile", "smoke", "--only", "masking", "-p", "mask_ration=0.3", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and not out.exists()
    assert err == ("error: mask_ration must be a parameter of notebook 'masking' (mask_ratio); got 0.3")


def test_runner_checks_values_and_names_before_papermill(tmp_path):
    with pytest.raises(ParameterError, match=r"^mask_ratio must be a number in \(0.0, 1.0\); got 0$"):
        book.run("smoke", ["masking"], tmp_path, extra={"mask_ratio": 0})
    with pytest.raises(ParameterError, match="^seed must be an integer >= 0"):  # the run option, checked when made
        book.run(book.RunOptions(profile="smoke", seed=-1), ["masking"], tmp_path)
    for option in ("profile", "seed", "run_options"):  # run options are the runner's (--profile, --seed), not -p
        with pytest.raises(ParameterError, match=f"^{option} must be a parameter of notebook"):
            book.run("smoke", ["masking"], tmp_path, extra={option: "cpu"})
    # every selected notebook must declare the parameter
    with pytest.raises(ParameterError, match="^mask_ratio must be a parameter of notebook 'zhang_mask_graph'"):
        book.run("smoke", ["masking", "zhang_mask_graph"], tmp_path, extra={"mask_ratio": 0.5})
    assert not list(tmp_path.iterdir())


def test_parameters_cell_and_parameter_parsing():
    assert book.notebook_parameters("masking") == ("run_options", "mask_ratio")
    assert book.parse_parameter("mask_ratio=0.3") == ("mask_ratio", 0.3)
    assert book.parse_parameter("seeds=[0, 1]") == ("seeds", [0, 1])
    assert book.parse_parameter("dataset=mnist10k") == ("dataset", "mnist10k")
    with pytest.raises(ParameterError, match="^-p must be NAME=VALUE"):
        book.parse_parameter("mask_ratio")


def test_a_result_hashes_only_the_settings_it_reads(tmp_path):
    """Changing a setting the computation does not read keeps the stored result; changing one it reads does not."""
    calls = []
    options = book.RunOptions(profile="smoke", device="cpu", results_root=str(tmp_path))

    def run(**params):
        ctx = book.setup("masking", options, **params)
        S = ctx.settings

        def fn():
            calls.append(1)
            return {"n": S.D * S.n_masks_1d}

        res = ctx.load_or_compute("toy", {"what": "reads D and n_masks_1d", **S.pick("D", "n_masks_1d")}, fn)
        return res.provenance["config_hash"], res.from_store

    h0, stored0 = run()
    h1, stored1 = run(n_crops=7, mask_ratio=0.3)  # not read: same key, loaded
    h2, stored2 = run(D=128)  # read: new key, computed
    assert (stored0, stored1, stored2) == (False, True, False) and len(calls) == 2
    assert h0 == h1 != h2
    assert h0 == store.config_hash({"profile": "smoke", "what": "reads D and n_masks_1d", "D": 64, "n_masks_1d": 4})
    ctx = book.setup("masking", profile="smoke", device="cpu")
    with pytest.raises(ParameterError, match="^config key must be not 'profile'"):
        ctx.load_or_compute("toy", {"profile": "x"}, lambda: {})


def test_no_compute_mode_raises_a_one_line_store_miss(tmp_path):
    no_compute = book.RunOptions(no_compute="on")
    kw = {"notebook": "nb", "profile": "cpu", "root": tmp_path, "options": no_compute}
    with pytest.raises(store.StoreMiss) as e:
        store.load_or_compute("r", {"a": 1}, lambda: {"x": 1}, **kw)
    h = store.config_hash({"a": 1})
    assert str(e.value) == f"nb/r.cpu: no stored result with config hash {h} (stored: None)"
    # a stored result under another key: named in the message; nothing written
    old = store.load_or_compute("r", {"a": 2}, lambda: {"x": 2}, notebook="nb", profile="cpu", root=tmp_path)
    with pytest.raises(store.StoreMiss, match=f"(stored: {old.provenance['config_hash']})"):
        store.load_or_compute("r", {"a": 1}, lambda: {"x": 1}, **kw)
    assert store.load("nb", "r", "cpu", root=tmp_path)["x"] == 2
    # a matching result loads; claims records (derived, cheap) are exempt
    assert store.load_or_compute("r", {"a": 2}, lambda: {"x": 3}, **kw)["x"] == 2
    assert store.load_or_compute("claims", {"c": 1}, lambda: {"c": 1}, **kw)["c"] == 1


def test_every_setting_a_notebook_reads_exists():
    """``S.<name>`` in a notebook's code names a field of its settings class (a typo fails here, not mid-run)."""
    import ast

    import jupytext

    methods = {"pick", "as_dict", "docs", "field_names", "for_profile"}
    for name in book.notebooks_in_order():
        cls = profiles.settings_class(name)
        derived = {n for n in dir(cls) if isinstance(getattr(cls, n, None), property)}  # e.g. lam_eff
        fields = set(cls.field_names()) | methods | derived
        nb = jupytext.read(paths.repo_root() / "notebooks" / f"{name}.md")
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        used = {
            n.attr
            for n in ast.walk(ast.parse(code))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "S"
        }
        assert used <= fields, f"{name}: {sorted(used - fields)}"


def test_rerun_page_states_each_profile_s_budget():
    """The re-run page's profile table is prose; its budget column must say the minutes each Profile is sized for."""
    page = (Path(__file__).resolve().parents[1] / "book" / "rerun.md").read_text()
    rows = {ln.split("|")[1].strip(" `"): ln.split("|")[3] for ln in page.splitlines() if ln.startswith("| `")}
    assert set(rows) == set(profiles.PROFILE_NAMES)
    for p in profiles.PROFILES:
        if p.name != "smoke":  # "seconds"
            assert f"≤ {p.budget_min:g} min" in rows[p.name], (p.name, rows[p.name])
