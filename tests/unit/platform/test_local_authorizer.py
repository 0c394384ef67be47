"""The local gateway's JWT authorizer refuses exactly what API Gateway's HTTP API JWT authorizer refuses,
and the local issuer signs what that authorizer accepts (infra/local/auth.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from infra.local.auth import JwtAuthorizer, LocalAuthority, TokenRefused, jwk_thumbprint

ISSUER = "https://issuer.test/_local"
AUDIENCE = "leadcrm-dashboard"
NOW = 1_900_000_000
KID = "key-1"


def _jwk(key: rsa.RSAPrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    public = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {"kty": "RSA", "n": public["n"], "e": public["e"], "kid": kid, "use": "sig", **extra}


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def other_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def authorizer(signing_key: rsa.RSAPrivateKey) -> JwtAuthorizer:
    jwks = {"keys": [_jwk(signing_key, KID, alg="RS256")]}
    return JwtAuthorizer(ISSUER, [AUDIENCE, "second-client"], jwks, now=lambda: NOW)


def _claims(**changes: Any) -> dict[str, Any]:
    claims = {"iss": ISSUER, "sub": "user-1", "aud": AUDIENCE, "iat": NOW - 10, "nbf": NOW - 10, "exp": NOW + 60}
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def _token(key: Any, claims: dict[str, Any], *, algorithm: str = "RS256", kid: str | None = KID) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims, key, algorithm=algorithm, headers=headers)


def _refusal(authorizer: JwtAuthorizer, token: str) -> str:
    with pytest.raises(TokenRefused) as refused:
        authorizer.claims(f"Bearer {token}")
    assert authorizer.verify(f"Bearer {token}") is None
    return str(refused.value)


def test_a_token_signed_by_a_jwks_key_with_the_configured_issuer_and_audience_is_accepted(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    claims = authorizer.claims(f"Bearer {_token(signing_key, _claims(email='a@b.example'))}")

    assert claims["sub"] == "user-1"
    assert claims["email"] == "a@b.example"


def test_claims_reach_the_function_as_strings(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    claims = authorizer.claims(f"Bearer {_token(signing_key, _claims())}")

    assert claims["exp"] == str(NOW + 60)


def test_the_token_alone_without_the_bearer_prefix_is_read_as_the_identity_source(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    assert authorizer.claims(_token(signing_key, _claims()))["sub"] == "user-1"


@pytest.mark.parametrize("authorization", [None, "", "Bearer ", "Bearer not-a-jwt", "Basic dXNlcjpwYXNz"])
def test_a_missing_or_malformed_token_is_refused(authorizer: JwtAuthorizer, authorization: str | None) -> None:
    with pytest.raises(TokenRefused):
        authorizer.claims(authorization)


def test_a_token_signed_by_another_key_under_a_known_kid_is_refused(
    authorizer: JwtAuthorizer, other_key: rsa.RSAPrivateKey
) -> None:
    assert "signature" in _refusal(authorizer, _token(other_key, _claims()))


def test_a_token_whose_payload_was_altered_after_signing_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    header, _, signature = _token(signing_key, _claims()).split(".")
    forged = base64.urlsafe_b64encode(json.dumps(_claims(sub="admin")).encode()).rstrip(b"=").decode()

    assert "signature" in _refusal(authorizer, f"{header}.{forged}.{signature}")


def test_a_kid_that_is_not_in_the_jwks_is_refused(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    assert "kid" in _refusal(authorizer, _token(signing_key, _claims(), kid="rotated-away"))


def test_a_token_without_a_kid_is_refused(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    assert "kid" in _refusal(authorizer, _token(signing_key, _claims(), kid=None))


def test_alg_none_is_refused(authorizer: JwtAuthorizer) -> None:
    unsigned = jwt.encode(_claims(), None, algorithm="none", headers={"kid": KID})

    assert "algorithm" in _refusal(authorizer, unsigned)


def test_hs256_signed_with_the_public_key_as_secret_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    # The classic confusion attack: an HMAC keyed with the (public) JWKS modulus.
    secret = _jwk(signing_key, KID)["n"].encode()
    hmac_token = jwt.encode(_claims(), secret, algorithm="HS256", headers={"kid": KID})

    assert "algorithm" in _refusal(authorizer, hmac_token)


def test_an_rsa_algorithm_other_than_the_one_the_key_declares_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    assert "algorithm" in _refusal(authorizer, _token(signing_key, _claims(), algorithm="RS512"))


def test_another_rsa_algorithm_is_accepted_when_the_key_declares_none(signing_key: rsa.RSAPrivateKey) -> None:
    # API Gateway supports RSA-based algorithms, not RS256 alone.
    authorizer = JwtAuthorizer(ISSUER, [AUDIENCE], {"keys": [_jwk(signing_key, KID)]}, now=lambda: NOW)

    assert authorizer.claims(_token(signing_key, _claims(), algorithm="RS384"))["sub"] == "user-1"


@pytest.mark.parametrize(
    "issuer", [None, "https://issuer.test/_local/", "https://evil.test/_local", "HTTPS://ISSUER.TEST/_local"]
)
def test_an_issuer_that_is_not_exactly_the_configured_one_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, issuer: str | None
) -> None:
    assert "issuer" in _refusal(authorizer, _token(signing_key, _claims(iss=issuer)))


@pytest.mark.parametrize("audience", ["someone-else", ["someone-else"], [], 7, None])
def test_an_audience_that_is_not_configured_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, audience: Any
) -> None:
    claims = _claims()
    claims["aud"] = audience  # present, even when null: it is what API Gateway evaluates

    assert "audience" in _refusal(authorizer, _token(signing_key, claims))


def test_any_configured_audience_in_a_list_is_accepted(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    token = _token(signing_key, _claims(aud=["someone-else", "second-client"]))

    assert authorizer.claims(token)["sub"] == "user-1"


def test_client_id_is_accepted_when_there_is_no_aud(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    # A Cognito access token: client_id, no aud.
    token = _token(signing_key, _claims(aud=None, client_id=AUDIENCE, token_use="access"))

    assert authorizer.claims(token)["client_id"] == AUDIENCE


def test_a_wrong_client_id_without_aud_is_refused(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    assert "audience" in _refusal(authorizer, _token(signing_key, _claims(aud=None, client_id="someone-else")))


def test_client_id_is_ignored_when_aud_is_present(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    token = _token(signing_key, _claims(aud="someone-else", client_id=AUDIENCE))

    assert "audience" in _refusal(authorizer, token)


def test_a_token_with_neither_aud_nor_client_id_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey
) -> None:
    assert "audience" in _refusal(authorizer, _token(signing_key, _claims(aud=None)))


@pytest.mark.parametrize("expires", [NOW, NOW - 1, NOW - 86400])
def test_an_expired_token_is_refused_with_no_leeway(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, expires: int
) -> None:
    assert "expired" in _refusal(authorizer, _token(signing_key, _claims(exp=expires)))


@pytest.mark.parametrize("expires", [None, "2100-01-01", True])
def test_a_token_without_a_numeric_exp_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, expires: Any
) -> None:
    claims = _claims()
    if expires is None:
        del claims["exp"]
    else:
        claims["exp"] = expires

    assert "exp" in _refusal(authorizer, _token(signing_key, claims))


@pytest.mark.parametrize("claim", ["nbf", "iat"])
def test_a_token_not_valid_before_a_future_time_is_refused(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, claim: str
) -> None:
    assert claim in _refusal(authorizer, _token(signing_key, _claims(**{claim: NOW + 1})))


@pytest.mark.parametrize("claim", ["nbf", "iat"])
def test_nbf_and_iat_of_this_very_second_are_accepted(
    authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey, claim: str
) -> None:
    assert authorizer.claims(_token(signing_key, _claims(**{claim: NOW})))["sub"] == "user-1"


def test_nbf_and_iat_may_be_absent(authorizer: JwtAuthorizer, signing_key: rsa.RSAPrivateKey) -> None:
    assert authorizer.claims(_token(signing_key, _claims(nbf=None, iat=None)))["sub"] == "user-1"


# --- the local issuer -------------------------------------------------------------------------------------


def test_the_issuer_keeps_its_private_key_owner_only_and_reuses_it(tmp_path: Path) -> None:
    key_file = tmp_path / "data" / "jwt-signing-key.pem"

    first = LocalAuthority(key_file, ISSUER)
    second = LocalAuthority(key_file, ISSUER)

    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_file.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert first.kid == second.kid
    assert second.authorizer().claims(first.issue("user-1"))["sub"] == "user-1"


def test_the_kid_is_the_rfc_7638_thumbprint_of_the_published_key(tmp_path: Path) -> None:
    authority = LocalAuthority(tmp_path / "key.pem", ISSUER)
    (published,) = authority.jwks()["keys"]
    canonical = json.dumps({k: published[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()

    assert published["kid"] == authority.kid == expected
    assert set(published) == {"kty", "kid", "use", "alg", "n", "e"}
    assert (published["kty"], published["use"], published["alg"]) == ("RSA", "sig", "RS256")


def test_the_rfc_7638_thumbprint_of_the_rfc_example_key() -> None:
    # RFC 7638 section 3.1's example key and its thumbprint.
    n = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMs"
        "tn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1"
        "n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )
    numbers = rsa.RSAPublicNumbers(65537, int.from_bytes(base64.urlsafe_b64decode(n + "=="), "big"))

    assert jwk_thumbprint(numbers.public_key()) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_a_minted_token_carries_issuer_audience_subject_and_the_asked_lifetime(tmp_path: Path) -> None:
    authority = LocalAuthority(tmp_path / "key.pem", ISSUER)

    before = int(time.time())
    token, expires_at = authority.mint("user-1", "a@b.example", ttl_seconds=120)
    claims = jwt.decode(token, options={"verify_signature": False})

    assert jwt.get_unverified_header(token) == {"alg": "RS256", "kid": authority.kid, "typ": "JWT"}
    assert (claims["iss"], claims["aud"], claims["sub"], claims["email"]) == (ISSUER, AUDIENCE, "user-1", "a@b.example")
    assert claims["exp"] - claims["iat"] == 120 and claims["iat"] >= before
    assert int(expires_at.timestamp()) == claims["exp"]


def test_the_discovery_document_names_the_issuer_and_its_jwks(tmp_path: Path) -> None:
    document = LocalAuthority(tmp_path / "key.pem", ISSUER).openid_configuration()

    assert document["issuer"] == ISSUER
    assert document["jwks_uri"] == f"{ISSUER}/.well-known/jwks.json"
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
