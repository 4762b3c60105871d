-- A GROUP BY over the whole 100,000-row table.
SELECT author_id % 10 AS g, count(*), sum(price) FROM bench_books GROUP BY 1 ORDER BY 1;
