"""Who may read which tenant, and whether a form post is the app's own.

- Tenant. Without a token file (loopback binds only, like the collector) every request reads the one
  tenant given on the command line. With a token file (`collector.auth.TokenStore`, the collector's
  format: token -> tenant) a request reads the tenant of its token, presented as `Authorization: Bearer`
  or through the sign-in id the login form's cookie holds (verdict_ui.sign_in); `--tenant` then admits
  only that tenant's tokens.
- CSRF. Each browser gets a random session cookie; forms carry HMAC(secret, session), and a POST whose
  field does not match its own cookie is refused (403). Cookies are SameSite=Strict and HttpOnly.
- Reviewer. The name a reviewer typed (validated like `verdict review label --reviewer`), in a cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from collector.auth import TokenStore, bearer_token
from verdict.tenancy import TenantId
from verdict_ui.sign_in import LoginThrottle, SignIns

SESSION_COOKIE = "verdict_ui_session"
TOKEN_COOKIE = "verdict_ui_token"
REVIEWER_COOKIE = "verdict_ui_reviewer"
REVIEWER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")  # verdict_daemon.review.queue's rule


class NotAuthenticated(Exception):
    """No valid token (401), or a token of a tenant this server does not serve (403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Access:
    tenant: TenantId | None  # the tenant served (None: any tenant a token names)
    tokens: TokenStore | None
    secret: bytes  # per process: CSRF tokens die with the server
    secure_cookies: bool  # cookies marked Secure (a non-loopback bind; TLS requests get it anyway)
    sign_ins: SignIns
    throttle: LoginThrottle

    @classmethod
    def create(cls, tenant: TenantId | None, tokens: TokenStore | None, *, secure_cookies: bool = False) -> Access:
        return cls(tenant, tokens, secrets.token_bytes(32), secure_cookies, SignIns(), LoginThrottle())

    def tenant_for(self, headers, cookies) -> TenantId:
        if self.tokens is None:
            assert self.tenant is not None
            return self.tenant
        token = bearer_token(headers.get("authorization")) or self.sign_ins.token_for(cookies.get(TOKEN_COOKIE))
        tenant = self.tokens.tenant_for(token)
        if tenant is None:
            raise NotAuthenticated(401, "sign in with a token of the token file")
        if self.tenant is not None and tenant != self.tenant:
            raise NotAuthenticated(403, "this server shows one tenant only; the token is another tenant's")
        return tenant

    def csrf_token(self, session: str) -> str:
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session: str | None, presented: str | None) -> bool:
        if not session or not presented:
            return False
        return hmac.compare_digest(self.csrf_token(session), presented)


def new_session() -> str:
    return secrets.token_urlsafe(24)


def reviewer_from(cookies) -> str | None:
    name = cookies.get(REVIEWER_COOKIE)
    return name if name and REVIEWER.match(name) else None
