"""`verdict ui`: serve the web app for one data dir (docs/ui.md).

Exit codes: 0 stopped (Ctrl-C / SIGTERM); 2 could not start (bad option, missing data dir, invalid
tenant, unreadable token file, a non-loopback bind without a token file, port in use), with the
closed error envelope {"error": {"code", "message"}} on stderr. Prints the URL it serves once it is
listening (`--port 0` picks a free port).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path

from verdict_daemon.errors import DaemonError

EXIT_OK, EXIT_ERROR = 0, 2

_EPILOG = """\
pages: overview (the report's panels, live: signals, heatmap, pass rates, coverage, judge health,
spend), traces (filter and page through model calls with their judgments), trace detail, signal
drill-down, and the review queue with blind, keyboard-driven labelling and judge-human agreement.

A bind other than loopback needs --tokens (the collector's token file: token -> tenant); each request
then sees the tenant of its token. Without it the server reads --tenant only.

exit codes: 0 stopped; 3 invalid_tenant; 2 could not start (codes: invalid_config, storage_error,
internal_error) as {"error": {"code", "message"}} on stderr.

example:
  verdict ui --data-dir ./verdict-data --tenant acme
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from verdict.tenancy import LOCAL_TENANT

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("VERDICT_DATA_DIR", "./verdict-data")),
                        metavar="DIR", help="the data directory of the collector and the daemon [env VERDICT_DATA_DIR]")
    parser.add_argument("--tenant", default=os.environ.get("VERDICT_TENANT"), metavar="TENANT",
                        help=f"tenant to show [env VERDICT_TENANT; default {LOCAL_TENANT} without --tokens; "
                        "with --tokens, only this tenant's tokens are admitted]")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    parser.add_argument("--tokens", type=Path, metavar="FILE",
                        help="token file (token -> tenant, the collector's format); required off loopback")
    parser.add_argument("--lock-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="how long to wait for state.duckdb held by another process (default 10)")


def run(args: argparse.Namespace) -> int:
    """Errors leave as DaemonError: verdict.cli_runner.run_command prints the envelope and exits 2."""
    settings, sock = prepare(args)
    return serve(settings, sock)


def prepare(args: argparse.Namespace):
    """Validated settings and the bound socket, or DaemonError."""
    from collector.auth import TokenFileError, TokenStore
    from collector.config import is_loopback
    from verdict.cli_runner import checked_tenant
    from verdict.tenancy import LOCAL_TENANT
    from verdict_daemon.report.gather import checked_data_dir
    from verdict_ui.access import Access
    from verdict_ui.app import LOOPBACK_HOSTS, Settings

    root = checked_data_dir(args.data_dir)
    if not 0 <= args.port <= 65535:
        raise DaemonError("invalid_config", f"--port must lie in [0, 65535], got {args.port}")
    if not 0 <= args.lock_timeout <= 600:
        raise DaemonError("invalid_config", f"--lock-timeout must lie in [0, 600] seconds, got {args.lock_timeout}")
    loopback = is_loopback(args.host)
    if not loopback and args.tokens is None:
        raise DaemonError("invalid_config", f"binding to non-loopback address {args.host} requires a token file "
                                            "(--tokens tokens.yaml), as for the collector")
    tokens = None
    if args.tokens is not None:
        try:
            tokens = TokenStore.load(args.tokens)
        except TokenFileError as exc:
            raise DaemonError("invalid_config", str(exc)) from None
    tenant = checked_tenant(args.tenant) if args.tenant else (None if tokens else LOCAL_TENANT)
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(128)
    except OSError as exc:
        raise DaemonError("invalid_config", f"cannot listen on {args.host}:{args.port} ({exc.strerror})") from None
    hosts = LOOPBACK_HOSTS if loopback else ("*",)  # off loopback every request needs a token anyway
    return Settings(root, Access.create(tenant, tokens, secure_cookies=not loopback), hosts, lock_timeout=args.lock_timeout), sock


def serve(settings, sock: socket.socket) -> int:
    import uvicorn

    from verdict_ui.app import create_app

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    who = settings.access.tenant or "the tenant of each request's token"
    print(f"verdict ui: serving {who} from {settings.data_dir} at http://{shown}:{port}/ (Ctrl-C stops)", flush=True)
    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            """Ctrl-C / SIGTERM stop the server gracefully and the command exits 0 (uvicorn would re-raise
            the signal after shutting down, ending the process by the signal)."""
            previous = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)

    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False, lifespan="off")
    Server(config).run(sockets=[sock])
    sys.stdout.flush()
    return EXIT_OK
