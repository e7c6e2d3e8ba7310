"""Which lakes the daemon and the commands read (`verdict pipeline`, `report`, `cluster`, `sql`, `review
correlate`): the data dir, plus the config's [lake] section and the `--lake-dir` / `--lake-url` options
(VERDICT_LAKE_URL when no --lake-url is given)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from collector.lake_union import LakeUnion
from collector.objectstore import ObjectStoreError
from verdict import environment
from verdict_daemon.errors import DaemonError

if TYPE_CHECKING:  # the config (pydantic, apscheduler) is imported when lakes are opened, not for every command
    from verdict_daemon.config import Lake


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--lake-dir and --lake-url, under their own heading of `--help`."""
    group = parser.add_argument_group("more lakes (read as one with the data dir)")
    group.add_argument("--lake-dir", type=Path, action="append", default=[], metavar="DIR",
                        help="also read the span lake in DIR (another collector's data dir); repeat for several")
    group.add_argument("--lake-url", action="append", default=[], metavar="URL",
                        help="also read the lake shipped to this object store (s3://BUCKET/PREFIX; credentials and "
                        "endpoint from AWS_* variables); repeat for several [env VERDICT_LAKE_URL: one]")


def with_arguments(lake: Lake, args: argparse.Namespace) -> Lake:
    """`lake` (the config's section) with the options' dirs and URLs added (VERDICT_LAKE_URL when no
    --lake-url is given)."""
    from verdict_daemon.config import lake_url

    urls = args.lake_url or [u for u in (environment.get("VERDICT_LAKE_URL"),) if u]
    try:
        checked = tuple(lake_url(u) for u in urls)
    except ValueError as exc:
        raise DaemonError("invalid_config", f"--lake-url: {exc}") from None
    return lake.model_copy(update={"dirs": (*lake.dirs, *(d.resolve() for d in args.lake_dir)),
                                   "urls": (*lake.urls, *checked)})


def from_arguments(data_dir: Path, args: argparse.Namespace) -> LakeUnion:
    """The union of `data_dir` and the options' lakes, for a command without a config file."""
    from verdict_daemon.config import Lake

    return open_lakes(data_dir, with_arguments(Lake(), args))


def open_lakes(data_dir: Path, lake: Lake) -> LakeUnion:
    """Every lake holding the tenants' spans: `data_dir` and `lake`'s dirs and URLs. Open one per read: a union
    keeps its listings, so a fresh one sees what landed since. A named dir that is missing is an error, not an
    empty lake: reading a share of the tenant would be drift on a share."""
    for directory in lake.dirs:
        if not directory.is_dir():
            raise DaemonError("invalid_config", f"lake dir {directory} is not an existing directory")
    try:
        return LakeUnion.open((data_dir, *lake.dirs), lake.urls)
    except ObjectStoreError as exc:  # the `s3` extra is missing
        raise DaemonError("invalid_config", f"lake: {exc}") from None
    except Exception as exc:  # obstore refuses the URL or the environment's settings
        raise DaemonError("invalid_config", f"lake: {type(exc).__name__}: {str(exc)[:300]}") from None
