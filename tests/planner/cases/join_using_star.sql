CREATE MATERIALIZED VIEW m AS SELECT * FROM orders a JOIN (SELECT id, status AS note FROM orders) b USING (id) WHERE id > 3
