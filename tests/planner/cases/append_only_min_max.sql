CREATE MATERIALIZED VIEW m AS SELECT page, min(ts) AS first_seen, max(ms) AS slowest, count(*) AS n, max(page) AS p
FROM clicks WHERE ms > 0 GROUP BY page
