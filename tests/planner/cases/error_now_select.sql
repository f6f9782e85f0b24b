CREATE MATERIALIZED VIEW stamped AS SELECT id, now() AS seen FROM orders
