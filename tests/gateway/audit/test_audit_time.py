"""An audit record's time text: UTC, six fraction digits, as strftime writes it, so that text
order is time order (within the years of four digits)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.audit.records import audit_time

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8)), None]
)
TIMES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES)


@given(TIMES)
def test_the_text_is_what_strftime_writes(t: datetime) -> None:
    assert audit_time(t) == t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@given(TIMES, TIMES)
def test_text_order_is_time_order(a: datetime, b: datetime) -> None:
    assume(a.astimezone(UTC).year >= 1000 and b.astimezone(UTC).year >= 1000)
    assert (audit_time(a) < audit_time(b)) == (a.astimezone(UTC) < b.astimezone(UTC))
