"""Compile Coq files through a content-addressed cache, and check the result with ``coqchk``.

A build is a list of :class:`CoqFile` (name, text, the names of the build's files it requires),
compiled in order under the logical root ``Attnsim``.  Each file's compiled library is stored in
the cache under the SHA-256 of everything that decides it: the Coq installation
(:attr:`CoqTools.fingerprint`: the versions of ``coqc`` and ``coqchk`` and the size and time of
every library file of the installation), the file's name and text, and the keys of the files it
requires.  A file whose key is in the cache is not compiled again, by this process or any other:
a second ``attnsim verify`` compiles only what changed.  A file Coq rejects is stored too (the same
text is rejected again); a run stopped by its budget is not stored (it says something about the
run, not the file).

Budgets are CPU seconds of the ``coqc``/``coqchk`` process (``RLIMIT_CPU``), the same on a busy
and an idle machine; the wall clock only ends a run that is stuck for ten times as long.  The
child dies with the process that started it (``PR_SET_PDEATHSIG``), so an interrupted or killed
``verify`` leaves no ``coqc`` behind.

The cache lives in ``$ATTNSIM_COQ_CACHE``, else ``$XDG_CACHE_HOME/attnsim/coq`` (default
``~/.cache/attnsim/coq``); concurrent builds of the same key wait for each other (``flock``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = "Attnsim"  # the logical root of every file of a build
FORMAT = "1"  # bump when what a cache entry holds changes
WALL_FACTOR = 10.0  # the wall-clock safety net: this many times the CPU budget


class CoqToolError(RuntimeError):
    """``coqc`` could not be run at all (not a verdict on a file)."""


@dataclass(frozen=True)
class CoqTools:
    """The Coq installation a build runs on."""

    coqc: str
    coqchk: str | None
    fingerprint: str

    @staticmethod
    def find() -> CoqTools | None:
        """The installed ``coqc`` (and ``coqchk``), or None when ``coqc`` is not on the PATH."""
        coqc = shutil.which("coqc")
        if coqc is None:
            return None
        coqchk = shutil.which("coqchk")
        return CoqTools(coqc, coqchk, _fingerprint(coqc, coqchk))


@functools.cache
def _fingerprint(coqc: str, coqchk: str | None) -> str:
    """The installation's identity: the tools' versions, the binaries, every file under Coq's
    library and plugin directories (path, size, mtime), and the environment variables Coq reads."""
    h = hashlib.sha256()
    for cmd in ([coqc, "--version"], [coqc, "-where"], *([[coqchk, "--version"]] if coqchk else [])):
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        h.update(" ".join(cmd).encode() + b"\0" + res.stdout.encode() + b"\0")
    for var in ("COQPATH", "COQLIB", "COQCORELIB", "OCAMLPATH", "XDG_DATA_HOME", "XDG_DATA_DIRS"):
        h.update(f"{var}={os.environ.get(var, '')}\0".encode())
    where = Path(subprocess.run([coqc, "-where"], capture_output=True, text=True, check=False).stdout.strip())
    roots = [where, where.parent / "coq-core"]
    files = [Path(coqc), *([Path(coqchk)] if coqchk else [])]
    for root in roots:
        files += sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    for path in files:
        st = path.stat()
        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def cache_dir() -> Path:
    """Where compiled libraries are kept (see the module doc)."""
    env = os.environ.get("ATTNSIM_COQ_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attnsim" / "coq"


@dataclass(frozen=True)
class CoqFile:
    """A ``.v`` file of a build: its module name, its text and the build files it requires."""

    name: str
    text: str
    deps: tuple[str, ...] = ()


Status = Literal["ok", "rejected", "over budget"]


@dataclass(frozen=True)
class FileResult:
    """One file of a build: accepted (``ok``), rejected by Coq, or stopped by its budget; what coqc
    printed; its cache key; and whether this call compiled it (False: read from the cache)."""

    name: str
    status: Status
    output: str
    key: str
    compiled: bool


@dataclass(frozen=True)
class Build:
    """The files of a build in order, up to the first that is not ``ok`` (``failed``)."""

    files: tuple[FileResult, ...]
    failed: FileResult | None
    keys: dict[str, str]

    def result(self, name: str) -> FileResult:
        return next(f for f in self.files if f.name == name)

    @property
    def compiled(self) -> tuple[str, ...]:
        """The files this call compiled (the others came from the cache)."""
        return tuple(f.name for f in self.files if f.compiled)


def _key(tools: CoqTools, f: CoqFile, keys: dict[str, str]) -> str:
    missing = [d for d in f.deps if d not in keys]
    if missing:
        raise ValueError(f"{f.name}.v requires {', '.join(missing)}, which come later in the build or not at all")
    h = hashlib.sha256()
    for part in (FORMAT, tools.fingerprint, f.name, f.text, *(keys[d] for d in f.deps)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _closure(files: Sequence[CoqFile], name: str) -> list[str]:
    """``name`` and every build file it requires, directly or not."""
    by = {f.name: f for f in files}
    out: list[str] = []
    todo = [name]
    while todo:
        n = todo.pop()
        if n not in out:
            out.append(n)
            todo += list(by[n].deps)
    return out


def _entry(cache: Path, key: str) -> Path:
    return cache / key[:2] / key


def _read(entry: Path) -> tuple[Status, str] | None:
    """A stored result, or None when there is none or it does not match what it stored (a compiled
    library whose bytes changed since is not read: the entry is compiled again)."""
    try:
        meta = json.loads((entry / "result.json").read_text())
        for name, digest in meta.get("digests", {}).items():
            if hashlib.sha256((entry / name).read_bytes()).hexdigest() != digest:
                return None
    except (OSError, ValueError, KeyError):
        return None
    return meta["status"], meta["output"]


@contextlib.contextmanager
def _locked(cache: Path, key: str) -> Iterator[None]:
    lock = cache / key[:2] / f"{key}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(files: Sequence[CoqFile], tools: CoqTools, budget: float, cache: Path | None = None) -> Build:
    """Compile ``files`` in order (each against the ones it requires), through the cache."""
    cache = cache or cache_dir()
    keys: dict[str, str] = {}
    out: list[FileResult] = []
    for f in files:
        key = _key(tools, f, keys)
        keys[f.name] = key
        res = _get(files, f, key, keys, tools, budget, cache)
        out.append(res)
        if res.status != "ok":
            return Build(tuple(out), res, keys)
    return Build(tuple(out), None, keys)


def _get(
    files: Sequence[CoqFile], f: CoqFile, key: str, keys: dict[str, str], tools: CoqTools, budget: float, cache: Path
) -> FileResult:
    entry = _entry(cache, key)
    got = _read(entry)
    if got is not None:
        return FileResult(f.name, got[0], got[1], key, False)
    with _locked(cache, key):
        got = _read(entry)  # another process may have compiled it while we waited
        if got is not None:
            return FileResult(f.name, got[0], got[1], key, False)
        deps = [d for d in _closure(files, f.name) if d != f.name]
        with tempfile.TemporaryDirectory(prefix="attnsim-coqc-", dir=cache) as tmp:
            work = Path(tmp)
            for d in deps:
                (work / f"{d}.vo").symlink_to(_entry(cache, keys[d]) / f"{d}.vo")
            (work / f"{f.name}.v").write_text(f.text)
            status, output = _coqc(tools, work, f.name, budget)
            if status == "over budget":
                return FileResult(f.name, status, output, key, True)
            stage = work / "entry"
            stage.mkdir()
            digests = {}
            if status == "ok":
                vo = stage / f"{f.name}.vo"
                os.replace(work / f"{f.name}.vo", vo)
                digests[vo.name] = hashlib.sha256(vo.read_bytes()).hexdigest()
            meta = {"status": status, "output": output, "digests": digests}
            (stage / "result.json").write_text(json.dumps(meta))
            if entry.exists():  # a stale entry (its library changed since): replaced
                shutil.rmtree(entry)
            entry.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage, entry)
    return FileResult(f.name, status, output, key, True)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up in the parent (the child between fork and exec only calls it)."""
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return prctl
    except (OSError, AttributeError):
        return None


