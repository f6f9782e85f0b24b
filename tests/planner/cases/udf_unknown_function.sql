CREATE MATERIALIZED VIEW m AS
SELECT id, count_chars(status, 'c') AS c FROM orders
