CREATE MATERIALIZED VIEW m AS
SELECT id, count_char(customer_id, 'c') AS c FROM orders
