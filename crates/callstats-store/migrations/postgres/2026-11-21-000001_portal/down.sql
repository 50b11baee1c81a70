DROP TABLE api_keys;
DROP TABLE call_scores;
DROP TABLE scripts;
DROP TABLE kpi_metrics;
DROP TABLE kpi_rows;
DROP TABLE kpi_sheets;
DROP TABLE off_days;
DROP TABLE operators;