def _limits(cpu: float, prctl: Callable[..., int] | None) -> Callable[[], None]:
    """The child's set-up before exec: a CPU-seconds limit, and SIGKILL when the parent dies."""
    seconds = max(1, int(cpu + 0.999))

    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
        if prctl is not None:
            prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return setup


def run_limited(cmd: Sequence[str], cwd: Path, budget: float) -> tuple[int | None, str]:
    """Run ``cmd`` within ``budget`` CPU seconds: (exit code, or None when stopped by the budget or
    the wall-clock safety net; stdout and stderr)."""
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={"OCAMLRUNPARAM": COQC_GC, **os.environ},
            preexec_fn=_limits(budget, _prctl()),
        )
    except OSError as exc:
        raise CoqToolError(f"cannot run {cmd[0]}: {exc}") from None
    try:
        out, _ = proc.communicate(timeout=max(60.0, WALL_FACTOR * budget))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return None, out + f"\n(stopped by the wall-clock safety net, {WALL_FACTOR:g} x {budget:g} s)"
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return None, out + f"\n(stopped by its budget of {budget:g} CPU seconds)"
    return proc.returncode, out


# OCaml's garbage collector for coqc: a 4 M-word minor heap and 32 M-word major increments (the
# defaults are 256 k words and 15 %): loading MathComp collects less often.  A user's own
# OCAMLRUNPARAM wins.  The check is the same.
COQC_GC = "s=4M,i=32M"


