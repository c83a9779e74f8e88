"""Draw docs/dashboard.png: the panels of docs/grafana-dashboard.json, computed from real
scrapes of a real sidecar's /metrics (Grafana is not used: this is matplotlib, and says so).

    .venv/bin/pip install matplotlib   # not a dependency of callgate
    .venv/bin/python scripts/dashboard_picture.py [--seconds 60] [--out docs/dashboard.png]

It starts the example travel and workshop services and `callgate serve --metrics-listen`, drives
a mixed load for a minute (reads, denials, unknown tools, invalid arguments, tool failures,
approvals left pending, a rejected policy reload and its fix), scrapes /metrics every two
seconds, and evaluates each panel's expression over the scrapes as Prometheus would (rates
between scrapes, `histogram_quantile` by linear interpolation in the buckets).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from examples.travel.service import start_travel_service  # noqa: E402
from examples.workshop.service import start_workshop_service  # noqa: E402
from gateway.client import GatewayClient, tool_call  # noqa: E402
from gateway.testing import SidecarProcess  # noqa: E402

Sample = dict[tuple[str, frozenset[tuple[str, str]]], float]
TRAIN = {"train_number": "ICE123", "date": "2026-12-01"}
WEATHER = {"city": "Berlin", "date": "2026-12-01"}


def scrape(url: str) -> Sample:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def drive(target: str, stop: threading.Event, travel: Any, workshop: Any, policies: Path) -> None:
    """A mixed load until stop is set; a rejected reload at 15 s, its fix at 30 s, a write of
    unknown outcome at 20 s (its look-up failing), approvals left pending now and then."""
    began = time.monotonic()
    events = {"break": 15.0, "unknown": 20.0, "fix": 30.0}
    with GatewayClient(target, "alice-demo-token") as alice:
        for n in itertools.count():
            if stop.is_set():
                return
            run = f"pic-{n}"
            alice.start_run(run_id=run)
            calls = [
                tool_call("a", "get_train_status", TRAIN),
                tool_call("b", "get_weather", WEATHER),
            ]
            if n % 3 == 0:
                calls.append(
                    tool_call(
                        "c", "get_train_status", {"train_number": "TGV9", "date": "2026-12-01"}
                    )
                )
            if n % 5 == 0:
                calls.append(tool_call("d", "book_everything", {}))
            if n % 7 == 0:
                calls.append(tool_call("e", "get_weather", {"city": 7}))
            if n % 11 == 0:
                travel.control({"weather": {"status": 500, "times": 1}})
            if n % 40 == 0:  # more than two seats: an owner must approve (nobody does here)
                calls.append(
                    tool_call(
                        "w",
                        "reserve_seat",
                        {"event_id": "ws-acme-1", "participant": "alice", "seats": 3},
                    )
                )
            due = [e for e, at in events.items() if time.monotonic() - began >= at]
            for event in due:
                del events[event]
                if event == "break":
                    (policies / "broken.rego").write_text("package callgate\nnot rego\n")
                elif event == "fix":
                    (policies / "broken.rego").unlink()
                else:
                    workshop.control(
                        {
                            "reserve_seat": {"apply_then_drop": True, "times": 1},
                            "lookup": {"status": 500},
                        }
                    )
                    calls = [
                        tool_call(
                            "u",
                            "reserve_seat",
                            {"event_id": "ws-acme-1", "participant": "alice", "seats": 1},
                        )
                    ]
            alice.submit_calls(run, "t1", *calls)


def rate_by(
    series: list[tuple[float, Sample]], name: str, by: str, where: dict[str, str] | None = None
) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (t0, a), (t1, b) in itertools.pairwise(series):
        sums: dict[str, float] = defaultdict(float)
        for (n, labels), v in b.items():
            d = dict(labels)
            if n != name or any(d.get(k) != w for k, w in (where or {}).items()):
                continue
            sums[d.get(by, "")] += (v - a.get((n, labels), 0.0)) / (t1 - t0)
        for key, v in sums.items():
            out[key].append((t1, v))
    return out


def quantile_by(
    series: list[tuple[float, Sample]], name: str, by: str, q: float, window: int = 5
) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for i in range(window, len(series)):
        (_, a), (t1, b) = series[i - window], series[i]
        buckets: dict[str, dict[float, float]] = defaultdict(dict)
        for (n, labels), v in b.items():
            d = dict(labels)
            if n == f"{name}_bucket":
                le = float(d["le"])
                buckets[d[by]][le] = v - a.get((n, labels), 0.0)
        for key, cum in buckets.items():
            value = _quantile(q, sorted(cum.items()))
            if value is not None:
                out[key].append((t1, value))
    return out


def _quantile(q: float, cum: list[tuple[float, float]]) -> float | None:
    total = cum[-1][1] if cum else 0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le, count in cum:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = le, count
    return lower


def gauge(series: list[tuple[float, Sample]], name: str) -> list[tuple[float, float]]:
    return [(t, s.get((name, frozenset()), 0.0)) for t, s in series]


def plot(series: list[tuple[float, Sample]], out: Path) -> None:
    start = series[0][0]
    fig, axes = plt.subplots(3, 3, figsize=(13, 8.4))
    panels = [
        ("Decisions by verdict (/s)", rate_by(series, "callgate_decisions_total", "verdict")),
        (
            "Denials by reason code (/s)",
            rate_by(series, "callgate_call_results_total", "code", {"status": "REJECTED"}),
        ),
        (
            "Tool latency p50 / p99 (ms)",
            {
                **{
                    f"p50 {k}": [(t, v * 1000) for t, v in pts]
                    for k, pts in quantile_by(
                        series, "callgate_tool_duration_seconds", "tool", 0.5
                    ).items()
                },
                **{
                    f"p99 {k}": [(t, v * 1000) for t, v in pts]
                    for k, pts in quantile_by(
                        series, "callgate_tool_duration_seconds", "tool", 0.99
                    ).items()
                },
            },
        ),
        ("Call results by status (/s)", rate_by(series, "callgate_call_results_total", "status")),
        ("Pending approvals", {"pending": gauge(series, "callgate_pending_approvals")}),
        ("Unknown outcomes", {"unknown": gauge(series, "callgate_unknown_outcome_calls")}),
        ("Policy reloads (/s)", rate_by(series, "callgate_policy_reloads_total", "result")),
        ("Turns by next action (/s)", rate_by(series, "callgate_turns_total", "next_action")),
        (
            "RPCs by method, OK (/s)",
            rate_by(series, "callgate_grpc_server_handled_total", "method", {"code": "OK"}),
        ),
    ]
    for ax, (title, lines) in zip(axes.flat, panels, strict=True):
        for label, pts in sorted(lines.items()):
            if pts and (
                any(v for _, v in pts) or title in ("Pending approvals", "Unknown outcomes")
            ):
                ax.plot([t - start for t, _ in pts], [v for _, v in pts], label=label, lw=1.4)
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("seconds", fontsize=7)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6, loc="upper left")
    fig.suptitle(
        "callgate dashboard panels (docs/grafana-dashboard.json), computed from "
        f"{len(series)} real /metrics scrapes of a local sidecar under a scripted load;"
        "\ndrawn with matplotlib, not Grafana",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=72)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png")
    ns = p.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        start_travel_service() as travel,
        start_workshop_service(Path(tmp) / "workshop.db") as workshop,
    ):
        tools, policies = Path(tmp) / "tools", Path(tmp) / "policies"
        tools.mkdir()
        for src in [
            *(ROOT / "examples" / "travel" / "tools").glob("*.yaml"),
            *(ROOT / "examples" / "workshop" / "tools").glob("*.yaml"),
        ]:
            shutil.copy(src, tools / src.name)
        shutil.copytree(ROOT / "policies", policies)
        env = {
            "CALLGATE_TRAVEL_URL": travel.url,
            "CALLGATE_WORKSHOP_URL": workshop.url,
            "PYTHONPATH": str(ROOT),
        }
        with SidecarProcess(
            tools=tools,
            policies=policies,
            db=Path(tmp) / "cg.db",
            auth=ROOT / "examples" / "auth.yaml",
            env=env,
            extra_args=["--metrics-listen", "127.0.0.1:0"],
        ) as sidecar:
            url = next(
                line.split("serving metrics at ")[1].strip()
                for line in sidecar.lines
                if "serving metrics at " in line
            )
            stop = threading.Event()
            load = threading.Thread(
                target=drive, args=(sidecar.target, stop, travel, workshop, policies)
            )
            load.start()
            series = []
            deadline = time.monotonic() + ns.seconds
            while time.monotonic() < deadline:
                series.append((time.monotonic(), scrape(url)))
                stop.wait(2.0)
            stop.set()
            load.join(60)
    plot(series, ns.out)
    print(f"written {ns.out} ({ns.out.stat().st_size // 1024} KiB) from {len(series)} scrapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
