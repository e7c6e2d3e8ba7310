"""`?refresh=SECONDS` (10..3600) on the overview, /signals and /traffic: a meta refresh, opt-in, bounded."""

from __future__ import annotations

import pytest

REFRESHABLE = ("/", "/signals", "/traffic")


@pytest.mark.parametrize("path", REFRESHABLE)
def test_refresh_adds_a_meta_refresh_only_when_asked(ui, path):
    acme = ui["acme"]
    asked = acme.get(f"{path}?refresh=60")
    assert asked.status_code == 200 and '<meta http-equiv="refresh" content="60">' in asked.text
    assert 'http-equiv="refresh"' not in acme.get(path).text


@pytest.mark.parametrize("value", ["9", "3601", "soon", "-5"])
def test_a_refresh_out_of_bounds_is_a_400_naming_it(ui, value):
    response = ui["acme"].get(f"/signals?refresh={value}")
    assert response.status_code == 400 and "refresh" in response.text


def test_other_pages_do_not_reload_themselves(ui, ids):
    acme = ui["acme"]
    for path in ("/traces", f"/review/{ids['acme'].items[0]}"):
        assert 'http-equiv="refresh"' not in acme.get(f"{path}?refresh=60").text
