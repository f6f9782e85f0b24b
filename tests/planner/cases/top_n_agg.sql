CREATE MATERIALIZED VIEW top_customers AS SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id ORDER BY total DESC, customer_id LIMIT 5 OFFSET 1
