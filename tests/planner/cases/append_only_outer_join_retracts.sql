CREATE MATERIALIZED VIEW m AS SELECT c.page, max(v.country) AS country
FROM clicks c LEFT JOIN visits v ON c.user_id = v.user_id GROUP BY c.page
