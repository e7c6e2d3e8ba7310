"""One export, whatever the transport: authenticate -> admit -> decode -> queue -> wait until durable.

HTTP and gRPC both call `IngestService.export` (from worker threads); each maps the outcome
and the two exception types (RequestError: the request is wrong; Overloaded: try again later)
to its own status codes.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from collector.auth import TokenStore, bearer_token
from collector.decoding import Decoded, DecoderPool
from collector.flatten import Partition
from collector.otlp import RequestError
from collector.stats import Stats
from collector.writer import Overloaded, SegmentWriter
from verdict.tenancy import LOCAL_TENANT

log = logging.getLogger("verdict.collector")


@dataclass(frozen=True)
class ExportOutcome:
    kind: str
    rejected: int
    message: str


def _to_arrow(partitions: list[Partition]) -> list:
    return [(p.tenant, p.date, p.to_arrow()) for p in partitions]


class IngestService:
    def __init__(self, tokens: TokenStore | None, pool: DecoderPool, writer: SegmentWriter, stats: Stats):
        self._tokens = tokens
        self._pool = pool
        # One thread builds all Arrow batches: Arrow's allocator keeps a heap per allocating
        # thread, and converting in every request thread multiplied the server's RSS.
        self._arrow = ThreadPoolExecutor(max_workers=1, thread_name_prefix="to-arrow")
        self._writer = writer
        self.stats = stats

    def authenticate(self, authorization: str | None) -> tuple[str, bool]:
        """(tenant, authenticated). Without a token file everything is the local tenant."""
        if self._tokens is None:
            return LOCAL_TENANT, False
        tenant = self._tokens.tenant_for(bearer_token(authorization))
        if tenant is None:
            self.stats.add(requests_unauthenticated=1)
            raise RequestError(401, "missing or invalid bearer token")
        return tenant, True

    def admit(self, size: int) -> None:
        self.stats.add(requests=1)
        self._writer.check_admission(size)

    def export(
        self, payload: bytes, content_type: str | None, content_encoding: str | None, tenant: str, authenticated: bool
    ) -> ExportOutcome:
        """Call after authenticate() and admit(); returns once the accepted spans are durable."""
        decoded = self._decode(payload, content_type, content_encoding, tenant, authenticated)
        self.stats.add(spans_received=decoded.accepted, spans_rejected=decoded.rejected)
        # Arrow right away: columnar batches hold queued spans in far less memory than tuples.
        batches = self._arrow.submit(_to_arrow, decoded.partitions).result()
        self._writer.submit(batches, decoded.accepted).result()
        return ExportOutcome(decoded.kind, decoded.rejected, decoded.message)

    def _decode(self, payload, content_type, content_encoding, tenant, authenticated) -> Decoded:
        try:
            return self._pool.submit(payload, content_type, content_encoding, tenant, authenticated).result()
        except RequestError:
            self.stats.add(requests_invalid=1)
            raise
        except BrokenProcessPool:
            raise Overloaded(503, "decoder restarting; retry", 1) from None
        except RecursionError:
            self.stats.add(requests_invalid=1)
            raise RequestError(400, "request nests values too deeply") from None
        except Exception as exc:  # a decoder bug must not become a 500 loop for the client
            log.exception("unexpected decode failure")
            self.stats.add(requests_invalid=1)
            raise RequestError(400, f"request could not be decoded ({type(exc).__name__})") from None

    def queue_depth(self) -> tuple[int, int]:
        return self._writer.queue_depth()
