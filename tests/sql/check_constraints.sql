-- CHECK constraints: column and table level, named as PostgreSQL names
-- them, enforced on INSERT, UPDATE, ON CONFLICT DO UPDATE and in blocks
-- (23514, NULL passes), added to a table with rows (checked, or NOT
-- VALID and then VALIDATE), dropped, and shown by the catalog and \d.
CREATE TABLE ck1 (id int PRIMARY KEY, age int CHECK (age >= 0), price numeric CHECK (price > 0), lo int, hi int, name text CHECK (length(name) < 10), CHECK (lo < hi), CHECK (lo > 0 AND lo < 100), CONSTRAINT named CHECK (hi <> 7), CHECK (true));
SELECT conname, contype, conkey, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true), convalidated, connoinherit, pg_get_expr(conbin, conrelid) FROM pg_constraint WHERE conrelid = 'ck1'::regclass ORDER BY conname;
\d ck1
INSERT INTO ck1 VALUES (1, -1, 1, 1, 2, 'a');
INSERT INTO ck1 VALUES (1, 1, 1, 2, 1, 'a');
INSERT INTO ck1 VALUES (1, NULL, NULL, NULL, NULL, NULL);
INSERT INTO ck1 VALUES (2, 1, 1, 1, 7, 'a');
INSERT INTO ck1 VALUES (2, 1, 1, 1, 8, 'abcdefghijk');
UPDATE ck1 SET age = -5;
UPDATE ck1 SET age = 5 RETURNING id, age;
ALTER TABLE ck1 ADD CONSTRAINT c2 CHECK (age < 0);
ALTER TABLE ck1 ADD CHECK (age < 100);
ALTER TABLE ck1 ADD CONSTRAINT c3 CHECK (age < 0) NOT VALID;
SELECT conname, convalidated, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'ck1'::regclass AND conname = 'c3';
ALTER TABLE ck1 VALIDATE CONSTRAINT c3;
ALTER TABLE ck1 DROP CONSTRAINT c3;
ALTER TABLE ck1 DROP CONSTRAINT c3;
SELECT constraint_schema, constraint_name, check_clause FROM information_schema.check_constraints WHERE constraint_name LIKE 'ck1%' ORDER BY 2;
SELECT constraint_name, table_name, constraint_type, is_deferrable FROM information_schema.table_constraints WHERE table_name = 'ck1' AND constraint_type = 'CHECK' AND constraint_name NOT LIKE '%not_null' ORDER BY 1;
SELECT relchecks FROM pg_class WHERE relname = 'ck1';

CREATE TABLE ck2 (id int PRIMARY KEY CHECK (id > 0) CHECK (id < 10));
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'ck2'::regclass ORDER BY conname;

-- What a CHECK may not hold.
CREATE TABLE ck3 (id int PRIMARY KEY, CHECK (id > (SELECT 1)));
CREATE TABLE ck3 (id int PRIMARY KEY, CHECK (nope > 1));
CREATE TABLE ck3 (id int PRIMARY KEY, CHECK (id));
CREATE TABLE ck3 (id int PRIMARY KEY, v int, CONSTRAINT v_pos CHECK (v > 0), CONSTRAINT v_pos CHECK (v < 10));
CREATE TABLE ck3 (id int PRIMARY KEY, v int CHECK (v > $1));

