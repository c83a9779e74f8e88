"""The workshop example of the tool-calling guide: event reservations over HTTP on loopback.

`examples.workshop.service` serves `list_events`, `check_availability` (reads) and
`reserve_seat` (a write that honours `Idempotency-Key`, with a look-up by key), keeping its
state in its own SQLite file; the manifests in `examples/workshop/tools/` point callgate at it
(`CALLGATE_WORKSHOP_URL`, default http://127.0.0.1:8766). Run it with
`python -m examples.workshop.service --port 8766 --db workshop.db`.

The package imports nothing: `python -m examples.workshop.service` then runs the module once,
as `__main__`, instead of warning that it was imported already.
"""
