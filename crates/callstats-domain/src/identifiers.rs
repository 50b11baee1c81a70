//! The identifiers the call records carry: an agent's number and a queue's name, each
//! validated once where it enters the domain.

use std::fmt;

use compact_str::CompactString;
use serde::Serialize;

/// The text of an identifier, validated once: `as_str` and `Display` read it as it is.
///
/// Both identifiers wrap their text alike, so they read it alike.
macro_rules! text_identifier {
    ($ty:ident) => {
        impl $ty {
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// An agent's identifier, such as `101`: 1 to 32 visible characters, at most 64 bytes. Stored
/// inline (no heap allocation) when it is short, because there is one per call record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct AgentNumber(CompactString);

/// The most bytes an agent number (and a call id) may take.
pub const MAX_IDENTIFIER_BYTES: usize = 64;

/// An agent number that is empty, too long or holds whitespace or control characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid agent number: expected 1 to 32 characters (at most 64 bytes) without spaces")]
pub struct InvalidAgentNumber;

impl AgentNumber {
    pub fn new(raw: &str) -> Result<Self, InvalidAgentNumber> {
        let chars = raw.chars().count();
        if chars == 0
            || chars > 32
            || raw.len() > MAX_IDENTIFIER_BYTES
            || raw.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(InvalidAgentNumber);
        }
        Ok(Self(CompactString::new(raw)))
    }
}

text_identifier!(AgentNumber);

/// The queue (line, skill group) that offered a call, such as `sales`: 1 to 64 bytes of
/// printable text, validated like call ids, compared exactly (case-sensitive). Stored inline
/// up to 24 bytes; a held day keeps each distinct queue once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct QueueName(CompactString);

/// A queue name that is empty, longer than 64 bytes or holds control characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid queue: expected 1 to {MAX_IDENTIFIER_BYTES} bytes of printable text")]
pub struct InvalidQueueName;

impl QueueName {
    pub fn new(raw: &str) -> Result<Self, InvalidQueueName> {
        if raw.is_empty() || raw.len() > MAX_IDENTIFIER_BYTES || raw.chars().any(char::is_control) {
            return Err(InvalidQueueName);
        }
        Ok(Self(CompactString::new(raw)))
    }
}

text_identifier!(QueueName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_numbers_are_short_visible_identifiers() {
        assert_eq!(AgentNumber::new("101").unwrap().as_str(), "101");
        assert!(
            AgentNumber::new(&"я".repeat(32)).is_ok(),
            "32 characters, 64 bytes"
        );
        for bad in ["", " 101", "10 1", "1\n", &"9".repeat(33), &"😀".repeat(17)] {
            assert_eq!(AgentNumber::new(bad), Err(InvalidAgentNumber), "{bad:?}");
        }
    }
}
