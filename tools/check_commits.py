"""Check the commit messages since the rule began: a subject of at most 72 characters, then (for a
commit that is not a merge) a blank line and a body with the details.

Usage: python tools/check_commits.py [BASE]   (default: the first commit the rule applies to)
Exits 1 naming each commit that breaks the rule.  CONTRIBUTING.md says why.
"""

from __future__ import annotations

import subprocess
import sys

SINCE = "0810d4b"  # the rule applies to the commits after this one (older subjects were longer)
LIMIT = 72


def problems(base: str = SINCE) -> list[str]:
    """One line per commit in ``base..HEAD`` whose message breaks the rule."""
    out = subprocess.run(
        ["git", "log", "--format=%H%x1f%P%x1f%B%x1e", f"{base}..HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    bad = []
    for record in filter(None, (r.strip("\n") for r in out.split("\x1e"))):
        sha, parents, message = record.split("\x1f", 2)
        lines = message.strip("\n").splitlines()
        subject = lines[0] if lines else ""
        merge = len(parents.split()) > 1
        if len(subject) > LIMIT:
            bad.append(f"{sha[:7]}: subject of {len(subject)} characters (at most {LIMIT}): {subject}")
        if not merge and (len(lines) < 3 or lines[1].strip() or not any(ln.strip() for ln in lines[2:])):
            bad.append(f"{sha[:7]}: no body after a blank line: {subject}")
    return bad


def main(argv: list[str]) -> int:
    bad = problems(*argv[1:2])
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
