/**
 * Calls every endpoint of a running `callstats demo` through openapi-fetch, typed by the
 * schema.d.ts openapi-typescript generated from its OpenAPI document (`cargo xtask client-ts`),
 * and checks that each answers 200 with the fields its type promises, and that a date outside
 * the calendar is a 400 whose problem details read through the generated error type. /calls/live
 * is also read as an event stream (plain fetch, `Accept: text/event-stream`): its first `live`
 * event's data is the live figures, typed as the generated `LiveResponse`.
 *
 * Usage: node check.js BASE_URL DETAIL_KEY AGGREGATE_KEY
 *   BASE_URL       e.g. http://127.0.0.1:8080 (without /api/v1)
 *   DETAIL_KEY     a key holding every scope (kpi:detail included)
 *   AGGREGATE_KEY  a key holding only kpi:aggregate
 *
 * `tsc --noEmit --strict` checks this file together with the generated types.
 */

import createClient from "openapi-fetch";

import type { components, paths } from "./schema.js";

// The two members of Node's `process` used here: not worth @types/node.
declare const process: { argv: string[]; exitCode: number | undefined };

type Schemas = components["schemas"];

const failures: string[] = [];

/** The body when the answer is a 200 with one; records a failure else. */
function expect<T>(
  name: string,
  answer: { data?: T; error?: unknown; response: Response },
): T | undefined {
  const { data, error, response } = answer;
  if (response.status !== 200 || data === undefined) {
    failures.push(`${name}: status ${response.status}: ${JSON.stringify(error)?.slice(0, 300)}`);
    return undefined;
  }
  console.log(`ok  ${name}`);
  return data;
}

function check(name: string, condition: boolean): void {
  if (!condition) {
    failures.push(name);
  }
}

/** What the document types as `string | null` must be one at run time too. */
function stringOrNull(value: string | null): boolean {
  return value === null || typeof value === "string";
}

/** The figures every summary promises, one day or several. */
function checkSummary(name: string, summary: Schemas["CallSummary"], start: string, end: string): void {
  check(
    `${name}: answered + unanswered == total`,
    summary.answered_calls + summary.unanswered_calls === summary.total_calls,
  );
  check(`${name}: period ${start} to ${end}`, summary.period.start_date === start && summary.period.end_date === end);
  check(`${name}: as_of a string or null`, stringOrNull(summary.as_of));
  check(`${name}: provisional_from a string or null`, stringOrNull(summary.provisional_from));
  check(
    `${name}: daily adds up to total`,
    summary.daily.reduce((sum, day) => sum + day.count, 0) === summary.total_calls,
  );
}

/**
 * The data of the first `live` event of the stream at `url`, parsed; the stream is aborted once
 * it has arrived, or after `withinMs` without one. An event is its lines up to a blank one:
 * `event:` names it, its `data:` lines joined by newlines are its data; comments and `id:` and
 * `retry:` lines play no part here.
 */
async function firstLiveEvent(url: string, key: string, withinMs: number): Promise<unknown> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), withinMs);
  try {
    const response = await fetch(url, {
      headers: { Authorization: `Bearer ${key}`, Accept: "text/event-stream" },
      signal: controller.signal,
    });
    const type = response.headers.get("content-type") ?? "";
    if (response.status !== 200 || !type.startsWith("text/event-stream") || response.body === null) {
      throw new Error(`status ${response.status}, Content-Type ${JSON.stringify(type)}`);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        throw new Error("the stream ended before a live event");
      }
      // Lines end in CRLF, CR or LF; a CR that ends the chunk waits for what follows it.
      buffered += decoder.decode(value, { stream: true });
      const held = buffered.endsWith("\r") ? "\r" : "";
      buffered = buffered.slice(0, buffered.length - held.length).replace(/\r\n?/g, "\n") + held;
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const block = buffered.slice(0, end).split("\n");
        buffered = buffered.slice(end + 2);
        const field = (name: string): string[] =>
          block
            .filter((line) => line.startsWith(`${name}:`))
            .map((line) => line.slice(name.length + 1).replace(/^ /, ""));
        const data = field("data");
        if (field("event")[0] === "live" && data.length > 0) {
          return JSON.parse(data.join("\n")) as unknown;
        }
      }
    }
  } finally {
    clearTimeout(timer);
    // Done with the stream (or given up on it): the connection closes, and the service's stream
    // with it.
    controller.abort();
  }
}

/** The media types this check reads. */
type Json = "application/json" | "application/problem+json";