-- Printing: precedence, NOT, IS NULL, arithmetic, negative constants.
CREATE TABLE ck4 (a int PRIMARY KEY, b int, c int CHECK (c > b), CHECK (a + 1 > b * 2 - 1), CHECK (NOT (a = 3) OR b IS NULL), CHECK (a > -5 AND (b < 3 OR c < 4)));
SELECT conname, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true), pg_get_expr(conbin, conrelid) FROM pg_constraint WHERE conrelid = 'ck4'::regclass ORDER BY conname;
INSERT INTO ck4 VALUES (3, NULL, NULL);
INSERT INTO ck4 VALUES (3, 1, 0);
INSERT INTO ck4 VALUES (10, 2, 3);
INSERT INTO ck4 VALUES (11, 20, 21);
ALTER TABLE ck4 DROP CONSTRAINT ck4_c_check;
ALTER TABLE ck4 ADD CONSTRAINT bb CHECK (b > 100);
ALTER TABLE ck4 ADD CONSTRAINT bb CHECK (b > 100) NOT VALID;
ALTER TABLE ck4 ADD CONSTRAINT bb CHECK (b > 200) NOT VALID;
INSERT INTO ck4 VALUES (12, 1, 5);
ALTER TABLE ck4 VALIDATE CONSTRAINT bb;
ALTER TABLE ck4 VALIDATE CONSTRAINT nope;
ALTER TABLE ck4 VALIDATE CONSTRAINT ck4_pkey;
\d ck4
BEGIN;
ALTER TABLE ck4 DROP CONSTRAINT bb;
INSERT INTO ck4 VALUES (12, 1, 5);
ROLLBACK;
INSERT INTO ck4 VALUES (13, 2, 3);
DELETE FROM ck4 WHERE b < 100;
ALTER TABLE ck4 VALIDATE CONSTRAINT bb;
SELECT conname, convalidated FROM pg_constraint WHERE conname = 'bb';
SELECT * FROM ck4 ORDER BY a;

-- varchar, IN, BETWEEN, numeric; upserts, key changes and blocks.
CREATE TABLE ck5 (id int PRIMARY KEY, name varchar(10) CHECK (name <> ''), t text CHECK (t IN ('a', 'b')), n numeric(5,2) CHECK (n BETWEEN 0 AND 10), k int CHECK (k NOT IN (1, 2)));
SELECT conname, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) FROM pg_constraint WHERE conrelid = 'ck5'::regclass ORDER BY conname;
INSERT INTO ck5 VALUES (1, '', 'a', 1);
INSERT INTO ck5 VALUES (1, 'x', 'c', 1);
INSERT INTO ck5 VALUES (1, 'x', 'a', 11);
INSERT INTO ck5 VALUES (1, 'x', 'a', 1, 2);
INSERT INTO ck5 VALUES (1, 'x', 'a', 1) ON CONFLICT (id) DO UPDATE SET n = -1;
INSERT INTO ck5 VALUES (1, 'x', 'a', 1) ON CONFLICT (id) DO UPDATE SET n = -1;
UPDATE ck5 SET t = 'z' WHERE id = 1;
UPDATE ck5 SET id = 2, n = 100 WHERE id = 1;
INSERT INTO ck5 SELECT 7, 'q', 'zz', 1;
BEGIN;
INSERT INTO ck5 VALUES (3, 'y', 'b', 2);
INSERT INTO ck5 VALUES (4, 'y', 'q', 2);
COMMIT;
BEGIN;
INSERT INTO ck5 VALUES (3, 'y', 'b', 2);
SAVEPOINT s;
UPDATE ck5 SET n = 50 WHERE id = 3;
ROLLBACK TO SAVEPOINT s;
UPDATE ck5 SET n = 5 WHERE id = 3;
COMMIT;
SELECT * FROM ck5 ORDER BY id;
ALTER TABLE ck5 ADD CONSTRAINT ck5_pkey CHECK (id > 0);
ALTER TABLE ck5 DROP CONSTRAINT ck5_t_check;
INSERT INTO ck5 VALUES (5, 'x', 'zz', 1);
-- Quoted names print as PostgreSQL quotes them.
CREATE TABLE ck6 ("Mixed" int PRIMARY KEY CHECK ("Mixed" > 0), "plain" int CHECK ("plain" < 5), CHECK ("Mixed" <> "plain"));
SELECT conname, pg_get_constraintdef(oid, true) FROM pg_constraint WHERE conrelid = 'ck6'::regclass ORDER BY conname;
INSERT INTO ck6 VALUES (1, 1);
DROP TABLE ck1, ck2, ck4, ck5, ck6;
