"""Bearer tokens -> tenants, from a YAML file.

    # tokens.yaml: token -> tenant. Prefer the hashed form: "sha256:" + hex(sha256(token)).
    "sha256:3f1c...e9": acme
    "a-plain-token-at-least-16-chars": globex

Only SHA-256 digests are kept in memory; a presented token is hashed and compared with every
known digest in constant time (no early exit), so timing reveals neither token nor match.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

from verdict.tenancy import InvalidTenantError, TenantId, validate_tenant_id

HASH_PREFIX = "sha256:"
MIN_TOKEN_CHARS = 16


class TokenFileError(ValueError):
    pass


def hash_token(token: str) -> str:
    return HASH_PREFIX + hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class TokenStore:
    digests: tuple[tuple[bytes, TenantId], ...]  # (sha256 digest, tenant)

    @classmethod
    def load(cls, path: Path) -> TokenStore:
        import yaml

        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise TokenFileError(f"cannot read token file {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise TokenFileError(f"token file {path} is not valid YAML: {exc}") from None
        if not isinstance(doc, dict) or not doc:
            raise TokenFileError(f"token file {path} must be a non-empty mapping of token -> tenant")
        entries: list[tuple[bytes, TenantId]] = []
        for key, tenant in doc.items():
            if not isinstance(key, str):
                raise TokenFileError(f"token file {path}: every token must be a string")
            try:
                valid = validate_tenant_id(tenant, allow_local=False)
            except InvalidTenantError as exc:
                raise TokenFileError(f"token file {path}: {exc}") from None
            digest = _digest(key, path)
            if any(known == digest and other != valid for known, other in entries):
                # A token listed plain and hashed for two tenants: which one wins must not be an accident.
                raise TokenFileError(f"token file {path}: one token is mapped to two tenants ({valid!r} and another)")
            entries.append((digest, valid))
        return cls(tuple(entries))

    def tenant_for(self, token: str | None) -> TenantId | None:
        """The token's tenant, or None. Every digest is compared, whatever matches."""
        if not token:
            return None
        presented = hashlib.sha256(token.encode()).digest()
        found = None
        for digest, tenant in self.digests:
            if hmac.compare_digest(presented, digest):
                found = tenant
        return found


def _digest(key: str, path: Path) -> bytes:
    if key.startswith(HASH_PREFIX):
        try:
            digest = bytes.fromhex(key[len(HASH_PREFIX) :])
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise TokenFileError(f"token file {path}: {key[:16]}… is not 'sha256:' + 64 hex digits")
        return digest
    if len(key) < MIN_TOKEN_CHARS:
        raise TokenFileError(f"token file {path}: tokens must have at least {MIN_TOKEN_CHARS} characters")
    return hashlib.sha256(key.encode()).digest()


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def export_token(header: str | None) -> str | None:
    """The token of an export: `Bearer <token>`, or HTTP Basic with the token as the password (the Langfuse
    SDK's exporter sends `Basic base64(public_key:secret_key)`: its secret key is the token, its public key
    is not looked at)."""
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return bearer_token(header)
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    _user, colon, password = decoded.partition(":")
    return password if colon and password else None
