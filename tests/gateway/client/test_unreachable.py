"""The small synchronous client: a sidecar it cannot reach is callgate's own error, saying
where it looked and what to check, and still the gRPC error it was."""

from __future__ import annotations

import socket

import grpc
import pytest

from gateway.client import GatewayClient
from gateway.errors import CallgateError, SidecarUnreachable
from gateway.tls import ClientTLS


def free_port() -> int:
    with socket.socket() as s:  # free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_sidecar_is_a_callgate_error_with_a_hint() -> None:
    target = f"127.0.0.1:{free_port()}"
    with GatewayClient(target, "t", timeout_s=10) as client:
        with pytest.raises(SidecarUnreachable) as err:
            client.get_status()
    assert isinstance(err.value, CallgateError) and err.value.target == target
    assert err.value.message.startswith(f"cannot reach the sidecar at {target}: ")
    assert "--target" in err.value.message and "CALLGATE_TARGET" in err.value.message
    # one of callgate's request errors, the transport's error chained
    assert err.value.code.value == "unavailable" and err.value.grpc_status == "UNAVAILABLE"
    assert isinstance(err.value.__cause__, grpc.RpcError)


def test_an_unreachable_sidecar_with_tls_mentions_the_tls_options() -> None:
    target = f"127.0.0.1:{free_port()}"
    with GatewayClient(target, "t", timeout_s=10, tls=ClientTLS()) as client:
        with pytest.raises(SidecarUnreachable) as err:
            client.start_run(run_id="r")
    assert "TLS" in err.value.message
