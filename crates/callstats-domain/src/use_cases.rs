//! Use cases: each combines ports with the pure logic of [`crate::stats`] for one endpoint, so
//! the web layer only parses, calls one of these and writes the answer.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;

use crate::access::{
    ApiKeyRecord, ClientAddress, KeyDigest, PresentedKey, QuotaBucket, QuotaStatus, QuotaSubject,
    RequestOrigin, Unauthorized,
};
use crate::calendar::{self, DateRange, Day, Month};
use crate::call_day::CallDay;
use crate::error::DomainError;
use crate::limits::{DayBudget, DayBudgetStatus, EarliestDay, HistoryHorizon, Requester};
use crate::live::{LiveBody, LiveError};
use crate::model::{CallScore, KeyInfo, KpiMonth, Operator, QueueName, Schedule, Script, Sheet};
use crate::params::{RosterFilter, ScriptsLimit, Shift};
use crate::ports::{
    CallDaySource, Clock, Found, KeyLookup, KeyStore, LiveSource, PortalStore, QuotaCounter,
    RequestLedger,
};
use crate::request::{ApiRequest, Endpoint};
use crate::scope::KpiView;
use crate::stats::agents::Leaderboard;
use crate::stats::intervals::Intervals;
use crate::stats::queues::Queues;
use crate::stats::summary::Summary;
use crate::stats::trend::Trend;
use crate::stats::{self, AggregateMinRows, PriorWeight};

/// Default per-minute quota of requests without a valid key, per client IP.
pub const DEFAULT_ANON_RATE_LIMIT: u32 = 60;

/// What a request presents about its caller, as the web layer read it from the request.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The key presented, in the key format; or why none can be read.
    pub key: Result<PresentedKey<'a>, Unauthorized>,
    pub origin: RequestOrigin<'a>,
    /// Peer address, or the first `X-Forwarded-For` hop behind a trusted proxy.
    pub client_ip: ClientAddress,
}

impl Caller<'_> {
    /// The digest of the key the caller presents, if it presents one of the right form.
    #[must_use]
    pub fn key_digest(&self) -> Option<KeyDigest> {
        self.key.ok().map(|key| key.digest())
    }
}

/// A caller whose key passed the key and Origin checks: what counting and answering its
/// request need.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    pub key: ApiKeyRecord,
    /// The key's request window now.
    pub window: QuotaBucket,
    /// The key's day-budget window now, with the budget, when there is one.
    pub days: Option<(u32, QuotaBucket)>,
    /// What the key's scopes let it see of the KPI sheets.
    pub view: KpiView,
    /// When the request was admitted: its windows, the key's expiry and the history horizon
    /// are all judged at this one moment (one clock read a request, not four).
    pub at: time::OffsetDateTime,
}

/// A request refused before it was counted against a key (401, an Origin 403, 429 for the
/// address's anonymous quota, or 503 when the key store failed), with the windows its
/// rate-limit headers report.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub quota: QuotaStatus,
    /// A valid key's day budget (an Origin refusal); `None` otherwise.
    pub days: Option<DayBudgetStatus>,
    pub error: DomainError,
}

/// An admitted request, counted: its quota and day budget as the headers report them, whether
/// the quota and the key's scopes let it through, and the answer cached for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    pub quota: QuotaStatus,
    pub days: Option<DayBudgetStatus>,
    /// `Err` with the 429 (quota) or the 403 (scope), in that order.
    pub verdict: Result<(), DomainError>,
    /// The answer stored under the key asked for, when there is one.
    pub cached: Option<Bytes>,
}

/// Authentication, Origin pinning, quotas and scopes: the admission of a request, in two
/// awaited steps ([`Gatekeeper::identify`], then [`Gatekeeper::count`]) that the request use
/// case takes in that order.
///
/// It reads [`KeyStore`] (the keys, through the key cache in the service), [`QuotaCounter`]
/// (the anonymous per-IP quota, and a refused key's windows), [`RequestLedger`] (a key's
/// request counted with its cached answer read) and [`Clock`].
#[derive(Clone)]
pub struct Gatekeeper {
    keys: Arc<dyn KeyStore>,
    quota: Arc<dyn QuotaCounter>,
    ledger: Arc<dyn RequestLedger>,
    clock: Arc<dyn Clock>,
    anon_rate_limit: u32,
    day_budget: DayBudget,
}

