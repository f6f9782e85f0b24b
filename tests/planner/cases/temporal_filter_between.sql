CREATE MATERIALIZED VIEW last_hour AS SELECT id, created_at FROM orders WHERE created_at BETWEEN now() - INTERVAL '1 hour' AND now()
