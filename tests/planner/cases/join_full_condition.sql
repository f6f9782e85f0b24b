CREATE MATERIALIZED VIEW oj AS SELECT * FROM orders o FULL JOIN events e ON o.status = e.kind AND o.id > e.v
