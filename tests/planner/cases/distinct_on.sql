CREATE MATERIALIZED VIEW m AS SELECT DISTINCT ON (customer_id) customer_id, id, amount FROM orders ORDER BY customer_id, amount DESC
