"""Deferred deletion: what compaction replaced, retention expired or shipping delivered is *retired* first —
hidden from every reader that lists the lake from then on — and deleted `grace_s` later, so a reader that
listed it before (its snapshot: a `verdict sql` query, a UI snapshot, the daemon's sample step) still reads it.
The local form of the lake's manifest + `--lake-delete-grace-s` (collector.lake_manifest).

A record `<data>/retired/<ms>-<uuid>.json` {"paths": [relative paths: segments or partition dirs], "at": epoch
seconds} is written durably; `purge()` deletes the paths of records older than the grace period, then the record.
Readers (collector.lake_source) read the records *before* they list a partition, so:
  * a path retired after that read is listed and read, and stays on disk at least `grace_s`;
  * a path whose record was read is hidden (its replacement, if any, was published before the record);
  * a path already purged was deleted before its record, so the listing does not show it either.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from collector import lake

DELETE_GRACE_S = 600.0  # the default: longer than any reader's snapshot (`verdict sql`, UI, daemon steps)


def retired_dir(data_dir: Path) -> Path:
    return data_dir / "retired"


@dataclass(frozen=True)
class Retired:
    paths: frozenset[str]  # relative to the data dir, POSIX

    def hides(self, relative: str) -> bool:
        """Whether `relative` (a segment or a partition dir) is retired itself or lies in a retired directory."""
        return relative in self.paths or any(str(parent) in self.paths for parent in PurePosixPath(relative).parents)


def read(data_dir: Path) -> Retired:
    """Every retired path not purged yet (read it before listing partitions)."""
    paths: set[str] = set()
    root = retired_dir(data_dir)
    for record in root.glob("*.json") if root.exists() else []:
        try:
            paths.update(json.loads(record.read_bytes())["paths"])
        except FileNotFoundError:  # purged meanwhile: its paths were deleted before it
            continue
    return Retired(frozenset(paths))


def retire(data_dir: Path, paths: Sequence[Path]) -> None:
    """Hide `paths` (under `data_dir`) from readers from now on; they are deleted by a purge after the grace."""
    if not paths:
        return
    root = retired_dir(data_dir)
    lake.ensure_dir(root)
    body = {"paths": [p.relative_to(data_dir).as_posix() for p in paths], "at": time.time()}
    lake.write_durably(root / f"{int(time.time() * 1000)}-{uuid.uuid4().hex}.json", json.dumps(body).encode())


def purge(data_dir: Path, grace_s: float, now: float | None = None) -> int:
    """Delete what was retired at least `grace_s` ago (files, and partition dirs whole); returns how many paths."""
    root = retired_dir(data_dir)
    if not root.exists():
        return 0
    now = time.time() if now is None else now
    deleted = 0
    for leftover in root.glob("*.tmp"):  # a write interrupted by a crash (one in progress is younger)
        if now - leftover.stat().st_mtime >= grace_s:
            leftover.unlink(missing_ok=True)
    for record in sorted(root.glob("*.json")):
        body = json.loads(record.read_bytes())
        if now - body["at"] < grace_s:
            continue
        for relative in body["paths"]:
            path = data_dir / relative
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            if path.parent.exists():
                lake.fsync_dir(path.parent)
            deleted += 1
        record.unlink()  # only once its paths are gone: a crash before re-runs this purge
        lake.fsync_dir(root)
    return deleted
