"""`verdict … | head`: a reader that goes away ends the command quietly (exit 141), never a traceback."""

import subprocess
import sys


def test_a_closed_pipe_ends_verdict_quietly(tmp_path):
    command = [sys.executable, "-m", "verdict_daemon.cli", "sql", "SELECT range AS i FROM range(300000)",
               "--data-dir", str(tmp_path), "--tenant", "acme", "--format", "csv"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None  # piped
    assert proc.stdout.readline() == b"i\n"
    proc.stdout.close()  # what `head -1` does after its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr
