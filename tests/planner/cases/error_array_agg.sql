CREATE MATERIALIZED VIEW a AS SELECT customer_id, array_agg(id) FROM orders GROUP BY customer_id
