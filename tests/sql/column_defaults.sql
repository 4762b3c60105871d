-- Column defaults as the catalog shows them: a string constant given to a
-- text-like column carries PostgreSQL's cast.
CREATE TABLE d1 (id int primary key, note text DEFAULT 'n', v varchar(5) default 'x', c char(3) DEFAULT 'ab', q text DEFAULT 'it''s', n numeric default 1.5, j json DEFAULT '{"a": 1}', e text DEFAULT '', k int DEFAULT 0, t timestamptz DEFAULT now());
ALTER TABLE d1 ADD COLUMN note2 text DEFAULT 'm';
ALTER TABLE d1 ALTER COLUMN k SET DEFAULT 5;
ALTER TABLE d1 ALTER COLUMN v SET DEFAULT 'y';
SELECT adnum, pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'd1'::regclass ORDER BY 1;
SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'd1' ORDER BY ordinal_position;
\d d1
DROP TABLE d1;
