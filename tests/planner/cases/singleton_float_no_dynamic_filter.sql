CREATE MATERIALIZED VIEW m AS SELECT c.page FROM clicks c, (SELECT max(ms) AS top FROM clicks) q WHERE c.ms >= q.top
