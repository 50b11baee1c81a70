//! The request use case: the use cases of the domain behind the policies that make them cheap.
//!
//! - Admission in the documented order (key 401, Origin 403, quota 429, scope 403, then
//!   parameters 400): the key identified, the request parsed, then counted with its cached
//!   answer read on the same trip: with Redis a cached answer costs one round trip.
//! - The response cache: an answer is served from it while its lifetime lasts.
//! - A miss is computed once per replica (single flight, as a task of its own, so an answer a
//!   client stopped waiting for is still cached) and, with a shared cache, once per deployment:
//!   a lock per entry, and the replicas that do not get it wait for its bytes.
//!
//! The web layer only turns the HTTP request into a [`Caller`] and an [`UnvalidatedRequest`] (the
//! endpoint with its typed query, not yet validated), awaits [`ApiUseCases::serve`] and writes
//! the [`Outcome`]. It sees the application through [`ApiUseCases`] only, which [`Answers`]
//! implements, so a handler is tested against a mock of it (`MockApiUseCases`, feature `mock`).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::representation::{self, Acceptable, Representation};
use bytes::Bytes;
use callstats_api::Wire;
use callstats_api::request::UnvalidatedRequest;
use callstats_domain::DomainError;
use callstats_domain::access::{ClientAddress, QuotaStatus};
use callstats_domain::limits::{DayBudgetStatus, Requester};
use callstats_domain::live::LiveError;
use callstats_domain::model::KeyInfo;
use callstats_domain::params::ParamError;
use callstats_domain::ports::{Clock, ResponseCache};
use callstats_domain::request::{ApiRequest, Endpoint};
use callstats_domain::use_cases::{Admitted, CallStats, Caller, Counted, Gatekeeper};

use async_trait::async_trait;
use metrics::Counter;

use crate::bounded::Bounded;
use crate::cached_answer::CachedAnswer;
use crate::compute::ComputePool;
use crate::csv_answer::csv_within;
use crate::live::{LiveStream, LiveStreams};
use crate::replica_lock::{self, Claim, SharedEntry};
use crate::single_flight::Flights;

/// What opening a live stream answers: the key's quota and day budget as the request left
/// them, and the stream or why there is none.
pub type LiveOpened = (
    QuotaStatus,
    Option<DayBudgetStatus>,
    Result<LiveStream, DomainError>,
);

/// What the web layer asks of the application: the port its handlers hold, implemented by
/// [`Answers`].
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ApiUseCases: Send + Sync + 'static {
    /// Admits the request and answers it, in the documented order: key (401), Origin (403),
    /// quota (429), scope (403), parameters (400), then the answer, cached or computed.
    ///
    /// `asked` is `None` for a path or method the API does not have, which is admitted like
    /// /ping (a valid key, no scope). The parameters are parsed once the key is known (its
    /// scopes decide the KPI view), so that the request's cached answer is read on the trip
    /// that counts it; a bad parameter is reported after the quota and scope checks. `accept`
    /// is what the request's `Accept` allows: it chooses the representation, and a request
    /// that excludes every representation of its endpoint is a 406 once its parameters are
    /// valid.
    async fn serve<'a>(
        &self,
        caller: &Caller<'a>,
        asked: Option<&'a UnvalidatedRequest>,
        accept: Acceptable,
    ) -> Outcome;

    /// Admits a request for a live stream as any request to /calls/live (key, Origin, quota,
    /// scope; it counts as one request) and opens the stream: its first event is the current
    /// figures. A 404 or 503 when there are none, a 429 when the key holds all its streams.
    async fn open_live<'a>(&self, caller: &Caller<'a>) -> LiveOpened;

    /// Counts a request that needs no key (the OpenAPI document) against the per-client-IP
    /// quota; the caller refuses it when `exceeded`.
    async fn count_anonymous(&self, client_ip: ClientAddress) -> QuotaStatus;

    /// Ends every open live stream: the replica is stopping.
    fn end_live_streams(&self);
}

