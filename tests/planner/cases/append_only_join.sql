CREATE MATERIALIZED VIEW m AS SELECT c.page, v.country, max(c.ms) AS slowest
FROM clicks c JOIN visits v ON c.user_id = v.user_id GROUP BY c.page, v.country
