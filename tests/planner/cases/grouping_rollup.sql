CREATE MATERIALIZED VIEW m AS SELECT customer_id, status, sum(amount) AS s, grouping(customer_id, status) AS g FROM orders GROUP BY ROLLUP (customer_id, status)
