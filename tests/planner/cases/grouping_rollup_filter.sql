CREATE MATERIALIZED VIEW m AS SELECT customer_id, status, sum(amount) FILTER (WHERE status <> 'x') AS s FROM orders GROUP BY ROLLUP (customer_id, status)
