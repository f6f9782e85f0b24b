CREATE MATERIALIZED VIEW lj AS SELECT o.id, e.v, o.amount FROM orders o LEFT JOIN events e ON o.customer_id = e.v WHERE o.amount > 10
