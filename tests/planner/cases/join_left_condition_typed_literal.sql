CREATE MATERIALIZED VIEW m AS SELECT o.id, e.kind FROM orders o LEFT JOIN events e ON o.customer_id = e.v AND o.status = 'x'::text AND e.kind <> 'y'::varchar
