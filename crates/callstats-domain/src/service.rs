//! Use cases: each combines ports with the pure logic of [`crate::stats`] for one endpoint, so
//! the web layer only parses, calls one of these and writes the answer.

use std::sync::Arc;

use serde::Serialize;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

use crate::access::{
    ApiKeyRecord, ClientAddress, QuotaBucket, QuotaStatus, QuotaSubject, presented_key,
};
use crate::calendar::{DateRange, Month, Period};
use crate::error::DomainError;
use crate::model::{
    AgentsResponse, CallSummary, KeyInfo, KpiMonthResponse, OperatorsResponse, Schedule,
    ScriptsResponse, SheetsResponse,
};
use crate::params::{Direction, ScriptsLimit, Shift};
use crate::ports::{CacheRead, CallDays, Clock, KeyStore, PortalStore, QuotaCounter};
use crate::request::{ApiRequest, Endpoint};
use crate::scope::{KpiView, ScopeSet};
use crate::stats::{self, PriorWeight};

/// Default per-minute quota of requests without a valid key, per client IP.
pub const DEFAULT_ANON_RATE_LIMIT: u32 = 60;

const SERVER_TIME: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// What a request presents about its caller.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    pub authorization: Option<&'a str>,
    pub x_api_key: Option<&'a str>,
    pub origin: Option<&'a str>,
    /// Peer address, or the first `X-Forwarded-For` hop behind a trusted proxy.
    pub client_ip: ClientAddress,
}

/// The outcome of the access checks, with the quota the rate-limit headers report either way.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub quota: QuotaStatus,
    pub key: Result<ApiKeyRecord, DomainError>,
    /// The cached answer read while counting (see [`Gatekeeper::admit_reading`]).
    pub cached: CacheRead,
}

/// Authentication, Origin pinning, quotas and scopes.
#[derive(Clone)]
pub struct Gatekeeper {
    keys: Arc<dyn KeyStore>,
    quota: Arc<dyn QuotaCounter>,
    clock: Arc<dyn Clock>,
    anon_rate_limit: u32,
}

impl Gatekeeper {
    #[must_use]
    pub fn new(
        keys: Arc<dyn KeyStore>,
        quota: Arc<dyn QuotaCounter>,
        clock: Arc<dyn Clock>,
        anon_rate_limit: u32,
    ) -> Self {
        Self {
            keys,
            quota,
            clock,
            anon_rate_limit,
        }
    }

    /// Runs the checks in the documented order: key (401), Origin (403), quota (429),
    /// scope (403).
    ///
    /// Only requests that pass the key and Origin checks count against the key's quota. A valid
    /// key refused for its Origin counts against no quota (always 403); its status reports the
    /// key's window without counting. Every request without a valid key counts against the
    /// anonymous per-IP quota, which turns its answer into a 429 once exceeded: key guessing
    /// stays slow, and a valid key is not held back by it, with one exception: a key created
    /// in the last 10 seconds, presented from an address that is over that quota, is refused
    /// until the replica has read the new key's digest.
    pub async fn admit(&self, caller: &Caller<'_>, endpoint: Endpoint) -> Admission {
        self.admit_reading(caller, endpoint, |_| None).await
    }

    /// [`Gatekeeper::admit`], reading the response cache's entry `cache_key(key)` on the same trip
    /// as the key's quota count: a cached answer then costs one round trip to a shared store.
    /// The entry is read only for a key that passed the key and Origin checks; what was read is
    /// in [`Admission::cached`], whatever the outcome of the later checks.
    pub async fn admit_reading(
        &self,
        caller: &Caller<'_>,
        endpoint: Endpoint,
        cache_key: impl FnOnce(&ApiKeyRecord) -> Option<String> + Send,
    ) -> Admission {
        let key = match self.authenticate(caller).await {
            Ok(key) => key,
            Err(err) => return self.refuse_anonymously(caller, err).await,
        };
        let bucket = QuotaBucket::new(&QuotaSubject::Key(key.id), self.clock.now());
        if !key.origin_allowed(caller.origin) {
            // A valid key refused for its Origin counts against no quota: it is always a 403,
            // and its headers show the key's window as it stands.
            let count = self.quota.peek(&bucket).await;
            return Admission {
                quota: QuotaStatus::current(key.rate_limit_per_minute, count, &bucket),
                key: Err(DomainError::OriginNotAllowed),
                cached: CacheRead::NotRead,
            };
        }
        let (count, cached) = match cache_key(&key) {
            Some(cache_key) => self.quota.increment_and_read(&bucket, &cache_key).await,
            None => (self.quota.increment(&bucket).await, CacheRead::NotRead),
        };
        let quota = QuotaStatus::after(key.rate_limit_per_minute, count, &bucket);
        let key = if quota.exceeded {
            Err(DomainError::RateLimited(quota))
        } else {
            match endpoint.required_scope() {
                Some(scope) if !key.scopes.contains(scope) => Err(DomainError::MissingScope(scope)),
                _ => Ok(key),
            }
        };
        Admission { quota, key, cached }
    }

    /// Counts a request that needs no key (the OpenAPI document) against the per-IP quota;
    /// the caller refuses it when `exceeded`.
    pub async fn count_anonymous(&self, client_ip: ClientAddress) -> QuotaStatus {
        self.count(&QuotaSubject::Client(client_ip), self.anon_rate_limit)
            .await
    }

    async fn refuse_anonymously(&self, caller: &Caller<'_>, err: DomainError) -> Admission {
        let quota = self.count_anonymous(caller.client_ip).await;
        let key = Err(if quota.exceeded {
            DomainError::RateLimited(quota)
        } else {
            err
        });
        Admission {
            quota,
            key,
            cached: CacheRead::NotRead,
        }
    }

