-- Functions in FROM: scalar functions as one row, generate_series and unnest as sets, with PostgreSQL's relation and column names.
CREATE TABLE ff_item (id integer PRIMARY KEY, label text NOT NULL, qty integer);
INSERT INTO ff_item VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', NULL);
-- scalar functions: the column is named after the function, or the alias
SELECT * FROM current_schema();
SELECT * FROM current_schema() AS s;
SELECT * FROM current_schema() AS s(x);
SELECT s FROM current_schema() AS s;
SELECT s.x FROM current_schema() AS s(x);
SELECT * FROM pg_catalog.current_schema();
SELECT * FROM current_database() WHERE false;
SELECT count(*) FROM current_database() AS d(name);
SELECT v LIKE 'PostgreSQL %' AS looks_right FROM version() AS v;
SELECT * FROM upper('abc');
SELECT * FROM upper('abc') \gdesc
SELECT * FROM lower(NULL) AS l;
SELECT * FROM abs(-3) AS a(b), upper('x') AS c;
SELECT * FROM current_user;
SELECT * FROM session_user AS s;
SELECT count(*) FROM now() AS t WHERE t > '2000-01-01';
-- generate_series over integers: int4 unless an argument is bigint
SELECT * FROM generate_series(1, 3);
SELECT * FROM generate_series(1, 3) \gdesc
SELECT * FROM generate_series(1::bigint, 3) \gdesc
SELECT * FROM generate_series(1, 10, 3) AS g;
SELECT g FROM generate_series(1, 3) AS g;
SELECT g.* FROM generate_series(1, 3) AS g;
SELECT n FROM generate_series(1, 5) AS g(n);
SELECT generate_series.generate_series FROM generate_series(1, 2);
SELECT * FROM generate_series(3, 1);
SELECT * FROM generate_series(3, 1, -1) AS s(v) ORDER BY v;
SELECT * FROM generate_series(-2, 2) g ORDER BY g DESC LIMIT 2;
SELECT * FROM generate_series(1, 3) WHERE generate_series > 1;
SELECT * FROM generate_series(NULL::integer, 3);
SELECT * FROM generate_series(2147483646, 2147483647);
SELECT * FROM generate_series(1, 2147483647, 2147483647);
SELECT count(*), sum(g), min(g), max(g) FROM generate_series(1, 100000) g;
SELECT x * 2 FROM generate_series(1, 3) x WHERE x > 1 ORDER BY x DESC;
SELECT * FROM generate_series(1, 2) a, generate_series(1, 2) b ORDER BY a, b;
SELECT * FROM generate_series(1, 3) g JOIN generate_series(2, 4) h ON g = h ORDER BY g;
SELECT i.label, g FROM ff_item i JOIN generate_series(1, 2) g ON g = i.id ORDER BY g;
SELECT i.label, g.k FROM ff_item i CROSS JOIN generate_series(1, 2) AS g(k) ORDER BY i.id, g.k;
SELECT * FROM (SELECT * FROM generate_series(1, 2)) s;
WITH c AS (SELECT * FROM generate_series(1, 2) x) SELECT * FROM c;
SELECT * FROM generate_series(1, 2) UNION ALL SELECT * FROM unnest(ARRAY[5]) ORDER BY 1;
SELECT label FROM ff_item WHERE id IN (SELECT * FROM generate_series(2, 3)) ORDER BY id;
-- generate_series over numerics and timestamps
SELECT * FROM generate_series(0.5, 2);
SELECT * FROM generate_series(0.5, 2) \gdesc
SELECT * FROM generate_series('2024-01-01 00:00:00'::timestamp, '2024-01-03', '1 day');
SELECT * FROM generate_series('2024-01-01 00:00:00'::timestamp, '2024-01-01 01:00:00', interval '20 minutes') \gdesc
SELECT * FROM generate_series('2024-01-31 00:00:00'::timestamptz, '2024-05-01', '1 month');
SELECT * FROM generate_series('2024-01-03 00:00:00'::timestamp, '2024-01-01', '-1 day') AS d(day);
SELECT * FROM generate_series('2024-01-01'::date, '2024-01-02'::date, '12 hours') \gdesc
-- unnest
SELECT * FROM unnest(ARRAY[1, 2]) AS u(x);
SELECT * FROM unnest(ARRAY[1, 2]);
SELECT * FROM unnest(ARRAY[1, 2]) \gdesc
SELECT * FROM unnest(ARRAY['a', 'b']) \gdesc
SELECT x FROM unnest(ARRAY[3, NULL, 1]) x ORDER BY x;
SELECT * FROM unnest(ARRAY[1, 2], ARRAY['a', 'b', 'c']);
SELECT * FROM unnest(ARRAY[1], ARRAY['a']) AS t;
SELECT * FROM unnest(ARRAY[1], ARRAY['a']) AS t(x);
-- WITH ORDINALITY
SELECT * FROM generate_series(10, 12) WITH ORDINALITY;
SELECT * FROM generate_series(10, 12) WITH ORDINALITY AS t;
SELECT * FROM generate_series(10, 12) WITH ORDINALITY AS t(a, b);
SELECT * FROM generate_series(10, 12) WITH ORDINALITY \gdesc
SELECT * FROM unnest(ARRAY['x', 'y']) WITH ORDINALITY AS u(v, n) ORDER BY n DESC;
SELECT * FROM upper('a') WITH ORDINALITY;
-- errors
SELECT * FROM nope();
SELECT * FROM nope(1, 'a');
SELECT * FROM generate_series(1, 3) AS g(a, b);
SELECT * FROM current_schema() AS s(a, b);
SELECT * FROM generate_series(1, 3) WITH ORDINALITY AS g(a, b, c);
SELECT * FROM generate_series(1);
SELECT * FROM generate_series(1, 3, 0);
SELECT * FROM generate_series(1::smallint, 3::smallint);
SELECT * FROM generate_series('2024-01-01 00:00:00'::timestamp, '2024-01-02', '0 days');
SELECT * FROM generate_series(1, 3) g WHERE nosuch = 1;