#[async_trait]
impl ApiUseCases for Answers {
    async fn serve<'a>(
        &self,
        caller: &Caller<'a>,
        asked: Option<&'a UnvalidatedRequest>,
        accept: Acceptable,
    ) -> Outcome {
        let access = &self.inner.access;
        let admitted = match access.identify(caller).await {
            Ok(admitted) => admitted,
            Err(refused) => return outcome(refused.quota, refused.days, Err(refused.error)),
        };
        let endpoint = asked.map_or(Endpoint::Ping, UnvalidatedRequest::endpoint);
        let parsed = self.parse(&admitted, endpoint, asked, accept);
        let counted = access.count(&admitted, endpoint, parsed.cache_key()).await;
        let Counted {
            quota,
            days,
            verdict,
            cached,
        } = counted;
        let answer = match (verdict, parsed.request) {
            (Err(err), _) => Err(err),
            (Ok(()), None) => Ok(Answer::Unrouted),
            (Ok(()), Some(Err(err))) => Err(err.into()),
            (Ok(()), Some(Ok(valid))) => match (parsed.representation, valid) {
                (Err(not_acceptable), _) => Err(not_acceptable),
                (Ok(_), None) => Ok(Answer::Key(access.ping(&admitted.key))),
                (Ok(form), Some((key, request))) => {
                    let csv_file_name = match form {
                        Representation::Csv => representation::csv_file_name(&request),
                        Representation::Json => None,
                    };
                    match self.cached(cached.as_ref()) {
                        // Served at the moment it was read.
                        Some(entry) => {
                            Ok(body(entry, csv_file_name, CacheStatus::Hit, admitted.at))
                        }
                        None => {
                            // Made on a miss only: its counters are shared with the work it
                            // starts, which a cached answer (paying for no day) does not need.
                            let requester = Requester::key(admitted.key.id);
                            let computed = self.miss((request, form), &key, &requester).await;
                            let days = days.map(|days| days.less(requester.paid_so_far()));
                            // Served once computed.
                            let answer = computed.map(|(entry, cache)| {
                                body(entry, csv_file_name, cache, self.inner.clock.now())
                            });
                            return outcome(quota, days, answer);
                        }
                    }
                }
            },
        };
        outcome(quota, days, answer)
    }

    async fn open_live<'a>(&self, caller: &Caller<'a>) -> LiveOpened {
        let access = &self.inner.access;
        let admitted = match access.identify(caller).await {
            Ok(admitted) => admitted,
            Err(refused) => return (refused.quota, refused.days, Err(refused.error)),
        };
        let Counted {
            quota,
            days,
            verdict,
            ..
        } = access.count(&admitted, Endpoint::CallsLive, None).await;
        if let Err(err) = verdict {
            count_refusal(&err);
            return (quota, days, Err(err));
        }
        let opened = match (&self.live, caller.key_digest()) {
            (Some(streams), Some(digest)) => streams.open(&admitted.key, digest).await,
            _ => Err(DomainError::NotFound(LiveError::NotReported.to_string())),
        };
        (quota, days, opened)
    }

    async fn count_anonymous(&self, client_ip: ClientAddress) -> QuotaStatus {
        self.inner.access.count_anonymous(client_ip).await
    }

    fn end_live_streams(&self) {
        if let Some(streams) = &self.live {
            streams.shut_down();
        }
    }
}

/// How long one replica may hold the right to compute an entry: past the upstream's whole
/// deadline, so a slow computation is not duplicated.
const COMPUTE_LOCK: Duration = Duration::from_secs(25);

/// Whether a body came from the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    Hit,
    Miss,
    /// Computed for this request from call days past their lifetime, because fetching them
    /// again failed (stale if error): not cached.
    Stale,
}

/// What a request gets, when it passed admission.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// /ping: the key.
    Key(KeyInfo),
    /// A data endpoint's JSON body, with its validator and lifetime.
    Body(Body),
    /// A path or method the API does not have, asked with a valid key.
    Unrouted,
}

