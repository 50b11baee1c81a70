//! Faults, with the processes and proxies the tests start themselves: an upstream that is down,
//! slow past the deadline, flapping or talking garbage; a Postgres that goes away and comes
//! back; SIGTERM under load. The service is assembled exactly as `serve` assembles it
//! ([`callstats::app`]), with short timeouts so each case takes seconds.

mod harness;
mod postgres;
mod shutdown;
mod upstream;
mod upstream_fields;
