CREATE MATERIALIZED VIEW sj AS SELECT s.customer_id, e.kind, s.amount FROM (SELECT customer_id, amount FROM orders WHERE amount > 1) s JOIN events e ON s.customer_id = e.v
