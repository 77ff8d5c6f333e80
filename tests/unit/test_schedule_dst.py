"""Cron across DST changes, pinned to zones with the 2026 transitions written down.

Transition instants (found with zoneinfo, checked by ``test_transitions_are_where_the_tables_say``):

- Europe/Berlin     spring 2026-03-29T01:00Z  02:00 CET  (+01) -> 03:00 CEST (+02); 02:00-02:59 skipped
                    autumn 2026-10-25T01:00Z  03:00 CEST (+02) -> 02:00 CET  (+01); 02:00-02:59 twice
- America/New_York  spring 2026-03-08T07:00Z  02:00 EST  (-05) -> 03:00 EDT  (-04); 02:00-02:59 skipped
                    autumn 2026-11-01T06:00Z  02:00 EDT  (-04) -> 01:00 EST  (-05); 01:00-01:59 twice
- Australia/Lord_Howe (a 30-minute shift)
                    autumn 2026-04-04T15:00Z  02:00 (+11) -> 01:30 (+10:30); 01:30-01:59 twice
                    spring 2026-10-03T15:30Z  02:00 (+10:30) -> 02:30 (+11); 02:00-02:29 skipped
- America/Havana (the change happens at midnight)
                    spring 2026-03-08T05:00Z  00:00 CST (-05) -> 01:00 CDT (-04); 00:00-00:59 skipped
                    autumn 2026-11-01T05:00Z  01:00 CDT (-04) -> 00:00 CST (-05); 00:00-00:59 twice
- Asia/Kolkata      no DST: +05:30 all year
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from cronsim import CronSim

from chalicelib.domain.schedule import ScheduleSpec, next_fire_after, preview, preview_marked

BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"
LORD_HOWE = "Australia/Lord_Howe"
HAVANA = "America/Havana"
KOLKATA = "Asia/Kolkata"


def local_fires(spec: ScheduleSpec, start: str, count: int) -> list[str]:
    """The next `count` fires after a local ISO instant, as local ISO strings with offsets."""
    fires = preview(spec, start=datetime.fromisoformat(start), count=count)
    return [fire.astimezone(ZoneInfo(spec.timezone)).isoformat() for fire in fires]


@pytest.mark.parametrize(
    ("zone", "before", "after"),
    [
        (BERLIN, "2026-03-29T01:59:59+01:00", "2026-03-29T03:00:00+02:00"),
        (BERLIN, "2026-10-25T02:59:59+02:00", "2026-10-25T02:00:00+01:00"),
        (NEW_YORK, "2026-03-08T01:59:59-05:00", "2026-03-08T03:00:00-04:00"),
        (NEW_YORK, "2026-11-01T01:59:59-04:00", "2026-11-01T01:00:00-05:00"),
        (LORD_HOWE, "2026-04-05T01:59:59+11:00", "2026-04-05T01:30:00+10:30"),
        (LORD_HOWE, "2026-10-04T01:59:59+10:30", "2026-10-04T02:30:00+11:00"),
        (HAVANA, "2026-03-07T23:59:59-05:00", "2026-03-08T01:00:00-04:00"),
        (HAVANA, "2026-11-01T00:59:59-04:00", "2026-11-01T00:00:00-05:00"),
    ],
)
def test_transitions_are_where_the_tables_say(zone, before, after):
    one_second_later = datetime.fromisoformat(before) + timedelta(seconds=1)
    assert one_second_later.astimezone(ZoneInfo(zone)).isoformat() == after


# --- Europe/Berlin: a fixed-time job before, on and after each change -----------------------


@pytest.mark.parametrize(
    ("cron", "policy", "start", "expected"),
    [
        # 08:00 is far from the change: the same wall time, a different offset.
        (
            "0 8 * * *",
            {},
            "2026-03-28T00:00:00+01:00",
            ["2026-03-28T08:00:00+01:00", "2026-03-29T08:00:00+02:00", "2026-03-30T08:00:00+02:00"],
        ),
        (
            "0 8 * * *",
            {},
            "2026-10-24T00:00:00+02:00",
            ["2026-10-24T08:00:00+02:00", "2026-10-25T08:00:00+01:00", "2026-10-26T08:00:00+01:00"],
        ),
        # 02:30 is skipped on 03-29: by default it runs right after the jump (01:00Z).
        (
            "30 2 * * *",
            {},
            "2026-03-28T00:00:00+01:00",
            ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        ),
        (
            "30 2 * * *",
            {"dst_skipped": "skip"},
            "2026-03-28T00:00:00+01:00",
            ["2026-03-28T02:30:00+01:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"],
        ),
        # 02:30 happens twice on 10-25: by default only the first time (00:30Z).
        (
            "30 2 * * *",
            {},
            "2026-10-24T00:00:00+02:00",
            ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        ),
        (
            "30 2 * * *",
            {"dst_repeated": "both"},
            "2026-10-24T00:00:00+02:00",
            [
                "2026-10-24T02:30:00+02:00",
                "2026-10-25T02:30:00+02:00",
                "2026-10-25T02:30:00+01:00",
                "2026-10-26T02:30:00+01:00",
            ],
        ),
    ],
)
def test_fixed_time_job_in_berlin_follows_the_dst_policy(cron, policy, start, expected):
    spec = ScheduleSpec(cron=cron, timezone=BERLIN, **policy)
    assert local_fires(spec, start, len(expected)) == expected


def test_shifted_fire_is_the_transition_instant():
    spec = ScheduleSpec(cron="30 2 * * *", timezone=BERLIN)
    fire = next_fire_after(spec, datetime(2026, 3, 28, 12, tzinfo=UTC))
    assert fire is not None
    assert fire.isoformat() == "2026-03-29T01:00:00+00:00"


def test_repeated_fixed_time_fires_at_both_instants_in_utc_when_asked():
    spec = ScheduleSpec(cron="30 2 * * *", timezone=BERLIN, dst_repeated="both")
    fires = preview(spec, start=datetime(2026, 10, 25, tzinfo=UTC), count=2)
    assert [fire.isoformat() for fire in fires] == [
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",
    ]


def test_several_skipped_times_collapse_into_one_fire_after_the_jump():
    spec = ScheduleSpec(cron="0,15,30,45 2 * * *", timezone=BERLIN)
    assert local_fires(spec, "2026-03-29T00:00:00+01:00", 2) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:00:00+02:00",
    ]


def test_a_shifted_fire_and_a_real_match_at_the_jump_are_one_fire():
    # 02:00 and 02:30 are skipped and shift to 03:00, which also matches by itself.
    spec = ScheduleSpec(cron="0,30 2,3 * * *", timezone=BERLIN)
    assert local_fires(spec, "2026-03-29T00:00:00+01:00", 3) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:30:00+02:00",
        "2026-03-30T02:00:00+02:00",
    ]


def test_fixed_time_job_fired_at_first_occurrence_does_not_fire_again_in_the_repeat():
    spec = ScheduleSpec(cron="30 2 * * *", timezone=BERLIN)
    first = datetime.fromisoformat("2026-10-25T02:30:00+02:00")
    fire = next_fire_after(spec, first)
    assert fire is not None
    assert fire.astimezone(ZoneInfo(BERLIN)).isoformat() == "2026-10-26T02:30:00+01:00"


# --- America/New_York: an hourly (wildcard) job follows the wall clock ----------------------


@pytest.mark.parametrize(
    ("policy", "start", "expected"),
    [
        # Fall back at 02:00 EDT -> 01:00 EST: the wall clock shows 01:00 twice.
        (
            {},
            "2026-11-01T00:00:00-04:00",
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T02:00:00-05:00",
                "2026-11-01T03:00:00-05:00",
            ],
        ),
        # Spring forward at 02:00 EST -> 03:00 EDT: 02:00 never shows, nothing is shifted.
        (
            {},
            "2026-03-08T00:00:00-05:00",
            ["2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"],
        ),
        # The policy is for fixed-time jobs only.
        (
            {"dst_skipped": "skip", "dst_repeated": "once"},
            "2026-11-01T00:30:00-04:00",
            ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00"],
        ),
    ],
)
def test_hourly_job_in_new_york_follows_the_wall_clock(policy, start, expected):
    spec = ScheduleSpec(cron="0 * * * *", timezone=NEW_YORK, **policy)
    assert local_fires(spec, start, len(expected)) == expected


def test_a_later_wall_time_in_the_first_pass_comes_before_an_earlier_one_in_the_repeat():
    # From 01:50 EDT the next match is 01:55 EDT, not the repeated 01:00 (EST), although
    # 01:00 is the earlier wall time.
    spec = ScheduleSpec(cron="0,55 * * * *", timezone=NEW_YORK)
    assert local_fires(spec, "2026-11-01T01:50:00-04:00", 4) == [
        "2026-11-01T01:55:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:55:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]


def test_next_fire_from_inside_the_repeated_hour_finds_the_repeat():
    spec = ScheduleSpec(cron="30 * * * *", timezone=NEW_YORK)
    fire = next_fire_after(spec, datetime.fromisoformat("2026-11-01T01:45:00-04:00"))
    assert fire is not None
    assert fire.astimezone(ZoneInfo(NEW_YORK)).isoformat() == "2026-11-01T01:30:00-05:00"


# --- Australia/Lord_Howe: the clock moves by 30 minutes ------------------------------------


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # Autumn: 02:00 (+11) -> 01:30 (+10:30); 01:30 and 01:45 happen twice.
        (
            "2026-04-05T01:20:00+11:00",
            [
                "2026-04-05T01:30:00+11:00",
                "2026-04-05T01:45:00+11:00",
                "2026-04-05T01:30:00+10:30",
                "2026-04-05T01:45:00+10:30",
                "2026-04-05T02:00:00+10:30",
            ],
        ),
        # Spring: 02:00 (+10:30) -> 02:30 (+11); 02:00 and 02:15 never show.
        (
            "2026-10-04T01:20:00+10:30",
            [
                "2026-10-04T01:30:00+10:30",
                "2026-10-04T01:45:00+10:30",
                "2026-10-04T02:30:00+11:00",
                "2026-10-04T02:45:00+11:00",
            ],
        ),
    ],
)
def test_quarter_hourly_job_on_lord_howe_follows_the_half_hour_shift(start, expected):
    spec = ScheduleSpec(cron="*/15 * * * *", timezone=LORD_HOWE)
    assert local_fires(spec, start, len(expected)) == expected


@pytest.mark.parametrize(
    ("cron", "policy", "start", "expected"),
    [
        ("15 2 * * *", {}, "2026-10-04T00:00:00+10:30", ["2026-10-04T02:30:00+11:00"]),
        ("15 2 * * *", {"dst_skipped": "skip"}, "2026-10-04T00:00:00+10:30", []),
        ("45 1 * * *", {}, "2026-04-05T00:00:00+11:00", ["2026-04-05T01:45:00+11:00"]),
        (
            "45 1 * * *",
            {"dst_repeated": "both"},
            "2026-04-05T00:00:00+11:00",
            ["2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30"],
        ),
    ],
)
def test_fixed_time_job_on_lord_howe_follows_the_dst_policy(cron, policy, start, expected):
    spec = ScheduleSpec(cron=cron, timezone=LORD_HOWE, **policy)
    same_day = [fire for fire in local_fires(spec, start, 3) if fire.startswith(start[:10])]
    assert same_day == expected


# --- America/Havana: aliases when midnight itself is skipped or repeated --------------------


@pytest.mark.parametrize(
    ("cron", "policy", "start", "expected"),
    [
        # @daily etc. are fixed-time (0 0): a skipped midnight shifts to the jump, 01:00 CDT.
        ("@daily", {}, "2026-03-07T12:00:00-05:00", ["2026-03-08T01:00:00-04:00"]),
        (
            "@daily",
            {"dst_skipped": "skip"},
            "2026-03-07T12:00:00-05:00",
            ["2026-03-09T00:00:00-04:00"],
        ),
        ("@weekly", {}, "2026-03-07T12:00:00-05:00", ["2026-03-08T01:00:00-04:00"]),
        (
            "@daily",
            {},
            "2026-10-31T12:00:00-04:00",
            ["2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"],
        ),
        (
            "@daily",
            {"dst_repeated": "both"},
            "2026-10-31T12:00:00-04:00",
            ["2026-11-01T00:00:00-04:00", "2026-11-01T00:00:00-05:00"],
        ),
        # @hourly is wildcard: no midnight on 03-08, two midnights on 11-01.
        (
            "@hourly",
            {},
            "2026-03-07T23:30:00-05:00",
            ["2026-03-08T01:00:00-04:00", "2026-03-08T02:00:00-04:00"],
        ),
        (
            "@hourly",
            {},
            "2026-10-31T23:30:00-04:00",
            ["2026-11-01T00:00:00-04:00", "2026-11-01T00:00:00-05:00", "2026-11-01T01:00:00-05:00"],
        ),
    ],
)
def test_aliases_in_havana_follow_the_dst_policy(cron, policy, start, expected):
    spec = ScheduleSpec(cron=cron, timezone=HAVANA, **policy)
    assert local_fires(spec, start, len(expected)) == expected


def test_monthly_and_yearly_aliases_run_at_local_midnight():
    monthly = ScheduleSpec(cron="@monthly", timezone=BERLIN)
    yearly = ScheduleSpec(cron="@yearly", timezone=BERLIN)
    assert local_fires(monthly, "2026-03-15T12:00:00+01:00", 2) == [
        "2026-04-01T00:00:00+02:00",
        "2026-05-01T00:00:00+02:00",
    ]
    assert local_fires(yearly, "2026-03-15T12:00:00+01:00", 2) == [
        "2027-01-01T00:00:00+01:00",
        "2028-01-01T00:00:00+01:00",
    ]


def test_zone_without_dst_keeps_its_offset_all_year():
    spec = ScheduleSpec(cron="30 2 * * *", timezone=KOLKATA)
    assert local_fires(spec, "2026-03-28T12:00:00+05:30", 2) == [
        "2026-03-29T02:30:00+05:30",
        "2026-03-30T02:30:00+05:30",
    ]
    assert local_fires(spec, "2026-10-24T12:00:00+05:30", 2) == [
        "2026-10-25T02:30:00+05:30",
        "2026-10-26T02:30:00+05:30",
    ]


# --- The policy read minute by minute, as an independent oracle ----------------------------

MINUTE = timedelta(minutes=1)
WINDOWS = {  # (zone, transition instant)
    "berlin-spring": (BERLIN, datetime(2026, 3, 29, 1, tzinfo=UTC)),
    "berlin-autumn": (BERLIN, datetime(2026, 10, 25, 1, tzinfo=UTC)),
    "new-york-spring": (NEW_YORK, datetime(2026, 3, 8, 7, tzinfo=UTC)),
    "new-york-autumn": (NEW_YORK, datetime(2026, 11, 1, 6, tzinfo=UTC)),
    "lord-howe-autumn": (LORD_HOWE, datetime(2026, 4, 4, 15, tzinfo=UTC)),
    "lord-howe-spring": (LORD_HOWE, datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),
    "havana-spring": (HAVANA, datetime(2026, 3, 8, 5, tzinfo=UTC)),
    "havana-autumn": (HAVANA, datetime(2026, 11, 1, 5, tzinfo=UTC)),
    "kolkata": (KOLKATA, datetime(2026, 3, 29, 1, tzinfo=UTC)),
}
CRONS = {  # cron: fixed-time?
    "*/15 * * * *": False,
    "0 * * * *": False,
    "15,45 * * * *": False,
    "*/7 2 * * *": False,
    "30 2 * * *": True,
    "0,30 1-3 * * *": True,
    "0 0 * * *": True,
    "0-59/10 2 * * *": True,
}
POLICIES = [("shift", "once"), ("shift", "both"), ("skip", "once"), ("skip", "both")]


def reference_fires(spec: ScheduleSpec, fixed_time: bool, start: datetime, end: datetime):
    """Every UTC minute in [start, end) at which the job fires, the policy stated plainly."""
    assert spec.cron is not None
    tz = ZoneInfo(spec.timezone)
    # cronsim on naive datetimes: the wall times the cron matches, with no DST in them.
    walls = CronSim(spec.cron, (start - timedelta(days=1)).astimezone(tz).replace(tzinfo=None))
    matching = set()
    while (wall := next(walls)) < end.astimezone(tz).replace(tzinfo=None) + timedelta(days=1):
        matching.add(wall)
    fires = []
    minute = start
    while minute < end:
        local, previous = minute.astimezone(tz), (minute - MINUTE).astimezone(tz)
        wall = local.replace(tzinfo=None)
        if wall in matching and (not fixed_time or local.fold == 0 or spec.dst_repeated == "both"):
            fires.append(minute)
        elif (
            local.utcoffset() > previous.utcoffset() and fixed_time and spec.dst_skipped == "shift"
        ):
            skipped = previous.replace(tzinfo=None) + MINUTE
            while skipped < wall and skipped not in matching:
                skipped += MINUTE
            if skipped < wall:
                fires.append(minute)
        minute += MINUTE
    return fires


@pytest.mark.parametrize("policy", POLICIES, ids="-".join)
@pytest.mark.parametrize("cron", CRONS)
@pytest.mark.parametrize("window", WINDOWS)
def test_fires_agree_with_a_minute_by_minute_reading_of_the_policy(window, cron, policy):
    zone, transition = WINDOWS[window]
    spec = ScheduleSpec(cron=cron, timezone=zone, dst_skipped=policy[0], dst_repeated=policy[1])
    start, end = transition - timedelta(hours=5), transition + timedelta(hours=5)
    expected = reference_fires(spec, CRONS[cron], start, end)

    chained = []
    fire = next_fire_after(spec, start - timedelta(microseconds=1))
    while fire is not None and fire < end:
        chained.append(fire)
        fire = next_fire_after(spec, fire)
    assert chained == expected

    # From any instant, not only from a fire: every 13 min 17 s across the window.
    after = start
    while after < end - timedelta(hours=1):
        first_expected = next(fire for fire in expected + [end] if fire > after)
        fire = next_fire_after(spec, after)
        assert fire is not None
        assert min(fire, end) == first_expected, after.isoformat()
        after += timedelta(minutes=13, seconds=17)


# --- the preview's DST marks: which fires a transition decided, and by which policy ---------


def marked(spec: ScheduleSpec, start: str, count: int) -> tuple[list[str], list[tuple]]:
    """Fires and marks as local ISO strings with offsets."""
    tz = ZoneInfo(spec.timezone)
    fires, marks = preview_marked(spec, start=datetime.fromisoformat(start), count=count)
    return (
        [fire.astimezone(tz).isoformat() for fire in fires],
        [(mark.at.astimezone(tz).isoformat(), mark.change, mark.policy) for mark in marks],
    )


@pytest.mark.parametrize(
    ("zone", "cron", "policy", "start", "fires", "marks"),
    [
        # Berlin spring: 02:30 never happens. shift: it runs at the jump, marked "shifted".
        (
            BERLIN,
            "30 2 * * *",
            {},
            "2026-03-28T12:00:00+01:00",
            ["2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
            [("2026-03-29T03:00:00+02:00", "shifted", "shift")],
        ),
        # skip: no fire that day; the mark stands at the jump, next to no fire.
        (
            BERLIN,
            "30 2 * * *",
            {"dst_skipped": "skip"},
            "2026-03-28T12:00:00+01:00",
            ["2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"],
            [("2026-03-29T03:00:00+02:00", "skipped", "skip")],
        ),
        # Berlin autumn: 02:30 happens twice. once: the first, marked "repeated".
        (
            BERLIN,
            "30 2 * * *",
            {},
            "2026-10-24T12:00:00+02:00",
            ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
            [("2026-10-25T02:30:00+02:00", "repeated", "once")],
        ),
        # both: two fires, each marked.
        (
            BERLIN,
            "30 2 * * *",
            {"dst_repeated": "both"},
            "2026-10-24T12:00:00+02:00",
            ["2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:30:00+01:00"],
            [
                ("2026-10-25T02:30:00+02:00", "repeated", "both"),
                ("2026-10-25T02:30:00+01:00", "repeated", "both"),
            ],
        ),
        # New York spring/autumn: a wildcard job follows the wall clock whatever the
        # trigger's policy; its missing fires get one mark at the jump.
        (
            NEW_YORK,
            "*/30 * * * *",
            {},
            "2026-03-08T01:00:00-05:00",
            ["2026-03-08T01:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"],
            [("2026-03-08T03:00:00-04:00", "skipped", "skip")],
        ),
        (
            NEW_YORK,
            "*/30 * * * *",
            {},
            "2026-11-01T00:45:00-04:00",
            [
                "2026-11-01T01:00:00-04:00",
                "2026-11-01T01:30:00-04:00",
                "2026-11-01T01:00:00-05:00",
                "2026-11-01T01:30:00-05:00",
                "2026-11-01T02:00:00-05:00",
            ],
            [
                ("2026-11-01T01:00:00-04:00", "repeated", "both"),
                ("2026-11-01T01:30:00-04:00", "repeated", "both"),
                ("2026-11-01T01:00:00-05:00", "repeated", "both"),
                ("2026-11-01T01:30:00-05:00", "repeated", "both"),
            ],
        ),
        # Lord Howe's 30-minute changes: 02:15 skipped in spring, 01:45 twice in autumn.
        (
            LORD_HOWE,
            "15 2 * * *",
            {},
            "2026-10-03T12:00:00+10:30",
            ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"],
            [("2026-10-04T02:30:00+11:00", "shifted", "shift")],
        ),
        (
            LORD_HOWE,
            "45 1 * * *",
            {"dst_repeated": "both"},
            "2026-04-04T12:00:00+11:00",
            ["2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30", "2026-04-06T01:45:00+10:30"],
            [
                ("2026-04-05T01:45:00+11:00", "repeated", "both"),
                ("2026-04-05T01:45:00+10:30", "repeated", "both"),
            ],
        ),
        # Havana changes at midnight: a midnight job is shifted to 01:00 CDT in spring and
        # runs once in autumn, when 00:00 comes twice.
        (
            HAVANA,
            "0 0 * * *",
            {},
            "2026-03-07T12:00:00-05:00",
            ["2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"],
            [("2026-03-08T01:00:00-04:00", "shifted", "shift")],
        ),
        (
            HAVANA,
            "0 0 * * *",
            {},
            "2026-10-31T12:00:00-04:00",
            ["2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"],
            [("2026-11-01T00:00:00-04:00", "repeated", "once")],
        ),
        # Far from a change, and in a zone without DST: no marks.
        (
            BERLIN,
            "0 8 * * *",
            {},
            "2026-03-28T00:00:00+01:00",
            ["2026-03-28T08:00:00+01:00", "2026-03-29T08:00:00+02:00"],
            [],
        ),
        (KOLKATA, "30 2 * * *", {}, "2026-03-28T00:00:00+05:30", ["2026-03-28T02:30:00+05:30"], []),
    ],
)
def test_preview_marks_each_fire_a_transition_decided_with_its_policy(
    zone, cron, policy, start, fires, marks
):
    spec = ScheduleSpec(cron=cron, timezone=zone, **policy)
    assert marked(spec, start, len(fires)) == (fires, marks)


def test_marks_of_consecutive_previews_do_not_repeat():
    spec = ScheduleSpec(cron="*/20 * * * *", timezone=BERLIN)
    start = datetime.fromisoformat("2026-03-29T01:00:00+01:00")
    fires, marks = preview_marked(spec, start=start, count=10)
    again: list = []
    after = start
    for _ in range(10):
        fire, found = preview_marked(spec, start=after, count=1)
        again.extend(found)
        after = fire[0]
    assert again == marks
    assert [(m.change, m.policy) for m in marks] == [("skipped", "skip")]


@pytest.mark.parametrize(
    ("cron", "policy", "expected"),
    [
        # 02:xx on the last Sunday of March never happens in Berlin (the EU rule).
        ("* 2 * 3 0L", {}, []),
        ("30 2 * 3 0L", {"dst_skipped": "skip"}, []),
        ("30 2 * 3 0L", {}, ["2026-03-29T03:00:00+02:00", "2027-03-28T03:00:00+02:00"]),
    ],
)
def test_a_cron_whose_every_wall_time_a_spring_change_skips(cron, policy, expected):
    spec = ScheduleSpec(cron=cron, timezone=BERLIN, **policy)
    assert local_fires(spec, "2026-01-01T00:00:00+01:00", 2) == expected
