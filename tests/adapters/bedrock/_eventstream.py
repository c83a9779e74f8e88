"""A minimal AWS event-stream encoder, so botocore can decode a replayed ConverseStream.

Frame layout (big-endian): total length (4 bytes), headers length (4), CRC32 of those 8 bytes
(4), headers, payload, CRC32 of everything before it (4). A header is name length (1), name,
value type (1; 7 = string), value length (2), value.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes([len(raw_name)])
        + raw_name
        + bytes([_STRING])
        + struct.pack(">H", len(raw_value))
        + raw_value
    )


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event_frame(event: dict[str, Any]) -> bytes:
    """`{"contentBlockDelta": {...}}` → one `:message-type event` frame."""
    [(name, body)] = event.items()
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(body).encode())


def exception_frame(name: str, message: str) -> bytes:
    headers = {
        ":exception-type": name,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": message}).encode())


def encode(events: list[dict[str, Any]]) -> bytes:
    return b"".join(event_frame(event) for event in events)
