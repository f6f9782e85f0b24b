CREATE MATERIALIZED VIEW m AS SELECT o.id, s.total FROM orders o, (SELECT sum(amount) AS total FROM orders) s WHERE o.amount * 10 > s.total
