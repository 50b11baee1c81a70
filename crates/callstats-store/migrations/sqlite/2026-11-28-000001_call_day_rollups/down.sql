ALTER TABLE call_days DROP COLUMN rollup;
