{{ config(materialized='materialized_view', enable_serverless_backfill=false) }}
select order_id, customer_id, amount from {{ ref('stg_orders') }} where amount >= 10
