"""Calls every endpoint of a running `callstats demo` through the client openapi-python-client
generated from its OpenAPI document (`cargo xtask client`), and checks that each answers 200 and
is parsed into the generated model types, not left raw (/calls/live, read as JSON, with its
totals, queues and agents). Then downloads the CSV of every CSV
endpoint and reads it with pandas (pinned by `cargo xtask client`), checking that its header row
and records are the JSON array's rows, in order, as docs/behaviour.md ("CSV") says.

Usage: check.py BASE_URL DETAIL_KEY AGGREGATE_KEY
  BASE_URL       e.g. http://127.0.0.1:8080 (without /api/v1)
  DETAIL_KEY     a key holding every scope (kpi:detail included)
  AGGREGATE_KEY  a key holding only kpi:aggregate

mypy --strict checks this file together with the generated package.
"""

from __future__ import annotations

import datetime
import io
import json
import sys
from typing import Any, TypeVar

import pandas  # type: ignore[import-untyped, unused-ignore]

from callstats_client import AuthenticatedClient
from callstats_client.api.calls import (
    calls_agents,
    calls_intervals,
    calls_live,
    calls_queues,
    calls_summary,
    calls_trend,
)
from callstats_client.api.key import ping
from callstats_client.api.kpi import kpi_month, kpi_months
from callstats_client.api.meta import openapi_json, problem_type
from callstats_client.api.operations import healthz, readyz
from callstats_client.api.operators import operators, schedule
from callstats_client.api.scripts import scripts_stats
from callstats_client.models import (
    AgentsResponse,
    AgentState,
    CallsSummaryDirection,
    CallSummary,
    Granularity,
    Health,
    HourCount,
    IntervalsResponse,
    KeyInfo,
    KpiAggregate,
    KpiAggregateGranularity,
    KpiDetail,
    KpiDetailGranularity,
    LiveAgentEntry,
    LiveQueueEntry,
    LiveResponse,
    LiveTotals,
    OpenapiJsonResponse200,
    OperatorsResponse,
    ProblemType,
    QueuesResponse,
    Schedule,
    ScriptsResponse,
    ServiceLevel,
    SheetsResponse,
    TrendResponse,
)
from callstats_client.types import Response

T = TypeVar("T")
R = TypeVar("R")

failures: list[str] = []


def expect(name: str, response: Response[R], model: type[T]) -> T | None:
    """The parsed body when the answer is a 200 parsed into `model`; records a failure else."""
    parsed: object = response.parsed
    if response.status_code != 200:
        failures.append(f"{name}: status {response.status_code}: {response.content[:300]!r}")
        return None
    if not isinstance(parsed, model):
        failures.append(f"{name}: parsed into {type(parsed).__name__}, not {model.__name__}")
        return None
    print(f"ok  {name}: {model.__name__}")
    return parsed


def check(name: str, condition: bool) -> None:
    if not condition:
        failures.append(name)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class JsonNumber(str):
    """A number of a JSON body, kept as the text the JSON wrote."""


def flattened(prefix: str, value: Any, out: dict[str, str]) -> None:
    """`value`'s fields as the CSV writes them: nested objects with a dot, null empty, numbers
    as the JSON wrote them (parsed as text), text guarded against formulas."""
    if isinstance(value, dict):
        for name, field in value.items():
            flattened(f"{prefix}.{name}" if prefix else name, field, out)
    elif value is None:
        out[prefix] = ""
    elif isinstance(value, bool):
        out[prefix] = "true" if value else "false"
    elif isinstance(value, JsonNumber):
        out[prefix] = str(value)
    elif isinstance(value, str) and value.startswith(FORMULA_STARTS):
        out[prefix] = "'" + value
    else:
        out[prefix] = str(value)


