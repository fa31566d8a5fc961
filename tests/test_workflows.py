"""The GitHub workflows cannot run here; they are parsed and checked for the keys that make them work."""

from pathlib import Path

import pytest
import yaml

from maelab import paths

WF = paths.repo_root() / ".github" / "workflows"


def _load(name: str) -> dict:
    doc = yaml.safe_load((WF / name).read_text())
    # YAML 1.1 reads a bare `on:` key as the boolean True; GitHub reads it as "on"
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def _steps(job: dict) -> list[dict]:
    steps = job.get("steps")
    assert isinstance(steps, list) and steps, "a job without steps"
    return steps


def _uses(steps: list[dict], action: str) -> list[dict]:
    return [s for s in steps if str(s.get("uses", "")).split("@")[0] == action]


def _runs(steps: list[dict]) -> str:
    return "\n".join(str(s.get("run", "")) for s in steps)


def test_book_workflow_renders_committed_results_and_deploys_to_pages():
    wf = _load("book.yml")
    assert set(wf["on"]) == {"push", "workflow_dispatch"}
    assert wf["on"]["push"]["branches"] == ["main"]
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    steps = _steps(build)
    assert _uses(steps, "actions/checkout")
    setup = _uses(steps, "actions/setup-python")
    assert setup and str(setup[0]["with"]["python-version"]) == "3.11"
    run = _runs(steps)
    assert "make book" in run
    # render only: auto picks the committed profile; never --recompute, never a smoke or cpu/gpu recompute
    assert "--recompute" not in run and "PROFILE=cpu" not in run and "PROFILE=gpu" not in run
    assert "git diff --exit-code -- data/results" in run  # rendering must leave the committed results untouched
    upload = _uses(steps, "actions/upload-pages-artifact")
    assert upload and upload[0]["with"]["path"] == "_build/html"
    # the upload comes after the build
    names = [s.get("uses", s.get("run", "")) for s in steps]
    assert names.index(upload[0]["uses"]) > next(i for i, n in enumerate(names) if "make book" in str(n))
    assert deploy["needs"] == "build" or deploy["needs"] == ["build"]
    assert deploy["environment"]["name"] == "github-pages"
    assert _uses(_steps(deploy), "actions/deploy-pages")


def test_ci_workflow_runs_ci_run_with_chromium_and_a_timeout():
    wf = _load("ci.yml")
    assert {"push", "pull_request"} <= set(wf["on"])
    (job,) = wf["jobs"].values()
    assert job["timeout-minutes"] == 90
    steps = _steps(job)
    assert _uses(steps, "actions/checkout")
    run = _runs(steps)
    assert "apt-get install" in run and "chromium" in run
    assert any(str(s.get("run", "")).strip() == ".ci/run" for s in steps)
    # Python 3.11: from actions/setup-python or from a python:3.11 container
    setup = _uses(steps, "actions/setup-python")
    image = str(
        job.get("container", {}).get("image", "")
        if isinstance(job.get("container"), dict)
        else job.get("container", "")
    )
    assert (setup and str(setup[0]["with"]["python-version"]) == "3.11") or image.startswith("python:3.11")


@pytest.mark.parametrize("name", ["book.yml", "ci.yml"])
def test_workflow_actions_are_pinned_to_a_version(name):
    for job in _load(name)["jobs"].values():
        for s in _steps(job):
            if "uses" in s:
                assert "@" in s["uses"], f"{name}: {s['uses']} has no version"


def test_ci_entry_point_is_executable_and_runs_make_test_then_every_page_s_dry_run():
    ci = paths.repo_root() / ".ci" / "run"
    assert ci.stat().st_mode & 0o111
    commands = [ln.split("#")[0].strip() for ln in Path(ci).read_text().splitlines()]
    assert "make test" in commands and "make dryrun" in commands  # CI still runs every page's gpu dry run
    assert commands.index("make test") < commands.index("make dryrun")
    make = (paths.repo_root() / "Makefile").read_text()
    # the dry run make test leaves out is exactly what make dryrun selects
    assert '-m "not every_page_dry_run"' in make and "-m every_page_dry_run" in make
