-- Each stored day's rollup (docs/architecture.md, "Trends"): what a trend reads of the day, in
-- the domain's versioned rollup encoding. Null for a row written before the column existed:
-- its rollup is then made from the day when it is first read.
ALTER TABLE call_days ADD COLUMN rollup BLOB;
