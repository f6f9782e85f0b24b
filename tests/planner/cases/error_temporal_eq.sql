CREATE MATERIALIZED VIEW recent_eq AS SELECT * FROM orders WHERE created_at = now()