impl Gatekeeper {
    #[must_use]
    pub fn new(
        keys: Arc<dyn KeyStore>,
        quota: Arc<dyn QuotaCounter>,
        ledger: Arc<dyn RequestLedger>,
        clock: Arc<dyn Clock>,
        anon_rate_limit: u32,
    ) -> Self {
        Self {
            keys,
            quota,
            ledger,
            clock,
            anon_rate_limit,
            day_budget: DayBudget::new(0),
        }
    }

    /// Reports the keys' day budget (off unless set) in every admission.
    #[must_use]
    pub const fn with_day_budget(mut self, budget: DayBudget) -> Self {
        self.day_budget = budget;
        self
    }

    /// The window of `key`'s day budget, when there is a budget: the minute of its request
    /// `window`, whose time it shares.
    fn days_bucket(&self, key: &ApiKeyRecord, window: &QuotaBucket) -> Option<(u32, QuotaBucket)> {
        let limit = self.day_budget.per_minute()?;
        Some((
            limit,
            QuotaBucket {
                subject: QuotaSubject::KeyDays(key.id),
                ..*window
            },
        ))
    }

    /// The first checks of the documented order: key (401), then Origin (403). The quota (429)
    /// and scope (403) follow in [`Gatekeeper::count`], once the request is parsed, so that its
    /// cached answer is read on the same trip as its count.
    ///
    /// Only requests that pass the key and Origin checks count against the key's quota. A valid
    /// key refused for its Origin counts against no quota (always 403); its refusal reports the
    /// key's windows without counting. Every request without a valid key counts against the
    /// anonymous per-IP quota, which turns its answer into a 429 once exceeded: key guessing
    /// stays slow, and a valid key is not held back by it, with one exception: a key created
    /// in the last 10 seconds, presented from an address that is over that quota, is refused
    /// until the replica has read the new key's digest. A key the key store could not check
    /// (it failed) is not a bad key: its 503 counts against no quota and is never a 429.
    pub async fn identify(&self, caller: &Caller<'_>) -> Result<Admitted, Refused> {
        let now = self.clock.now();
        let key = match self.authenticate(caller, now).await {
            Ok(key) => key,
            Err(err @ DomainError::StoreUnavailable(_)) => {
                return Err(self.refuse_unchecked(caller, now, err).await);
            }
            Err(err) => return Err(self.refuse_anonymously(caller, err).await),
        };
        let window = QuotaBucket::new(&QuotaSubject::Key(key.id), now);
        let days = self.days_bucket(&key, &window);
        if !key.origin_allowed(caller.origin) {
            // Always a 403, so it counts against no quota; its headers show the key's windows
            // as they stand.
            let count = self.quota.peek(&window).await;
            let days = match &days {
                Some((limit, days)) => Some(DayBudgetStatus::current(
                    *limit,
                    self.quota.peek(days).await,
                    days,
                )),
                None => None,
            };
            return Err(Refused {
                quota: QuotaStatus::current(key.rate_limit_per_minute, count, &window),
                days,
                error: DomainError::OriginNotAllowed,
            });
        }
        let view = KpiView::for_scopes(key.scopes).unwrap_or(KpiView::Aggregate);
        Ok(Admitted {
            key,
            window,
            days,
            view,
            at: now,
        })
    }

    /// Counts an admitted request to `endpoint` and reads, on the same trip, its key's day
    /// budget and the answer cached under `answer` (the parsed request's cache key); then the
    /// quota (429) and scope (403) checks.
    pub async fn count(
        &self,
        admitted: &Admitted,
        endpoint: Endpoint,
        answer: Option<&str>,
    ) -> Counted {
        let days_window = admitted.days.as_ref().map(|(_, days)| days);
        let found = self
            .ledger
            .count(&admitted.window, days_window, answer)
            .await;
        Self::counted(admitted, endpoint, found)
    }

    /// What the ledger `found` for a request to `endpoint` means: its windows, then the quota
    /// (429) and scope (403) checks.
    fn counted(admitted: &Admitted, endpoint: Endpoint, found: Found) -> Counted {
        let quota = QuotaStatus::after(
            admitted.key.rate_limit_per_minute,
            found.requests,
            &admitted.window,
        );
        let verdict = if quota.exceeded {
            Err(DomainError::RateLimited(quota))
        } else {
            match endpoint.required_scope() {
                Some(scope) if !admitted.key.scopes.contains(scope) => {
                    Err(DomainError::MissingScope(scope))
                }
                _ => Ok(()),
            }
        };
        Counted {
            quota,
            days: admitted
                .days
                .as_ref()
                .map(|(limit, days)| DayBudgetStatus::current(*limit, found.days_used, days)),
            verdict,
            cached: found.answer,
        }
    }

