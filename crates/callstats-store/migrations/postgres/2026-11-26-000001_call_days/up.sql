-- The call-day store's durable tier (docs/architecture.md, "Call days"): one row per settled
-- Tashkent day, in the domain's versioned encoding (`version`) compressed with zstd.
-- fetched_at_ms: when the platform was asked (Unix ms); stored_at_unix: when the row was written.
CREATE TABLE call_days (
    day DATE PRIMARY KEY,
    version INTEGER NOT NULL,
    fetched_at_ms BIGINT NOT NULL,
    stored_at_unix BIGINT NOT NULL,
    encoded BYTEA NOT NULL
);