    /// The presented key's record. A key that is not among the digests the key cache read
    /// recently (a guess, or a key created in the last seconds) is not looked up for an
    /// address already over its anonymous quota: a flood of guesses from one address costs the
    /// portal database at most that quota in look-ups a minute.
    async fn authenticate(&self, caller: &Caller<'_>) -> Result<ApiKeyRecord, DomainError> {
        let digest = presented_key(caller.authorization, caller.x_api_key)?.digest();
        if self.keys.recently_absent(&digest) {
            let bucket =
                QuotaBucket::new(&QuotaSubject::Client(caller.client_ip), self.clock.now());
            if self.quota.peek(&bucket).await >= u64::from(self.anon_rate_limit) {
                return Err(crate::access::Unauthorized::Invalid.into());
            }
        }
        let key = self
            .keys
            .find_key(&digest)
            .await?
            .ok_or(crate::access::Unauthorized::Invalid)?;
        key.check_usable(self.clock.now())?;
        Ok(key)
    }

    async fn count(&self, subject: &QuotaSubject, limit: u32) -> QuotaStatus {
        let bucket = QuotaBucket::new(subject, self.clock.now());
        let count = self.quota.increment(&bucket).await;
        QuotaStatus::after(limit, count, &bucket)
    }

    /// The /ping body for an admitted key.
    #[must_use]
    pub fn ping(&self, key: &ApiKeyRecord) -> KeyInfo {
        KeyInfo {
            ok: true,
            key_name: key.name.clone(),
            scopes: key.scopes,
            rate_limit_per_minute: key.rate_limit_per_minute,
            available_scopes: ScopeSet::all(),
            server_time: self.clock.now().format(SERVER_TIME).unwrap_or_default(),
        }
    }
}

/// Tunable figures of the statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatsSettings {
    pub prior_weight: PriorWeight,
}

/// Any body of a cacheable endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Response {
    CallSummary(CallSummary),
    Agents(AgentsResponse),
    Sheets(SheetsResponse),
    Kpi(KpiMonthResponse),
    Operators(OperatorsResponse),
    Schedule(Schedule),
    Scripts(ScriptsResponse),
}

/// The statistics use cases.
#[derive(Clone)]
pub struct CallStats {
    store: Arc<dyn PortalStore>,
    calls: Arc<dyn CallDays>,
    settings: StatsSettings,
}

impl CallStats {
    #[must_use]
    pub fn new(
        store: Arc<dyn PortalStore>,
        calls: Arc<dyn CallDays>,
        settings: StatsSettings,
    ) -> Self {
        Self {
            store,
            calls,
            settings,
        }
    }

    /// Answers any parsed request.
    pub async fn answer(&self, request: &ApiRequest) -> Result<Response, DomainError> {
        Ok(match request {
            ApiRequest::CallsSummary { range, direction } => {
                Response::CallSummary(self.call_summary(*range, *direction).await?)
            }
            ApiRequest::CallsAgents { range } => Response::Agents(self.call_agents(*range).await?),
            ApiRequest::KpiMonths => Response::Sheets(self.kpi_months().await?),
            ApiRequest::KpiMonth { month, shift, view } => {
                Response::Kpi(self.kpi_month(*month, shift.as_ref(), *view).await?)
            }
            ApiRequest::Operators => Response::Operators(self.operators().await?),
            ApiRequest::Schedule { month } => Response::Schedule(self.schedule(*month).await?),
            ApiRequest::ScriptsStats { limit } => Response::Scripts(self.scripts(*limit).await?),
        })
    }

    pub async fn call_summary(
        &self,
        range: DateRange,
        direction: Direction,
    ) -> Result<CallSummary, DomainError> {
        let days = self.calls.days(range).await?;
        Ok(stats::call_summary(&range, direction, &days))
    }

    /// Calls, scores and roster are fetched concurrently.
    pub async fn call_agents(&self, range: DateRange) -> Result<AgentsResponse, DomainError> {
        let (days, scores, roster) = futures::try_join!(
            async { self.calls.days(range).await.map_err(DomainError::from) },
            async {
                self.store
                    .call_scores(range)
                    .await
                    .map_err(DomainError::from)
            },
            async { self.store.operators().await.map_err(DomainError::from) },
        )?;
        let agents =
            stats::agent_leaderboard(&range, &days, &scores, &roster, self.settings.prior_weight);
        Ok(AgentsResponse {
            period: Period::from(&range),
            agents,
        })
    }

    pub async fn kpi_months(&self) -> Result<SheetsResponse, DomainError> {
        Ok(stats::sheet_listing(
            self.store.published_sheets(None).await?,
        ))
    }

    pub async fn kpi_month(
        &self,
        month: Month,
        shift: Option<&Shift>,
        view: KpiView,
    ) -> Result<KpiMonthResponse, DomainError> {
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
        Ok(stats::kpi_month(sheet, content, view))
    }

    pub async fn operators(&self) -> Result<OperatorsResponse, DomainError> {
        Ok(stats::roster(self.store.operators().await?))
    }

    /// Off-days and roster are fetched concurrently.
    pub async fn schedule(&self, month: Month) -> Result<Schedule, DomainError> {
        let (off_days, roster) =
            futures::try_join!(self.store.off_days(month), self.store.operators())?;
        Ok(stats::schedule(month, off_days, &roster))
    }

    pub async fn scripts(&self, limit: ScriptsLimit) -> Result<ScriptsResponse, DomainError> {
        Ok(stats::top_scripts(self.store.scripts().await?, limit))
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
