"""The audit trail: what is recorded, how it is protected, and how it is read.

    records.py   the records: an event to append, a stored record, filters, checkpoints
    keys.py      the audit key: masks of redacted values, keyed digests, the chain's seals
    hashing.py   the chain's hashes: which columns each record layout covers
    events.py    every audit event callgate appends, built in one place per kind
    at_rest.py   a call's arguments masked in the store once nothing needs them (redact_stored)
    chain.py     walking the hash chain: the first broken link, the checkpoint of a prune
    reader.py    QueryAudit: who may read which records, pages, following new records
    export.py    records as JSON lines close to OPA's decision log
    offline.py   export, verify and prune on the store itself (`callgate audit export|...`)

Redaction itself (pointers, credential-looking values) is `gateway.tools.redaction`; the
command line is `gateway.cli.audit`; the stores write the rows (`gateway.store.codecs`).
"""
