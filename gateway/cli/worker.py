"""One serving process of `callgate serve --workers N`, started by `gateway.service.supervisor`.

It reads its settings as one line of JSON (a `ServeConfig`, the port already chosen) on
standard input, then serves exactly as `callgate serve` does, but binds its port with
SO_REUSEPORT and shares its SQLite store's notifications with the other workers. It prints the
same ready line, logs with its worker number and pid, and stops on SIGTERM or when its
standard input closes (the supervisor is gone).
"""

from __future__ import annotations

import asyncio
import os
import sys

from gateway.cli.common import configure_logging, quiet_engine_backtraces, run_command
from gateway.service.supervisor import SLOT_ENV


def _serve() -> int:
    from gateway.service.app import serve
    from gateway.service.config import ServeConfig

    config = ServeConfig.model_validate_json(sys.stdin.readline())
    configure_logging(tag=_tag(), log_format=config.log_format)
    asyncio.run(serve(config, worker=True))
    return 0


def _tag() -> str:
    return f"worker {os.environ.get(SLOT_ENV, '?')} pid {os.getpid()}"


def main() -> int:
    quiet_engine_backtraces()
    configure_logging(tag=_tag())
    return run_command("callgate serve", _serve)


if __name__ == "__main__":
    sys.exit(main())
