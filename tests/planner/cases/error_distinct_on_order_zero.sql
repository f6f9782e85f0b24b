CREATE MATERIALIZED VIEW m AS SELECT DISTINCT ON (customer_id) customer_id, amount FROM orders ORDER BY 0
