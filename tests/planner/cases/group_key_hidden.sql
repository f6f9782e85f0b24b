CREATE MATERIALIZED VIEW counts AS SELECT count(*) AS n, avg(amount) FROM orders GROUP BY customer_id, status
