"""Re-key the committed results after the change "a result hashes only the settings it reads" (idempotent).

Before, ``maelab.book.Context.load_or_compute`` stored every result under the hash of
``{"profile": ..., "settings": <every setting of the notebook>, **config}``; now under the hash of
``{"profile": ..., **config}``, where each notebook's ``config`` lists the settings its computation reads. The
values are unchanged; only the keys are. This script gives every committed record the key the new notebook code
requests, so that executing the book recomputes nothing.

How (nothing is computed):

1. Every notebook is executed, with each non-smoke profile that has committed records, through the book runner
   with the run option ``no_compute="record"`` (:class:`maelab.options.RunOptions`): where a stored record's key
   differs from the request, the store appends the request (new config and hash) to a log and returns the stored
   record instead of computing.
2. Each logged request is checked against the stored record, which is re-keyed only if
   (a) its config's ``profile`` equals the request's;
   (b) every other key of its config except ``settings`` is in the request with the same value (the new code only
       adds the settings it reads) -- a ``sources`` list of other results' hashes with those results' new hashes
       (in record mode the store hands results on under their requested keys);
   (c) its config's ``settings`` -- every setting the result was computed with -- equal the notebook's current
       settings for that profile, so every setting value the request lists is the one the result was computed
       with. The requests also list ``seed`` (the notebook's ``seed`` parameter) where the computation reads it:
       every committed record was computed with ``seed = 0``, the parameters-cell default (the runner could not
       inject parameters before this change), and this script's runs use the default too.
   A record failing a check is reported and left alone (the script exits 1).
3. A re-keyed record gets the request's ``config`` and ``config_hash`` and a note
   ``provenance["migrated"] = {"from_hash", "commit", "reason"}``; its values, side files and the rest of its
   provenance are untouched (the JSON is rewritten atomically).

The ``claims`` records are derived from other results (and exempt from no-compute mode): the notebooks rewrite
them. After this script, run ``python -m maelab.book run --profile auto --no-compute`` (and ``--profile cpu
--only masking --no-compute``, whose gpu records ``auto`` prefers) to check that nothing would be recomputed and to
rewrite the claims records with the new source hashes. A second run of this script changes nothing.

Usage: ``PYTHONPATH=src python scripts/migrate_result_keys.py [--dry-run]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from maelab import book, papers, profiles, result_keys, store
from maelab._util import atomic_path
from maelab.options import RunOptions

REASON = (
    "a result hashes only the settings it reads (before: the notebook's whole settings dict was part of every config)"
)


def committed_runs(root: Path) -> list[tuple[str, str]]:
    """(notebook, profile) pairs with committed records under ``root``, smoke excluded."""
    runs = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for prof in store.stored_profiles(folder.name, root):
            if prof != "smoke":
                runs.append((folder.name, prof))
    return runs


def record_requests(runs: list[tuple[str, str]], log: Path, out_dir: Path) -> list[dict]:
    """Execute the notebooks in record mode; return the logged requests whose key differs from the stored one."""
    for notebook, prof in runs:
        options = RunOptions(profile=prof, no_compute="record", no_compute_log=str(log))
        book.run(options, only=[notebook], out_dir=out_dir)
    lines = log.read_text().splitlines() if log.exists() else []
    return list({r["path"]: r for r in map(json.loads, lines)}.values())  # one request per record


def check(request: dict, record: dict, rekeyed: dict[str, str]) -> str | None:
    """Why the stored record may not take the requested key (None: it may). ``rekeyed``: old hash -> new hash of
    every record re-keyed in this run (a config listing its sources' hashes lists their new ones)."""
    old, new = record["provenance"]["config"], request["config"]
    if old.get("profile") != new.get("profile"):
        return f"profile {old.get('profile')!r} != requested {new.get('profile')!r}"
    for k, v in old.items():
        if k == "settings":
            continue
        if k == "sources" and isinstance(v, list) and [rekeyed.get(h, h) for h in v] == new.get(k):
            continue
        if new.get(k, object()) != v:
            return f"stored config key {k!r} = {v!r} is not in the request unchanged"
    if "settings" not in old:
        return "stored config has no 'settings' (not a pre-change record)"
    current = store._canonical(result_keys.settings_key(profiles.settings(request["notebook"], request["profile"])))
    if old["settings"] != current:
        diff = sorted(k for k in set(old["settings"]) | set(current) if old["settings"].get(k) != current.get(k))
        return f"computed with settings that differ from today's: {', '.join(diff)}"
    return None


def rekey(request: dict, commit: str, dry_run: bool, rekeyed: dict[str, str]) -> str | None:
    """Re-key one record; returns the reason it was refused, else None."""
    path = Path(request["path"])
    record = json.loads(path.read_text())
    prov = record["provenance"]
    if prov.get("config_hash") == request["config_hash"]:
        return None  # already done
    why = check(request, record, rekeyed)
    if why is not None:
        return why
    if store.config_hash(request["config"]) != request["config_hash"]:
        return "the logged config does not hash to the logged hash"
    prov["migrated"] = {"from_hash": prov["config_hash"], "commit": commit, "reason": REASON}
    prov["config"], prov["config_hash"] = request["config"], request["config_hash"]
    if not dry_run:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="check and report, write nothing")
    a = ap.parse_args(argv)
    root = store.results_root("cpu")
    commit = store.git_state()["commit"]
    with tempfile.TemporaryDirectory(prefix="maelab-migrate-") as tmp:
        requests = record_requests(committed_runs(root), Path(tmp) / "requests.jsonl", Path(tmp) / "executed")
    refused = 0
    rekeyed = {r["stored_hash"]: r["config_hash"] for r in requests if r["stored_hash"]}
    for req in requests:
        why = rekey(req, commit, a.dry_run, rekeyed)
        label = f"{req['notebook']}/{req['name']}.{req['profile']}"
        if why is None:
            print(
                f"re-keyed {label}: {req['stored_hash']} -> {req['config_hash']}" + (" (dry run)" if a.dry_run else "")
            )
        else:
            refused += 1
            print(f"REFUSED {label}: {why}", file=sys.stderr)
    print(f"{len(requests) - refused} record(s) re-keyed, {refused} refused")
    return 1 if refused else 0


if __name__ == "__main__":
    papers.install()  # this script is a top: it hands the paper registry to the core (maelab.registry)
    sys.exit(main())
