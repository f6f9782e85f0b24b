CREATE MATERIALIZED VIEW s AS SELECT id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.v = o.customer_id AND e.kind = 'blocked')
