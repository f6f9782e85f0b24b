CREATE MATERIALIZED VIEW g AS SELECT count(*) AS n, sum(amount) AS total FROM orders WHERE status = 'paid'
