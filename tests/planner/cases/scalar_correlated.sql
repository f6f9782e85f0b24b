CREATE MATERIALIZED VIEW m AS SELECT o.id, o.amount FROM orders o WHERE o.amount = (SELECT max(o2.amount) FROM orders o2 WHERE o2.customer_id = o.customer_id AND o2.status <> 'x')
