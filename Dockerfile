# Multi-stage: the dependencies compiled in a layer of their own (cargo-chef), so that a change
# to the project's sources rebuilds only the project; then the one binary, stripped, in a small
# image as a non-root user. Builds with the classic builder (Compose v1's default) and with
# BuildKit alike: no `# syntax=` line (that would fetch a frontend image from a registry) and no
# BuildKit-only `RUN --mount`. docs/operations.md, "The image", has the figures.

FROM rust:1.95-slim-bookworm AS chef
# The image's binary carries no debug information and no symbols (the repository's release
# profile keeps line tables for profiling, which a deployed binary does not need): a smaller
# binary, a smaller dependency layer and a faster build. Set here, so that the dependencies
# (cook) and the project (build) are compiled with the very same profile.
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=symbols \
    CARGO_INCREMENTAL=0 \
    CARGO_TERM_COLOR=never
RUN cargo install --locked cargo-chef@0.1.78 \
    && rm -rf "$CARGO_HOME/registry"
WORKDIR /src

# The recipe: the workspace's manifests and lock file, and nothing else, so that the layer below
# is rebuilt only when a dependency changes.
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS build
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --locked --package callstats --recipe-path recipe.json
COPY . .
# The target directory is removed in the same step: this stage's image is then the dependency
# layer below (the cache) and the binary, not a second copy of the target directory.
RUN cargo build --release --locked --package callstats \
    && cp target/release/callstats /usr/local/bin/callstats \
    && rm -rf target

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/callstats --create-home callstats
COPY --from=build /usr/local/bin/callstats /usr/local/bin/callstats
USER callstats
WORKDIR /var/lib/callstats
ENV CALLSTATS_BIND=0.0.0.0:8080
# glibc's heap gives memory back sooner: blocks of 128 KiB and more are mapped apart and returned
# when freed, and a free top of the heap past 128 KiB is returned, where glibc raises both
# thresholds after each large free (docs/operations.md, "The allocator is glibc's").
ENV GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["callstats"]
CMD ["serve"]
