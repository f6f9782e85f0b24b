CREATE MATERIALIZED VIEW m AS SELECT * FROM events e, orders a JOIN (SELECT id, status AS note FROM orders) b USING (id) WHERE e.v = a.customer_id
