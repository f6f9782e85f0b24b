CREATE MATERIALIZED VIEW m AS WITH w (cid, total) AS (SELECT customer_id, sum(amount) FROM orders GROUP BY customer_id) SELECT cid, total FROM w WHERE total > 10
