CREATE MATERIALIZED VIEW m AS SELECT customer_id, status FROM orders EXCEPT SELECT v, kind FROM events
