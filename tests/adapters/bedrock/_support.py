"""Fixture loading, botocore service-model validation and a bedrock-runtime client bound to
a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import botocore.session
from botocore.config import Config
from botocore.model import Shape
from botocore.validate import ParamValidator

from adapters.events import ToolResult
from tests.adapters.loopback import LoopbackServer

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bedrock"
RESPONSE_FIXTURES = sorted(
    p.name for p in FIXTURES.glob("*.json") if not p.name.startswith(("error_", "stream_"))
)
MODEL_ID = "anthropic.claude-sonnet-4-20250514-v1:0"
USER_TURN = {"role": "user", "content": [{"text": "Weather in Paris and Tokyo, then book."}]}

_MODEL = botocore.session.get_session().get_service_model("bedrock-runtime", "2023-09-30")


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _validate(params: Any, shape: Shape) -> None:
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()


def validate_response(body: dict[str, Any]) -> None:
    _validate(body, _MODEL.shape_for("ConverseResponse"))


def validate_stream_event(event: dict[str, Any]) -> None:
    _validate(event, _MODEL.shape_for("ConverseStreamOutput"))


def validate_converse_request(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> None:
    params: dict[str, Any] = {"modelId": MODEL_ID, "messages": messages}
    if tools is not None:
        params["toolConfig"] = {"tools": tools}
    _validate(params, _MODEL.operation_model("Converse").input_shape)


def mixed_results() -> list[ToolResult]:
    """SUCCEEDED, REJECTED, FAILED for parallel_calls.json, out of the model's order."""
    return [
        ToolResult(
            "tooluse_Wk3",
            "book_table",
            "FAILED",
            error_code="tool_error",
            error_message="restaurant closed",
        ),
        ToolResult("tooluse_Wk1", "get_weather", "SUCCEEDED", output_json='{"temp_c":18}'),
        ToolResult(
            "tooluse_Wk2",
            "get_weather",
            "REJECTED",
            error_code="policy_denied",
            error_message="outside your region",
        ),
    ]


def without_metadata(response: dict[str, Any]) -> dict[str, Any]:
    """A botocore result without the client-added `ResponseMetadata`."""
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


@contextmanager
def bedrock_client(server: LoopbackServer) -> Iterator[Any]:
    session = botocore.session.Session()
    client = session.create_client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.url,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}),
    )
    try:
        yield client
    finally:
        client.close()
