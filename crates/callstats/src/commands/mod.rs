//! One module per command group; `run` dispatches.

pub mod demo;
pub mod keys;
pub mod migrate;
pub mod seed;
pub mod serve;
pub mod sim;

use crate::cli::Command;
use crate::failure::Failure;

pub async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Migrate(args) => migrate::run(args).await,
        Command::Seed(args) => seed::run(args).await,
        Command::Keys(args) => keys::run(args).await,
        Command::Serve(args) => serve::run(*args).await,
        Command::Demo(args) => demo::run(*args).await,
        Command::Sim(args) => sim::run(args).await,
    }
}
