CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o, events e WHERE (o.customer_id = e.v AND o.amount > 1) OR (e.v = o.customer_id AND e.kind = 'x')
