DROP TABLE call_days;
