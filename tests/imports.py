"""Which of some modules a fresh interpreter has loaded after running `code` (import-weight checks)."""

import subprocess
import sys


def loaded_after(code: str, candidates: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport sys\nprint(','.join(sorted(m for m in {candidates!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]