def check_csv(client: AuthenticatedClient, path: str, params: dict[str, str], array: str) -> None:
    """The CSV of `path` read by pandas holds the rows of the JSON's `array`, in order."""
    http = client.get_httpx_client()
    as_json = http.get(path, params=params)
    as_csv = http.get(path, params=params, headers={"Accept": "text/csv"})
    name = f"{path} as CSV"
    if as_json.status_code != 200 or as_csv.status_code != 200:
        failures.append(f"{name}: status {as_json.status_code} / {as_csv.status_code}")
        return
    check(
        f"{name}: Content-Type",
        as_csv.headers.get("content-type") == "text/csv; charset=utf-8; header=present",
    )
    check(
        f"{name}: Content-Disposition",
        as_csv.headers.get("content-disposition", "").startswith("attachment; filename=\""),
    )
    check(f"{name}: its own ETag", as_csv.headers.get("etag") != as_json.headers.get("etag"))
    # Numbers kept as the JSON's text, to compare with the CSV's exactly.
    rows = json.loads(as_json.text, parse_float=JsonNumber, parse_int=JsonNumber)[array]
    table = pandas.read_csv(
        io.BytesIO(as_csv.content), dtype=str, keep_default_na=False, encoding="utf-8"
    )
    expected: list[dict[str, str]] = []
    for row in rows:
        fields: dict[str, str] = {}
        flattened("", row, fields)
        expected.append(fields)
    header = [str(column) for column in table.columns]
    if expected:
        check(f"{name}: the header row is the JSON field names", header == list(expected[0]))
    check(f"{name}: {len(rows)} rows", len(table) == len(rows))
    read = [dict(zip(header, (str(cell) for cell in record))) for record in table.itertuples(index=False)]
    for number, (got, want) in enumerate(zip(read, expected)):
        if got != want:
            failures.append(f"{name}: row {number}: {got} != {want}")
            return
    print(f"ok  {name}: {len(rows)} rows read by pandas {pandas.__version__}")


