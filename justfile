# Short recipes; each is one cargo command, so nothing here needs `just` installed.

# Run the service on its embedded defaults.
demo:
    cargo run --release -- demo

# The whole test suite.
test:
    cargo test --workspace

# Everything CI runs: fmt check, clippy, tests, docs.
ci:
    cargo xtask ci

# Domain benchmarks: throughput and allocations.
bench:
    cargo xtask bench

# Load measurement: `callstats demo` against a bare actix-web baseline, with wrk.
load:
    cargo xtask load

# The instructions a cached request costs the server against the same baseline, counted by
# callgrind: steady where the load's rates swing (needs valgrind).
instructions:
    cargo xtask instructions

# Cold path: uncached queries against a sim with 100 ms upstream latency (needs redis-server).
cold:
    cargo xtask cold

# Durability: restarts, a Redis flush, final days and the platform down, against the sim at 100 ms
# a page, at 5,000 and 50,000 calls a day (needs redis-server).
durability:
    cargo xtask durability

# Isolation: a hostile partner and a rate-limited platform against a victim key (not in CI).
isolation:
    cargo xtask isolation

# A hostile platform and slow clients against the service: answers, RSS, latency (not in CI).
hostile:
    cargo xtask hostile

fmt:
    cargo fmt --all

# callstats demo fuzzed against its OpenAPI document (installs schemathesis once).
schemathesis:
    cargo xtask schemathesis

# A Python client generated from the OpenAPI document calls every endpoint of callstats demo;
# mypy --strict checks it (installs openapi-python-client and mypy once).
client:
    cargo xtask client

# The same in TypeScript: openapi-typescript types and openapi-fetch, checked by
# tsc --noEmit --strict (installs them with npm once).
client-ts:
    cargo xtask client-ts

# Spectral's OAS rules over docs/openapi.json (.spectral.yaml); warnings fail.
lint-openapi:
    cargo xtask lint-openapi

# The Prometheus rules and the dashboard's queries in a real Prometheus scraping two replicas
# (needs prometheus and redis-server).
prometheus:
    cargo xtask prometheus

# The Grafana dashboard type-checked against @grafana/schema's Dashboard (installs it once).
grafana:
    cargo xtask grafana

# The ops journey of docs/operations.md on a Docker engine with docker-compose.yml as shipped;
# --stand-ins builds the registry images from Debian's packages (needs docker and debootstrap).
compose:
    cargo xtask compose --stand-ins

# Bounded loopback soak, ten minutes by default (not in CI).
soak:
    cargo xtask soak
