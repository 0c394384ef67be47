"""Local sign-in as AWS does it: an RS256 issuer with a JWKS, and the HTTP API JWT authorizer's checks.

`LocalAuthority` is the identity provider: it keeps an RSA key pair under the data dir, signs tokens with
it and publishes the public half (JWKS) and an OpenID discovery document, as Cognito or Clerk do.
`JwtAuthorizer` is API Gateway's side: given only (issuer, audiences, JWKS) it accepts or refuses a
token the way the HTTP API JWT authorizer does (AWS API Gateway developer guide, "Control access to HTTP
APIs with JWT authorizers"):

- the token is the `Authorization` header, with or without the `Bearer ` prefix;
- its header's `kid` names a key of the JWKS; the algorithm is RSA-based (and the key's own `alg`, when
  the key declares one); the signature verifies with that key;
- `iss` equals the configured issuer; `aud`, or `client_id` when there is no `aud`, is one of the
  configured audiences (with both present only `aud` counts);
- `exp` is after now; `nbf` and `iat`, when present, are not after now. AWS documents no clock leeway,
  so there is none here.

Claims of an accepted token go into `requestContext.authorizer.jwt.claims`, as strings, as in AWS.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "leadcrm-dashboard"  # the local authorizer's one audience (jwtAudience in AWS)
TOKEN_DAYS = 30
MAX_TTL_SECONDS = 30 * 86400
KEY_FILE = "jwt-signing-key.pem"
SIGNING_ALGORITHM = "RS256"
# "Currently, only RSA-based algorithms are supported" (the authorizer's own words): never none, never HMAC.
RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512"})


class TokenRefused(Exception):
    """Why the authorizer said no: API Gateway puts it in `www-authenticate`, never in the body."""


def _b64url_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8 or 1, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwk_thumbprint(public_key: rsa.RSAPublicKey) -> str:
    """RFC 7638: SHA-256 of the required members in lexicographic order, no whitespace, base64url."""
    numbers = public_key.public_numbers()
    canonical = json.dumps(
        {"e": _b64url_uint(numbers.e), "kty": "RSA", "n": _b64url_uint(numbers.n)}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def load_or_create_private_key(key_file: Path) -> rsa.RSAPrivateKey:
    """The PEM key of earlier runs, or a new 2048-bit one written owner-only (0600) from the first byte."""
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        try:  # O_EXCL: two stacks starting on one data dir never overwrite each other's key
            descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "wb") as out:
                out.write(pem)
    loaded = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    if not isinstance(loaded, rsa.RSAPrivateKey):
        raise ValueError(f"{key_file} does not hold an RSA private key; delete it to get a new one")
    return loaded


class LocalAuthority:
    """The local identity provider. `issuer` is the stack's own URL (`http://127.0.0.1:<port>/_local`), so
    `<issuer>/.well-known/openid-configuration` is where discovery lives, as OpenID Connect Discovery says."""

    def __init__(self, key_file: Path, issuer: str, audience: str = AUDIENCE) -> None:
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self._private_key = load_or_create_private_key(key_file)
        self.kid = jwk_thumbprint(self._private_key.public_key())

    def mint(
        self, subject: str, email: str | None = None, ttl_seconds: int = TOKEN_DAYS * 86400
    ) -> tuple[str, datetime]:
        """A signed token for `subject` and when it expires."""
        now = int(time.time())
        expires = now + ttl_seconds
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": self.audience,
            "iat": now,
            "nbf": now,
            "exp": expires,
        }
        if email:
            claims["email"] = email
        token = jwt.encode(claims, self._private_key, algorithm=SIGNING_ALGORITHM, headers={"kid": self.kid})
        return token, datetime.fromtimestamp(expires, UTC)

    def issue(self, subject: str, email: str | None = None, ttl_seconds: int = TOKEN_DAYS * 86400) -> str:
        return self.mint(subject, email, ttl_seconds)[0]

    def jwks(self) -> dict[str, Any]:
        numbers = self._private_key.public_key().public_numbers()
        key = {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": SIGNING_ALGORITHM}
        return {"keys": [{**key, "n": _b64url_uint(numbers.n), "e": _b64url_uint(numbers.e)}]}

    def openid_configuration(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [SIGNING_ALGORITHM],
            "claims_supported": ["iss", "sub", "aud", "exp", "iat", "nbf", "email"],
        }

    def authorizer(self) -> JwtAuthorizer:
        """The gateway's authorizer, configured as infra configures API Gateway's: issuer, audiences, JWKS."""
        return JwtAuthorizer(self.issuer, [self.audience], self.jwks())


class JwtAuthorizer:
    def __init__(
        self,
        issuer: str,
        audiences: Iterable[str],
        jwks: dict[str, Any],
        now: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.audiences = frozenset(audiences)
        self._now = now
        # kid -> (key, the algorithm the key declares, if it does)
        self._keys: dict[str, tuple[jwt.PyJWK, str | None]] = {}
        for entry in jwks.get("keys", []):
            if entry.get("kty") != "RSA" or not isinstance(entry.get("kid"), str) or entry.get("use", "sig") != "sig":
                continue
            try:
                self._keys[entry["kid"]] = (jwt.PyJWK(entry), entry.get("alg"))
            except jwt.PyJWTError:
                continue  # a key the gateway cannot read signs nothing it accepts

    def verify(self, authorization: str | None) -> dict[str, str] | None:
        """The claims of an accepted token, else None (the gateway then answers 401 itself)."""
        try:
            return self.claims(authorization)
        except TokenRefused:
            return None

    def claims(self, authorization: str | None) -> dict[str, str]:
        """The claims of an accepted token; raises TokenRefused saying why not."""
        token = _token_of(authorization)
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise TokenRefused("the token is not a valid JWT") from error
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in RSA_ALGORITHMS:
            raise TokenRefused("the token's algorithm is not supported")
        found = self._keys.get(kid) if isinstance(kid, str) else None
        if found is None:
            raise TokenRefused("the token's kid matches no key of the issuer")
        key, declared = found
        if declared is not None and declared != algorithm:  # a key that names its algorithm verifies that one only
            raise TokenRefused("the token's algorithm does not match its key")
        try:
            payload = jwt.PyJWS().decode(token, key.key, algorithms=[algorithm])
            claims = json.loads(payload)
        except (jwt.PyJWTError, ValueError) as error:
            raise TokenRefused("the token's signature is not valid") from error
        if not isinstance(claims, dict):
            raise TokenRefused("the token's payload is not a JSON object")
        self._check_claims(claims)
        # HTTP API hands claims to Lambda as strings.
        return {name: str(value) for name, value in claims.items()}

    def _check_claims(self, claims: dict[str, Any]) -> None:
        if claims.get("iss") != self.issuer:
            raise TokenRefused("the token does not have a valid issuer")
        # API Gateway reads client_id only when there is no aud (Cognito access tokens carry client_id).
        audience = claims["aud"] if "aud" in claims else claims.get("client_id")
        offered = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(a, str) and a in self.audiences for a in offered):
            raise TokenRefused("the token does not have a valid audience")
        now = self._now()
        expires = claims.get("exp")
        if not _is_time(expires):
            raise TokenRefused("the token has no valid exp")
        if expires <= now:
            raise TokenRefused("the token has expired")
        for name in ("nbf", "iat"):
            if name in claims and not (_is_time(claims[name]) and claims[name] <= now):
                raise TokenRefused(f"the token's {name} is not before the current time")


def _is_time(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _token_of(authorization: str | None) -> str:
    # identitySource "$request.header.Authorization": the token alone, or prefixed with "Bearer ".
    value = (authorization or "").strip()
    if value[:7].lower() == "bearer ":
        value = value[7:].strip()
    if not value:
        raise TokenRefused("no token")
    return value
