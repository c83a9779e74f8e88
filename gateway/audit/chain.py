"""Walking the audit hash chain: does every record follow the one before, unchanged?

Each record's `hash` is SHA-256 over the previous record's hash and the record's own columns
(`gateway.audit.hashing.recomputed_hash`); records written since schema 4 are also sealed, an
HMAC of that hash under the audit key. Walking the records in seq order:

- a record whose `prev_hash` is not the hash of the record before it: a record was removed,
  inserted or moved there (the first record must follow the start of the chain, or the
  checkpoint of the latest prune);
- a record whose columns do not give its hash: it was edited after it was written;
- with the key: a record without a seal, with another key's seal, or with a seal that does not
  match its hash: the chain was recomputed after an edit (only the key's holder can seal);
- a record in the layout of records written before schema 4 after one written since, or a
  verdict column that is not its decision's verdict: rewritten.

A prune leaves a checkpoint (the last removed record's seq and hash) and appends a `prune`
record naming it; a checkpoint that no prune record in the chain confirms is a break too.
Records written before schema 4 are chained (their hash covers their first 17 columns) but
not sealed: the report counts them.

What a hash chain cannot show: records removed from its end. Keep the head (the last seq and
hash `verify` prints) somewhere else to detect that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.audit import hashing
from gateway.audit.keys import AuditKey
from gateway.audit.records import AuditCheckpoint, AuditKind, AuditRecord


@dataclass(frozen=True)
class Break:
    """The first broken link: the record (None: the checkpoint itself) and what is wrong."""

    seq: int | None
    problem: str


@dataclass
class ChainReport:
    checkpoint: AuditCheckpoint | None
    key_id: str  # the key the seals were checked with ("" when not checked)
    records: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    head: str = ""  # the last record's hash
    legacy: int = 0  # records written before schema 4 (chained, not sealed)
    unsealed: int = 0  # records since schema 4 without a seal (not checked without a key)
    broken: Break | None = None
    kinds: dict[str, int] = field(default_factory=dict)


def _short(digest: str) -> str:
    return f"{digest[:12]}…" if digest else "(none)"


class ChainWalk:
    """Feed records in seq order (`feed`), then `finish`; stops at the first break."""

    def __init__(self, checkpoint: AuditCheckpoint | None, key: AuditKey | None) -> None:
        self.key = key
        self.report = ChainReport(checkpoint, key.key_id if key else "")
        self._expected = checkpoint.hash if checkpoint else ""
        self._after = (
            f"the prune checkpoint (record {checkpoint.seq})"
            if checkpoint
            else "the start of the chain"
        )
        self._confirmed = checkpoint is None
        self._since_v4 = False

    def feed(self, records: list[AuditRecord]) -> Break | None:
        for r in records:
            if self.report.broken is None:
                self.report.broken = self._check(r)
            if self.report.broken is not None:
                return self.report.broken
            self._count(r)
        return None

    def finish(self) -> ChainReport:
        if self.report.broken is None and not self._confirmed:
            cp = self.report.checkpoint
            assert cp is not None
            self.report.broken = Break(
                None,
                (
                    f"the chain starts after record {cp.seq} (a prune checkpoint), but no prune "
                    "record in the chain confirms that checkpoint: records were removed by "
                    "something other than `callgate audit prune`"
                ),
            )
        return self.report

    def _count(self, r: AuditRecord) -> None:
        rep = self.report
        rep.records += 1
        rep.first_seq = rep.first_seq if rep.first_seq is not None else r.seq
        rep.last_seq, rep.head = r.seq, r.hash
        rep.kinds[r.kind] = rep.kinds.get(r.kind, 0) + 1
        if r.layout is None:
            rep.legacy += 1
        elif not r.seal:
            rep.unsealed += 1
        self._expected, self._after = r.hash, f"record {r.seq}"
        if r.kind == AuditKind.PRUNE.value and rep.checkpoint is not None:
            detail = r.detail()
            self._confirmed = self._confirmed or (
                detail.get("checkpoint_seq") == rep.checkpoint.seq
                and detail.get("checkpoint_hash") == rep.checkpoint.hash
            )

    def _check(self, r: AuditRecord) -> Break | None:
        if r.prev_hash != self._expected:
            return Break(
                r.seq,
                (
                    f"record {r.seq} does not follow {self._after}: its prev_hash is "
                    f"{_short(r.prev_hash)}, not {_short(self._expected)}; a record was removed, "
                    "inserted or moved here"
                ),
            )
        problem = self._layout(r) or self._content(r) or self._seal(r)
        return Break(r.seq, problem) if problem else None

    def _layout(self, r: AuditRecord) -> str:
        if r.layout is None and self._since_v4:
            return (
                f"record {r.seq} has the layout of records written before schema 4 after "
                "records written since: it was rewritten"
            )
        if r.layout not in (None, hashing.AUDIT_LAYOUT):
            return f"record {r.seq} has an unknown layout {r.layout!r}"
        self._since_v4 = self._since_v4 or r.layout is not None
        return ""

    @staticmethod
    def _content(r: AuditRecord) -> str:
        if hashing.recomputed_hash(r) != r.hash:
            return (
                f"record {r.seq} was changed after it was written: its columns do not "
                f"give its hash {_short(r.hash)}"
            )
        decision = r.decision()
        stated = decision.verdict.value if decision else None
        if (r.verdict or None) != stated:
            return (
                f"record {r.seq} was changed after it was written: its verdict column "
                f"says {r.verdict}, its decision {stated}"
            )
        return ""

    def _seal(self, r: AuditRecord) -> str:
        if self.key is None or r.layout is None:
            return ""
        if not r.seal or not r.key_id:
            return (
                f"record {r.seq} is not sealed: it was written without the audit key, or "
                "its seal was removed"
            )
        if r.key_id != self.key.key_id:
            return (
                f"record {r.seq} was sealed with key {r.key_id}, not with the key given "
                f"({self.key.key_id})"
            )
        if self.key.seal(r.hash) != r.seal:
            return (
                f"record {r.seq}'s seal does not match its hash under this key: the chain "
                "was recomputed after an edit"
            )
        return ""
