-- ALTER TABLE column forms: ADD COLUMN (rows there read its DEFAULT, or
-- NULL; NOT NULL and CHECK checked against them), DROP COLUMN (with the
-- constraints that use it; attnums keep their gaps), RENAME COLUMN, a
-- varchar made longer, in and out of blocks, and foreign keys renumbered.
CREATE TABLE ac (id int PRIMARY KEY, a text, b int UNIQUE);
INSERT INTO ac VALUES (1, 'x', 10), (2, 'y', 20);
ALTER TABLE ac ADD COLUMN c int;
ALTER TABLE ac ADD COLUMN d text NOT NULL DEFAULT 'dflt';
ALTER TABLE ac ADD e boolean DEFAULT true;
ALTER TABLE ac ADD COLUMN n numeric(6,2) DEFAULT 1.5 CHECK (n > 0);
SELECT * FROM ac ORDER BY id;
INSERT INTO ac (id, a, b) VALUES (3, 'z', 30) RETURNING *;
INSERT INTO ac VALUES (4, 'w', 40, 7, 'given', NULL, NULL) RETURNING *;
UPDATE ac SET c = 5 WHERE id = 1 RETURNING *;
ALTER TABLE ac ADD COLUMN c int;
ALTER TABLE ac ADD COLUMN IF NOT EXISTS c int;
ALTER TABLE ac ADD COLUMN f int NOT NULL;
ALTER TABLE ac ADD COLUMN g int DEFAULT 0 CHECK (g > 0);
ALTER TABLE ac ADD COLUMN h int CHECK (h > b);
ALTER TABLE ac ALTER COLUMN d DROP DEFAULT;
INSERT INTO ac (id, a, b) VALUES (5, 'v', 50);
\d ac
SELECT attname, attnum, attnotnull, atthasdef FROM pg_attribute WHERE attrelid = 'ac'::regclass AND attnum > 0 ORDER BY attnum;
ALTER TABLE ac DROP COLUMN a;
ALTER TABLE ac DROP COLUMN a;
ALTER TABLE ac DROP COLUMN IF EXISTS a;
SELECT * FROM ac ORDER BY id;
INSERT INTO ac (id, b, d) VALUES (6, 60, 'six') RETURNING *;
SELECT attname, attnum FROM pg_attribute WHERE attrelid = 'ac'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT conname, conkey FROM pg_constraint WHERE conrelid = 'ac'::regclass ORDER BY conname;
SELECT column_name, ordinal_position FROM information_schema.columns WHERE table_name = 'ac' ORDER BY ordinal_position;
ALTER TABLE ac DROP COLUMN b;
\d ac
INSERT INTO ac (id, d) VALUES (7, 'seven');
INSERT INTO ac (id, d) VALUES (8, 'eight');
ALTER TABLE ac RENAME COLUMN d TO dd;
ALTER TABLE ac RENAME COLUMN nope TO x;
ALTER TABLE ac RENAME COLUMN dd TO c;
ALTER TABLE ac RENAME n TO "Num";
SELECT id, dd, "Num" FROM ac ORDER BY id;
INSERT INTO ac VALUES (9, 1, 'nine', true, -1);
\d ac
ALTER TABLE ac ADD COLUMN a text DEFAULT 'back';
SELECT id, a FROM ac ORDER BY id;
CREATE TABLE vc (id int PRIMARY KEY, s varchar(5), t text);
INSERT INTO vc VALUES (1, 'abcde', 'long text');
INSERT INTO vc VALUES (2, 'abcdefgh', 'x');
ALTER TABLE vc ALTER COLUMN s TYPE varchar(10);
INSERT INTO vc VALUES (2, 'abcdefgh', 'x');
ALTER TABLE "vc" ALTER COLUMN "s" TYPE varchar(12) USING ("s"::varchar(12));
INSERT INTO vc VALUES (3, 'abcdefghijk', 'y');
ALTER TABLE vc ALTER COLUMN s SET DATA TYPE text;
SELECT * FROM vc ORDER BY id;
\d vc
BEGIN;
ALTER TABLE vc ADD COLUMN u int DEFAULT 3;
SELECT * FROM vc ORDER BY id;
ROLLBACK;
SELECT * FROM vc ORDER BY id;
BEGIN;
ALTER TABLE vc DROP COLUMN t;
ALTER TABLE vc RENAME COLUMN s TO ss;
INSERT INTO vc VALUES (3, 'three');
COMMIT;
SELECT * FROM vc ORDER BY id;
CREATE TABLE par (id int PRIMARY KEY, x int, code text UNIQUE);
CREATE TABLE chi (id int PRIMARY KEY, pcode text REFERENCES par (code));
INSERT INTO par VALUES (1, 1, 'a');
INSERT INTO chi VALUES (1, 'a');
ALTER TABLE par DROP COLUMN code;
ALTER TABLE par DROP COLUMN x;
INSERT INTO chi VALUES (2, 'b');
INSERT INTO par VALUES (2, 'b');
INSERT INTO chi VALUES (2, 'b');
DELETE FROM par WHERE id = 1;
SELECT conname, conkey, confkey FROM pg_constraint WHERE conrelid = 'chi'::regclass ORDER BY conname;
DROP TABLE chi, par, vc, ac;
-- ADD COLUMN ... REFERENCES (Django's AddField of a ForeignKey): the rows
-- there hold NULL, so the key holds for them; enforced from then on.
CREATE TABLE au (id int PRIMARY KEY, name text UNIQUE);
CREATE TABLE bk (id int PRIMARY KEY, title text);
INSERT INTO au VALUES (1, 'ann');
INSERT INTO bk VALUES (1, 'b1'), (2, 'b2');
ALTER TABLE bk ADD COLUMN author_id int NULL CONSTRAINT bk_author_fk REFERENCES au (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE bk ADD COLUMN author_name text REFERENCES au (name);
ALTER TABLE bk ADD COLUMN parent_id int REFERENCES bk;
SELECT conname, contype, conkey, confkey, condeferrable, condeferred FROM pg_constraint WHERE conrelid = 'bk'::regclass ORDER BY conname;
UPDATE bk SET author_id = 1, author_name = 'ann', parent_id = 2 WHERE id = 1;
UPDATE bk SET author_name = 'bob' WHERE id = 2;
UPDATE bk SET parent_id = 9 WHERE id = 2;
BEGIN;
UPDATE bk SET author_id = 5 WHERE id = 2;
COMMIT;
DELETE FROM au WHERE id = 1;
SELECT * FROM bk ORDER BY id;
\d bk
DROP TABLE bk, au;
-- The table's own CHECKs do not stop an ADD COLUMN in a block.
CREATE TABLE ak (id int PRIMARY KEY, a int CHECK (a IS NOT NULL));
INSERT INTO ak VALUES (1, 1);
BEGIN;
ALTER TABLE ak ADD COLUMN b int DEFAULT 5 CHECK (b > 0);
SELECT * FROM ak;
COMMIT;
DROP TABLE ak;
