CREATE MATERIALIZED VIEW recent AS SELECT * FROM orders WHERE created_at > now() - INTERVAL '1 hour'
