CREATE MATERIALIZED VIEW m AS SELECT o.id FROM orders o WHERE o.customer_id > (SELECT avg(amount) FROM orders)