    /// Counts a request that needs no key (the OpenAPI document) against the per-IP quota;
    /// the caller refuses it when `exceeded`.
    pub async fn count_anonymous(&self, client_ip: ClientAddress) -> QuotaStatus {
        let bucket = QuotaBucket::new(&QuotaSubject::Client(client_ip), self.clock.now());
        let count = self.quota.increment(&bucket).await;
        QuotaStatus::after(self.anon_rate_limit, count, &bucket)
    }

    async fn refuse_anonymously(&self, caller: &Caller<'_>, err: DomainError) -> Refused {
        let quota = self.count_anonymous(caller.client_ip).await;
        let error = if quota.exceeded {
            DomainError::RateLimited(quota)
        } else {
            err
        };
        Refused {
            quota,
            days: None,
            error,
        }
    }

    /// A request whose key could not be checked: counted against no quota, its headers show
    /// the address's anonymous window as it stands.
    async fn refuse_unchecked(
        &self,
        caller: &Caller<'_>,
        now: time::OffsetDateTime,
        error: DomainError,
    ) -> Refused {
        let bucket = QuotaBucket::new(&QuotaSubject::Client(caller.client_ip), now);
        let count = self.quota.peek(&bucket).await;
        Refused {
            quota: QuotaStatus::current(self.anon_rate_limit, count, &bucket),
            days: None,
            error,
        }
    }

    /// The presented key's record. A key that is not among the digests the key cache read
    /// recently (a guess, or a key created in the last seconds) is not looked up for an
    /// address already over its anonymous quota: a flood of guesses from one address costs the
    /// portal database at most that quota in look-ups a minute.
    async fn authenticate(
        &self,
        caller: &Caller<'_>,
        now: time::OffsetDateTime,
    ) -> Result<ApiKeyRecord, DomainError> {
        let digest = caller.key?.digest();
        let found = match self.keys.find_seen_key(&digest).await? {
            KeyLookup::Found(key) => Some(key),
            KeyLookup::Absent => None,
            KeyLookup::Unseen => {
                let bucket = QuotaBucket::new(&QuotaSubject::Client(caller.client_ip), now);
                if self.quota.peek(&bucket).await >= u64::from(self.anon_rate_limit) {
                    None
                } else {
                    self.keys.find_key(&digest).await?
                }
            }
        };
        let key = found.ok_or(Unauthorized::Invalid)?;
        key.check_usable(now)?;
        Ok(key)
    }

    /// The /ping body for an admitted key.
    #[must_use]
    pub fn ping(&self, key: &ApiKeyRecord) -> KeyInfo {
        KeyInfo {
            name: key.name.to_string(),
            scopes: key.scopes,
            rate_limit_per_minute: key.rate_limit_per_minute,
            server_time: calendar::utc_millis(self.clock.now()),
        }
    }
}

/// Tunable figures of the statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatsSettings {
    pub prior_weight: PriorWeight,
    /// How far back call periods may reach.
    pub history: HistoryHorizon,
    /// The fewest rows a KPI sheet needs for an aggregate-only key to see its distribution and
    /// ranks.
    pub kpi_aggregate_min_rows: AggregateMinRows,
}

/// Any answer of a cacheable endpoint, as the statistics computed it; the API crate
/// (`callstats-api`) writes it as the wire carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    CallSummary(Summary),
    Agents(Leaderboard),
    Queues(Queues),
    Intervals(Intervals),
    Trend(Trend),
    Live(LiveBody),
    Sheets(Vec<Sheet>),
    Kpi(KpiMonth),
    Operators(Vec<Operator>),
    Schedule(Schedule),
    Scripts(Vec<Script>),
}

/// An answer whose inputs are gathered: what is left is computation only, with no I/O.
pub struct Prepared(Box<dyn FnOnce() -> Response + Send>);

impl Prepared {
    fn new(compute: impl FnOnce() -> Response + Send + 'static) -> Self {
        Self(Box::new(compute))
    }