/// A data endpoint's answer as served.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The body in the representation the request chose (JSON or CSV).
    pub entry: CachedAnswer,
    /// The file name a CSV body is offered as (`Content-Disposition`); `None` for JSON.
    pub csv_file_name: Option<String>,
    pub cache: CacheStatus,
    /// The whole seconds the entry had left when it was served (`Cache-Control: max-age`).
    pub seconds_left: u32,
}

/// The outcome of a request, with the quota the rate-limit headers report either way.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub quota: QuotaStatus,
    /// The key's day budget after the days this request made the service fetch.
    pub days: Option<DayBudgetStatus>,
    pub answer: Result<Answer, DomainError>,
}

/// The request use case. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Answers {
    inner: Arc<Inner>,
    /// The open live streams; `None` where the service has no live figures.
    live: Option<LiveStreams>,
}

struct Inner {
    access: Gatekeeper,
    stats: CallStats,
    cache: Arc<dyn ResponseCache>,
    computing: Computing,
    /// When entries expire and how long they have left: the domain's clock, as everywhere.
    clock: Arc<dyn Clock>,
    flights: Arc<Flights<String, Result<CachedAnswer, DomainError>>>,
    /// `callstats_cache_lookups_total`, resolved at the first lookup: the recorder is installed
    /// before the server serves (`callstats serve`), and resolving the labelled counters on
    /// every request cost an allocation, a hash and a registry lookup.
    lookups: OnceLock<CacheLookups>,
}

/// The cache lookup counters, by result.
struct CacheLookups {
    hit: Counter,
    miss: Counter,
}

impl CacheLookups {
    fn resolve() -> Self {
        Self {
            hit: metrics::counter!("callstats_cache_lookups_total", "result" => "hit"),
            miss: metrics::counter!("callstats_cache_lookups_total", "result" => "miss"),
        }
    }
}

/// Where answers are computed, and how large they may be.
#[derive(Clone)]
pub struct Computing {
    /// The pool that computes and serialises answers off the request threads.
    pub pool: ComputePool,
    /// The largest body an answer may have (`CALLSTATS_MAX_BODY_MB`); a larger one is a 503.
    pub max_body_bytes: usize,
}

impl Computing {
    pub const DEFAULT_MAX_BODY_MIB: u64 = 16;
}

impl Default for Computing {
    fn default() -> Self {
        Self {
            pool: ComputePool::new(0),
            max_body_bytes: usize::try_from(Self::DEFAULT_MAX_BODY_MIB << 20).unwrap_or(usize::MAX),
        }
    }
}

