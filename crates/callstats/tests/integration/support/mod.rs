//! What several test modules share: a spawned `callstats demo` and the service served in process.

pub mod demo;
pub mod serve;

/// Runs the `callstats` binary with `args`, without `RUST_LOG`, after `setup` has set the rest
/// (database, directory): its stdout, once it is known to have succeeded.
pub fn callstats_stdout(args: &[&str], setup: impl FnOnce(&mut std::process::Command)) -> String {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_callstats"));
    command.args(args).env_remove("RUST_LOG");
    setup(&mut command);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}
