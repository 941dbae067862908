"""Content-addressed results of obligations and mutants: plain JSON files, so campaigns resume.

A result is stored under the SHA-256 of its *key*: every input its verdict reads.

* an obligation: its id, method, bound and statement; the structural fingerprint of its
  construction's registered example program (where it builds; else the id and statement alone);
  the timeout it ran with and the ``--cross-check`` options;
* a mutant: its construction, site, operator, description, the ids of the obligations it runs
  against and the timeout;
* both (:func:`inputs`): the checking code's version (:func:`code_version`: a hash of every file
  of the ``attnsim`` package, its sources and its package data, the committed torch fixtures
  ``data/*.npz`` among them); the Coq sources the kernel obligations compile (:func:`coq_inputs`:
  the ``.v`` files of the directory :func:`attnsim.constructions.kernel.coq_sources` resolves, and the
  value of ``$ATTNSIM_COQ_DIR``, which it honours); and the versions of the solvers and libraries
  that decide (:func:`solver_versions`: z3, sympy, mpmath, numpy, cvc5, coqc and MathComp when
  installed, Python).

Editing any file of the package or any Coq source, pointing ``$ATTNSIM_COQ_DIR`` elsewhere,
upgrading a solver or changing a timeout therefore makes every stored result stale: ``--resume``
reruns exactly what changed or has no result.  Only
decisive results are reused: an ``unknown`` (a timeout, a Z3 unknown) or a run that lost its
worker is rerun, since it says something about that run, not about the claim.

Each result is written (atomically: a temporary file, then a rename) as soon as it is known, so
an interrupted campaign continues where it stopped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attnsim.constructions.kernel import coq_sources
from attnsim.proofs import registry
from attnsim.proofs.obligation import Obligation, Result
from attnsim.proofs.smtlib import CVC5_BUDGET, CVC5_RLIMIT_PER

DEFAULT_DIR = ".attnsim-cache"
FORMAT = 4  # bump when the layout of a stored file changes (2: the outcome's typed facts;
# 3: a mutant's typed cause; 4: the key's Coq sources, environment and package data)
_PACKAGE = Path(__file__).resolve().parents[1]  # attnsim/
COQ_DIR_VARIABLE = "ATTNSIM_COQ_DIR"  # where coq_sources() looks first
# what a build leaves beside the sources and no check reads: bytecode, Coq's compiled files
_BUILT = frozenset({".pyc", ".pyo", ".vo", ".vok", ".vos", ".glob", ".aux"})


def _digest_files(root: Path, paths: list[Path]) -> str:
    """SHA-256 over ``paths`` (relative path to ``root`` and bytes), in path order."""
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@functools.cache
def code_version() -> str:
    """SHA-256 over every file of the ``attnsim`` package (relative path and bytes), in path order:
    its sources and its package data (the torch fixtures ``data/*.npz`` the ``torch-*`` obligations
    read, Coq files shipped in it); bytecode and Coq's build products are left out."""
    files = [
        p
        for p in _PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.relative_to(_PACKAGE).parts and p.suffix not in _BUILT
    ]
    return _digest_files(_PACKAGE, files)


def coq_inputs() -> dict[str, str | None]:
    """What the kernel obligations read outside the package's code: ``dir``, the value of
    ``$ATTNSIM_COQ_DIR`` (None when unset), and ``sources``, the SHA-256 of the ``.v`` files of the
    directory :func:`attnsim.constructions.kernel.coq_sources` resolves ("-" when it finds none).  Read
    afresh at each call: the variable and the files may change between two runs of one process."""
    try:
        directory = coq_sources()
    except Exception:  # no directory holds the Coq sources (the kernel obligations then fail, not run)
        return {"dir": os.environ.get(COQ_DIR_VARIABLE), "sources": "-"}
    return {"dir": os.environ.get(COQ_DIR_VARIABLE), "sources": _digest_files(directory, list(directory.glob("*.v")))}


def _mathcomp() -> str:
    """A stamp of the installed MathComp (the kernel obligations' library): its compiled files under
    ``coqc -where``, by relative path, size and modification time; "-" when there is none."""
    coqc = shutil.which("coqc")
    if coqc is None:
        return "-"
    where = subprocess.run([coqc, "-where"], capture_output=True, text=True).stdout.strip()
    root = Path(where) / "user-contrib" / "mathcomp" if where else None
    if root is None or not root.is_dir():
        return "-"
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.vo")):
        st = path.stat()
        h.update(f"{path.relative_to(root).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


@functools.cache
def solver_versions() -> dict[str, str]:
    """The versions of what decides a check: z3, sympy, mpmath (SymPy's numbers), numpy, cvc5 (if
    installed), coqc and MathComp (if installed), Python."""
    import numpy
    import sympy
    import z3

    out = {
        "python": platform.python_version(),
        "z3": z3.get_version_string(),
        "sympy": sympy.__version__,
        "numpy": numpy.__version__,
    }
    from importlib.metadata import version

    for lib in ("mpmath", "cvc5"):
        try:
            out[lib] = version(lib)
        except Exception:  # not installed (cvc5: --cross-check is then refused, so it decides nothing)
            out[lib] = "-"
    coqc = shutil.which("coqc")  # decides the kernel obligations (absent: they are not run)
    out["coqc"] = subprocess.run([coqc, "--version"], capture_output=True, text=True).stdout.strip() if coqc else "-"
    out["mathcomp"] = _mathcomp()
    return out


def inputs() -> dict[str, Any]:
    """The part of every key that is not the check's own: code, Coq sources and environment, solvers."""
    return {"code": code_version(), "coq": coq_inputs(), "solvers": solver_versions()}


def construction_fingerprints(names: set[str]) -> dict[str, str]:
    """The structural fingerprint of each named construction's registered example program.

    A construction whose example does not build, or has no program, is left out (its obligations
    are keyed by id and statement only)."""

    cons = registry.constructions()
    out = {}
    for name in sorted(names):
        if name not in cons:
            continue
        try:
            program = getattr(cons[name][1](), "program", None)
            fp = getattr(program, "fingerprint", None)
        except Exception:
            continue
        if isinstance(fp, str):
            out[name] = fp
    return out


def digest(parts: Mapping[str, Any]) -> str:
    """The SHA-256 of a key (canonical JSON: sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def obligation_key(
    ob: Obligation, timeout: float, fingerprint: str | None, smt: Any = None, common: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything an obligation's result depends on (see the module docstring); ``common``: :func:`inputs`
    when the caller has already read them (once for many keys)."""
    return {
        "kind": "obligation",
        "format": FORMAT,
        "id": ob.id,
        "method": ob.method,
        "bound": ob.bound,
        "deep": ob.deep,
        "statement": ob.statement,
        "program": fingerprint,
        "timeout": timeout,
        "cross_check": None if smt is None or not smt.cross_check else [CVC5_RLIMIT_PER, CVC5_BUDGET],
        **(common if common is not None else inputs()),
    }


def mutant_key(
    mutant: Any, obligation_ids: list[str], timeout: float, common: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything a mutant's result depends on: the mutant itself, what it runs against, the code
    (``common``: :func:`inputs`, when the caller has already read them)."""
    return {
        "kind": "mutant",
        "format": FORMAT,
        "construction": mutant.construction,
        "site": list(mutant.site),
        "op": mutant.op,
        "path": None if mutant.path is None else list(mutant.path),
        "description": mutant.description,
        "restate_intent": mutant.restate_intent,
        "obligations": obligation_ids,
        "timeout": timeout,
        **(common if common is not None else inputs()),
    }


def reusable_obligation(r: Mapping[str, Any]) -> bool:
    """A decisive result of the check itself: proved, passed, or failed other than by a lost worker."""
    if r["status"] in ("proved", "passed"):
        return True
    return r["status"] == "failed" and r.get("cause") != "worker lost"


def reusable_mutant(r: Mapping[str, Any]) -> bool:
    """Killed, proven equivalent, claim-only, or survived with every obligation decided and its worker
    alive: no typed ``cause`` (an unknown obligation, a lost worker, over budget, a worker error)."""
    if r["killed"] or r["equivalent"] or r["claim_only"]:
        return True
    return r.get("cause", "not recorded") == ""  # a stored survivor without a cause is not trusted


class ResultCache:
    """A directory of JSON files ``<sha256 of key>.json``, each ``{"key": ..., "result": ...}``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.reused = 0
        self.written = 0

    def path(self, key: Mapping[str, Any]) -> Path:
        return self.dir / f"{digest(key)}.json"

    def get(self, key: Mapping[str, Any], usable: Callable[[Mapping[str, Any]], bool]) -> dict[str, Any] | None:
        """The stored result for ``key`` if there is one and ``usable(result)``; else None."""
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != dict(key) or not isinstance(data.get("result"), dict):
            return None  # a hash collision or a damaged file: never trust it
        if not usable(data["result"]):
            return None
        self.reused += 1
        return data["result"]

    def put(self, key: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """Write one result now (atomically), so that an interruption loses nothing already known."""
        target = self.path(key)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"key": dict(key), "result": dict(result)}, f, indent=1, sort_keys=True)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.written += 1


def result_from(d: Mapping[str, Any]) -> Result:
    """A stored obligation result back as a :class:`Result` (its typed records rebuilt)."""
    return Result.from_dict(d)
