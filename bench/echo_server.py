"""The baseline: a bare grpc.aio server with one generic bytes-in/bytes-out unary method.

    python -m bench.echo_server [--listen 127.0.0.1:0]

prints `echo listening on HOST:PORT` once bound and serves until SIGTERM/SIGINT. No protobuf
decoding, no interceptors: what any grpc.aio service costs before it does any work.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

import grpc

SERVICE = "callgate.bench.Echo"
METHOD = f"/{SERVICE}/Echo"
READY = "echo listening on "


async def _echo(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    return request


async def serve(listen: str) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                SERVICE, {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
            ),
        )
    )
    port = server.add_insecure_port(listen)
    await server.start()
    print(f"{READY}{listen.rsplit(':', 1)[0]}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:0")
    asyncio.run(serve(parser.parse_args(argv).listen))


if __name__ == "__main__":
    main()
