//! One module per command group; `run` dispatches.

pub mod keys;
pub mod migrate;
pub mod seed;

use crate::cli::Command;
use crate::failure::Failure;

pub async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Migrate(args) => migrate::run(args).await,
        Command::Seed(args) => seed::run(args).await,
        Command::Keys(args) => keys::run(args).await,
    }
}
