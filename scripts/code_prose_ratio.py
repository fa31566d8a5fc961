"""Code : prose ratio of the book's notebooks (issue 23: QuantEcon's lectures sit near 0.5; our target is <= 1.2).

Reads every ``notebooks/*.md`` (MyST notebooks) and counts, in characters of non-blank lines, the code of the
``{code-cell}`` blocks (their ``:tags:`` / YAML option lines excluded) against the prose outside them (the
front matter excluded; headings, text, lists and maths count as prose). Also lists the functions a notebook defines
(``def`` at the start of a code line), which the issue allows only for plotting helpers.

Usage: ``python scripts/code_prose_ratio.py [--max RATIO]`` (exit 1 when the whole book is above ``--max``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")


def measure(text: str) -> dict:
    """Characters of code and of prose (non-blank lines, stripped) and the names of the functions defined."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        lines = lines[end + 1 :]
    code = prose = 0
    defs: list[str] = []
    fence = None
    in_options = False
    for line in lines:
        s = line.strip()
        if fence is None:
            m = FENCE.match(s)
            if m:
                fence, in_options = m.group(1), True
                continue
            prose += len(s)
            continue
        if s == fence:
            fence = None
            continue
        if in_options:  # ":tags: [...]" lines, or a "---" YAML block, directly after the fence
            if s.startswith(":"):
                continue
            if s == "---":
                in_options = "yaml" if in_options is True else False
                continue
            if in_options == "yaml":
                continue
            in_options = False
        code += len(s)
        m = re.match(r"def (\w+)", line)
        if m:
            defs.append(m.group(1))
    return {"code": code, "prose": prose, "defs": defs}


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit 1 when ``--max`` is given and the whole book is above it."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=float, default=None, help="fail above this ratio (whole book)")
    a = ap.parse_args(argv)
    total_c = total_p = 0
    print(f"{'notebook':<24}{'code':>8}{'prose':>8}{'ratio':>7}  functions defined")
    for p in sorted((ROOT / "notebooks").glob("*.md")):
        m = measure(p.read_text())
        total_c, total_p = total_c + m["code"], total_p + m["prose"]
        ratio = m["code"] / max(m["prose"], 1)
        print(f"{p.stem:<24}{m['code']:>8}{m['prose']:>8}{ratio:>7.2f}  {', '.join(m['defs'])}")
    ratio = total_c / max(total_p, 1)
    print(f"{'all':<24}{total_c:>8}{total_p:>8}{ratio:>7.2f}")
    return 1 if a.max is not None and ratio > a.max else 0


if __name__ == "__main__":
    sys.exit(main())
