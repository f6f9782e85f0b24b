CREATE MATERIALIZED VIEW h AS SELECT status, sum(amount) / count(*) AS mean FROM orders GROUP BY status HAVING count(*) > 10
