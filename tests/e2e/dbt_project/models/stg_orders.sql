{{ config(materialized='view') }}
select order_id, customer_id, amount, status
from {{ ref('orders') }}
where status <> 'cancelled'
