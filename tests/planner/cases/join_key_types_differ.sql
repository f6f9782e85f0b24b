CREATE MATERIALIZED VIEW m AS SELECT o.id, e.kind FROM orders o JOIN events e ON o.id = e.v AND o.amount = e.v
