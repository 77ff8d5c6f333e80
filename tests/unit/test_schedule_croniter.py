"""croniter as a second differential oracle, and the forms it cannot express or gets wrong.

croniter (the cron library most Python schedulers use) agrees with our matcher wherever
their semantics meet: plain fields (lists, ranges, steps, names, "L" in the day of month,
"N#K") evaluated with ``implement_cron_bug=True``, which gives the Vixie day rule (AND when a
day field starts with "*"), on days without a DST change. Those expressions are compared
here; cronsim covers the rest (``test_schedule_cronsim.py``).

The tests after the differential one pin each case where croniter and cron differ. They
are why the matcher is our own (docs/architecture.md, "Why the cron matcher is our own"):
each asserts what we do, what Debian cron does, and that croniter does otherwise (if a
croniter release fixes one, its test says so and the document is updated).
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from chalicelib.domain.schedule import ScheduleSpec, preview
from tests.unit.test_schedule_cronsim import DAYS, MONTHS, _field

SEED = 31
EXPRESSIONS = 200
FIRES = 12
# Windows without a DST change in their first weeks (croniter differs at a set-back).
ZONES = [
    ("UTC", datetime(2026, 1, 1, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2026, 5, 1, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 6, 15, 3, tzinfo=UTC)),
    ("Asia/Kolkata", datetime(2026, 2, 1, tzinfo=UTC)),
]
DOM_EXTRA = (lambda rng: "L",)
DOW_EXTRA = (
    lambda rng: f"{rng.choice([str(rng.randint(0, 6)), rng.choice(DAYS)])}#{rng.randint(1, 4)}",
)


def _expression(rng: random.Random) -> str:
    return " ".join(
        (
            _field(rng, 0, 59, 0.15),
            _field(rng, 0, 23, 0.3),
            _field(rng, 1, 31, 0.5, extra=DOM_EXTRA),
            _field(rng, 1, 12, 0.6, names=MONTHS),
            _field(rng, 0, 6, 0.5, names=DAYS, extra=DOW_EXTRA),
        )
    )


def _croniter_fires(expression: str, zone: str, start: datetime, count: int) -> list[datetime]:
    it = croniter(expression, start.astimezone(ZoneInfo(zone)), implement_cron_bug=True)
    return [it.get_next(datetime).astimezone(UTC) for _ in range(count)]


def _numbers(expression: str) -> str:
    for names, first in ((DAYS, 0), (MONTHS, 1)):
        for number, name in enumerate(names, start=first):
            expression = expression.replace(name, str(number))
    return expression


def _where_croniter_differs(expression: str) -> bool:
    """The forms pinned below as differences, never compared."""
    dom, dow = expression.split()[2], expression.split()[4]
    one_value_range = any(a == b for a, b in re.findall(r"(\d+)-(\d+)", _numbers(expression)))
    return one_value_range or ("#" in dow and dom[0] != "*")


def _cases() -> list[tuple[str, str, datetime]]:
    rng = random.Random(SEED)
    cases = []
    while len(cases) < EXPRESSIONS:
        expression = _expression(rng)
        if _where_croniter_differs(expression):
            continue
        zone, start = rng.choice(ZONES)
        try:
            _croniter_fires(expression, zone, start, 1)
        except Exception:  # noqa: BLE001 - an expression croniter refuses or never matches
            continue
        cases.append((expression, zone, start))
    return cases


CASES = _cases()


def _ours(expression: str, zone: str, start: datetime, count: int) -> list[str]:
    spec = ScheduleSpec(cron=expression, timezone=zone)
    return [f.isoformat() for f in preview(spec, start=start, count=count)]


def _theirs(expression: str, zone: str, start: datetime, count: int, **kw) -> list[str]:
    it = croniter(expression, start.astimezone(ZoneInfo(zone)), **kw)
    return [it.get_next(datetime).astimezone(UTC).isoformat() for _ in range(count)]


def test_the_croniter_expressions_cover_the_shared_syntax():
    text = " ".join(expression for expression, _, _ in CASES)
    for needle in ("L ", "#", "/", "-", ",", "MON", "JAN"):
        assert needle in text, needle
    fields = [expression.split() for expression, _, _ in CASES]
    assert any(f[2].startswith("*/") and f[4][0] != "*" for f in fields)  # the Vixie AND


@pytest.mark.parametrize(("expression", "zone", "start"), CASES, ids=lambda v: str(v))
def test_fires_are_the_same_instants_as_croniter_where_their_semantics_agree(
    expression, zone, start
):
    fires = _ours(expression, zone, start, FIRES)
    expected = [f.isoformat() for f in _croniter_fires(expression, zone, start, len(fires))]
    assert fires == expected


def test_croniter_without_the_cron_bug_flag_reads_a_star_step_day_as_or():
    # "0 0 */2 * 1": in Vixie cron (and Debian, cronie) a day field starting with "*" makes
    # the two day fields AND: Mondays on odd days. croniter's default ORs them.
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ours = _ours("0 0 */2 * 1", "UTC", start, 3)
    assert ours == [
        "2026-01-05T00:00:00+00:00",
        "2026-01-19T00:00:00+00:00",
        "2026-02-09T00:00:00+00:00",
    ]
    assert _theirs("0 0 */2 * 1", "UTC", start, 3) != ours
    assert _theirs("0 0 */2 * 1", "UTC", start, 3, implement_cron_bug=True) == ours


def test_croniter_runs_a_fixed_time_job_twice_in_the_repeated_autumn_hour():
    # 2026-10-25 02:30 happens twice in Berlin. Debian cron runs a fixed-time job once
    # ("it has probably already run"): our default, dst.repeated = "once". croniter runs
    # it at both instants, and offers no policy to choose.
    start = datetime(2026, 10, 24, 12, tzinfo=UTC)
    ours = _ours("30 2 * * *", "Europe/Berlin", start, 2)
    assert ours == ["2026-10-25T00:30:00+00:00", "2026-10-26T01:30:00+00:00"]
    assert _theirs("30 2 * * *", "Europe/Berlin", start, 2) == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",
    ]


@pytest.mark.parametrize(
    ("expression", "ours", "theirs"),
    [
        ("49-49 18 * * *", "2026-01-01T18:49:00+00:00", "2026-01-01T18:00:00+00:00"),
        ("5 10 * * WED-WED", "2026-01-07T10:05:00+00:00", "2026-01-01T10:05:00+00:00"),
    ],
)
def test_croniter_reads_a_one_value_range_as_every_value(expression, ours, theirs):
    # "49-49" is the one minute 49 in Debian cron; croniter matches every minute (and
    # "WED-WED" every day). Generated configurations write such ranges.
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert _ours(expression, "UTC", start, 1) == [ours]
    assert _theirs(expression, "UTC", start, 1, implement_cron_bug=True) == [theirs]


def test_croniter_ands_a_day_of_month_with_an_nth_weekday():
    # "0 0 1 * 3#1": both day fields restricted, so either matches (the 1st, and the first
    # Wednesday), as in cronsim and Quartz-style readers. croniter matches only the first
    # Wednesday, with or without the cron-bug flag.
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert _ours("0 0 1 * 3#1", "UTC", start, 3) == [
        "2026-01-07T00:00:00+00:00",
        "2026-02-01T00:00:00+00:00",
        "2026-02-04T00:00:00+00:00",
    ]
    assert _theirs("0 0 1 * 3#1", "UTC", start, 2, implement_cron_bug=True) == [
        "2026-01-07T00:00:00+00:00",
        "2026-02-04T00:00:00+00:00",
    ]


def test_croniter_reads_a_one_value_range_with_a_step_as_a_step_from_zero():
    # "13-13/5": Debian cron reads the range 13-13 stepped by 5, the one value 13. croniter
    # gives every fifth minute from :05.
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert _ours("13-13/5 * * * *", "UTC", start, 2) == [
        "2026-01-01T00:13:00+00:00",
        "2026-01-01T01:13:00+00:00",
    ]
    assert _theirs("13-13/5 * * * *", "UTC", start, 2) == [
        "2026-01-01T00:05:00+00:00",
        "2026-01-01T00:10:00+00:00",
    ]


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("0 0 LW * *", "2026-01-30T00:00:00+00:00"),  # the last weekday of the month
        ("0 0 * * 5L", "2026-01-30T00:00:00+00:00"),  # the last Friday
    ],
)
def test_croniter_cannot_express_the_last_weekday_forms(expression, first):
    # cronsim's and Quartz's "LW" and "NL", which EventBridge users paste, are refused.
    assert _ours(expression, "UTC", datetime(2026, 1, 1, tzinfo=UTC), 1) == [first]
    with pytest.raises(Exception, match="not acceptable"):
        _theirs(expression, "UTC", datetime(2026, 1, 1, tzinfo=UTC), 1)
