-- A point select the query engine plans (a CTE), beside the fast path's.
\set id random(1, 100000)
WITH b AS (SELECT id, title FROM bench_books WHERE id = :id) SELECT title FROM b;
