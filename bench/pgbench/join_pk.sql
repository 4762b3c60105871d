-- A foreign-key join by primary key: one book and its author.
\set id random(1, 100000)
SELECT b.title, a.name FROM bench_books b JOIN bench_authors a ON b.author_id = a.id WHERE b.id = :id;
