"""What the operators' desks (`QuotaDesk`, `PinDesk`) share: the refusal of a grant that is
bound to no one tenant, and the reason an audited change must carry."""

from __future__ import annotations

from gateway.errors import PermissionDenied, RequestCode, RequestError
from gateway.policy.grants import DEFAULT_GRANTS

MAX_REASON_CHARS = 1000


def refused(rule: str, what: str) -> PermissionDenied:
    """`the policy's RULE refused WHAT (under the default policy: WHO may)`."""
    return PermissionDenied(
        f"the policy's {rule} refused {what} (under the default policy: {DEFAULT_GRANTS[rule]})"
    )


def check_reason(reason: str) -> None:
    """Raises INVALID_ARGUMENT unless the reason says something, within the limit."""
    if not reason.strip() or len(reason) > MAX_REASON_CHARS:
        raise RequestError(
            RequestCode.INVALID_ARGUMENT,
            f"reason is required (at most {MAX_REASON_CHARS} characters): the audit trail keeps it",
        )
