"""Configuration (flags, env vars, --help) and the token store."""

from __future__ import annotations

import subprocess
import sys

import pytest

from collector.auth import TokenFileError, TokenStore, hash_token
from collector.config import _OPTIONS, ConfigError, load


def run_collector(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "collector", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_help_documents_every_option_and_its_env_var():
    out = run_collector("--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    for option in _OPTIONS:
        assert f"--{option.flag}" in text
        assert option.env in text.replace("- ", "-").replace(" ", "") or option.env in text
    for topic in ("/v1/traces", "/healthz", "/stats", "Bearer", "Retry-After", "SIGTERM", "TEST_WRITE_DELAY_MS"):
        assert topic in text


def test_non_loopback_bind_requires_tokens(tmp_path):
    out = run_collector("--data-dir", str(tmp_path), "--http-host", "0.0.0.0")
    assert out.returncode == 2
    assert "requires a token file" in out.stderr and "Traceback" not in out.stderr


def test_env_vars_apply_and_flags_win(tmp_path):
    env = {"VERDICT_COLLECTOR_BATCH_DELAY_MS": "75", "VERDICT_COLLECTOR_REDACT": "all",
           "VERDICT_COLLECTOR_ALLOW_CLAIMED_TENANT": "true"}
    config = load(["--data-dir", str(tmp_path)], environ=env)
    assert (config.batch_delay_ms, config.redact, config.allow_claimed_tenant) == (75, "all", True)
    assert load(["--batch-delay-ms", "5"], environ=env).batch_delay_ms == 5
    with pytest.raises(ConfigError, match="VERDICT_COLLECTOR_HTTP_PORT='x'"):
        load([], environ={"VERDICT_COLLECTOR_HTTP_PORT": "x"})
    with pytest.raises(ConfigError, match="--redact must be one of"):
        load(["--redact", "some"], environ={})
    assert load([], environ={}).trust_sdk_redaction == "authenticated"
    assert load([], environ={"VERDICT_COLLECTOR_TRUST_SDK_REDACTION": "never"}).trust_sdk_redaction == "never"
    with pytest.raises(ConfigError, match="--trust-sdk-redaction must be one of authenticated, never"):
        load(["--trust-sdk-redaction", "always"], environ={})


def test_second_collector_on_same_dir_is_refused(collector_factory, tmp_path):
    first = collector_factory()
    out = run_collector("--data-dir", str(first.data_dir), "--http-port", "0", "--grpc-port", "-1")
    assert out.returncode == 2 and "another collector (pid " in out.stderr and "is already running" in out.stderr


def test_token_store(tmp_path):
    path = tmp_path / "tokens.yaml"
    path.write_text(f'"{hash_token("hashed-token-0123456789")}": acme\n"plain-token-0123456789": globex\n')
    store = TokenStore.load(path)
    assert store.tenant_for("hashed-token-0123456789") == "acme"
    assert store.tenant_for("plain-token-0123456789") == "globex"
    assert store.tenant_for("plain-token-012345678") is None and store.tenant_for(None) is None
    assert all(len(digest) == 32 for digest, _ in store.digests)  # only digests in memory
    assert b"plain-token" not in repr(store).encode()


@pytest.mark.parametrize("content, message", [
    ("- a\n- b\n", "non-empty mapping"),
    ('"short": acme\n', "at least 16 characters"),
    ('"sha256:abcd": acme\n', "64 hex digits"),
    ('"long-enough-token-000000": __verdict_local__\n', "reserved"),
    ('"long-enough-token-000000": "Bad Tenant"\n', "invalid tenant id"),
    ("{{{", "not valid YAML"),
    (f'"long-enough-token-000000": acme\n"{hash_token("long-enough-token-000000")}": globex\n', "two tenants"),
])
def test_bad_token_files(tmp_path, content, message):
    path = tmp_path / "tokens.yaml"
    path.write_text(content)
    with pytest.raises(TokenFileError, match=message):
        TokenStore.load(path)
