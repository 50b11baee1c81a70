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

# The benchmarks (docs/performance.md). Domain throughput (criterion) and allocations (dhat),
# and the call platform's 31-day fetch from the sim.
bench:
    cargo bench -p callstats-domain -p callstats-callplatform --bench '*'

# Load: `callstats demo` against a bare actix-web baseline, with wrk.
load:
    cargo measure load

# The instructions a cached request costs the server against the same baseline, counted by
# callgrind: steady where the load's rates swing (needs valgrind).
instructions:
    cargo measure instructions

# One replica, one with Redis, two sharing Redis, under wrk (needs wrk and redis-server).
replicas-load:
    cargo measure replicas-load

# Cold path: uncached queries against a sim with 100 ms upstream latency (needs redis-server).
cold:
    cargo measure cold

# Durability: restarts, a Redis flush, final days and the platform down, against the sim at 100 ms
# a page, at 5,000 and 50,000 calls a day (needs redis-server).
durability:
    cargo measure durability

# Isolation: a hostile partner and a rate-limited platform against a victim key.
isolation:
    cargo measure isolation

# A hostile platform and slow clients against the service: answers, RSS, latency.
hostile:
    cargo measure hostile

# Bounded loopback soak, ten minutes by default.
soak:
    cargo measure soak

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
