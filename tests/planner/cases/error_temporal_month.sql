CREATE MATERIALIZED VIEW recent_month AS SELECT * FROM orders WHERE created_at > now() - INTERVAL '1 month'
