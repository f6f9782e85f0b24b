CREATE MATERIALIZED VIEW m AS
SELECT id, count_char(status, 'c') AS c_counts, count_char(status, 'x') + customer_id AS mixed
FROM orders
WHERE count_char(status, 'a') > 0
