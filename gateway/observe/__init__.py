"""Observability: what the layers report (metrics, trace spans, log context), below every layer.

The run engine, the policy reloader, the executors and the servicer report through the
`hooks.Observe` they are given; its defaults (`hooks.OFF`) do nothing, so with metrics and
tracing off a request pays one method call per report and nothing else. The implementations
live beside them and are only imported when switched on: `metrics` (Prometheus, `serve
--metrics-listen`), `tracing` and `sdk` (spans of callgate's own, exported by the
OpenTelemetry SDK, `serve --otlp-endpoint`), and `logs` (the run, turn and call a log line is
about, and `serve --log-format json`).

No label or span attribute carries a subject, a tenant, a run or call ID, an argument value,
a result or a token (log fields carry the IDs, never the rest): see docs/operations.md,
"Observability".
"""
