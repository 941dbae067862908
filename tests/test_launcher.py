"""The local Dask cluster's forkserver preload (attnsim_launcher's exception hook): a child that loses
its parent's start data dies without a traceback (Ctrl-C while the cluster starts, issue 27: "pytest
passes beside 6 CPU-bound processes"); every other exception is still printed.

Each case runs in a fresh interpreter, as the forkserver does: the module replaces sys.excepthook
at import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attnsim_launcher

ROOT = Path(__file__).resolve().parents[1]

# a child's start: spawn._main reading the parent's data from a pipe whose writer is gone
SETUP = """
import os, sys
import attnsim_launcher
from multiprocessing import spawn
r, w = os.pipe()
{write}
os.close(w)
try:
    spawn._main(r, os.dup(r))
except BaseException:
    sys.excepthook(*sys.exc_info())
{after}
"""


def _stderr(write: str = "", after: str = "") -> str:
    code = SETUP.format(write=write, after=after)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    return out.stderr


def test_a_child_whose_parent_data_is_gone_prints_nothing() -> None:
    """EOFError while reading the start data (the parent exited): dropped."""
    assert _stderr() == ""


def test_a_start_that_fails_otherwise_is_still_printed() -> None:
    """The mutation: an error of another kind in the same place (data that does not unpickle) keeps
    its traceback."""
    err = _stderr(write="os.write(w, b'not a pickle')")
    assert "Traceback" in err and "UnpicklingError" in err


def test_the_same_error_outside_a_start_is_still_printed() -> None:
    """EOFError raised by the process's own code, not while it reads its start data: printed."""
    err = _stderr(after="try:\n    raise EOFError('mine')\nexcept EOFError:\n    sys.excepthook(*sys.exc_info())")
    assert "EOFError: mine" in err


def test_a_child_whose_parent_unlinked_its_semaphore_prints_nothing() -> None:
    """The failure seen under load: the start data holds a lock whose semaphore the exiting parent
    has unlinked, so rebuilding it raises FileNotFoundError: dropped (the mutation: a hook that drops
    only EOFError prints it)."""
    write = (
        "import multiprocessing as mp\n"
        "from multiprocessing import reduction, spawn as sp\n"
        "ctx = mp.get_context('forkserver')\n"
        "lock = ctx.Lock()\n"
        "proc = ctx.Process(target=print, args=(lock,))\n"
        "import io\n"
        "buf = io.BytesIO()\n"
        "from multiprocessing import context\n"
        "context.set_spawning_popen(object())\n"
        "reduction.dump(sp.get_preparation_data('x'), buf)\n"
        "reduction.dump(proc, buf)\n"
        "context.set_spawning_popen(None)\n"
        "import _multiprocessing\n"
        "_multiprocessing.sem_unlink(lock._semlock.name)\n"
        "from multiprocessing import resource_tracker\n"
        "resource_tracker.unregister(lock._semlock.name, 'semaphore')\n"
        "os.write(w, buf.getvalue())"
    )
    # the parent's own exit would unlink the semaphore again: it leaves at once
    assert _stderr(write=write, after="sys.stderr.flush()\nos._exit(0)") == ""


# the end of a probe script: start the Process p, print its exit code
RUN_AND_SAY_EXIT = "    p.start()\n    p.join()\n    print(p.exitcode)\n"


def _run(script: Path) -> subprocess.CompletedProcess[str]:
    """Run a probe script in its own directory with this checkout importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=script.parent, env=env)


def test_the_forkserver_installs_the_hook_in_every_child(tmp_path: Path) -> None:
    """deaf_forkserver's server preloads the module: a process it forks runs with the hook, and
    ignores SIGINT (the server's preload set it so; the client's own SIGINT is left alone)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import multiprocessing as mp, sys\n"
        "from attnsim.verify.dask_runner import deaf_forkserver\n"
        "def probe():\n"
        "    import signal\n"
        "    hooked = getattr(sys.excepthook, '__name__', '') == '_quiet_lost_starts'\n"
        "    sys.exit(0 if hooked and signal.getsignal(signal.SIGINT) == signal.SIG_IGN else 3)\n"
        "if __name__ == '__main__':\n"
        "    import signal\n"
        "    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's foreground job\n"
        "    deaf_forkserver()\n"
        "    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "    p = mp.get_context('forkserver').Process(target=probe)\n" + RUN_AND_SAY_EXIT
    )
    out = _run(script)
    assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_only_the_deaf_server_ignores_sigint(tmp_path: Path) -> None:
    """Only deaf_forkserver's server (DEAF_SERVER in its environment, the server's own main on the
    stack) sets SIGINT ignored: not another forkserver preloading the module (a Dask worker's own,
    for its slots, whose children then hear Ctrl-C as before)."""
    from attnsim.verify.dask_runner import DEAF_SERVER

    assert DEAF_SERVER == attnsim_launcher.DEAF
    script = tmp_path / "probe.py"
    script.write_text(
        "import multiprocessing as mp, signal, sys\n"
        "def probe():\n"
        "    import attnsim_launcher\n"
        "    sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 3)\n"
        "if __name__ == '__main__':\n"
        "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "    ctx = mp.get_context('forkserver')\n"
        "    ctx.set_forkserver_preload(['attnsim_launcher'])\n"
        "    p = ctx.Process(target=probe)\n" + RUN_AND_SAY_EXIT
    )
    out = _run(script)
    assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_a_ctrl_c_while_the_forkserver_starts_is_not_lost(tmp_path: Path) -> None:
    """A Ctrl-C that arrives while connect() blocks SIGINT, before deaf_forkserver() starts the
    server, still stops the parent (the old deaf_forkserver set SIGINT ignored around the start,
    which discarded it, and a verify interrupted as its Dask cluster started ran on to exit 0)."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import signal, sys\n"
        "from attnsim.verify.dask_runner import deaf_forkserver\n"
        "from attnsim.verify.sigint import children_deaf_to_sigint\n"
        "if __name__ == '__main__':\n"
        "    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's foreground job\n"
        "    try:\n"
        "        with children_deaf_to_sigint():\n"
        "            signal.raise_signal(signal.SIGINT)  # the Ctrl-C, pending while blocked\n"
        "            deaf_forkserver()\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted')\n"
        "    else:\n"
        "        print('lost')\n"
    )
    out = _run(script)
    assert out.stdout.strip() == "interrupted", out.stdout + out.stderr


def test_the_preload_imports_nothing_of_attnsim() -> None:
    """The forkserver imports its preload from its working directory (Python 3.11 ignores the
    parent's sys.path there): a preload that loaded attnsim would make the cluster's workers run
    that copy, refused by the code-version check when it differs from the parent's (a clean clone
    installed into site-packages).  So the module loads nothing of attnsim until main() runs."""
    code = "import sys, attnsim_launcher; print(sorted(m for m in sys.modules if m.split('.')[0] == 'attnsim'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