def _coqc(tools: CoqTools, work: Path, name: str, budget: float) -> tuple[Status, str]:
    code, out = run_limited([tools.coqc, "-q", "-w", "none", "-noglob", "-Q", ".", ROOT, f"{name}.v"], work, budget)
    if code is None:
        return "over budget", out
    return ("ok" if code == 0 else "rejected"), out


@dataclass(frozen=True)
class Checked:
    """What ``coqchk`` said of a build's libraries: whether it accepted them, every axiom of the
    checked environment by full path, the entries of its other assumption sections (a constant
    relying on type-in-type, an unsafe fixpoint, an assumed positivity), and whether the verdict
    was read from the cache."""

    status: Status
    output: str
    axioms: tuple[str, ...]
    unsafe: tuple[str, ...]
    cached: bool


def check(files: Sequence[CoqFile], built: Build, tools: CoqTools, budget: float, cache: Path | None = None) -> Checked:
    """``coqchk -o`` on every file of ``built`` (each checked, the libraries they load admitted)."""
    if tools.coqchk is None:
        raise CoqToolError("coqchk is not installed (it comes with coq)")
    cache = cache or cache_dir()
    names = [f.name for f in built.files]
    h = hashlib.sha256(f"coqchk\0{FORMAT}\0{tools.fingerprint}".encode())
    for n in names:
        h.update(built.keys[n].encode() + b"\0")
    key = h.hexdigest()
    entry = _entry(cache, key)
    got, cached = _read(entry), True
    if got is None:
        with _locked(cache, key):
            got = _read(entry)
            if got is None:
                got, cached = _coqchk(built, names, tools, budget, cache, entry), False
    axioms, unsafe = parse_context(got[1])
    return Checked(got[0], got[1], axioms, unsafe, cached)


def _coqchk(
    built: Build, names: list[str], tools: CoqTools, budget: float, cache: Path, entry: Path
) -> tuple[Status, str]:
    assert tools.coqchk is not None
    with tempfile.TemporaryDirectory(prefix="attnsim-coqchk-", dir=cache) as tmp:
        work = Path(tmp)
        for n in names:
            (work / f"{n}.vo").symlink_to(_entry(cache, built.keys[n]) / f"{n}.vo")
        cmd = [tools.coqchk, "-silent", "-o", "-Q", ".", ROOT]
        for n in names:
            cmd += ["-norec", f"{ROOT}.{n}"]
        code, out = run_limited(cmd, work, budget)
        if code is None:
            return "over budget", out
        status: Status = "ok" if code == 0 else "rejected"
        stage = work / "entry"
        stage.mkdir()
        (stage / "result.json").write_text(json.dumps({"status": status, "output": out}))
        if entry.exists():
            shutil.rmtree(entry)
        entry.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage, entry)
        return status, out


def parse_context(output: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(axioms, other assumptions) of a ``coqchk -o`` context summary.

    The summary has sections ``* Axioms:`` and ``* Constants/Inductives relying on ...:``, each
    followed by one indented full name per line, or ``<none>`` on the header's line."""
    axioms: list[str] = []
    unsafe: list[str] = []
    section: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("* "):
            header, _, rest = line[2:].partition(":")
            if header.startswith("Theory"):
                section = None
                continue
            section = axioms if header.strip() == "Axioms" else unsafe
            if rest.strip() and rest.strip() != "<none>":
                section.append(f"{header.strip()}: {rest.strip()}")
            continue
        name = line.strip()
        if section is not None and name and line.startswith(" "):
            section.append(name)
    return tuple(axioms), tuple(unsafe)


__all__ = [
    "FORMAT",
    "ROOT",
    "Build",
    "Checked",
    "CoqFile",
    "CoqToolError",
    "CoqTools",
    "FileResult",
    "build",
    "cache_dir",
    "check",
    "parse_context",
    "run_limited",
]
