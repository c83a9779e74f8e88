"""The audit trail read and pruned straight from a store (no sidecar): verify, export, prune.

Each works page by page in seq order, so a store of millions of records needs little memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import TextIO

from gateway.audit import events, export
from gateway.audit.chain import ChainReport, ChainWalk
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditCheckpoint, AuditEvent, AuditFilter, AuditRecord, audit_time
from gateway.model import now_utc
from gateway.store.base import RunStore

PAGE = 5000


async def records(store: RunStore, after: int = 0) -> AsyncIterator[list[AuditRecord]]:
    """Every record after seq `after`, a page at a time, in seq order."""
    while True:
        page = await store.query_audit(AuditFilter(), after=after, limit=PAGE)
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = page[-1].seq


async def verify(store: RunStore, key: AuditKey | None) -> ChainReport:
    """Walk the whole chain; the report names the first broken link, if any."""
    walk = ChainWalk(await store.audit_checkpoint(), key)
    async for page in records(store):
        if walk.feed(page) is not None:
            break
    return walk.finish()


async def export_lines(store: RunStore, out: TextIO, *, after: int = 0) -> int:
    """Write the records after seq `after` as decision-log JSON lines; answers how many."""
    count = 0
    async for page in records(store, after):
        for r in page:
            out.write(export.line(r) + "\n")
        count += len(page)
    return count


async def prune(store: RunStore, before: datetime, by: str) -> AuditCheckpoint | None:
    """Remove the records written before `before`; the prune record says `by` whom."""
    cut = audit_time(before)

    def record(point: AuditCheckpoint) -> AuditEvent:
        return events.pruned(
            seq=point.seq,
            chain_hash=point.hash,
            removed=point.removed,
            before=cut,
            by=by,
            now=now_utc(),
        )

    return await store.prune_audit(cut, record)


def report_text(rep: ChainReport) -> str:
    """What `callgate audit verify` prints."""
    lines = []
    if rep.broken is not None:
        lines.append(f"BROKEN: {rep.broken.problem}")
    else:
        lines.append(
            f"intact: {rep.records} record(s)"
            + (f", seq {rep.first_seq} to {rep.last_seq}" if rep.records else "")
        )
    if rep.checkpoint is not None:
        cp = rep.checkpoint
        lines.append(
            f"pruned: {cp.removed} record(s) before {cp.before} removed at {cp.time}; "
            f"the chain continues after record {cp.seq}"
        )
    if rep.legacy:
        lines.append(f"{rep.legacy} record(s) written before schema 4: chained, not sealed")
    if rep.unsealed and not rep.key_id:
        lines.append(
            f"{rep.unsealed} record(s) since schema 4 carry no seal (written by a "
            "store opened without the audit key)"
        )
    if rep.key_id:
        lines.append(f"seals: checked with key {rep.key_id}")
    else:
        lines.append(
            "seals: not checked (no --audit-key-file): a chain recomputed after an "
            "edit is caught only with the key"
        )
    if rep.records and rep.broken is None:
        lines.append(
            f"head: record {rep.last_seq} hash {rep.head} (keep it elsewhere: "
            "records removed from the end are caught only against it)"
        )
    return "\n".join(lines)
