"""Ctrl-C anywhere in `attnsim verify` (issue 30 item 3): SIGINT to the whole process group, as a
terminal sends it, at several moments (while the package imports, while workers start, while they
run), with the local pool and a local Dask cluster: exit 130, one line on stderr, no traceback
from any worker, and no process of the group left behind.

A moment is an event, not a time: the group has reached so many processes (the workers are
started), so the test hits the same phase on an idle machine and beside CPU hogs (a fixed delay
hit the import instead of the Dask start under load)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnsim.verify.sigint import children_deaf_to_sigint

ROOT = Path(__file__).resolve().parents[2]


def _group_alive(pgid: int) -> list[str]:
    return subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout.split()


def _interrupt(processes: int, *args: str, settle: float = 0.0) -> tuple[int, list[str], list[str]]:
    """Run `attnsim verify ARGS` in a new process group; once the group has ``processes`` processes
    (1: at once, during the import), wait ``settle`` seconds more and SIGINT the group: (exit code,
    non-blank stderr lines, processes of the group still alive up to 20 s later)."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.Popen(
        [sys.executable, "-m", "attnsim_launcher", "verify", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    for _ in range(2400):  # the event, polled (a safety limit of 240 s, never the moment itself)
        if len(_group_alive(p.pid)) >= processes or p.poll() is not None:
            break
        time.sleep(0.1)
    assert p.poll() is None, "verify ended before the moment of the interrupt"
    time.sleep(settle)
    os.killpg(p.pid, signal.SIGINT)
    try:
        _, err = p.communicate(timeout=120)
    finally:
        left: list[str] = []
        for _ in range(40):  # workers notice their parent is gone within a few seconds
            left = _group_alive(p.pid)
            if not left:
                break
            time.sleep(0.5)
        if left:
            os.killpg(p.pid, signal.SIGKILL)
    return p.returncode, [ln for ln in err.splitlines() if ln.strip()], left


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
@pytest.mark.parametrize("moment", ["import", "workers started", "running"])
def test_ctrl_c_local_pool(moment: str, tmp_path: Path) -> None:
    """During the import, as the forked workers start (the parent and 2 workers), while they run."""
    processes, settle = {"import": (1, 0.3), "workers started": (3, 0.0), "running": (3, 2.0)}[moment]
    code, lines, left = _interrupt(processes, "-j", "2", "--cache", str(tmp_path), settle=settle)
    assert code == 130
    said = (
        ("attnsim: interrupted", "attnsim verify: interrupted")
        if moment == "import"
        else ("attnsim verify: interrupted",)
    )
    assert len(lines) == 1 and lines[0] in said, lines
    assert left == []


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
@pytest.mark.parametrize("moment", ["cluster starting", "running"])
def test_ctrl_c_local_dask(moment: str) -> None:
    """As the local Dask cluster starts (its first processes), and while it runs checks (its nannies
    and 2 workers up: 9 processes in the group)."""
    pytest.importorskip("distributed")
    processes, settle = {"cluster starting": (2, 0.0), "running": (9, 1.0)}[moment]
    code, lines, left = _interrupt(processes, "--scheduler", "local:2", "--only", "softmax", settle=settle)
    assert code == 130
    assert lines == ["attnsim verify: interrupted"], lines
    assert left == []


def test_children_started_inside_do_not_hear_sigint() -> None:
    """The mechanism: a forked child started inside the block survives a SIGINT that kills one
    started outside it (the mutation: without the block the child dies of KeyboardInterrupt)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    code = "import time\ntime.sleep(30)"
    with children_deaf_to_sigint():
        deaf = ctx.Process(target=exec, args=(code,), daemon=True)
        deaf.start()
    hearing = ctx.Process(target=exec, args=(code,), daemon=True)
    hearing.start()
    time.sleep(0.5)
    try:
        for proc in (deaf, hearing):
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGINT)
        hearing.join(timeout=10)
        deaf.join(timeout=1)
        assert hearing.exitcode == 1 and deaf.is_alive()  # 1: KeyboardInterrupt
    finally:
        deaf.kill()
        hearing.kill()
