CREATE MATERIALIZED VIEW bad AS SELECT customer_id, status, count(*) FROM orders GROUP BY customer_id
