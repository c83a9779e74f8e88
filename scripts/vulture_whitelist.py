"""Names `vulture` cannot see being used; `make lint` scans the product code with this file.

Every entry says why it is alive. Anything else vulture reports is dead code: delete it.
"""

# ruff: noqa: B018
from adapters.base import ProviderAdapter
from adapters.events import ErrorKind
from gateway.audit.keys import AuditKey
from gateway.client import GatewayClient
from gateway.errors import CallCode
from gateway.executors.http1 import _Connection
from gateway.frameworks.langgraph import CallgateToolNode, callgate_tool_specs
from gateway.frameworks.openai_agents import CallgateRun
from gateway.identity.jwt_bearer import _StrictJwt
from gateway.loop import ScriptedModel
from gateway.mcp_gateway.bearer import CallerVerifier
from gateway.model import ApprovalStatus
from gateway.observe.sdk import sdk_tracer
from gateway.policy.base import PolicyEngine
from gateway.policy.bundle import Bundle
from gateway.policy.opa.client import _Client
from gateway.policy.rego_tests import TestResult
from gateway.service.app import Sidecar
from gateway.store.base import RunStore
from gateway.store.sqlite import SQLiteStore
from gateway.testing import run_serve_expecting_failure
from gateway.tools import Registry
from gateway.wire.server import GenericOnly, ToolGatewayService

# gRPC calls the servicer's methods by name.
ToolGatewayService.StartRun
ToolGatewayService.GetRun
ToolGatewayService.ListRuns
ToolGatewayService.SubmitTurn
ToolGatewayService.SubmitProviderResponse
ToolGatewayService.SubmitProviderStream
ToolGatewayService.ListTools
ToolGatewayService.Authorize
ToolGatewayService.ResumeRun
ToolGatewayService.CancelRun
ToolGatewayService.GetStatus
ToolGatewayService.ListApprovals
ToolGatewayService.DecideApproval
ToolGatewayService.ResolveCall
ToolGatewayService.WatchRun
ToolGatewayService.QueryAudit

# The generated add_*_to_server functions call it by name (it adds nothing: see the class).
GenericOnly.add_registered_method_handlers

# Contract vocabulary: values a client or a policy may see, used as data.
ErrorKind.TRANSPORT
CallCode.APPROVAL_DENIED
CallCode.RESOLVED_BY_OPERATOR
ApprovalStatus.APPROVED
ApprovalStatus.DENIED
ApprovalStatus.EXPIRED
ProviderAdapter.api_versions  # each adapter states the versions it reads (tests check them)
PolicyEngine.allows  # the boolean grants (may_approve, may_resolve, may_read_audit)

# Support that tests and offline tools use.
Bundle.packages
TestResult.duration_s
SQLiteStore.audit_rows
SQLiteStore.connections  # the statement counts (bench) and the tests trace every connection
GatewayClient.whole_run  # a Python client's every page of a run (docs/api.md, GetRun)
RunStore.get_view  # a whole run in one read (GetRun reads pages): the store tests compare with it
Registry.from_manifests
run_serve_expecting_failure

# asyncio calls a protocol's methods, and httptools its callbacks, by name.
_Connection.connection_made
_Connection.data_received
_Connection.eof_received
_Connection.connection_lost
_Connection.on_message_begin
_Connection.on_header
_Connection.on_headers_complete
_Connection.on_body
_Connection.on_message_complete

# A reference that keeps a scheduled task alive (the event loop holds tasks only weakly).
Sidecar._health_update

# opa-python-client reads the session its subclass sets up (gateway/policy/opa/client.py).
_Client._session

# PyJWT calls the payload reader its subclass overrides (gateway/identity/jwt_bearer.py).
_StrictJwt._decode_payload

# RE2's option, read by the library.
_.log_errors  # noqa: F821

# The one-step key file form for library use (serve writes a new key last, with
# load_or_new and write_new, so that a refused start leaves no file).
AuditKey.load_or_create
# A scripted model of recorded response files: what the offline loop example replays.
ScriptedModel.from_files
# Spans handed to an OpenTelemetry SDK exporter: the tests' in-memory exporter, or a
# deployment's own (docs/operations.md, "Traces").
sdk_tracer
# callgate under agent frameworks: what users' programs call (docs/frameworks.md; the tests
# and examples/frameworks use them, outside vulture's paths).
callgate_tool_specs
CallgateToolNode
CallgateToolNode.acall
CallgateRun.apply_decisions
# The MCP SDK's bearer middleware calls the token verifier (gateway/mcp_gateway/bearer.py), and
# uvicorn's main loop reads should_exit (gateway/mcp_gateway/listener.py).
CallerVerifier.verify_token
_.should_exit  # noqa: F821
# Fields of OTLP protobuf messages set in place (gateway/observe/otlp.py), what the SDK's
# export metrics read of a failed export (error_attrs), and what the SDK's span processor reads
# of a callgate span (LeanSpan.context).
_.parent_span_id  # noqa: F821
_.start_time_unix_nano  # noqa: F821
_.end_time_unix_nano  # noqa: F821
_.bool_value  # noqa: F821
_.string_value  # noqa: F821
_.int_value  # noqa: F821
_.double_value  # noqa: F821
_.error_attrs  # noqa: F821
_.trace_flags  # noqa: F821
