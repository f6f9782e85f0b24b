CREATE MATERIALIZED VIEW sq AS SELECT s.customer_id, s.n FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) AS s WHERE s.n > 1
