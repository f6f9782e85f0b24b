CREATE MATERIALIZED VIEW s AS SELECT id, amount FROM orders WHERE customer_id IN (SELECT v FROM events WHERE kind = 'vip') AND amount > 5
