CREATE MATERIALIZED VIEW j AS SELECT * FROM orders JOIN events ON orders.status = events.kind
