"""callgate's wire contract for Python code: `from gateway import pb`.

Re-exports the generated `callgate.v1` messages and enums (`pb.ToolCall`,
`pb.CALL_STATUS_SUCCEEDED`, ...) and the gRPC service classes (`pb.ToolGatewayStub`,
`pb.ToolGatewayServicer`), so no user code imports the generated package `gateway._proto`,
whose layout is produced by `make proto` and may change.
"""

from gateway._proto.callgate.v1.gateway_pb2 import *  # noqa: F403
from gateway._proto.callgate.v1.gateway_pb2 import DESCRIPTOR
from gateway._proto.callgate.v1.gateway_pb2_grpc import (
    ToolGatewayServicer,
    ToolGatewayStub,
    add_ToolGatewayServicer_to_server,
)

__all__ = [
    "DESCRIPTOR",
    "ToolGatewayServicer",
    "ToolGatewayStub",
    "add_ToolGatewayServicer_to_server",
]
