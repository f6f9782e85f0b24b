CREATE MATERIALIZED VIEW m AS SELECT c.page FROM clicks c WHERE c.ms > (SELECT avg(ms) FROM clicks)
