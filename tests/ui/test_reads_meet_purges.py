"""A UI snapshot read after compaction replaced its segments and a purge deleted them (a page served later than the
delete grace after the snapshot listed the lake): the page is served again from a new snapshot, each span once;
a snapshot that meets a purge at every attempt ends in a precise storage_error page (collector.lake_reads)."""

from __future__ import annotations

from starlette.testclient import TestClient

from collector import compaction, lake, retire
from collector.lake_reads import ATTEMPTS
from tests.collector.test_reads_meet_purges import TENANT, fresh_lake
from verdict_ui import snapshot
from verdict_ui.access import Access
from verdict_ui.app import Settings, create_app

PAGES = ("/traces?format=json", "/traffic?format=json", "/conversations?format=json", "/signals?format=json")


def _client(data_dir) -> TestClient:
    return TestClient(create_app(Settings(data_dir, Access.create(TENANT, None), ("testserver",), snapshot_ttl=3600.0)),
                      raise_server_exceptions=False)


def test_pages_of_a_snapshot_whose_segments_were_purged_are_served_from_a_new_one(tmp_path):
    fresh_lake(tmp_path)
    ui = _client(tmp_path)
    assert ui.get("/traces").status_code == 200  # the snapshot lists the fresh segments
    compaction.compact_all(tmp_path, 1)
    assert retire.purge(tmp_path, grace_s=0) > 0
    pages = {page: ui.get(page) for page in PAGES}
    expected = _client(tmp_path)
    for page, got in pages.items():
        assert got.status_code == 200, (page, got.text[-300:])
        assert got.json() == expected.get(page).json(), page
    assert pages["/traces?format=json"].json()  # the lake's traces, not an empty page


def test_a_page_meeting_a_purge_every_time_is_a_precise_storage_error(tmp_path, monkeypatch):
    fresh_lake(tmp_path)
    taken: list[snapshot.Snapshot] = []
    take = snapshot.take

    def take_then_purge(*args, **kwargs) -> snapshot.Snapshot:  # a page served after the grace, every time
        taken.append(take(*args, **kwargs))
        sorted(tmp_path.rglob(f"*{lake.SEGMENT_SUFFIX}"))[0].unlink()
        return taken[-1]

    monkeypatch.setattr(snapshot, "take", take_then_purge)
    page = _client(tmp_path).get("/traces")
    assert page.status_code == 500
    assert "segments it listed were deleted before it read them" in page.text and "--delete-grace-s" in page.text
    assert len(taken) == ATTEMPTS