    /// An answer computed already (the portal's answers are light).
    fn ready(response: Response) -> Self {
        Self::new(move || response)
    }

    /// Computes the answer.
    #[must_use]
    pub fn compute(self) -> Response {
        (self.0)()
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prepared")
    }
}

/// The statistics use cases: one method per data endpoint, and [`CallStats::answer`] for any
/// parsed request.
///
/// It reads three ports: [`PortalStore`] (roster, scores, KPI sheets, off-days, scripts),
/// [`CallDaySource`] (the calls of a range as held days, fetched for a [`Requester`]) and
/// [`Clock`] (only for the history horizon). Tests mock them with `MockPortalStore`,
/// `MockCallDaySource` and `MockClock` or `testing::TestClock` (feature `mock`;
/// docs/testing.md). A port's failure is the method's error: [`DomainError::StoreUnavailable`]
/// or, from the call days, [`DomainError::UpstreamUnavailable`], [`DomainError::UpstreamBusy`]
/// or the day budget's [`DomainError::DayBudgetExceeded`] (503, 503, 429).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
///
/// use callstats_domain::ports::{MockCallDaySource, MockPortalStore};
/// use callstats_domain::use_cases::{CallStats, StatsSettings};
/// use callstats_domain::testing::{TestClock, operator, tashkent};
///
/// let mut store = MockPortalStore::new();
/// store.expect_operators().returning(|| Ok(vec![operator("101", "Dilnoza", None)]));
/// let stats = CallStats::new(
///     Arc::new(store),
///     Arc::new(MockCallDaySource::new()), // the roster reads no call days
///     TestClock::at(tashkent("2026-11-03 12:00")),
///     StatsSettings::default(),
/// );
/// let roster = stats.operators().await.unwrap();
/// assert_eq!(roster[0].name, "Dilnoza");
/// # }
/// ```
#[derive(Clone)]
pub struct CallStats {
    store: Arc<dyn PortalStore>,
    calls: Arc<dyn CallDaySource>,
    clock: Arc<dyn Clock>,
    settings: StatsSettings,
    /// The live figures; without a source, /calls/live answers that the platform reports none.
    live: Option<Arc<dyn LiveSource>>,
}

impl CallStats {
    /// The use cases over the portal's data (`store`), the held call days (`calls`) and the
    /// time (`clock`).
    #[must_use]
    pub fn new(
        store: Arc<dyn PortalStore>,
        calls: Arc<dyn CallDaySource>,
        clock: Arc<dyn Clock>,
        settings: StatsSettings,
    ) -> Self {
        Self {
            store,
            calls,
            clock,
            settings,
            live: None,
        }
    }

    /// Answers /calls/live from `live`.
    #[must_use]
    pub fn with_live(mut self, live: Arc<dyn LiveSource>) -> Self {
        self.live = Some(live);
        self
    }

    /// The earliest day a call period may start on now (the history horizon), if any.
    #[must_use]
    pub fn earliest_call_day(&self) -> Option<EarliestDay> {
        self.earliest_call_day_at(self.clock.now())
    }

    /// The earliest day a call period may start on at `now`.
    #[must_use]
    pub fn earliest_call_day_at(&self, now: time::OffsetDateTime) -> Option<EarliestDay> {
        self.settings.history.earliest(Day::of(now))
    }

