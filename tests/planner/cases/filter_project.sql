CREATE MATERIALIZED VIEW paid AS SELECT customer_id, amount * 2 AS doubled, upper(status) FROM orders WHERE status = 'paid' AND amount > 10
