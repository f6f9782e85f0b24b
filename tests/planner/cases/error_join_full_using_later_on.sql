CREATE MATERIALIZED VIEW m AS SELECT * FROM clicks c FULL JOIN visits v USING (user_id) JOIN orders o ON o.customer_id = user_id
