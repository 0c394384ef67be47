"""Signing in locally as in AWS: the local issuer's JWKS and discovery, `POST /_local/tokens`, and the gateway
refusing what API Gateway's JWT authorizer refuses, in its words."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _subject_of(token: str) -> str:
    return jwt.decode(token, options={"verify_signature": False})["sub"]


def _mint(stack: LocalStackClient, body: dict[str, Any]) -> dict[str, Any]:
    reply = stack.request("POST", "/_local/tokens", json_body=body)
    assert reply.status == 201, reply.body
    return reply.json()["data"]


def _assert_unauthorized(stack: LocalStackClient, org: str, token: str) -> None:
    reply = stack.request("GET", f"/organizations/{org}/leads", token=token)
    assert reply.status == 401
    assert reply.json() == {"message": "Unauthorized"}
    assert reply.headers.get("www-authenticate", "").startswith('Bearer scope="" error="invalid_token"')


def test_discovery_names_the_stacks_own_issuer_and_its_jwks(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("GET", "/_local/.well-known/openid-configuration")

    assert reply.status == 200
    document = reply.json()
    assert document["issuer"] == f"{local_stack.base_url}/_local"
    assert document["jwks_uri"] == f"{local_stack.base_url}/_local/.well-known/jwks.json"
    assert document["id_token_signing_alg_values_supported"] == ["RS256"]
    assert {"response_types_supported", "subject_types_supported"} <= set(document)


def test_the_jwks_publishes_one_rsa_signing_key_and_no_private_part(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("GET", "/_local/.well-known/jwks.json")

    assert reply.status == 200
    (key,) = reply.json()["keys"]
    assert set(key) == {"kty", "kid", "use", "alg", "n", "e"}
    assert (key["kty"], key["use"], key["alg"]) == ("RSA", "sig", "RS256")


def test_a_minted_token_verifies_against_the_published_jwks(local_stack: LocalStackClient) -> None:
    issuer = local_stack.request("GET", "/_local/.well-known/openid-configuration").json()["issuer"]
    token = _mint(local_stack, {"sub": "someone", "email": "someone@example.com"})["token"]
    client = jwt.PyJWKClient(f"{issuer}/.well-known/jwks.json")

    claims = jwt.decode(
        token, client.get_signing_key_from_jwt(token).key, algorithms=["RS256"], audience="leadcrm-dashboard"
    )

    assert (claims["iss"], claims["sub"], claims["email"]) == (issuer, "someone", "someone@example.com")


def test_a_token_minted_for_a_members_subject_lists_the_organizations_leads(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, subject = demo["organizationId"], _subject_of(demo["users"]["coach"]["token"])

    minted = _mint(local_stack, {"sub": subject})
    reply = local_stack.request("GET", f"/organizations/{org}/leads", token=minted["token"])

    assert reply.status == 200
    assert reply.json()["data"] == []


def test_a_token_for_a_subject_nobody_has_passes_the_authorizer_and_the_api_refuses_it(
    local_stack: LocalStackClient,
) -> None:
    org = local_stack.new_organization()["organizationId"]
    token = _mint(local_stack, {"sub": "no-such-user"})["token"]

    reply = local_stack.request("GET", f"/organizations/{org}/leads", token=token)

    assert reply.status == 403


def test_expires_at_is_the_asked_lifetime_from_now(local_stack: LocalStackClient) -> None:
    before = time.time()
    minted = _mint(local_stack, {"sub": "someone", "ttlSeconds": 600})

    expires_at = datetime.fromisoformat(minted["expiresAt"])
    assert expires_at.tzinfo is not None
    assert before + 598 <= expires_at.timestamp() <= time.time() + 601
    assert jwt.decode(minted["token"], options={"verify_signature": False})["exp"] == int(expires_at.timestamp())


def test_a_token_is_refused_by_the_gateway_once_it_has_expired(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, subject = demo["organizationId"], _subject_of(demo["users"]["owner"]["token"])
    minted = _mint(local_stack, {"sub": subject, "ttlSeconds": 1})

    time.sleep(max(0.0, datetime.fromisoformat(minted["expiresAt"]).timestamp() - time.time()) + 0.1)

    _assert_unauthorized(local_stack, org, minted["token"])


def test_a_token_signed_by_another_key_under_the_published_kid_is_refused(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    issuer = local_stack.request("GET", "/_local/.well-known/openid-configuration").json()["issuer"]
    (published,) = local_stack.request("GET", "/_local/.well-known/jwks.json").json()["keys"]
    impostor = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {
        "iss": issuer,
        "aud": "leadcrm-dashboard",
        "sub": _subject_of(demo["users"]["owner"]["token"]),
        "iat": now,
        "exp": now + 600,
    }

    forged = jwt.encode(claims, impostor, algorithm="RS256", headers={"kid": published["kid"]})

    _assert_unauthorized(local_stack, demo["organizationId"], forged)


def test_an_hs256_token_is_refused(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    issuer = local_stack.request("GET", "/_local/.well-known/openid-configuration").json()["issuer"]
    (published,) = local_stack.request("GET", "/_local/.well-known/jwks.json").json()["keys"]
    now = int(time.time())
    claims = {"iss": issuer, "aud": "leadcrm-dashboard", "sub": "x", "iat": now, "exp": now + 600}

    forged = jwt.encode(claims, published["n"], algorithm="HS256", headers={"kid": published["kid"]})

    _assert_unauthorized(local_stack, demo["organizationId"], forged)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"sub": ""},
        {"sub": "   "},
        {"sub": 7},
        {"sub": "x" * 256},
        {"sub": "x", "ttlSeconds": 0},
        {"sub": "x", "ttlSeconds": 2_592_001},
        {"sub": "x", "ttlSeconds": "60"},
        {"sub": "x", "ttlSeconds": 1.5},
        {"sub": "x", "ttlSeconds": True},
        {"sub": "x", "email": 7},
        {"sub": "x", "role": "owner"},
    ],
)
def test_a_malformed_token_request_is_a_400_in_the_error_shape(
    local_stack: LocalStackClient, body: dict[str, Any]
) -> None:
    reply = local_stack.request("POST", "/_local/tokens", json_body=body)

    assert reply.status == 400
    assert reply.json()["error"]["code"] == "VALIDATION_FAILED"


def test_the_longest_subject_and_lifetime_are_accepted(local_stack: LocalStackClient) -> None:
    minted = _mint(local_stack, {"sub": "x" * 255, "ttlSeconds": 2_592_000})

    assert _subject_of(minted["token"]) == "x" * 255