impl Answers {
    #[must_use]
    pub fn new(
        access: Gatekeeper,
        stats: CallStats,
        cache: Arc<dyn ResponseCache>,
        computing: Computing,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                access,
                stats,
                cache,
                computing,
                clock,
                flights: Flights::new(|cause| Err(DomainError::Internal(cause))),
                lookups: OnceLock::new(),
            }),
            live: None,
        }
    }

    /// Opens live streams on `streams` (/calls/live with `Accept: text/event-stream`).
    #[must_use]
    pub fn with_live_streams(mut self, streams: LiveStreams) -> Self {
        self.live = Some(streams);
        self
    }

    /// The pool answers are computed on, for other CPU work of a request (compression).
    #[must_use]
    pub fn compute_pool(&self) -> &ComputePool {
        &self.inner.computing.pool
    }

    /// An admitted request's representation and parameters, validated for its key, with the
    /// cache key of a data request (of the representation chosen), made once.
    fn parse(
        &self,
        admitted: &Admitted,
        endpoint: Endpoint,
        asked: Option<&UnvalidatedRequest>,
        accept: Acceptable,
    ) -> Parsed {
        let representation = Representation::choose(endpoint, accept);
        let request = asked.map(|asked| {
            let earliest = || self.inner.stats.earliest_call_day_at(admitted.at);
            asked.validate_with(admitted.view, earliest).map(|valid| {
                valid.map(|request| {
                    let form = *representation.as_ref().unwrap_or(&Representation::Json);
                    (
                        representation::cache_key_as(self.inner.stats.cache_key(&request), form),
                        request,
                    )
                })
            })
        });
        Parsed {
            representation,
            request,
        }
    }

    /// The entry of the answer read from the cache, counted as a hit; `None` (a miss) when
    /// there is none or it cannot be read.
    fn cached(&self, cached: Option<&Bytes>) -> Option<CachedAnswer> {
        let lookups = self.inner.lookups.get_or_init(CacheLookups::resolve);
        let entry = cached.and_then(CachedAnswer::decode);
        match &entry {
            Some(_) => lookups.hit.increment(1),
            None => lookups.miss.increment(1),
        }
        entry
    }

    /// A miss: the entry computed once per replica (and per deployment).
    async fn miss(
        &self,
        request: Asked,
        key: &str,
        requester: &Requester,
    ) -> Result<(CachedAnswer, CacheStatus), DomainError> {
        let computed = match self.computation(&request, key, requester).await {
            // A computation shared with a request of another key was refused for that key's
            // budget, not this one's: this request tries on its own budget.
            Err(DomainError::DayBudgetExceeded(refused)) if refused.key != requester.key_id() => {
                self.computation(&request, key, requester).await
            }
            computed => computed,
        };
        let computed = computed?;
        let cache = if computed.is_stale() {
            CacheStatus::Stale
        } else {
            CacheStatus::Miss
        };
        Ok((computed, cache))
    }

    /// The entry computed once per replica: the run under way for `key`, or one for
    /// `requester`.
    async fn computation(
        &self,
        request: &Asked,
        key: &str,
        requester: &Requester,
    ) -> Result<CachedAnswer, DomainError> {
        let inner = Arc::clone(&self.inner);
        let (request, own_key, requester) = (request.clone(), key.to_owned(), requester.clone());
        self.inner
            .flights
            .join(&own_key.clone(), move || async move {
                inner.compute_once(&request, &own_key, &requester).await
            })
            .await
    }
}

/// A valid request and the representation its answer is written in.
type Asked = (ApiRequest, Representation);

/// An admitted request, parsed.
struct Parsed {
    /// The representation its `Accept` chose, or the 406.
    representation: Result<Representation, DomainError>,
    /// `None` for a path the API does not have; `Ok(None)` for /ping.
    request: Option<Result<Option<Keyed>, ParamError>>,
}

