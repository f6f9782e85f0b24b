CREATE MATERIALIZED VIEW m AS SELECT o.id, e.kind FROM orders o JOIN events e ON o.status IS NOT DISTINCT FROM e.kind
