//! Nothing but its test: `tests/mocked_port.rs`.