async function main(baseUrl: string, detailKey: string, aggregateKey: string): Promise<number> {
  // JSON and problem details: the CSV endpoints also describe `text/csv`, which this check does
  // not ask for.
  const detail = createClient<paths, Json>({
    baseUrl,
    headers: { Authorization: `Bearer ${detailKey}` },
  });
  const aggregate = createClient<paths, Json>({
    baseUrl,
    headers: { Authorization: `Bearer ${aggregateKey}` },
  });
  // Yesterday in Tashkent (+05:00, no daylight saving): settled, with calls, and a single day (so
  // `hourly` is a list); the week ends on it.
  const dayMs = 24 * 60 * 60 * 1000;
  const tashkentDate = (ms: number): string => new Date(ms + 5 * 60 * 60 * 1000).toISOString().slice(0, 10);
  const now = Date.now();
  const yesterday = tashkentDate(now - dayMs);
  const weekStart = tashkentDate(now - 7 * dayMs);

  const key = expect("/ping", await detail.GET("/api/v1/ping"));
  if (key !== undefined) {
    check("/ping: ok", key.ok);
    check("/ping: kpi:detail among the scopes", key.scopes.includes("kpi:detail"));
  }

  const summary = expect(
    "/calls/summary (one day)",
    await detail.GET("/api/v1/calls/summary", { params: { query: { start: yesterday } } }),
  );
  if (summary !== undefined) {
    checkSummary("/calls/summary", summary, yesterday, yesterday);
    check("/calls/summary: 24 hourly buckets", summary.hourly?.length === 24);
    check("/calls/summary: peak_hour", summary.peak_hour !== null);
    // The demo's platform sends waits: the service figures are there, within their bounds.
    const level = summary.service_level;
    check("/calls/summary: a service level", level !== null);
    if (level !== null) {
      check("/calls/summary: threshold 20 by default", level.threshold_seconds === 20);
      check("/calls/summary: 0 <= service level <= 100", level.percent >= 0 && level.percent <= 100);
      check(
        "/calls/summary: answered within threshold <= calls with a wait",
        level.answered_within_threshold <= level.calls_with_wait,
      );
    }
    const speed = summary.average_speed_of_answer_seconds;
    const longest = summary.longest_wait_seconds;
    check(
      "/calls/summary: speed of answer <= longest wait",
      speed !== null && longest !== null && speed <= longest,
    );
    check("/calls/summary: an abandon rate", summary.abandon_rate_percent !== null);
    check("/calls/summary: a handle time", summary.average_handle_time_seconds !== null);
  }
  const outbound = expect(
    "/calls/summary (outbound)",
    await detail.GET("/api/v1/calls/summary", { params: { query: { start: yesterday, direction: "outbound" } } }),
  );
  if (outbound !== undefined) {
    check("/calls/summary (outbound): no service level", outbound.service_level === null);
  }
  // The same day a week earlier, beside it: the comparison is that day's own summary.
  const weekBefore = tashkentDate(now - 8 * dayMs);
  const compared = expect(
    "/calls/summary (compare=previous_week)",
    await detail.GET("/api/v1/calls/summary", {
      params: { query: { start: yesterday, compare: "previous_week" } },
    }),
  );
  const earlier = expect(
    "/calls/summary (a week earlier)",
    await detail.GET("/api/v1/calls/summary", { params: { query: { start: weekBefore } } }),
  );
  if (compared !== undefined && earlier !== undefined) {
    const comparison = compared.comparison;
    check("/calls/summary: a comparison", comparison !== null);
    if (comparison !== null) {
      check("/calls/summary: compare previous_week", comparison.compare === "previous_week");
      check(
        `/calls/summary: the comparison's period is ${weekBefore}`,
        comparison.period.start_date === weekBefore && comparison.period.end_date === weekBefore,
      );
      check(
        "/calls/summary: the comparison is the earlier day's summary",
        comparison.total_calls === earlier.total_calls &&
          comparison.abandon_rate_percent === earlier.abandon_rate_percent &&
          comparison.service_level?.percent === earlier.service_level?.percent,
      );
    }
    check("/calls/summary: no comparison without compare", earlier.comparison === null);
  }
  const queues = expect(
    "/calls/queues",
    await detail.GET("/api/v1/calls/queues", { params: { query: { start: yesterday, sl_threshold: 30 } } }),
  );
  if (queues !== undefined) {
    check("/calls/queues: threshold 30", queues.sl_threshold_seconds === 30);
    const named = queues.queues.filter((row) => row.queue !== null);
    check("/calls/queues: three to five named queues", named.length >= 3 && named.length <= 5);
    if (summary !== undefined) {
      check(
        "/calls/queues: offered adds up to the summary's total",
        queues.queues.reduce((sum, row) => sum + row.offered, 0) === summary.total_calls,
      );
    }
    const first = named[0];
    if (first !== undefined && first.queue !== null) {
      const one = expect(
        `/calls/summary (queue ${first.queue})`,
        await detail.GET("/api/v1/calls/summary", {
          params: { query: { start: yesterday, sl_threshold: 30, queue: first.queue } },
        }),
      );
      if (one !== undefined) {
        check("/calls/summary with a queue: its row's offered", one.total_calls === first.offered);
        check(
          "/calls/summary with a queue: its row's service level",
          one.service_level?.percent === first.service_level_percent,
        );
      }
    }
  }
  const intervals = expect(
    "/calls/intervals",
    await detail.GET("/api/v1/calls/intervals", { params: { query: { start: yesterday, interval: 15 } } }),
  );
  if (intervals !== undefined) {
    check("/calls/intervals: 15 minutes", intervals.interval_minutes === 15);
    check("/calls/intervals: 96 rows a day", intervals.intervals.length === 96);
    const first = intervals.intervals[0];
    check("/calls/intervals: the day's first interval", first?.start === `${yesterday}T00:00:00+05:00`);
    if (summary !== undefined) {
      check(
        "/calls/intervals: offered adds up to the summary's total",
        intervals.intervals.reduce((sum, row) => sum + row.offered, 0) === summary.total_calls,
      );
    }
    const busy = intervals.intervals.find((row) => row.offered > 0);
    check("/calls/intervals: a busy interval answered some calls", busy !== undefined && busy.answered + busy.unanswered === busy.offered);
    const empty: number | null | undefined = intervals.intervals.find((row) => row.offered === 0)?.service_level_percent;
    check("/calls/intervals: an empty interval has no service level", empty === undefined || empty === null);
  }
  const week = expect(
    "/calls/summary (a week)",
    await detail.GET("/api/v1/calls/summary", {
      params: { query: { start: weekStart, end: yesterday } },
    }),
  );
  if (week !== undefined) {
    checkSummary("/calls/summary (a week)", week, weekStart, yesterday);
    check("/calls/summary (a week): hourly is null", week.hourly === null);
    check("/calls/summary (a week): peak_hour is null", week.peak_hour === null);
    check("/calls/summary (a week): 7 days", week.daily.length === 7);
  }

  const agents = expect(
    "/calls/agents",
    await detail.GET("/api/v1/calls/agents", { params: { query: { start: yesterday } } }),
  );
  if (agents !== undefined) {
    check("/calls/agents: some agents", agents.agents.length > 0);
    check("/calls/agents: as_of a string or null", stringOrNull(agents.as_of));
    check("/calls/agents: provisional_from a string or null", stringOrNull(agents.provisional_from));
  }
  const ofQueue = expect(
    "/calls/agents (queue sales)",
    await detail.GET("/api/v1/calls/agents", { params: { query: { start: yesterday, queue: "sales" } } }),
  );
  if (ofQueue !== undefined && agents !== undefined) {
    const calls = (board: Schemas["AgentsResponse"]): number => board.agents.reduce((sum, a) => sum + a.calls, 0);
    check("/calls/agents (queue sales): fewer calls than all", calls(ofQueue) < calls(agents));
  }

  const live = expect("/calls/live", await detail.GET("/api/v1/calls/live"));
  if (live !== undefined) {
    check(`/calls/live: timezone +05:00, got ${live.timezone}`, live.timezone === "+05:00");
    check(
      "/calls/live: totals.waiting adds up the queues'",
      live.totals.waiting === live.queues.reduce((sum, queue) => sum + queue.waiting, 0),
    );
    check("/calls/live: some agents", live.agents.length > 0);
  }
  try {
    const event = await firstLiveEvent(`${baseUrl}/api/v1/calls/live`, detailKey, 15_000);
    if (typeof event === "object" && event !== null && "totals" in event && "agents" in event) {
      // Its data is the JSON answer's body: the generated type holds for it.
      const figures = event as Schemas["LiveResponse"];
      check("/calls/live (event stream): totals an object", typeof figures.totals === "object" && figures.totals !== null);
      check("/calls/live (event stream): agents a list", Array.isArray(figures.agents));
      check("/calls/live (event stream): timezone +05:00", figures.timezone === "+05:00");
      console.log(`ok  /calls/live (event stream): a live event, ${figures.agents.length} agents`);
    } else {
      failures.push(`/calls/live (event stream): the live event has no totals or agents: ${JSON.stringify(event)}`);
    }
  } catch (err) {
    failures.push(`/calls/live (event stream): ${String(err)}`);
  }

  const sheets = expect("/kpi/months", await detail.GET("/api/v1/kpi/months"));
  const month = sheets?.sheets[0]?.month;
  check("/kpi/months: a published sheet", month !== undefined);
  if (month !== undefined) {
    const params = { params: { path: { month } } };
    const named = expect(`/kpi/${month} (kpi:detail)`, await detail.GET("/api/v1/kpi/{month}", params));
    if (named !== undefined) {
      // The body is a union tagged by `granularity`: narrowing on it reaches the named rows.
      if (named.granularity === "detail") {
        check("/kpi/{month}: operator rows", named.operators.length === named.operator_count);
      } else {
        failures.push(`/kpi/{month} with kpi:detail: granularity ${named.granularity}`);
      }
    }
    const anonymous = expect(
      `/kpi/${month} (kpi:aggregate)`,
      await aggregate.GET("/api/v1/kpi/{month}", params),
    );
    if (anonymous !== undefined) {
      if (anonymous.granularity === "aggregate") {
        // Null for a sheet smaller than the deployment's minimum (1 in the demo: never).
        check("/kpi/{month}: ranks", anonymous.ranks?.length === anonymous.operator_count);
      } else {
        failures.push(`/kpi/{month} with kpi:aggregate: granularity ${anonymous.granularity}`);
      }
    }
  }

  const first = await detail.GET("/api/v1/operators");
  const roster = expect("/operators", first);
  if (roster !== undefined) {
    check("/operators: a roster", roster.operators.length > 0);
  }
  // The validator it answered with: asked again with it, the answer is a 304 without a body.
  const etag = first.response.headers.get("etag");
  check("/operators: an ETag", etag !== null);
  if (etag !== null) {
    const again = await detail.GET("/api/v1/operators", {
      params: { header: { "If-None-Match": etag } },
    });
    check(
      `/operators with If-None-Match: 304, got ${again.response.status}`,
      again.response.status === 304 && again.data === undefined,
    );
  }

  const scheduleMonth = yesterday.slice(0, 7);
  const schedule = expect(
    "/schedule",
    await detail.GET("/api/v1/schedule", { params: { query: { month: scheduleMonth } } }),
  );
  if (schedule !== undefined) {
    check(`/schedule: month ${scheduleMonth}`, schedule.month === scheduleMonth);
  }
  const scripts = expect(
    "/scripts/stats",
    await detail.GET("/api/v1/scripts/stats", { params: { query: { limit: 5 } } }),
  );
  if (scripts !== undefined) {
    check("/scripts/stats: at most 5", scripts.scripts.length <= 5);
  }
  const document = expect("/openapi.json", await detail.GET("/api/v1/openapi.json"));
  if (document !== undefined) {
    // Typed as an object of no known members: only their presence can be asked.
    check("/openapi.json: openapi and paths", "openapi" in document && "paths" in document);
  }
  const problem = expect(
    "/problems/missing-scope",
    await detail.GET("/api/v1/problems/{name}", { params: { path: { name: "missing-scope" } } }),
  );
  if (problem !== undefined) {
    check("/problems/missing-scope: a 403", problem.status === 403);
    check("/problems/missing-scope: its own type", problem.type === "/api/v1/problems/missing-scope");
  }
  const health = expect("/healthz", await detail.GET("/healthz"));
  if (health !== undefined) {
    check(`/healthz: status ok, got ${health.status}`, health.status === "ok");
  }
  const ready = expect("/readyz", await detail.GET("/readyz"));
  if (ready !== undefined) {
    check(`/readyz: status ready, got ${ready.status}`, ready.status === "ready");
  }

  // An error, as problem details: the error type is the union of the documented bodies, and
  // `type` is what tells problem details from `{error}`.
  const bad = await detail.GET("/api/v1/calls/summary", {
    params: { query: { start: "2026-02-30" } },
    headers: { Accept: "application/problem+json" },
  });
  check(`start=2026-02-30: 400, got ${bad.response.status}`, bad.response.status === 400);
  check(
    "start=2026-02-30: application/problem+json",
    bad.response.headers.get("content-type")?.startsWith("application/problem+json") === true,
  );
  if (bad.error !== undefined && "type" in bad.error) {
    const details: Schemas["ProblemDetails"] = bad.error;
    check(`start=2026-02-30: type bad-request, got ${details.type}`, details.type === "/api/v1/problems/bad-request");
    check("start=2026-02-30: status 400 in the body", details.status === 400);
    check("start=2026-02-30: detail is the error", details.detail === details.error);
    console.log("ok  start=2026-02-30: 400 problem details");
  } else {
    failures.push(`start=2026-02-30: no problem details: ${JSON.stringify(bad.error)}`);
  }

  for (const failure of failures) {
    console.error(`FAIL ${failure}`);
  }
  return failures.length > 0 ? 1 : 0;
}

const [baseUrl, detailKey, aggregateKey, ...rest] = process.argv.slice(2);
if (baseUrl === undefined || detailKey === undefined || aggregateKey === undefined || rest.length > 0) {
  console.error("usage: node check.js BASE_URL DETAIL_KEY AGGREGATE_KEY");
  process.exitCode = 2;
} else {
  try {
    process.exitCode = await main(baseUrl, detailKey, aggregateKey);
  } catch (err) {
    console.error(`FAIL ${String(err)}`);
    process.exitCode = 1;
  }
}
