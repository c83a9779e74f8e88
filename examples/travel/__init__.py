"""The travel example of the tool-calling guide: two read-only tools over HTTP on loopback.

`examples.travel.service` serves `POST /train_status` and `POST /weather`; the manifests in
`examples/travel/tools/` point callgate at it (`CALLGATE_TRAVEL_URL`, default
http://127.0.0.1:8765). Run it with `python -m examples.travel.service --port 8765`.

The package imports nothing: `python -m examples.travel.service` then runs the module once,
as `__main__`, instead of warning that it was imported already.
"""
