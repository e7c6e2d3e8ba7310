"""`write_report`: gather, render, and write the HTML atomically (temp file in the target directory,
fsync, rename), so a failed run never leaves a partial or stale-looking report behind."""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from collector.lake_union import read_errors
from verdict.cli_runner import checked_tenant
from verdict_daemon.config import Lake
from verdict_daemon.errors import DaemonError
from verdict_daemon.lakes import open_lakes
from verdict_daemon.probes import PROBES_DIR
from verdict_daemon.report.gather import checked_data_dir, gather
from verdict_daemon.report.model import ReportData
from verdict_daemon.report.panels import probe_panel, review_queue
from verdict_daemon.report.render import render


def build_report(data_dir: Path | str, tenant: str, *, probes: Sequence[Path | str] = (), lock_timeout: float = 10.0,
                 generated_at: datetime | None = None, lake: Lake | None = None) -> ReportData:
    """The report's data (what `write_report` renders); DaemonError with a closed code on bad input. `lake`: the
    lakes besides the data dir that hold the tenant's spans."""
    tenant = checked_tenant(tenant)
    root = checked_data_dir(data_dir)
    if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, int | float) or not 0 <= lock_timeout < math.inf:
        raise DaemonError("invalid_config", f"--lock-timeout must be a finite number of seconds >= 0, got {lock_timeout!r}")
    try:
        return gather(root, tenant, probes=probe_panel([Path(p) for p in probes], root / PROBES_DIR, tenant),
                      review=review_queue(root, tenant, lock_timeout), lock_timeout=lock_timeout,
                      generated_at=generated_at, lake=open_lakes(root, lake or Lake()))
    except read_errors() as exc:
        if not isinstance(exc, OSError):  # the object store: no such bucket, unreachable, credentials refused
            raise DaemonError("storage_error", f"cannot read the lake: {type(exc).__name__}: "
                              + (str(exc).splitlines() or [""])[0][:300]) from None
        # e.g. a partition or state.duckdb the user may not read
        raise DaemonError("storage_error", f"cannot read {exc.filename or root} ({exc.strerror})") from None


def checked_out(out_path: Path | str) -> Path:
    out = Path(out_path)
    if out.is_dir():
        raise DaemonError("invalid_config", f"--out: {out} is a directory")
    if not out.parent.is_dir():
        raise DaemonError("invalid_config", f"--out: directory {out.parent} does not exist")
    return out


def write_html(page: str, out_path: Path | str) -> Path:
    """Write `page` to `out_path` atomically; returns the resolved path."""
    out = checked_out(out_path)
    tmp = out.parent / f".{out.name}.{uuid.uuid4().hex}.tmp"
    try:  # O_EXCL with mode 0o666: the umask decides the final permissions, as for any new file
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise DaemonError("invalid_config", f"--out: cannot write in {out.parent} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except OSError as exc:
        raise DaemonError("storage_error", f"--out: cannot write {out} ({exc.strerror})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return out.resolve()


def write_report(data_dir: Path | str, tenant: str, out_path: Path | str, *, probes: Sequence[Path | str] = (),
                 lock_timeout: float = 10.0, generated_at: datetime | None = None) -> Path:
    """Write one tenant's self-contained HTML report to `out_path` and return its resolved path.

    `probes`: probe-run artifacts (`verdict probes run --out`) to show; `generated_at`: the time stamped
    in the report (default now, UTC). Raises DaemonError: `invalid_config` (missing data dir, probe file
    or output directory), `tenant_required`, `invalid_tenant`, `unknown_tenant`, `storage_locked`,
    `storage_error`. Nothing is written unless the whole report was built."""
    out = checked_out(out_path)
    data = build_report(data_dir, tenant, probes=probes, lock_timeout=lock_timeout, generated_at=generated_at)
    return write_html(render(data), out)