/// A valid data request with its cache key.
type Keyed = (Cow<'static, str>, ApiRequest);

impl Parsed {
    /// The key its answer is cached under, for a valid data request.
    fn cache_key(&self) -> Option<&str> {
        match &self.request {
            Some(Ok(Some((key, _)))) => Some(key.as_ref()),
            _ => None,
        }
    }
}

/// A data endpoint's answer, served at `now` from `entry`.
fn body(
    entry: CachedAnswer,
    csv_file_name: Option<String>,
    cache: CacheStatus,
    now: time::OffsetDateTime,
) -> Answer {
    let seconds_left = entry.seconds_left(now);
    Answer::Body(Body {
        entry,
        csv_file_name,
        cache,
        seconds_left,
    })
}

/// An answer's entry in the response cache, as [`replica_lock`] sees it.
struct StoredAnswer {
    cache: Arc<dyn ResponseCache>,
    key: String,
}

#[async_trait]
impl SharedEntry for StoredAnswer {
    type Value = CachedAnswer;

    async fn try_lock(&self, ttl: Duration) -> bool {
        self.cache.try_lock(&self.key, ttl).await
    }

    async fn unlock(&self) {
        self.cache.unlock(&self.key).await;
    }

    async fn stored(&self) -> Option<CachedAnswer> {
        self.cache
            .get(&self.key)
            .await
            .as_ref()
            .and_then(CachedAnswer::decode)
    }
}

impl Inner {
    /// Computes an entry, unless another replica already is: then waits for its bytes, and
    /// computes it after all if they have not come within the lock's lifetime.
    async fn compute_once(
        &self,
        request: &Asked,
        key: &str,
        requester: &Requester,
    ) -> Result<CachedAnswer, DomainError> {
        let stored = Arc::new(StoredAnswer {
            cache: Arc::clone(&self.cache),
            key: key.to_owned(),
        });
        let deadline = Instant::now() + COMPUTE_LOCK;
        let lock = loop {
            match replica_lock::claim(Arc::clone(&stored), COMPUTE_LOCK).await {
                Claim::Stored(entry) => return Ok(entry),
                Claim::Held(lock) => break Some(lock),
                Claim::Taken if Instant::now() >= deadline => break None,
                Claim::Taken => tokio::time::sleep(replica_lock::POLL).await,
            }
        };
        let computed = self.compute(request, key, requester).await;
        if let Some(lock) = lock {
            lock.release().await;
        }
        computed
    }

    async fn compute(
        &self,
        (request, representation): &Asked,
        key: &str,
        requester: &Requester,
    ) -> Result<CachedAnswer, DomainError> {
        let prepared = self.stats.prepare(request, requester).await?;
        let representation = *representation;
        let limit = self.computing.max_body_bytes;
        // An answer from stale days is not kept: the next request tries the upstream again.
        let stale = requester.was_served_stale();
        let ttl = if stale {
            Duration::ZERO
        } else {
            request.cache_ttl()
        };
        let now = self.clock.now();
        // The other form of an endpoint with CSV is written from the same computation and
        // cached beside it, so that the JSON and the CSV of one request never disagree.
        let other = representation::has_csv(request.endpoint()).then_some(match representation {
            Representation::Json => Representation::Csv,
            Representation::Csv => Representation::Json,
        });
        // The statistics, the JSON or CSV, its validator (a SHA-256 of the body) and the stored
        // form (a copy of it): all of it proportional to the body, none of it on a request
        // thread.
        let (entry, stored, other_stored) = self
            .computing
            .pool
            .run(move || {
                let response = prepared.compute();
                // Made once: the JSON and the CSV are written from the same values.
                let answer = Wire::from(&response);
                let written = |form| match form {
                    Representation::Json => json_within(&answer, limit),
                    Representation::Csv => csv_within(&answer, limit),
                };
                let entry = CachedAnswer::new(written(representation)?, ttl, now);
                let stored = entry.encode();
                // A form past the size bound is left to its own request, which refuses it.
                let other_stored = other.and_then(|form| {
                    let body = written(form).ok()?;
                    Some((form, CachedAnswer::new(body, ttl, now).encode()))
                });
                Ok::<_, DomainError>((entry, stored, other_stored))
            })
            .await
            .map_err(DomainError::Internal)??;
        if stale {
            return Ok(entry.stale());
        }
        self.cache.put(key, stored, ttl).await;
        if let Some((form, other_stored)) = other_stored {
            let other_key = representation::cache_key_as(self.stats.cache_key(request), form);
            self.cache.put(&other_key, other_stored, ttl).await;
        }
        Ok(entry)
    }
}

/// The outcome, counted in the metrics when the quota refused it.
fn outcome(
    quota: QuotaStatus,
    days: Option<DayBudgetStatus>,
    answer: Result<Answer, DomainError>,
) -> Outcome {
    if let Err(err) = &answer {
        count_refusal(err);
    }
    Outcome {
        quota,
        days,
        answer,
    }
}

/// Counts a request the quota refused.
fn count_refusal(err: &DomainError) {
    if let DomainError::RateLimited(_) = err {
        metrics::counter!("callstats_quota_rejections_total").increment(1);
    }
}

/// `answer` as JSON, refused past `limit` bytes (the writer stops there: no larger buffer is ever
/// held).
fn json_within(answer: &Wire<'_>, limit: usize) -> Result<Bytes, DomainError> {
    let mut out = Bounded::new(limit);
    match serde_json::to_writer(&mut out, answer) {
        Ok(()) => Ok(out.into_bytes()),
        Err(err) if err.is_io() => Err(DomainError::BodyTooLarge { limit_bytes: limit }),
        // The bodies are plain structs with string keys: serialising them cannot fail, so
        // this branch only guards against a future type that could.
        Err(err) => Err(DomainError::Internal(format!("serialising a body: {err}"))),
    }
}

#[cfg(test)]
mod tests;
