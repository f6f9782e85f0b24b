CREATE MATERIALIZED VIEW m AS
SELECT id, count_char(status, 'c'), public.count_char(status, NULL) AS nulls FROM orders
