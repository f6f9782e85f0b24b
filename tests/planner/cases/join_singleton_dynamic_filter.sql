CREATE MATERIALIZED VIEW m AS SELECT o.id, o.amount FROM orders o, (SELECT avg(amount) AS a FROM orders) s WHERE o.amount > s.a
