{{ config(materialized='materialized_view', background_ddl=true) }}
select kind, count(*) as events, sum(value) as total
from {{ source('app', 'events') }}
group by kind
