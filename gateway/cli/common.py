"""Command-line settings, declared once: a flag, its environment variable and its default.

    option(parser, "--listen", parse=listen_address, default="127.0.0.1:50051", help=...)

adds `--listen`, reads `CALLGATE_LISTEN` when the flag is not given, and shows both with the
default in `--help`. Values are checked by the `parse` function whichever way they come; a bad
one ends the command with one line naming the flag or the variable (`UsageError`, exit status
2). Only the settings of the command being run are read, so a bad variable for `serve` never
stops `policy test`. `resolve(namespace)` fills in what the command line left out.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from gateway.client import DEFAULT_TARGET, GatewayClient
from gateway.errors import CallgateError, ConfigError, RequestCode, RequestError
from gateway.tls import ClientTLS

ENV_PREFIX = "CALLGATE_"
_UNSET: Any = object()


class UsageError(Exception):
    """A bad flag, variable or combination; the message names it (exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line, pointing at --help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


@dataclass(frozen=True)
class Setting:
    flag: str
    dest: str
    env: str
    default: Any
    parse: Callable[[str], Any]
    required: bool = False
    secret: bool = False


def env_name(flag: str) -> str:
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    *,
    help: str,
    parse: Callable[[str], Any] = str,
    default: Any = None,
    metavar: str | None = None,
    required: bool = False,
    secret: bool = False,
    owner: argparse.ArgumentParser | None = None,
) -> Setting:
    """Add FLAG with its CALLGATE_ variable; `owner` is the parser when adding to a group."""
    dest = flag.lstrip("-").replace("-", "_")
    setting = Setting(flag, dest, env_name(flag), default, parse, required, secret)
    parser.add_argument(
        flag,
        dest=dest,
        default=_UNSET,
        type=_flag_type(parse),
        metavar=metavar,
        help=f"{help} [{_help_tail(setting)}]",
    )
    _register(owner or parser, setting)
    return setting


def switch(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    *,
    help: str,
    owner: argparse.ArgumentParser | None = None,
) -> Setting:
    """An on/off flag; its variable takes 1/0, true/false, yes/no or on/off."""
    dest = flag.lstrip("-").replace("-", "_")
    setting = Setting(flag, dest, env_name(flag), False, parse_bool)
    parser.add_argument(
        flag,
        dest=dest,
        default=_UNSET,
        action="store_const",
        const=True,
        help=f"{help} [env {setting.env}=1; default off]",
    )
    _register(owner or parser, setting)
    return setting


def _register(parser: argparse.ArgumentParser | argparse._ArgumentGroup, setting: Setting) -> None:
    if not isinstance(parser, argparse.ArgumentParser):
        raise TypeError("pass owner=<the parser> when adding a setting to a group")
    known: tuple[Setting, ...] = parser.get_default("_settings") or ()
    parser.set_defaults(_settings=(*known, setting), _prog=parser.prog)


def _help_tail(setting: Setting) -> str:
    if setting.required:
        return f"env {setting.env}; required"
    if setting.default is None or setting.default == "":
        return f"env {setting.env}; default none"
    shown = "(set)" if setting.secret else setting.default
    return f"env {setting.env}; default {shown}"


def _flag_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from exc

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def resolve(
    namespace: argparse.Namespace, environ: dict[str, str] | None = None
) -> argparse.Namespace:
    """Fill each setting the command line left out from its variable, else its default."""
    env = os.environ if environ is None else environ
    for setting in getattr(namespace, "_settings", ()):
        if getattr(namespace, setting.dest) is not _UNSET:
            continue
        raw = env.get(setting.env, "")
        if raw:
            setattr(namespace, setting.dest, _from_env(setting, raw))
        elif setting.required:
            raise UsageError(f"{setting.flag} is required (or set {setting.env})")
        else:
            setattr(namespace, setting.dest, setting.default)
    return namespace


