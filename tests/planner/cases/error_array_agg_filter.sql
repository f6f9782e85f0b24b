CREATE MATERIALIZED VIEW a AS SELECT customer_id, array_agg(id) FILTER (WHERE status = 'paid') FROM orders GROUP BY customer_id
