CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o WHERE o.amount = (SELECT max(amount) FROM orders)
