CREATE MATERIALIZED VIEW m AS
SELECT count_char(status, 'c') AS c, count(*) AS n FROM orders GROUP BY count_char(status, 'c')
