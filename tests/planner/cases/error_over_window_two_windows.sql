CREATE MATERIALIZED VIEW m AS SELECT id, avg(amount) OVER (PARTITION BY customer_id ORDER BY created_at) AS a, rank() OVER (ORDER BY created_at) AS r FROM orders
