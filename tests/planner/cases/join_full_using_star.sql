CREATE MATERIALIZED VIEW m AS SELECT *, id * 2 AS twice FROM orders a FULL JOIN (SELECT customer_id AS id, count(*) AS n FROM orders GROUP BY customer_id) b USING (id) WHERE id > 3
