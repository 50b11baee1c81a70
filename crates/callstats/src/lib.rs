//! The `callstats` program as a library: the command line, each command, and the assembly that
//! turns settings into a running service. `main.rs` only parses and dispatches; end-to-end
//! tests build the service through [`app`] exactly as `serve` and `demo` do.

pub mod app;
pub mod args;
pub mod cli;
pub mod commands;
pub mod failure;
pub mod files;
pub mod logging;
pub mod probes;
pub mod secret;
