"""Callers with JWTs, against a real sidecar whose keys come from a real loopback JWKS URL.

Verified claims decide policy; every bad token is UNAUTHENTICATED `unauthenticated` with the
reason; and no token, signature or claim value lands in the sidecar's log, its store or its
audit trail.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
import yaml

from examples.travel.service import TravelService
from gateway import pb
from gateway.client import GatewayClient, error_code, tool_call
from gateway.testing import SidecarProcess
from tests.support.idp import (
    AUDIENCE,
    IdentityProvider,
    hs256_signed_with_public_key,
    unsigned_token,
)
from tests.support.paths import POLICIES, sidecar_env
from tests.support.scenarios import TRAIN, WEATHER

# Claim values that must never be written anywhere: the policy reads them, nothing keeps them
EMAIL = "alice.private@example.test"
SECRET_CLAIM = "do-not-store-7f3a9c"
STATIC_TOKEN = "static-secret-token-9b1d"

# a rule that reads claims: weather needs a verified email
CLAIMS_POLICY = """package callgate

deny contains "get_weather needs a verified email" if {
\tinput.call.tool == "get_weather"
\tnot input.identity.claims.email_verified == true
}
"""


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    provider = IdentityProvider()
    yield provider


@pytest.fixture(scope="module")
def jwt_sidecar(
    tmp_path_factory: pytest.TempPathFactory,
    idp: IdentityProvider,
    travel: TravelService,
    tools_dir: Path,
    effects_db: Path,
) -> Iterator[SidecarProcess]:
    base = tmp_path_factory.mktemp("jwt")
    policies = base / "policies"
    shutil.copytree(POLICIES, policies)
    (policies / "claims.rego").write_text(CLAIMS_POLICY)
    with idp.serve() as url:
        auth = base / "auth.yaml"
        auth.write_text(
            yaml.safe_dump(
                {
                    "tokens": {
                        STATIC_TOKEN: {"subject": "svc", "tenant": "acme", "roles": ["traveler"]}
                    },
                    "jwt": {
                        "issuer": idp.issuer,
                        "audiences": [AUDIENCE],
                        "jwks_url": url,
                        "algorithms": ["RS256", "ES256"],
                        "leeway_s": 5,
                        "claims": {"subject": "sub", "tenant": "tenant_id", "roles": "roles"},
                    },
                }
            )
        )
        with SidecarProcess(
            tools=tools_dir,
            policies=policies,
            db=base / "cg.db",
            auth=auth,
            env=sidecar_env(travel, effects_db),
        ) as proc:
            yield proc


@pytest.fixture
def client(jwt_sidecar: SidecarProcess) -> Iterator[Callable[[str], GatewayClient]]:
    made: list[GatewayClient] = []

    def make(token: str) -> GatewayClient:
        made.append(jwt_sidecar.client(token, timeout_s=30))
        return made[-1]

    yield make
    for c in made:
        c.close()


def good_token(idp: IdentityProvider, **overrides: object) -> str:
    claims: dict[str, object] = {
        "email": EMAIL,
        "email_verified": True,
        "secret_claim": SECRET_CLAIM,
        **overrides,
    }
    return idp.token(**claims)  # type: ignore[arg-type]


def test_a_jwt_caller_runs_tools_and_its_claims_decide_policy(
    client: Callable[[str], GatewayClient], idp: IdentityProvider, run_id: str
) -> None:
    verified = client(good_token(idp))
    verified.start_run(run_id=run_id)
    out = verified.submit_calls(
        run_id,
        "t1",
        tool_call("c1", "get_train_status", TRAIN),
        tool_call("c2", "get_weather", WEATHER),
    )
    assert [pb.CallStatus.Name(r.status) for r in out.results] == ["CALL_STATUS_SUCCEEDED"] * 2
    assert verified.get_run(run_id).subject == "alice"

    unverified = client(good_token(idp, kid="ec-1", email_verified=False, sub="bob"))
    unverified.start_run(run_id=run_id + "-b")
    out = unverified.submit_calls(run_id + "-b", "t1", tool_call("c1", "get_weather", WEATHER))
    assert out.results[0].status == pb.CALL_STATUS_REJECTED
    assert out.results[0].error.code == "policy_denied"
    assert "verified email" in out.results[0].error.message


def test_static_tokens_work_beside_jwts(
    client: Callable[[str], GatewayClient], run_id: str
) -> None:
    run = client(STATIC_TOKEN).start_run(run_id=run_id)
    assert run.subject == "svc"


BAD_TOKENS: list[tuple[str, Callable[[IdentityProvider], str], str]] = [
    ("expired", lambda i: good_token(i, exp=int(time.time()) - 60), "has expired"),
    ("not yet valid", lambda i: good_token(i, nbf=int(time.time()) + 600), "not valid yet"),
    ("wrong issuer", lambda i: good_token(i, iss="https://other.test/"), "issuer (iss)"),
    ("wrong audience", lambda i: good_token(i, aud="other"), "audience (aud)"),
    ("alg none", lambda i: unsigned_token(i.claims(email=EMAIL)), "unsigned (alg none)"),
    ("bad signature", lambda i: good_token(i)[:-6] + "AAAAAA", "signature does not verify"),
    (
        "unknown key",
        lambda i: good_token(i, kid="rotated-away", key=i.keys["rsa-1"]),
        "not in the key set",
    ),
    (
        "HS256 with the RSA public key",
        lambda i: hs256_signed_with_public_key(i),
        "signed with HS256",
    ),
    ("missing tenant claim", lambda i: good_token(i, tenant_id=None), "no tenant_id claim"),
    (
        "a repeated subject claim",
        lambda i: i.signed_text(
            i.claims_text(email=EMAIL, email_verified=True)[:-1] + ', "sub": "root"}'
        ),
        "the token's claims are not strict JSON: a claim name appears twice",
    ),
    (
        "NaN in a claim",
        lambda i: i.signed_text(
            i.claims_text(email=EMAIL, email_verified=True)[:-1] + ', "score": NaN}'
        ),
        "the token's claims are not strict JSON: a number is NaN",
    ),
]


@pytest.mark.parametrize("name,make,reason", BAD_TOKENS, ids=[b[0] for b in BAD_TOKENS])
def test_bad_tokens_are_unauthenticated_with_a_reason(
    client: Callable[[str], GatewayClient],
    idp: IdentityProvider,
    run_id: str,
    name: str,
    make: Callable[[IdentityProvider], str],
    reason: str,
) -> None:
    with pytest.raises(grpc.RpcError) as err:
        client(make(idp)).start_run(run_id=run_id)
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error_code(err.value) == "unauthenticated"
    assert reason in (err.value.details() or "")


def test_no_token_signature_or_claim_value_is_logged_or_stored(
    jwt_sidecar: SidecarProcess,
    client: Callable[[str], GatewayClient],
    idp: IdentityProvider,
    run_id: str,
) -> None:
    tokens = [good_token(idp), good_token(idp, kid="ec-1"), STATIC_TOKEN]
    for token in tokens:  # accepted: runs, tool calls, a policy denial, audit records
        c = client(token)
        rid = f"{run_id}-{len(token)}"
        c.start_run(run_id=rid)
        c.submit_calls(rid, "t1", tool_call("c1", "get_weather", WEATHER))
        c.authorize(tool_call("a1", "get_train_status", TRAIN), run_id=rid)
    refused = [make(idp) for _, make, _ in BAD_TOKENS]
    for token in refused:
        with pytest.raises(grpc.RpcError):
            client(token).start_run(run_id=run_id + "-x")
    secrets = {EMAIL, SECRET_CLAIM, STATIC_TOKEN}
    for token in tokens + refused:  # payloads and signatures, by 10-character piece: a piece
        for part in token.split(".")[1:]:  # of 19 characters or more cannot hide
            secrets.update(part[i : i + 10] for i in range(0, len(part) - 9, 10))
    places = {
        "the sidecar's log": jwt_sidecar.output,
        "the audit trail": _audit_rows(jwt_sidecar.db),
    }
    for path in jwt_sidecar.db.parent.glob(jwt_sidecar.db.name + "*"):  # db, -wal, -shm
        places[path.name] = path.read_bytes().decode("latin-1")
    assert "caller refused: the token has expired" in jwt_sidecar.output  # refusals are logged
    for where, text in places.items():
        leaked = [s[:12] + "..." for s in secrets if s in text]
        assert not leaked, f"{where} holds {leaked}"


def _audit_rows(db: Path) -> str:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return "\n".join(repr(row) for row in conn.execute("SELECT * FROM audit"))
    finally:
        conn.close()
