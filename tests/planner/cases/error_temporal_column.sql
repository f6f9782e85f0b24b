CREATE MATERIALIZED VIEW recent_int AS SELECT * FROM orders WHERE customer_id > now()
