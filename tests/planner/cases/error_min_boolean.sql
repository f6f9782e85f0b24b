CREATE MATERIALIZED VIEW b AS SELECT min(status = 'paid') FROM orders
