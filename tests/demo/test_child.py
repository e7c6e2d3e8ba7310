"""The demo's child watchdog (`verdict_demo.child`): a component whose demo is killed outright
(kill -9) is stopped through its own SIGTERM path, and killed if it ignores that. Real processes:
a stand-in demo process spawns the wrapper exactly as the demo does, then is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

_COMPONENT = '''
import pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1])
def on_term(*_):
    out.write_text("clean shutdown")
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[2] == "ignore" else on_term)
out.write_text("running")
while True:
    time.sleep(0.1)
'''
# The stand-in demo: starts `python <args>` (PID replaced by its own pid) in its own session, as
# processes.spawn does, prints the child's pid and waits.
_DEMO = '''
import os, subprocess, sys
argv = [str(os.getpid()) if arg == "PID" else arg for arg in sys.argv[1:]]
child = subprocess.Popen([sys.executable, *argv], start_new_session=True)
print(child.pid, flush=True)
child.wait()
'''


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _orphan(tmp_path: Path, *child_argv: str) -> int:
    """Start a stand-in demo whose child is `python <child_argv>`, wait until the child runs, kill -9 the
    demo; return the child's pid."""
    (tmp_path / "component.py").write_text(_COMPONENT)
    demo = subprocess.Popen([sys.executable, "-c", _DEMO, *child_argv], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])})
    assert demo.stdout is not None  # piped
    pid = int(demo.stdout.readline())
    deadline = time.monotonic() + 60
    while not (tmp_path / "state").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "state").read_text() == "running"
    demo.send_signal(signal.SIGKILL)
    demo.wait(10)
    return pid


def _gone_within(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _running(pid):
        os.kill(pid, signal.SIGKILL)  # leave nothing behind, then fail
        return False
    return True


def test_a_component_whose_demo_is_killed_shuts_down_cleanly(tmp_path):
    # Exactly the demo's command line: python -m verdict_demo.child <demo pid> <module> <args>.
    pid = _orphan(tmp_path, "-m", "verdict_demo.child", "PID", "component", str(tmp_path / "state"), "honour")
    assert _gone_within(pid, timeout=60), "the component outlived its demo"
    assert (tmp_path / "state").read_text() == "clean shutdown"  # its own SIGTERM path ran


def test_a_component_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    watchdog = ("import os, runpy, sys; from verdict_demo.child import stop_when_orphaned; "
                "stop_when_orphaned(int(sys.argv[1]), poll=0.1, grace=1); "
                "sys.argv = ['component', *sys.argv[2:]]; runpy.run_module('component', run_name='__main__')")
    pid = _orphan(tmp_path, "-c", watchdog, "PID", str(tmp_path / "state"), "ignore")
    assert _gone_within(pid, timeout=60), "the component outlived its demo"
    assert (tmp_path / "state").read_text() == "running"  # no clean shutdown: the SIGKILL after the grace
