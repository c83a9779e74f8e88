"""What a refusal of a policy grant says: the rule that refused, and who may act.

callgate asks the policy's boolean grants (`may_approve`, `may_resolve`, `may_read_audit`,
`may_list_runs`, `may_read_quotas`, `may_reset_quotas`, `may_pin_tools`) and cannot read who
a team's own bundle would allow; the default bundle's answer (policies/callgate.rego) is
known, and is named as such, so the refused caller learns whom to ask or which rule to
change. A tenant is named only to a caller of that tenant.
"""

from __future__ import annotations

from gateway.model import Identity

# who the default bundle lets act; {tenant} is the tenant concerned, or a description of it
DEFAULT_GRANTS = {
    "may_approve": "an owner of {tenant}, never the requester",
    "may_resolve": "an operator of {tenant} who does not own the run",
    "may_read_audit": "an auditor of {tenant}, and each subject its own records",
    "may_list_runs": "an operator or an auditor of {tenant}",
    "may_read_quotas": "an operator or an auditor, for keys starting with their tenant and /",
    "may_reset_quotas": "an operator, for keys starting with their tenant and /",
    "may_pin_tools": "an operator, an auditor or a tools_admin lists pins; a tools_admin "
    "approves one",
}
OTHERS = {
    "may_approve": "the requester's tenant",
    "may_resolve": "the run's tenant",
    "may_read_audit": "that tenant",
    "may_list_runs": "the tenant",
    "may_read_quotas": "the keys",
    "may_reset_quotas": "the key",
    "may_pin_tools": "the tools",
}


def refused(rule: str, who: Identity, tenant: str) -> str:
    """`the policy's RULE refused (under the default policy: WHO may)`."""
    where = f"tenant {tenant}" if tenant and tenant == who.tenant else OTHERS[rule]
    if rule == "may_read_audit" and tenant == "":
        where = "any tenant (callgate's own records)"
    return (
        f"the policy's {rule} refused (under the default policy: {DEFAULT_GRANTS[rule]})".replace(
            "{tenant}", where
        )
    )
