-- The portal schema callstats reads (see docs/portal-schema.md), for the embedded SQLite file.
-- Same tables, columns and indexes as the Postgres migration beside this one (a test compares
-- them). Dates and timestamps are TEXT underneath ('YYYY-MM-DD', 'YYYY-MM-DD HH:MM:SS'),
-- booleans 0/1.

-- The roster. username and phone are stored for the portal and never read by the API.
CREATE TABLE operators (
    agent_number TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    team TEXT NOT NULL,
    shift TEXT NOT NULL,
    staff_role TEXT,
    joined_at TIMESTAMP NOT NULL,
    username TEXT,
    phone TEXT
);

-- No foreign key to operators: the schedule keeps the days of people who have left.
CREATE TABLE off_days (
    agent_number TEXT NOT NULL,
    day DATE NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('dam', 'unpaid')),
    source TEXT NOT NULL CHECK (source IN ('admin', 'auto', 'swap')),
    PRIMARY KEY (day, agent_number)
);

-- One sheet per month and shift; stated_* is the source spreadsheet's own totals row.
CREATE TABLE kpi_sheets (
    id BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    month TEXT NOT NULL CHECK (month GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]' AND substr(month, 6, 2) BETWEEN '01' AND '12'),
    shift TEXT NOT NULL,
    published BOOLEAN NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    stated_kpi_sum DOUBLE PRECISION,
    stated_fiksa DOUBLE PRECISION,
    stated_bonus DOUBLE PRECISION,
    stated_fine DOUBLE PRECISION,
    stated_payout DOUBLE PRECISION
);
CREATE INDEX kpi_sheets_published_month ON kpi_sheets (month, shift) WHERE published;

CREATE TABLE kpi_rows (
    sheet_id BIGINT NOT NULL REFERENCES kpi_sheets (id) ON DELETE CASCADE,
    sheet_row INTEGER NOT NULL CHECK (sheet_row > 0),
    agent_number TEXT,
    name TEXT NOT NULL,
    kpi_percent DOUBLE PRECISION NOT NULL,
    kpi_sum DOUBLE PRECISION NOT NULL,
    fiksa DOUBLE PRECISION,
    bonus DOUBLE PRECISION,
    fine DOUBLE PRECISION,
    payout DOUBLE PRECISION,
    PRIMARY KEY (sheet_id, sheet_row)
);

-- ordinal keeps the metrics of a row in the order the sheet lists them.
CREATE TABLE kpi_metrics (
    sheet_id BIGINT NOT NULL,
    sheet_row INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    name TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    ratio DOUBLE PRECISION,
    kpi DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (sheet_id, sheet_row, ordinal),
    FOREIGN KEY (sheet_id, sheet_row) REFERENCES kpi_rows (sheet_id, sheet_row) ON DELETE CASCADE
);

CREATE TABLE scripts (
    id BIGINT PRIMARY KEY,
    title_uz TEXT NOT NULL,
    title_ru TEXT NOT NULL,
    category_uz TEXT NOT NULL,
    category_ru TEXT NOT NULL,
    views BIGINT NOT NULL CHECK (views >= 0)
);

-- started_at_unix: start of the scored call, Unix seconds.
CREATE TABLE call_scores (
    call_id TEXT PRIMARY KEY,
    agent_number TEXT NOT NULL,
    started_at_unix BIGINT NOT NULL,
    checklist_percent DOUBLE PRECISION NOT NULL CHECK (checklist_percent >= 0 AND checklist_percent <= 100),
    sentiment TEXT NOT NULL CHECK (sentiment IN ('positive', 'neutral', 'negative'))
);
CREATE INDEX call_scores_started_at ON call_scores (started_at_unix);

-- Only the SHA-256 digest of a key is stored (64 lower-case hex characters), never the key.
CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    key_digest TEXT NOT NULL CHECK (length(key_digest) = 64),
    display_prefix TEXT NOT NULL,
    scopes TEXT NOT NULL,
    rate_limit_per_minute INTEGER NOT NULL CHECK (rate_limit_per_minute > 0),
    allowed_origin TEXT,
    created_at_unix BIGINT NOT NULL,
    expires_at_unix BIGINT,
    revoked_at_unix BIGINT
);
CREATE UNIQUE INDEX api_keys_key_digest ON api_keys (key_digest);
CREATE INDEX api_keys_name ON api_keys (name);
