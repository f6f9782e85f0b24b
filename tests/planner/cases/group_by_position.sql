CREATE MATERIALIZED VIEW by_status AS SELECT status, count(amount), sum(customer_id) FROM orders GROUP BY 1
