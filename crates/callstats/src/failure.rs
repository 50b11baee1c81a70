//! How a command fails, and the exit code that says so.

use std::fmt;
use std::process::ExitCode;

/// A failed command: the configuration was wrong (exit 2) or the work failed (exit 1).
#[derive(Debug)]
pub enum Failure {
    /// The command line or settings cannot work: fix them and run again.
    Config(anyhow::Error),
    /// The command ran and failed.
    Failed(anyhow::Error),
}

impl Failure {
    pub fn config(error: impl Into<anyhow::Error>) -> Self {
        Self::Config(error.into())
    }

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Config(_) => ExitCode::from(2),
            Self::Failed(_) => ExitCode::FAILURE,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(error) | Self::Failed(error) => write!(f, "{error:#}"),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Self::Failed(error.into())
    }
}
