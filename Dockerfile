# syntax=docker/dockerfile:1
# Multi-stage: build the one binary, ship it in a small image as a non-root user.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p callstats \
    && cp target/release/callstats /usr/local/bin/callstats

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/callstats --create-home callstats
COPY --from=build /usr/local/bin/callstats /usr/local/bin/callstats
USER callstats
WORKDIR /var/lib/callstats
ENV CALLSTATS_BIND=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["callstats"]
CMD ["serve"]
