CREATE MATERIALIZED VIEW m AS SELECT o.id, e.kind, o2.status FROM events e, orders o, orders o2 WHERE o2.id = o.id AND e.v = o.customer_id AND o.amount > 5 AND e.kind <> o2.status