def _from_env(setting: Setting, raw: str) -> Any:
    try:
        return setting.parse(raw)
    except ValueError as exc:
        shown = "(hidden)" if setting.secret else repr(raw)
        raise UsageError(f"{setting.env}={shown}: {exc}") from None


# ------------------------------------------------------------------------------------ values


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("expected a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError("expected a number of seconds, 0 or more")
    return value


def whole_seconds(text: str) -> int:
    """A whole number of seconds, 1 or more."""
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError("expected a whole number of seconds, 1 or more")
    return int(text)


def count(text: str) -> int:
    """A whole number, 0 or more (the setting's own range is checked with the rest)."""
    if not text.strip().isdigit():
        raise ValueError("expected a whole number, 0 or more")
    return int(text)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("expected a whole number") from None
    if value < 1:
        raise ValueError("expected a whole number, 1 or more")
    return value


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def listen_address(text: str) -> str:
    """HOST:PORT (port 0-65535; [v6]:PORT) or unix:PATH."""
    if text.startswith("unix:"):
        if len(text) == len("unix:"):
            raise ValueError("expected unix:PATH")
        return text
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError("expected HOST:PORT (port 0-65535) or unix:PATH")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError("expected [IPv6]:PORT with a valid IPv6 address") from None
    return text


def host_port(text: str) -> str:
    """HOST:PORT (port 0-65535; [v6]:PORT), no unix socket."""
    if text.startswith("unix:"):
        raise ValueError("expected HOST:PORT (a TCP address)")
    return listen_address(text)


def http_url(text: str) -> str:
    """An http:// or https:// URL with a host."""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError("expected an http:// or https:// URL")
    return text


def target_address(text: str) -> str:
    """A gRPC target: HOST:PORT, unix:PATH or a URI gRPC resolves (dns:///...)."""
    if "://" in text:
        return text
    return listen_address(text)


def existing_file(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise ValueError("no such file" if not path.exists() else "not a file")
    return path


def existing_dir(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise ValueError("no such directory" if not path.exists() else "not a directory")
    return path


def one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"expected one of: {', '.join(choices)}")
        return text

    parse.__name__ = "choice"
    return parse


def nonempty(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a value")
    return text


Handler = Callable[[argparse.Namespace], int]
SubParsers = argparse._SubParsersAction

# ------------------------------------------------------------------- client-side commands


def client_options(p: argparse.ArgumentParser) -> None:
    conn = p.add_argument_group("connection", "Plaintext unless a --tls option is given.")
    option(
        conn,
        "--target",
        parse=target_address,
        default=DEFAULT_TARGET,
        owner=p,
        metavar="HOST:PORT",
        help="the sidecar: HOST:PORT or unix:PATH",
    )
    option(
        conn,
        "--token",
        default="",
        secret=True,
        owner=p,
        help="bearer token, one of the sidecar's --auth file (make run: "
        "examples/auth.yaml); sent as 'authorization: Bearer TOKEN'",
    )
    _tls_options(p, conn)


def _tls_options(p: argparse.ArgumentParser, conn: Any) -> None:
    switch(conn, "--tls", owner=p, help="connect with TLS, trusting the system's CAs")
    option(
        conn,
        "--tls-ca",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM CA certificates to trust for the sidecar's certificate (implies --tls)",
    )
    option(
        conn,
        "--tls-client-cert",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM client certificate to present (mutual TLS; implies --tls)",
    )
    option(
        conn,
        "--tls-client-key",
        parse=existing_file,
        metavar="FILE",
        owner=p,
        help="PEM private key of --tls-client-cert",
    )
    option(
        conn,
        "--tls-server-name",
        default="",
        metavar="NAME",
        owner=p,
        help="name to check the sidecar's certificate against, if not the target's host",
    )


@contextmanager
def connected(ns: argparse.Namespace, timeout_s: float = 60.0) -> Iterator[GatewayClient]:
    """A client of the sidecar the command's connection options name (a sidecar that cannot
    be reached is SidecarUnreachable, for a stream as for a unary call, naming the target)."""
    with GatewayClient(ns.target, ns.token, tls=client_tls(ns), timeout_s=timeout_s) as client:
        yield client


def client_tls(ns: argparse.Namespace) -> ClientTLS | None:
    if not (ns.tls or ns.tls_ca or ns.tls_client_cert or ns.tls_client_key):
        return None
    return ClientTLS(
        ca=ns.tls_ca, cert=ns.tls_client_cert, key=ns.tls_client_key, server_name=ns.tls_server_name
    )


def quiet_engine_backtraces() -> None:
    """regorus error texts carry a ~2.5 KB Rust backtrace when RUST_BACKTRACE is set, and a
    contained engine panic prints one to stderr: one policy input could flood the log. Set
    for this process only, before the first engine is used."""
    os.environ["RUST_LIB_BACKTRACE"] = "0"
    os.environ["RUST_BACKTRACE"] = "0"


def configure_logging(tag: str = "", log_format: str = "text") -> None:
    """One line per event on stderr: time, level, [tag,] logger, message (a worker of
    `serve --workers` tags its lines with its number and pid); `json`: one JSON object per
    line (`gateway.observe.logs.JsonFormatter`: with the run, turn, call and trace a line is
    about), and Python's warnings become such lines too. Called again, it replaces what it
    set up before."""
    handler = logging.StreamHandler()
    if log_format == "json":
        from gateway.observe.logs import JsonFormatter
        from gateway.observe.tracing import current_ids

        handler.setFormatter(JsonFormatter(worker=tag, trace_ids=current_ids))
        logging.captureWarnings(True)
    else:
        where = f"[{tag}] " if tag else ""
        handler.setFormatter(
            logging.Formatter(f"%(asctime)s %(levelname)s {where}%(name)s: %(message)s")
        )
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per JWKS or demo request


def run_command(prog: str, command: Callable[[], int]) -> int:
    """Run a command; user errors end in one line on stderr, never a traceback."""
    try:
        code = command()
        sys.stdout.flush()
        return code
    except (UsageError, ConfigError) as err:
        return _fail(prog, err.report() if isinstance(err, ConfigError) else str(err), 2)
    except CallgateError as err:
        return _fail(prog, described(err), 1)
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except OSError as err:
        return _fail(prog, str(err), 1)
    except BaseException as err:
        if isinstance(err, SystemExit) or os.environ.get("CALLGATE_DEBUG"):
            raise
        return _fail(
            prog,
            f"unexpected error ({type(err).__name__}: {err}); this is a bug: "
            "CALLGATE_DEBUG=1 shows where",
            1,
        )


TOKEN_HINT = (
    "give a token with --token or CALLGATE_TOKEN: one of the tokens in the --auth "
    "file the sidecar was started with (under `make run`: examples/auth.yaml, e.g. "
    "alice-demo-token)"
)


def described(err: CallgateError) -> str:
    """An error as one line; a request the sidecar refused names its gRPC status and code, a
    refused token what to give instead."""
    if not isinstance(err, RequestError) or not err.grpc_status:
        return err.message
    if err.code == RequestCode.UNAVAILABLE and err.grpc_status == "UNAVAILABLE":
        return err.message  # SidecarUnreachable names the target and what to check
    if err.code == RequestCode.UNAUTHENTICATED:
        said = (
            "no token was sent"
            if err.message.startswith("no credentials")
            else f"the sidecar refused the token ({err.message})"
        )
        return f"{err.grpc_status} {err.code.value}: {said}: {TOKEN_HINT}"
    return f"{err.grpc_status} {err.code.value}: {err.message}"


def _fail(prog: str, message: str, code: int) -> int:
    try:
        print(f"{prog}: {message}", file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass
    return code


def _silence_stdout() -> None:
    """The reader went away: send whatever Python still flushes at exit to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
