CREATE MATERIALIZED VIEW m AS SELECT * FROM visits v FULL JOIN clicks c USING (user_id) JOIN orders o ON o.customer_id = v.user_id AND user_id > 0
