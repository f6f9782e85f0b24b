CREATE MATERIALIZED VIEW m AS SELECT o.id, e.kind FROM orders o LEFT JOIN events e ON o.customer_id = e.v AND e.kind LIKE 'a%' AND o.status = 'x'
