"""A differential test: our cron against cronsim (the evaluator behind healthchecks.io).

A few hundred random expressions (seeded, so the same ones every run) mix every syntax
both accept: lists, ranges, steps, names, "L", "LW", "NL", "N#K" and "?" (cronsim does
not know "?"; it is given "*", which is what "?" means). Each is evaluated in a zone with
DST and in UTC, over a window that crosses both transitions, and the fires must be the
same instants.

Intentional differences, excluded here and tested in ``test_schedule_dst.py``:

- ``dst.skipped = skip`` and ``dst.repeated = both``: cronsim has only Debian's default
  (run a skipped fixed-time job right after the jump, a repeated one once); so only the
  defaults, shift and once, are compared.
- "NW" (the weekday nearest day N, Quartz's): cronsim does not have it; see
  ``test_schedule_cron.py``.
- A wildcard expression (minute or hour starting with "*") in a zone whose clock moves by
  30 minutes (Australia/Lord_Howe): cronsim steps such jobs an hour at a time in UTC and
  lands on the half hour, so it misses wall times that exist ("* 3 * * *" starts at 03:30
  the day the clock goes 02:00 -> 02:30; "40 * * * *" misses the repeated 01:40). Debian
  reads the wall clock each minute, as we do. Those pairs are not generated; the
  minute-by-minute reference in ``test_schedule_dst.py`` covers Lord Howe instead.
- A one-value range with a step, "13-13/5": cronsim reads it as "13/5" (13, 18, 23);
  Debian cron, and we, as the one value 13. The generator never writes "a-a/step".
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from chalicelib.domain.schedule import ScheduleSpec, next_fire_after

SEED = 14
EXPRESSIONS = 300
FIRES = 16
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
# (zone, start): each window starts six hours before a DST transition (in 2026), so that
# the frequent expressions cross it and the rare ones run on for months after it.
ZONES = [
    ("UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2026, 3, 28, 19, tzinfo=UTC)),  # 02:00 CET -> 03:00 CEST
    ("Europe/Berlin", datetime(2026, 10, 24, 19, tzinfo=UTC)),  # 03:00 CEST -> 02:00 CET
    ("America/New_York", datetime(2026, 3, 8, 1, tzinfo=UTC)),  # 02:00 EST -> 03:00 EDT
    ("America/New_York", datetime(2026, 11, 1, tzinfo=UTC)),  # 02:00 EDT -> 01:00 EST
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 9, tzinfo=UTC)),  # 02:00 -> 01:30
    ("Australia/Lord_Howe", datetime(2026, 10, 3, 9, 30, tzinfo=UTC)),  # 02:00 -> 02:30
]
# Hours near the transitions, so that fixed-time expressions land in a skipped or a
# repeated hour often enough.
NEAR_TRANSITIONS = ["1", "2", "1-3", "2,14", "0-2", "1,2", "2-4/2"]


def _plain(rng: random.Random, low: int, high: int, names: list[str] | None = None) -> str:
    """One list item: a value, a range, or a step (of *, a value or a range)."""

    def value(number: int) -> str:
        if names and rng.random() < 0.3:
            return names[number - low] if low == 1 else names[number % 7]
        return str(number)

    kind = rng.choice(["value", "value", "range", "star-step", "start-step", "range-step"])
    if kind == "range-step":
        first = rng.randint(low, high - 1)
        last = rng.randint(first + 1, high)
    else:
        first = rng.randint(low, high)
        last = rng.randint(first, high)
    step = rng.choice([2, 3, 5, 7, 10, 15])
    if kind == "value":
        return value(first)
    if kind == "range":
        return f"{value(first)}-{value(last)}"
    if kind == "star-step":
        return f"*/{step}"
    if kind == "start-step":
        return f"{first}/{step}"
    return f"{first}-{last}/{step}"


def _field(rng: random.Random, low: int, high: int, star: float, names=None, extra=()) -> str:
    if rng.random() < star:
        return "*"
    items = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if extra and rng.random() < 0.3:
            items.append(rng.choice(extra)(rng))
        else:
            items.append(_plain(rng, low, high, names))
    return ",".join(items)


DOM_EXTRA = (lambda rng: "L", lambda rng: "LW")
DOW_EXTRA = (
    lambda rng: f"{rng.randint(0, 7)}L",
    lambda rng: f"{rng.choice([str(rng.randint(0, 7)), rng.choice(DAYS)])}#{rng.randint(1, 5)}",
)


def _expression(rng: random.Random) -> str:
    minute = _field(rng, 0, 59, 0.15)
    hour = rng.choice(NEAR_TRANSITIONS) if rng.random() < 0.4 else _field(rng, 0, 23, 0.3)
    dom = _field(rng, 1, 31, 0.5, extra=DOM_EXTRA)
    month = _field(rng, 1, 12, 0.6, names=MONTHS)
    dow = _field(rng, 0, 7, 0.5, names=DAYS, extra=DOW_EXTRA)
    # "?" stands for "*" in one day field, as EventBridge and Quartz write it.
    if dom == "*" and rng.random() < 0.2:
        dom = "?"
    elif dow == "*" and rng.random() < 0.2:
        dow = "?"
    return " ".join((minute, hour, dom, month, dow))


def _cases() -> list[tuple[str, str, datetime]]:
    rng = random.Random(SEED)
    cases = []
    while len(cases) < EXPRESSIONS:
        expression = _expression(rng)
        try:
            CronSim(expression.replace("?", "*"), datetime(2026, 1, 1))
        except Exception:  # noqa: BLE001 - e.g. "31 2" that cronsim refuses; tested elsewhere
            continue
        zone, start = rng.choice(ZONES)
        minute, hour = expression.split()[:2]
        if zone == "Australia/Lord_Howe" and (minute.startswith("*") or hour.startswith("*")):
            continue
        cases.append((expression, zone, start))
    return cases


CASES = _cases()


def _cronsim_fires(expression: str, zone: str, start: datetime) -> list[datetime]:
    it = CronSim(expression.replace("?", "*"), start.astimezone(ZoneInfo(zone)))
    fires = []
    for _ in range(FIRES):
        try:
            fires.append(next(it).astimezone(UTC))
        except StopIteration:  # cronsim gives up after 50 years without a match
            break
    return fires


def _our_fires(expression: str, zone: str, start: datetime, count: int) -> list[datetime]:
    spec = ScheduleSpec(cron=expression, timezone=zone)
    fires: list[datetime] = []
    after = start
    while len(fires) < count and (fire := next_fire_after(spec, after)) is not None:
        fires.append(fire)
        after = fire
    return fires


def test_the_random_expressions_cover_every_syntax():
    text = " ".join(expression for expression, _, _ in CASES)
    for needle in ("L ", "LW", "#", "?", "/", "-", ",", "MON", "JAN"):
        assert needle in text, needle
    # ... and both day rules: AND (a day field starts with "*") and OR (both restricted).
    fields = [expression.split() for expression, _, _ in CASES]
    assert any(f[2][0] not in "*?" and f[4][0] not in "*?" for f in fields)
    assert any(f[2].startswith("*/") and f[4][0] not in "*?" for f in fields)


@pytest.mark.parametrize(("expression", "zone", "start"), CASES, ids=lambda v: str(v))
def test_fires_are_the_same_instants_as_cronsim(expression, zone, start):
    expected = _cronsim_fires(expression, zone, start)
    ours = _our_fires(expression, zone, start, len(expected))
    assert [f.isoformat() for f in ours] == [f.isoformat() for f in expected]
