"""`serve --rego-version v0 --builtin-errors undefined`: a sidecar serving a Rego v0 policy whose
builtin errors leave expressions undefined, as OPA serves it by default; a reload is read the
same way. Observed over gRPC only."""

from __future__ import annotations

from pathlib import Path

from gateway import pb
from gateway.client import tool_call
from tests.support.reloads import eventually, sidecar_over, weather_decision

V0_POLICY = """package callgate

default decision = {"allow": false, "reasons": ["no rule decided"]}

decision = {"allow": true, "reasons": []} {
  count(deny) == 0
}

decision = {"allow": false, "reasons": [r | r := deny[_]]} {
  count(deny) > 0
}

deny[msg] {
  to_number(input.call.args.city) > 3
  msg := "a city is not a number"
}
"""
NO_PARIS = (
    'package callgate\n\ndeny[msg] {\n  input.call.args.city == "Paris"\n  msg := "no Paris"\n}\n'
)


def write_v0(tmp_path: Path) -> Path:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "callgate.rego").write_text(V0_POLICY)
    return policies


def test_a_v0_policy_serves_with_opas_default_for_builtin_errors(
    tmp_path: Path, tools_dir: Path
) -> None:
    policies = write_v0(tmp_path)
    with sidecar_over(
        tmp_path, tools_dir, policies, "--rego-version", "v0", "--builtin-errors", "undefined"
    ) as (_, client):
        assert weather_decision(client).verdict == pb.VERDICT_ALLOW  # to_number("Berlin")
        (policies / "paris.rego").write_text(NO_PARIS)

        def paris() -> pb.Decision | None:
            out = client.authorize(
                tool_call("w2", "get_weather", {"city": "Paris", "date": "2026-12-01"})
            )
            decision = out.decisions[0].decision
            return decision if decision.verdict == pb.VERDICT_DENY else None

        assert list(eventually(paris, "the v0 edit to be served").reasons) == ["no Paris"]
        assert not client.get_status().HasField("last_rejected_reload")


def test_by_default_a_builtin_error_denies(tmp_path: Path, tools_dir: Path) -> None:
    policies = write_v0(tmp_path)
    with sidecar_over(tmp_path, tools_dir, policies, "--rego-version", "v0") as (_, client):
        decision = weather_decision(client)
        assert decision.verdict == pb.VERDICT_DENY
        assert "to_number failed at" in decision.reasons[0]
