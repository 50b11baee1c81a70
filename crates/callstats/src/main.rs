//! `callstats`: the one program of the service. Each subcommand group lives in a module of
//! [`commands`]; settings shared between them are in [`args`](callstats::args).
//!
//! Exit codes: 0 success, 1 the command failed (a bad fixture, an unreachable database, an
//! unknown key), 2 the command line or configuration is wrong (clap's own errors included).
//! Messages for people go to stderr; stdout carries only a command's result (the plaintext of
//! a new key, the key list).

use std::process::ExitCode;

use callstats::{cli, commands, logging};
use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let log_writer = logging::init(
        cli.log_format,
        cli.command.default_log_level(),
        cli.command.log_writer(),
    );
    // Multi-threaded: migrations block a worker thread while they run.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(commands::run(cli.command));
    // Queued log lines first, so the last thing on stderr is the outcome.
    drop(log_writer);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {failure}");
            failure.exit_code()
        }
    }
}
