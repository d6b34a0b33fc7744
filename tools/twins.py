"""Fail when a change writes again what the package already holds: every run
of ``--lines`` (6) significant lines, all added since ``--base``, that
stands, the same to the letter (white space folded), somewhere else in
``a2a_flask/``. Run by ``.ci/run``: there the base is ``HEAD~1``, the main
before the last merge (branches land with ``git merge --no-ff``).

    python tools/twins.py [--base REV] [--lines N] [--repo DIR]

Passed over, as they say nothing: blank lines, comments, imports and lone
punctuation. Only exact repeats count (a shape alike with other names is a
place to look, not a verdict: the ``duplicates`` tool lists those); the
existing tree is not judged, only what the change adds.
"""

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from typing import Dict, List, Set, Tuple

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PACKAGE = "a2a_flask"
_PUNCTUATION = re.compile(r"^[\s()\[\]{}:,.]*$")
_HUNK = re.compile(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@")

Line = Tuple[int, str]  # (line number, folded text)


def _git(root: str, *args: str) -> str:
    return subprocess.run(("git",) + args, cwd=root, check=True,
                          capture_output=True, text=True).stdout


def significant(text: str) -> List[Line]:
    """The lines of a file that can make a twin, white space folded."""
    kept = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = " ".join(raw.split())
        if (not line or line.startswith("#") or _PUNCTUATION.match(line)
                or line.startswith(("import ", "from "))):
            continue
        kept.append((number, line))
    return kept


def added_lines(root: str, base: str) -> Dict[str, Set[int]]:
    """The numbers of the lines each tracked file of the package has that
    ``base`` did not."""
    added: Dict[str, Set[int]] = defaultdict(set)
    name = None
    for row in _git(root, "diff", "-U0", "--no-color", "--no-renames", base, "--",
                    PACKAGE).splitlines():
        if row.startswith("+++ "):
            name = row[6:] if row.startswith("+++ b/") else None
            continue
        found = _HUNK.match(row)
        if found and name and name.endswith(".py"):
            start, count = int(found.group(1)), int(found.group(2) or 1)
            added[name].update(range(start, start + count))
    return added


def _python_files(root: str, *which: str) -> List[str]:
    return [n for n in _git(root, "ls-files", *which, "--exclude-standard", "--",
                            PACKAGE).split()
            if n.endswith(".py") and os.path.exists(os.path.join(root, n))]


def twins(root: str, base: str, size: int) -> List[str]:
    """One sentence per run of ``size`` added lines found elsewhere (a file
    git does not track yet counts as added whole)."""
    lines: Dict[str, List[Line]] = {}
    places: Dict[Tuple[str, ...], List[Tuple[str, int]]] = defaultdict(list)
    for name in _python_files(root, "--cached", "--others"):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            lines[name] = significant(f.read())
        kept = lines[name]
        for i in range(len(kept) - size + 1):
            places[tuple(t for _, t in kept[i:i + size])].append((name, i))
    added = added_lines(root, base)
    for name in _python_files(root, "--others"):
        added[name].update(n for n, _ in lines.get(name, ()))
    found = []
    for name, numbers in sorted(added.items()):
        kept = lines.get(name, [])
        reported = -1
        for i in range(len(kept) - size + 1):
            window = kept[i:i + size]
            if i <= reported or not all(n in numbers for n, _ in window):
                continue
            others = [(other, j) for other, j in places[tuple(t for _, t in window)]
                      if other != name or abs(j - i) >= size]
            if others:
                other, j = others[0]
                found.append("%s:%d-%d repeats %s:%d-%d" % (
                    name, window[0][0], window[-1][0],
                    other, lines[other][j][0], lines[other][j + size - 1][0]))
                reported = i + size - 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1")
    parser.add_argument("--lines", type=int, default=6)
    parser.add_argument("--repo", default=HERE, help="the checkout (this one)")
    args = parser.parse_args()
    root = os.path.abspath(args.repo)
    try:
        _git(root, "rev-parse", "--verify", "--quiet", args.base + "^{tree}")
    except subprocess.CalledProcessError:
        print("twins: no %s to compare with (a first commit): nothing checked"
              % args.base)
        return 0
    found = twins(root, args.base, args.lines)
    for sentence in found:
        print("twins: " + sentence)
    print("twins: %d run(s) of %d lines that the change since %s writes again"
          % (len(found), args.lines, args.base))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
