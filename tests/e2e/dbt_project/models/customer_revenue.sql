{{ config(materialized='materialized_view', indexes=[{'columns': ['country']}]) }}
select c.customer_id, c.country, count(*) as order_count, sum(o.amount) as revenue
from {{ ref('stg_orders') }} o
join {{ ref('dim_customers') }} c on o.customer_id = c.customer_id
group by c.customer_id, c.country
