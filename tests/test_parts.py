"""maelab.parts: the units of a record stored on their own while it is computed (run options with store_parts), so a
computation stopped midway keeps them, and the record assembled from them equals one computed in one go."""

import numpy as np
import pytest

from maelab import parts, store
from maelab._validate import ParameterError
from maelab.options import RunOptions

ON, OFF = RunOptions(store_parts=True), RunOptions()


class Stop(Exception):
    pass


def _record(calls, stop_after=None):
    """A record of three units; each unit's values hold a float, a list and an array."""

    def fn():
        out = {}
        for i in range(3):
            if stop_after is not None and i == stop_after:
                raise Stop  # the installment's budget ran out here

            def unit(i=i):
                calls.append(i)
                return {"x": 0.1 * i, "hist": [{"loss": 1 / 3 + i}], "a": np.arange(4, dtype=np.float32) / 7 + i}

            got = parts.part(f"unit{i}", {"i": i}, unit, seeds=[i])
            out[f"x{i}"], out[f"a{i}"], out[f"h{i}"] = got["x"], np.asarray(got["a"]), got["hist"]
        return out

    return fn


def _compute(root, fn, config=None, options=ON):
    kw = dict(notebook="nb", profile="cpu", root=root, log=None, options=options)
    return store.load_or_compute("rec", config or {"n": 3}, fn, **kw)


def test_a_stopped_record_keeps_its_parts_and_is_assembled_from_them(tmp_path):
    calls = []
    with pytest.raises(Stop):
        _compute(tmp_path, _record(calls, stop_after=2))
    assert calls == [0, 1] and store.load("nb", "rec", "cpu", root=tmp_path) is None  # the record: nothing
    assert [store.load("nb", f"rec__unit{i}", "cpu", root=tmp_path) is not None for i in range(3)] == [1, 1, 0]
    done = _compute(tmp_path, _record(calls))
    assert calls == [0, 1, 2]  # the next try computed only the missing unit
    one_go = _compute(tmp_path / "fresh", _record([]))
    plain = _compute(tmp_path / "plain", _record([]), options=OFF)
    for a in (one_go, plain):
        for k, v in a.data.items():
            assert np.array_equal(done[k], v) if isinstance(v, np.ndarray) else done[k] == v, k
    assert not [p for p in (tmp_path / "plain" / "nb").iterdir() if "__" in p.name]  # parts off: none stored
    # a part belongs to its record's config: another config computes its units again
    calls.clear()
    _compute(tmp_path, _record(calls), config={"n": 4})
    assert calls == [0, 1, 2]


def test_outside_a_record_a_part_is_its_function(tmp_path):
    assert parts.part("u", {}, lambda: {"v": 1}) == {"v": 1} and parts.current_options() is None
    assert not list(tmp_path.iterdir())
    with pytest.raises(ParameterError, match="key must be an identifier-like string"):
        parts.part("a__b", {}, dict)
    assert parts.is_part("compare_mnist__mae_s0") and not parts.is_part("compare_mnist")


def test_stored_says_whether_a_part_would_be_loaded(tmp_path):
    seen = []

    def fn():
        seen.append([parts.stored(f"unit{i}", {"i": i}) for i in range(2)])
        parts.part("unit0", {"i": 0}, lambda: {"x": 1})
        seen.append([parts.stored("unit0", {"i": 0}), parts.stored("unit0", {"i": 1})])  # its config, not another
        raise Stop

    with pytest.raises(Stop):
        _compute(tmp_path, fn)
    with pytest.raises(Stop):
        _compute(tmp_path / "off", fn, options=OFF)
    assert seen == [[False, False], [True, False], [False, False], [False, False]]  # parts off: never stored
    assert not parts.stored("unit0", {"i": 0})  # outside a record


def test_prune_removes_the_parts_of_a_record_stored_under_their_config_only(tmp_path):
    folder = tmp_path / "nb"
    with pytest.raises(Stop):  # units 0 and 1 of config n=3 stored, no record
        _compute(tmp_path, _record([], stop_after=2))
    assert parts.prune(folder, log=None) == []  # their record is not stored: kept
    _compute(tmp_path, _record([]))  # the record of n=3 (and unit 2)
    with pytest.raises(Stop):  # units 0 and 1 again, now under n=4; the stored record is still n=3's
        _compute(tmp_path, _record([], stop_after=2), config={"n": 4})
    assert parts.prune(folder, log=None) == ["rec__unit2.cpu.json"]  # the one part of the stored record's config
    left = sorted(p.name for p in folder.iterdir() if "__" in p.name and not p.name.startswith("."))  # no lock files
    assert [n for n in left if n.endswith(".json")] == ["rec__unit0.cpu.json", "rec__unit1.cpu.json"]
    assert not [n for n in left if n.startswith("rec__unit2")]  # its side file (the array) went with it
    assert store.load("nb", "rec", "cpu", root=tmp_path) is not None
    _compute(tmp_path, _record([]), config={"n": 4})  # the record of n=4, assembled; now all its parts go
    assert parts.prune(folder, log=None) == [f"rec__unit{i}.cpu.json" for i in range(3)]
    assert not [p for p in folder.iterdir() if "__" in p.name and not p.name.startswith(".")]


def test_concat_frames_stores_each_unit_and_concatenates_as_one_loop(tmp_path):
    """parts.concat_frames: per unit (a seed) a part holding its tables; the record's tables are the units' rows in
    order, as one loop over the units builds them; ``before`` runs for a unit that is not stored, never for one that
    is; a record stopped midway keeps its finished units."""
    import pandas as pd

    def rows(s):  # a float, an int, a string and a NaN per row, like the measured zoo's tables
        return [{"model": f"m{j}", "seed": s, "x": s + j / 3, "nan": float("nan") if j else 0.5} for j in range(2)]

    calls, before = [], []

    def fn(stop_at=None):
        def one(s):
            if s == stop_at:
                raise Stop
            calls.append(s)
            return {"t": pd.DataFrame(rows(s))}

        units = [(f"s{s}", {"seed": s}, lambda s=s: one(s)) for s in (0, 1, 2)]
        return lambda: parts.concat_frames(units, lambda c: before.append(c["seed"]))

    with pytest.raises(Stop):
        _compute(tmp_path, fn(stop_at=2))
    assert calls == [0, 1] and before == [0, 1, 2]
    done = _compute(tmp_path, fn())
    assert calls == [0, 1, 2] and before == [0, 1, 2, 2]  # units 0 and 1 loaded: neither computed nor handed on
    one_loop = pd.DataFrame([r for s in (0, 1, 2) for r in rows(s)])
    pd.testing.assert_frame_equal(done["t"], one_loop, check_exact=True)
    plain = _compute(tmp_path / "plain", fn(), options=OFF)  # parts off: computed in one go, nothing stored
    pd.testing.assert_frame_equal(plain["t"], one_loop, check_exact=True)
    assert not [p for p in (tmp_path / "plain" / "nb").iterdir() if "__" in p.name]
