//! One poll's outcome as the replicas share it, and its form on the relay.

use callstats_api::live::LiveResponse;
use callstats_domain::DomainError;
use callstats_domain::live::{LiveBody, LiveError};
use callstats_domain::ports::{StoreError, UpstreamError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// What one poll found: the figures, or why there are none. Frames are ordered by `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The poll's id: the wall-clock milliseconds it was taken at, made to grow by one at
    /// least from the last frame the polling replica knew. A stream's events carry it.
    pub id: u64,
    /// The figures' digest, `as_of` left out: two frames with the same digest show the same
    /// figures, so a stream sends no event for the second. Empty for a failure.
    pub figures: String,
    pub outcome: Result<LiveBody, Failure>,
}

/// Why a poll has no figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "failure", content = "reason", rename_all = "snake_case")]
pub enum Failure {
    /// The platform reports no live figures (404): not an outage.
    NotReported,
    /// The platform could not be asked, or broke the contract.
    Platform(String),
    /// The roster could not be read (and none was read before).
    Portal(String),
}

impl Failure {
    /// The failure as the platform port said it.
    #[must_use]
    pub fn of(err: &LiveError) -> Self {
        match err {
            LiveError::NotReported => Self::NotReported,
            LiveError::Unavailable(upstream) => Self::Platform(upstream.to_string()),
        }
    }

    /// The answer a request gets for it: 404 or 503.
    #[must_use]
    pub fn to_domain(&self) -> DomainError {
        match self {
            Self::NotReported => DomainError::NotFound(LiveError::NotReported.to_string()),
            Self::Platform(reason) => DomainError::UpstreamUnavailable(UpstreamError::new(reason)),
            Self::Portal(reason) => DomainError::StoreUnavailable(StoreError::new(reason)),
        }
    }

    /// The label of `callstats_live_polls_total` it counts under.
    #[must_use]
    pub const fn outcome_label(&self) -> &'static str {
        match self {
            Self::NotReported => "not_reported",
            Self::Platform(_) | Self::Portal(_) => "failed",
        }
    }
}

/// A frame on the relay: JSON, the body kept as written. Written from borrowed parts
/// (`Wire<&str, &RawValue>`), read into owned ones (`Wire<String, Box<RawValue>>`).
#[derive(Serialize, Deserialize)]
struct Wire<Text, Body> {
    id: u64,
    figures: Text,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<Body>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<Failure>,
}

impl Frame {
    /// The frame of a poll that found `response`.
    #[must_use]
    pub fn live(id: u64, response: &LiveResponse) -> Self {
        Self {
            id,
            figures: response.figures_digest(),
            outcome: Ok(response.body()),
        }
    }

    /// The frame of a poll that failed.
    #[must_use]
    pub const fn failed(id: u64, failure: Failure) -> Self {
        Self {
            id,
            figures: String::new(),
            outcome: Err(failure),
        }
    }

    /// The frame as the relay carries it.
    #[must_use]
    pub fn encode(&self) -> bytes::Bytes {
        let (body, failure) = match &self.outcome {
            Ok(body) => (Some(body.as_raw()), None),
            Err(failure) => (None, Some(failure.clone())),
        };
        let wire = Wire {
            id: self.id,
            figures: self.figures.as_str(),
            body,
            failure,
        };
        // Strings, numbers and a body that is JSON already: writing it cannot fail.
        serde_json::to_vec(&wire).unwrap_or_default().into()
    }

    /// A frame as another replica encoded it; `None` for bytes that are not one.
    #[must_use]
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let wire: Wire<String, Box<RawValue>> = serde_json::from_slice(bytes).ok()?;
        let outcome = match (wire.body, wire.failure) {
            (Some(body), None) => Ok(LiveBody::from_raw(body)?),
            (None, Some(failure)) => Err(failure),
            _ => return None,
        };
        Some(Self {
            id: wire.id,
            figures: wire.figures,
            outcome,
        })
    }

    /// The wall-clock milliseconds the frame was taken at.
    #[must_use]
    pub const fn taken_ms(&self) -> u64 {
        self.id
    }
}
