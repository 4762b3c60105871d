-- The fast path's point select on the same table.
\set id random(1, 100000)
SELECT title FROM bench_books WHERE id = :id;
