CREATE MATERIALIZED VIEW per_customer AS SELECT customer_id, count(*) AS n FROM orders WHERE created_at >= now() - INTERVAL '1 day' GROUP BY customer_id
