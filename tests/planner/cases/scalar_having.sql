CREATE MATERIALIZED VIEW m AS SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id HAVING sum(amount) > (SELECT sum(amount) * 0.1 FROM orders) ORDER BY total DESC
