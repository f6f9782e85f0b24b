CREATE MATERIALIZED VIEW bad AS SELECT id, customer_id AS id FROM orders
