CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o WHERE o.customer_id < (SELECT count(*) FROM events e WHERE e.v = o.customer_id)
