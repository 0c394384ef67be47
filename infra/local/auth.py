"""Local stand-in for the API Gateway JWT authorizer: tokens signed with a key kept under .local/.

Checked the way the authorizer checks them (signature, issuer, audience, expiry); the claims of a valid
token go into `requestContext.authorizer.jwt.claims`, exactly where Lambda finds them in AWS.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import jwt

ISSUER = "https://leadcrm.local/auth"
AUDIENCE = "leadcrm-dashboard"
TOKEN_DAYS = 30


class LocalAuthority:
    def __init__(self, key_file: Path) -> None:
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            key_file.write_text(secrets.token_hex(32))
            key_file.chmod(0o600)
        self._key = key_file.read_text().strip()

    def issue(self, subject: str, email: str | None = None) -> str:
        now = int(time.time())
        claims = {"sub": subject, "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + TOKEN_DAYS * 86400}
        if email:
            claims["email"] = email
        return jwt.encode(claims, self._key, algorithm="HS256")

    def verify(self, authorization: str | None) -> dict[str, Any] | None:
        """The claims of a valid `Bearer` token, else None (API Gateway then answers 401 itself)."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        try:
            claims = jwt.decode(
                authorization[7:].strip(),
                self._key,
                algorithms=["HS256"],
                audience=AUDIENCE,
                issuer=ISSUER,
                options={"require": ["sub", "exp", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            return None
        # HTTP API hands claims to Lambda as strings.
        return {k: str(v) for k, v in claims.items()}
