CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o WHERE o.amount > (SELECT amount FROM orders WHERE id = 1)
