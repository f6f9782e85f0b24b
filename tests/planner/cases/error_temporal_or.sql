CREATE MATERIALIZED VIEW recent_or AS SELECT * FROM orders WHERE created_at > now() - INTERVAL '1 hour' OR status = 'open'
