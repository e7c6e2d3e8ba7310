import subprocess
import sys

import pytest

from verdict.pidlock import HeldElsewhere, PidFileLock


def test_second_holder_is_refused_with_the_holders_pid(tmp_path):
    path = tmp_path / "sub" / "x.lock"
    first = PidFileLock(path)
    first.acquire()
    # another process: flock is per open file description, so a second process must fail
    code = (
        "import sys; from pathlib import Path; from verdict.pidlock import PidFileLock, HeldElsewhere\n"
        "try:\n    PidFileLock(Path(sys.argv[1])).acquire()\nexcept HeldElsewhere as e:\n"
        "    print(e.holder_pid); sys.exit(3)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert out.returncode == 3
    import os

    assert out.stdout.strip() == str(os.getpid())
    with pytest.raises(HeldElsewhere):
        PidFileLock(path).acquire()
    first.release()
    again = PidFileLock(path)
    again.acquire()  # free once released
    again.release()


def test_lock_dies_with_its_holder(tmp_path):
    path = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from verdict.pidlock import PidFileLock\n"
         "PidFileLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None  # piped
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(HeldElsewhere):
            PidFileLock(path).acquire()
    finally:
        holder.kill()
        holder.wait()
    lock = PidFileLock(path)
    lock.acquire()  # kill -9 released it: no stale lock
    lock.release()
