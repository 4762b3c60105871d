-- numeric(p, s): values written or cast into the type are rounded half away
-- from zero to s places and padded, and refused when too large.
CREATE TABLE nt (id integer PRIMARY KEY, price numeric(5,2), whole numeric(3), plain numeric, frac numeric(2,2), hundreds numeric(4,-2));
INSERT INTO nt VALUES (1, 7, 7, 7, 0.5, 1234);
INSERT INTO nt VALUES (2, 1.005, 1.5, 1.005, 0.125, 1250);
INSERT INTO nt VALUES (3, 1.239, -2.5, 1.239, -0.994, -1249.99);
INSERT INTO nt VALUES (4, -1.005, 999.4, -1.005, 0.004, 49);
INSERT INTO nt VALUES (5, 123456.5, 1, 1, 0, 0);
INSERT INTO nt VALUES (5, '123456.5', 1, 1, 0, 0);
INSERT INTO nt VALUES (5, 999.995, 1, 1, 0, 0);
INSERT INTO nt VALUES (5, -999.995, 1, 1, 0, 0);
INSERT INTO nt VALUES (5, 1, 999.5, 1, 0, 0);
INSERT INTO nt VALUES (5, 1, 1, 1, 0.995, 0);
INSERT INTO nt VALUES (5, 1, 1, 1, 1, 0);
INSERT INTO nt VALUES (5, 1, 1, 1, 0, 999950);
INSERT INTO nt VALUES (5, 1, 1, 1, 0, 999949.99);
INSERT INTO nt VALUES (6, '2.345', '12', '2.345', '.1', '150');
INSERT INTO nt VALUES (7, 3.14159::float8, 2.5::real, 1e-3, 0.00001, 0.01);
INSERT INTO nt VALUES (8, -0.004, -0.4, -0.004, -0.004, -49);
SELECT * FROM nt ORDER BY id;
-- A literal compared with the column is not rounded.
SELECT id, price FROM nt WHERE price = '1.005';
SELECT id, price FROM nt WHERE price = 1.01 OR price = ANY('{1.239,2.35}') ORDER BY id;
SELECT id, price + '0.001' AS plus FROM nt WHERE id = 1;
-- Every write path conforms the row.
UPDATE nt SET price = price * 2 WHERE id <= 3;
UPDATE nt SET price = price * 1000 WHERE id = 1;
UPDATE nt SET price = price / 3 WHERE id = 2 RETURNING id, price;
INSERT INTO nt (id, price, whole) SELECT id + 10, price / 7, whole * 3 FROM nt WHERE id IN (1, 2);
INSERT INTO nt (id, price, whole) SELECT id + 20, price * 500, whole FROM nt WHERE id = 1;
INSERT INTO nt (id, price) VALUES (1, 5.555) ON CONFLICT (id) DO UPDATE SET price = excluded.price + 0.001;
INSERT INTO nt (id, price) VALUES (1, 5.555) ON CONFLICT (id) DO UPDATE SET price = 100000;
INSERT INTO nt (id, price) VALUES (30, 1.115) ON CONFLICT (id) DO NOTHING RETURNING id, price;
SELECT * FROM nt ORDER BY id;
SELECT id, price, price * 2 AS doubled, price + whole AS total, -price AS negated FROM nt WHERE id < 4 ORDER BY id;
-- Through the query engine: a column keeps its scale.
SELECT a.id, a.price, b.whole FROM nt a JOIN nt b ON a.id = b.id WHERE a.id < 4 ORDER BY a.id;
-- Casts.
SELECT 1.005::numeric(5,2), 7::numeric(5,2) AS seven, (-1.005)::numeric(5,2) AS neg, '2.5'::numeric(3) AS whole, 1250::numeric(4,-2) AS hundreds;
SELECT CAST(1.239 AS decimal(5,2)) AS cast_form, numeric(4,1) '2.25' AS typed, 0.994::numeric(2,2) AS frac, 2.5::float8::numeric(2,0) AS from_float;
SELECT '{1.005,7,NULL}'::numeric(5,2)[] AS items;
SELECT id, price::numeric(4,1) AS p41 FROM nt WHERE id < 4 ORDER BY id;
SELECT '123456.5'::numeric(5,2);
SELECT 999.995::numeric(5,2);
SELECT 0.995::numeric(2,2);
SELECT 99999.5::numeric(5);
SELECT 12345678::numeric(4,-2);
SELECT 0.001::numeric(2,5);
SELECT price::numeric(3,1) FROM nt ORDER BY id;
-- The catalog.
\d nt
SELECT attname, atttypmod, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'nt'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_name, data_type, numeric_precision, numeric_precision_radix, numeric_scale FROM information_schema.columns WHERE table_name = 'nt' ORDER BY ordinal_position;
DROP TABLE nt;
-- Defaults and arrays are conformed as well.
CREATE TABLE na (id integer PRIMARY KEY, amount numeric(5,2) DEFAULT 1.005, amounts numeric(4,1)[]);
INSERT INTO na (id) VALUES (1);
INSERT INTO na VALUES (2, 2, '{1.25,-1.25,NULL}');
INSERT INTO na VALUES (3, 3, ARRAY[1000]);
SELECT * FROM na ORDER BY id;
\d na
DROP TABLE na;
-- Uniqueness is on the rounded value.
CREATE TABLE nu (id integer PRIMARY KEY, amount numeric(5,2) UNIQUE);
INSERT INTO nu VALUES (1, 1.001);
INSERT INTO nu VALUES (2, 1.004);
INSERT INTO nu VALUES (3, 1.005);
UPDATE nu SET amount = 1.0049 WHERE id = 3;
SELECT * FROM nu ORDER BY id;
-- A lookup by the unique key compares unrounded.
SELECT * FROM nu WHERE amount = 1.005;
SELECT * FROM nu WHERE amount = 1.01;
SELECT * FROM nu WHERE amount IN (1.004, 1.00) ORDER BY id;
UPDATE nu SET amount = 2 WHERE amount = 1.009;
DROP TABLE nu;
