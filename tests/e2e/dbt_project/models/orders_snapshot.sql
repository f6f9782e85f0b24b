{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='order_id') }}
select order_id, customer_id, amount, status
from {{ ref('orders') }}
{% if is_incremental() %}
where order_id >= (select coalesce(max(order_id), 0) - 2 from {{ this }})
{% endif %}
