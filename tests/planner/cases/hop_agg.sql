CREATE MATERIALIZED VIEW hopping AS SELECT h.window_start, count(*) AS n FROM HOP(orders, created_at, INTERVAL '30 minutes', INTERVAL '1 hour') AS h GROUP BY h.window_start