def main(base_url: str, detail_key: str, aggregate_key: str) -> int:
    detail = AuthenticatedClient(base_url=base_url, token=detail_key, raise_on_unexpected_status=True)
    aggregate = AuthenticatedClient(
        base_url=base_url, token=aggregate_key, raise_on_unexpected_status=True
    )
    # Yesterday in Tashkent: settled, with calls, and a single day (so `hourly` is a list).
    tashkent = datetime.timezone(datetime.timedelta(hours=5))
    yesterday = datetime.datetime.now(tashkent).date() - datetime.timedelta(days=1)

    key = expect("/ping", ping.sync_detailed(client=detail), KeyInfo)
    if key is not None:
        check("/ping: ok", key.ok)

    summary = expect(
        "/calls/summary (one day)",
        calls_summary.sync_detailed(client=detail, start=yesterday),
        CallSummary,
    )
    if summary is not None:
        check("/calls/summary: 24 hourly buckets", summary.hourly is not None and len(summary.hourly) == 24)
        check("/calls/summary: peak_hour", isinstance(summary.peak_hour, HourCount))
        check(
            "/calls/summary: answered + unanswered == total",
            summary.answered_calls + summary.unanswered_calls == summary.total_calls,
        )
        # The demo's platform sends waits: the service figures are there, within their bounds.
        level = summary.service_level
        check("/calls/summary: a service level", isinstance(level, ServiceLevel))
        if isinstance(level, ServiceLevel):
            check("/calls/summary: threshold 20 by default", level.threshold_seconds == 20)
            check("/calls/summary: 0 <= service level <= 100", 0 <= level.percent <= 100)
            check(
                "/calls/summary: answered within threshold <= calls with a wait",
                level.answered_within_threshold <= level.calls_with_wait,
            )
        rate = summary.abandon_rate_percent
        check("/calls/summary: an abandon rate", isinstance(rate, float) and 0 <= rate <= 100)
        speed, longest = summary.average_speed_of_answer_seconds, summary.longest_wait_seconds
        check(
            "/calls/summary: speed of answer <= longest wait",
            isinstance(speed, float) and isinstance(longest, float) and speed <= longest,
        )
        check(
            "/calls/summary: a handle time",
            isinstance(summary.average_handle_time_seconds, float),
        )
    outbound = expect(
        "/calls/summary (outbound)",
        calls_summary.sync_detailed(
            client=detail, start=yesterday, direction=CallsSummaryDirection.OUTBOUND
        ),
        CallSummary,
    )
    if outbound is not None:
        check("/calls/summary (outbound): no service level", outbound.service_level is None)
    queues = expect(
        "/calls/queues",
        calls_queues.sync_detailed(client=detail, start=yesterday, sl_threshold=30),
        QueuesResponse,
    )
    if queues is not None:
        check("/calls/queues: threshold 30", queues.sl_threshold_seconds == 30)
        named_queues = [row for row in queues.queues if isinstance(row.queue, str)]
        check("/calls/queues: three to five named_queues queues", 3 <= len(named_queues) <= 5)
        if summary is not None:
            check(
                "/calls/queues: offered adds up to the summary's total",
                sum(row.offered for row in queues.queues) == summary.total_calls,
            )
        if named_queues and isinstance(named_queues[0].queue, str):
            one = expect(
                f"/calls/summary (queue {named_queues[0].queue})",
                calls_summary.sync_detailed(
                    client=detail, start=yesterday, sl_threshold=30, queue=named_queues[0].queue
                ),
                CallSummary,
            )
            if one is not None:
                check("/calls/summary with a queue: its row's offered", one.total_calls == named_queues[0].offered)
                check(
                    "/calls/summary with a queue: its row's service level",
                    isinstance(one.service_level, ServiceLevel)
                    and one.service_level.percent == named_queues[0].service_level_percent,
                )
    intervals = expect(
        "/calls/intervals",
        calls_intervals.sync_detailed(client=detail, start=yesterday),
        IntervalsResponse,
    )
    if intervals is not None:
        check("/calls/intervals: 30 minutes by default", intervals.interval_minutes == 30)
        check("/calls/intervals: 48 rows a day", len(intervals.intervals) == 48)
        check(
            "/calls/intervals: the day's first interval",
            # The client parses a date-time: the instant is Tashkent's midnight of the day.
            intervals.intervals[0].start
            == datetime.datetime.combine(yesterday, datetime.time(), tashkent),
        )
        if summary is not None:
            check(
                "/calls/intervals: offered adds up to the summary's total",
                sum(row.offered for row in intervals.intervals) == summary.total_calls,
            )
    four_weeks = yesterday - datetime.timedelta(days=27)
    trend = expect(
        "/calls/trend",
        calls_trend.sync_detailed(client=detail, start=four_weeks, end=yesterday),
        TrendResponse,
    )
    four_week_summary = expect(
        "/calls/summary (four weeks)",
        calls_summary.sync_detailed(client=detail, start=four_weeks, end=yesterday),
        CallSummary,
    )
    if trend is not None:
        check("/calls/trend: weeks by default", trend.granularity == Granularity.WEEK)
        check(
            "/calls/trend: the buckets cover the 28 days",
            sum(bucket.days for bucket in trend.buckets) == 28,
        )
        if four_week_summary is not None:
            check(
                "/calls/trend: offered adds up to the summary's total",
                sum(bucket.offered for bucket in trend.buckets)
                == four_week_summary.total_calls,
            )
    week = expect(
        "/calls/summary (a week)",
        calls_summary.sync_detailed(
            client=detail, start=yesterday - datetime.timedelta(days=6), end=yesterday
        ),
        CallSummary,
    )
    if week is not None:
        check("/calls/summary (a week): hourly is null", week.hourly is None)
        check("/calls/summary (a week): 7 days", len(week.daily) == 7)

    agents = expect(
        "/calls/agents",
        calls_agents.sync_detailed(client=detail, start=yesterday),
        AgentsResponse,
    )
    if agents is not None:
        check("/calls/agents: some agents", len(agents.agents) > 0)
    of_queue = expect(
        "/calls/agents (queue sales)",
        calls_agents.sync_detailed(client=detail, start=yesterday, queue="sales"),
        AgentsResponse,
    )
    if of_queue is not None and agents is not None:
        check(
            "/calls/agents (queue sales): fewer calls than all",
            sum(a.calls for a in of_queue.agents) < sum(a.calls for a in agents.agents),
        )

    live = expect("/calls/live", calls_live.sync_detailed(client=detail), LiveResponse)
    if live is not None:
        check(f"/calls/live: timezone +05:00, got {live.timezone!r}", live.timezone == "+05:00")
        check("/calls/live: as_of an instant", isinstance(live.as_of, datetime.datetime))
        totals = live.totals
        check("/calls/live: totals", isinstance(totals, LiveTotals))
        counts = {
            "waiting": totals.waiting,
            "agents_available": totals.agents_available,
            "agents_on_call": totals.agents_on_call,
            "agents_wrap_up": totals.agents_wrap_up,
            "agents_away": totals.agents_away,
        }
        for field, count in counts.items():
            check(f"/calls/live: totals.{field} a count, got {count!r}", isinstance(count, int) and count >= 0)
        oldest = totals.oldest_wait_seconds
        check(
            "/calls/live: totals.oldest_wait_seconds a number exactly when callers wait",
            (oldest is None) == (totals.waiting == 0)
            and (oldest is None or isinstance(oldest, (int, float))),
        )
        check("/calls/live: queues a list", isinstance(live.queues, list))
        check(
            "/calls/live: every queue a LiveQueueEntry",
            all(isinstance(queue, LiveQueueEntry) for queue in live.queues),
        )
        check(
            "/calls/live: totals.waiting adds up the queues'",
            totals.waiting == sum(queue.waiting for queue in live.queues),
        )
        check("/calls/live: agents a list", isinstance(live.agents, list))
        check("/calls/live: some agents", len(live.agents) > 0)
        check(
            "/calls/live: every agent a LiveAgentEntry in a known state",
            all(
                isinstance(agent, LiveAgentEntry) and isinstance(agent.state, AgentState)
                for agent in live.agents
            ),
        )
        by_state = {
            AgentState.AVAILABLE: totals.agents_available,
            AgentState.ON_CALL: totals.agents_on_call,
            AgentState.WRAP_UP: totals.agents_wrap_up,
            AgentState.AWAY: totals.agents_away,
        }
        for state, count in by_state.items():
            check(
                f"/calls/live: totals count the agents {state}",
                count == sum(1 for agent in live.agents if agent.state == state),
            )

    sheets = expect("/kpi/months", kpi_months.sync_detailed(client=detail), SheetsResponse)
    month = sheets.sheets[0].month if sheets is not None and sheets.sheets else None
    check("/kpi/months: a published sheet", month is not None)
    if month is not None:
        named = expect(
            f"/kpi/{month} (kpi:detail)",
            kpi_month.sync_detailed(month, client=detail),
            KpiDetail,
        )
        if named is not None:
            check("/kpi/{month}: granularity detail", named.granularity == KpiDetailGranularity.DETAIL)
            check("/kpi/{month}: operator rows", len(named.operators) == named.operator_count)
        anonymous = expect(
            f"/kpi/{month} (kpi:aggregate)",
            kpi_month.sync_detailed(month, client=aggregate),
            KpiAggregate,
        )
        if anonymous is not None:
            check(
                "/kpi/{month}: granularity aggregate",
                anonymous.granularity == KpiAggregateGranularity.AGGREGATE,
            )
            # Null for a sheet smaller than the deployment's minimum (1 in the demo: never).
            check(
                "/kpi/{month}: ranks",
                anonymous.ranks is not None and len(anonymous.ranks) == anonymous.operator_count,
            )

    first = operators.sync_detailed(client=detail)
    roster = expect("/operators", first, OperatorsResponse)
    if roster is not None:
        check("/operators: a roster", len(roster.operators) > 0)
    # The validator it answered with: asked again with it, the answer is a 304 without a body.
    etag = first.headers.get("etag")
    check("/operators: an ETag", etag is not None)
    if etag is not None:
        again = operators.sync_detailed(client=detail, if_none_match=etag)
        check(
            f"/operators with If-None-Match: 304, got {again.status_code}",
            again.status_code == 304 and again.parsed is None and not again.content,
        )
    expect(
        "/schedule",
        schedule.sync_detailed(client=detail, month=yesterday.strftime("%Y-%m")),
        Schedule,
    )
    scripts = expect(
        "/scripts/stats", scripts_stats.sync_detailed(client=detail, limit=5), ScriptsResponse
    )
    if scripts is not None:
        check("/scripts/stats: at most 5", len(scripts.scripts) <= 5)
    expect("/openapi.json", openapi_json.sync_detailed(client=detail), OpenapiJsonResponse200)
    problem = expect(
        "/problems/missing-scope",
        problem_type.sync_detailed("missing-scope", client=detail),
        ProblemType,
    )
    if problem is not None:
        check("/problems/missing-scope: a 403", problem.status == 403)
    day = yesterday.isoformat()
    for path, params, array in [
        ("/api/v1/calls/agents", {"start": day}, "agents"),
        ("/api/v1/calls/intervals", {"start": day, "interval": "15"}, "intervals"),
        ("/api/v1/calls/queues", {"start": day}, "queues"),
        (
            "/api/v1/calls/trend",
            {"start": (yesterday - datetime.timedelta(days=27)).isoformat(), "end": day},
            "buckets",
        ),
        ("/api/v1/operators", {}, "operators"),
        ("/api/v1/schedule", {"month": yesterday.strftime("%Y-%m")}, "off_days"),
        ("/api/v1/scripts/stats", {"limit": "100"}, "scripts"),
    ]:
        check_csv(detail, path, params, array)

    expect("/healthz", healthz.sync_detailed(client=detail), Health)
    expect("/readyz", readyz.sync_detailed(client=detail), Health)

    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
