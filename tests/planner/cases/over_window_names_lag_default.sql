CREATE MATERIALIZED VIEW m AS SELECT id, lag(customer_id, 1, 1.5) OVER (ORDER BY id), row_number() OVER (ORDER BY id), sum(amount) OVER (ORDER BY id) FROM orders
