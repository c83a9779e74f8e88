"""`callgate policy replay CANDIDATE_DIR --inputs FILE`: recorded decision inputs decided again
with a candidate policy directory, and what would change (gateway.policy.replay)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from gateway.cli.common import UsageError
from gateway.cli.policy_output import EXIT_FAILED, EXIT_OK, Out, dump, options
from gateway.policy.bundle import load_bundle
from gateway.policy.embedded import EmbeddedEngine
from gateway.policy.replay import Change, ReplayReport, replay


def replay_command(args: argparse.Namespace, out: Out) -> int:
    rego = options(args)
    candidate = EmbeddedEngine(load_bundle(args.candidate, rego), prefix=args.prefix)
    baseline = None
    if args.baseline is not None:
        baseline = EmbeddedEngine(load_bundle(args.baseline, rego), prefix=args.prefix)
    with _opened(args.inputs) as stream:
        report = replay(
            _lines(stream, args.inputs),
            candidate,
            baseline=baseline,
            candidate_paths=candidate.input_paths,
        )
    ok = report.ok(allow_changes=args.allow_changes, allow_bad_lines=args.allow_bad_lines)
    if args.format == "json":
        out.line(dump(_report_json(report, ok)))
    else:
        _print_report(report, out, limit=args.limit)
        _print_verdict_line(report, out, args)
    return EXIT_OK if ok else EXIT_FAILED


class _opened:
    """The --inputs file (binary: each line is decoded on its own), or standard input."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stream: IO[bytes] | None = None

    def __enter__(self) -> IO[bytes]:
        if self.name == "-":
            return sys.stdin.buffer
        try:
            self.stream = Path(self.name).open("rb")
        except OSError as exc:
            raise UsageError(f"cannot read --inputs {self.name}: {exc.strerror or exc}") from None
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.close()


def _lines(stream: IO[bytes], name: str) -> Iterator[bytes]:
    try:
        yield from stream
    except OSError as exc:
        raise UsageError(f"cannot read --inputs {name}: {exc.strerror or exc}") from None


def _print_report(report: ReplayReport, out: Out, *, limit: int) -> None:
    shown = report.changes if limit <= 0 else report.changes[:limit]
    for change in shown:
        _print_change(change, out)
    if len(shown) < len(report.changes):
        out.line(
            out.paint(
                f"... and {len(report.changes) - len(shown)} more changes "
                "(--limit 0 lists all, --format json gives each)",
                "dim",
            )
        )
    for bad in report.bad_lines:
        out.line(f"{out.paint('line ' + str(bad.line), 'red')}: not replayed: {bad.message}")
    if report.unobserved:
        out.line(
            out.paint(
                "note: the candidate reads input that no recorded input holds (a "
                "log keeps only what the deciding revision read): " + ", ".join(report.unobserved),
                "yellow",
            )
        )
    if report.by_tool:
        out.line("by tool:")
        width = max(len(t) for t in report.by_tool)
        for tool, counts in sorted(report.by_tool.items()):
            out.line(
                f"  {tool.ljust(width)}  {counts.replayed} replayed: "
                f"{counts.verdicts_changed} verdicts changed, {counts.other_changes} "
                f"reasons changed, {counts.unchanged} unchanged"
            )


def _print_change(change: Change, out: Out) -> None:
    colour = "red" if change.verdict_changed else "yellow"
    what = change.transition
    if "policy_error" in change.kinds:
        what += " (now a policy_error)"
    if not change.verdict_changed:
        what += " " + ", ".join(k.replace("_", " ") + " changed" for k in change.kinds)
    out.line(
        f"{out.paint('line ' + str(change.line), colour)}  {change.tool}  "
        f"{out.paint(what, colour)}  input {change.input_sha256[:12]}"
    )
    before, after = change.before, change.after
    if before.reasons is not None and after.reasons is not None:
        for reason in sorted(set(before.reasons) - set(after.reasons)):
            out.line(f"    - {reason}")
        for reason in sorted(set(after.reasons) - set(before.reasons)):
            out.line(f"    + {reason}")
    elif after.reasons:
        for reason in after.reasons:
            out.line(f"    now: {reason}")
    if "approval_ttl" in change.kinds:
        out.line(f"    approval_ttl_s: {before.approval_ttl_s} → {after.approval_ttl_s}")


def _summary(report: ReplayReport) -> str:
    moves = ", ".join(f"{k} {n}" for k, n in report.transitions().items())
    text = (
        f"{report.replayed} replayed: {report.verdicts_changed} verdicts changed"
        + (f" ({moves})" if moves else "")
        + f", {len(report.changes) - report.verdicts_changed} reasons changed, "
        f"{report.unchanged} unchanged"
    )
    if report.bad_lines:
        count = len(report.bad_lines)
        text += f"; {count} line{'s' * (count != 1)} not replayed"
    if report.skipped:
        text += f"; {report.skipped} line{'s' * (report.skipped != 1)} of other loggers skipped"
    return text


def _print_verdict_line(report: ReplayReport, out: Out, args: argparse.Namespace) -> None:
    against = (
        "the recorded decisions"
        if args.baseline is None
        else f"baseline revision {report.baseline}"
    )
    out.line(f"candidate revision {report.candidate_revision}, compared with {against}")
    ok = report.ok(allow_changes=args.allow_changes, allow_bad_lines=args.allow_bad_lines)
    out.line(out.paint(_summary(report), "green" if ok else "red"))
    if not report.replayed:
        out.err("no decision input was replayed")
    elif report.verdicts_changed and not args.allow_changes:
        out.err("verdicts would change (--allow-changes to accept them)")
    if report.bad_lines and not args.allow_bad_lines:
        out.err("some lines could not be replayed (--allow-bad-lines to replay the rest)")


def _report_json(report: ReplayReport, ok: bool) -> dict[str, Any]:
    return {
        "ok": ok,
        "candidate_revision": report.candidate_revision,
        "baseline": report.baseline,
        "replayed": report.replayed,
        "unchanged": report.unchanged,
        "verdicts_changed": report.verdicts_changed,
        "transitions": report.transitions(),
        "changes": [_change_json(c) for c in report.changes],
        "by_tool": {
            tool: {
                "replayed": c.replayed,
                "verdicts_changed": c.verdicts_changed,
                "other_changes": c.other_changes,
                "unchanged": c.unchanged,
            }
            for tool, c in sorted(report.by_tool.items())
        },
        "bad_lines": [{"line": b.line, "message": b.message} for b in report.bad_lines],
        "skipped": report.skipped,
        "unobserved_paths": list(report.unobserved),
    }


def _change_json(change: Change) -> dict[str, Any]:
    return {
        "line": change.line,
        "tool": change.tool,
        "input_sha256": change.input_sha256,
        "recorded_revision": change.recorded_revision,
        "kinds": list(change.kinds),
        "verdict_changed": change.verdict_changed,
        "before": change.before.to_json(),
        "after": change.after.to_json(),
    }
