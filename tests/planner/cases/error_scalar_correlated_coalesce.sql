CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o WHERE o.amount > (SELECT coalesce(max(e.v), 0) FROM events e WHERE e.v = o.customer_id)