    /// The response-cache key of `request`'s answer: [`ApiRequest::cache_key`], plus the
    /// small-group bound for an aggregate KPI body when it hides anything, so that a body made
    /// under one bound is never served under another (replicas sharing a cache while the
    /// setting changes, or a cache that outlives a restart).
    #[must_use]
    pub fn cache_key(&self, request: &ApiRequest) -> Cow<'static, str> {
        let key = request.cache_key();
        let min_rows = self.settings.kpi_aggregate_min_rows;
        match request {
            ApiRequest::KpiMonth {
                view: KpiView::Aggregate,
                ..
            } if min_rows != AggregateMinRows::DEFAULT => {
                Cow::Owned(format!("{key}&min_rows={}", min_rows.get()))
            }
            _ => key,
        }
    }

    /// Answers any parsed request; the call days it fetches are fetched for `requester`.
    pub async fn answer(
        &self,
        request: &ApiRequest,
        requester: &Requester,
    ) -> Result<Response, DomainError> {
        Ok(self.prepare(request, requester).await?.compute())
    }

    /// Gathers what the answer to `request` needs (every read of a port), leaving only the
    /// computation, which the caller runs where it wants: the statistics over a month of calls
    /// are the one heavy part of an answer.
    pub async fn prepare(
        &self,
        request: &ApiRequest,
        requester: &Requester,
    ) -> Result<Prepared, DomainError> {
        Ok(match request {
            ApiRequest::CallsSummary {
                range,
                direction,
                rules,
                queue,
                compare,
            } => {
                let (range, direction, rules, compare) = (*range, *direction, *rules, *compare);
                let queue = queue.clone();
                let days = self.calls.days(range, requester).await?;
                let earlier = match compare {
                    Some(compare) => {
                        let earlier = compare.earlier(&range);
                        Some((compare, earlier, self.calls.days(earlier, requester).await?))
                    }
                    None => None,
                };
                Prepared::new(move || {
                    let mut summary =
                        stats::call_summary(&range, direction, rules, queue.as_ref(), &days);
                    summary.comparison = earlier.map(|(compare, earlier, days)| {
                        stats::comparison(
                            compare,
                            &earlier,
                            direction,
                            rules,
                            queue.as_ref(),
                            &days,
                        )
                    });
                    Response::CallSummary(summary)
                })
            }
            ApiRequest::CallsAgents {
                range,
                queue,
                roster: filter,
            } => {
                let range = *range;
                let (queue, filter) = (queue.clone(), filter.clone());
                let (days, scores, roster) = self.agents_inputs(range, &filter, requester).await?;
                let prior_weight = self.settings.prior_weight;
                Prepared::new(move || {
                    Response::Agents(stats::agent_leaderboard(
                        &range,
                        queue.as_ref(),
                        &filter,
                        &days,
                        &scores,
                        &roster,
                        prior_weight,
                    ))
                })
            }
            ApiRequest::CallsQueues {
                range,
                direction,
                rules,
            } => {
                let (range, direction, rules) = (*range, *direction, *rules);
                let days = self.calls.days(range, requester).await?;
                Prepared::new(move || {
                    Response::Queues(stats::queues_response(&range, direction, rules, &days))
                })
            }
            ApiRequest::CallsIntervals {
                range,
                direction,
                interval,
                rules,
                queue,
            } => {
                let (range, direction, interval, rules) = (*range, *direction, *interval, *rules);
                let queue = queue.clone();
                let days = self.calls.days(range, requester).await?;
                Prepared::new(move || {
                    Response::Intervals(stats::intervals_response(
                        &range,
                        direction,
                        interval,
                        rules,
                        queue.as_ref(),
                        &days,
                    ))
                })
            }
            ApiRequest::CallsTrend {
                range,
                direction,
                granularity,
                rules,
                queue,
            } => {
                let (range, direction, granularity, rules) =
                    (*range, *direction, *granularity, *rules);
                let queue = queue.clone();
                let rollups = self.calls.rollups(range, requester).await?;
                Prepared::new(move || {
                    Response::Trend(stats::trend_response(
                        &range,
                        direction,
                        granularity,
                        rules,
                        queue.as_ref(),
                        &rollups,
                    ))
                })
            }
            ApiRequest::CallsLive => Prepared::ready(Response::Live(self.live().await?)),
            ApiRequest::KpiMonths => Prepared::ready(Response::Sheets(self.kpi_months().await?)),
            ApiRequest::KpiMonth { month, shift, view } => Prepared::ready(Response::Kpi(
                self.kpi_month(*month, shift.as_ref(), *view).await?,
            )),
            ApiRequest::Operators => Prepared::ready(Response::Operators(self.operators().await?)),
            ApiRequest::Schedule { month } => {
                Prepared::ready(Response::Schedule(self.schedule(*month).await?))
            }
            ApiRequest::ScriptsStats { limit } => {
                Prepared::ready(Response::Scripts(self.scripts(*limit).await?))
            }
        })
    }

    /// /calls/agents: the leaderboard of `range` (of `queue` only, when given; of the agents
    /// of `filter`'s team and shift), the agents named from the roster and their quality
    /// scores smoothed by the prior weight. Reads the days of `range`, the scores of `range`
    /// and the roster, concurrently; fails as the first of them that fails. A team or shift
    /// the roster does not have is a 400, read before any day is asked for.
    pub async fn call_agents(
        &self,
        range: DateRange,
        queue: Option<&QueueName>,
        filter: &RosterFilter,
        requester: &Requester,
    ) -> Result<Leaderboard, DomainError> {
        let (days, scores, roster) = self.agents_inputs(range, filter, requester).await?;
        Ok(stats::agent_leaderboard(
            &range,
            queue,
            filter,
            &days,
            &scores,
            &roster,
            self.settings.prior_weight,
        ))
    }

    /// The leaderboard's inputs: calls, scores and roster, fetched concurrently; with a team or
    /// a shift, the roster first, so that one it does not have spends no day.
    async fn agents_inputs(
        &self,
        range: DateRange,
        filter: &RosterFilter,
        requester: &Requester,
    ) -> Result<(Vec<Arc<CallDay>>, Vec<CallScore>, Vec<Operator>), DomainError> {
        let checked_roster = if filter.is_set() {
            let roster = self.store.operators().await?;
            filter
                .check(
                    roster
                        .iter()
                        .map(|operator| (operator.team.as_str(), operator.shift.as_str())),
                )
                .map_err(DomainError::BadRequest)?;
            Some(roster)
        } else {
            None
        };
        futures::try_join!(
            async {
                self.calls
                    .days(range, requester)
                    .await
                    .map_err(DomainError::from)
            },
            async {
                self.store
                    .call_scores(range)
                    .await
                    .map_err(DomainError::from)
            },
            async {
                match checked_roster {
                    Some(roster) => Ok(roster),
                    None => self.store.operators().await.map_err(DomainError::from),
                }
            },
        )
    }

    /// /kpi/months: every published KPI sheet, in order. Reads
    /// [`PortalStore::published_sheets`].
    /// /calls/live: what is happening now, as the live source last saw it. 404 when the call
    /// platform reports no live figures, 503 when it cannot be asked: live figures are never
    /// served stale.
    pub async fn live(&self) -> Result<LiveBody, DomainError> {
        let Some(live) = &self.live else {
            return Err(DomainError::NotFound(LiveError::NotReported.to_string()));
        };
        live.now().await
    }

    pub async fn kpi_months(&self) -> Result<Vec<Sheet>, DomainError> {
        Ok(stats::sheet_listing(
            self.store.published_sheets(None).await?,
        ))
    }

    /// /kpi/{month}: the published sheet of `month` (of `shift` when given, else the
    /// lowest-sorting shift) as `view` lets the key see it. Reads the month's published sheets,
    /// then the content of the one selected; [`DomainError::NotFound`] when the month has no
    /// published sheet (of that shift), or it was unpublished between the two reads.
    pub async fn kpi_month(
        &self,
        month: Month,
        shift: Option<&Shift>,
        view: KpiView,
    ) -> Result<KpiMonth, DomainError> {
        let sheet = stats::select_sheet(
            month,
            self.store.published_sheets(Some(month)).await?,
            shift,
        )?;
        // A sheet unpublished between the two reads is gone, not an error.
        let content =
            self.store.sheet_content(sheet.id).await?.ok_or_else(|| {
                DomainError::NotFound(format!("no published KPI sheet for {month}"))
            })?;
        Ok(stats::kpi_month(
            sheet,
            content,
            view,
            self.settings.kpi_aggregate_min_rows,
        ))
    }

    /// /operators: the roster, staff set apart. Reads [`PortalStore::operators`].
    pub async fn operators(&self) -> Result<Vec<Operator>, DomainError> {
        Ok(stats::roster(self.store.operators().await?))
    }

    /// /schedule: the off-days of `month` joined with the roster's names. Reads
    /// [`PortalStore::off_days`] and [`PortalStore::operators`], concurrently.
    pub async fn schedule(&self, month: Month) -> Result<Schedule, DomainError> {
        let (off_days, roster) =
            futures::try_join!(self.store.off_days(month), self.store.operators())?;
        Ok(stats::schedule(month, off_days, &roster))
    }

    /// /scripts/stats: the `limit` most viewed scripts. Reads [`PortalStore::scripts`].
    pub async fn scripts(&self, limit: ScriptsLimit) -> Result<Vec<Script>, DomainError> {
        Ok(stats::top_scripts(self.store.scripts().await?, limit))
    }
}

#[cfg(test)]
mod tests;
