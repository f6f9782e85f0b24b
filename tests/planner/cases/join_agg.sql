CREATE MATERIALIZED VIEW ja AS SELECT e.kind, count(*) AS n, sum(o.amount) AS total FROM orders o JOIN events e ON o.status = e.kind AND o.id > e.v GROUP BY e.kind
