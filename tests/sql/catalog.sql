-- pg_catalog and information_schema as clients read them: psql's
-- backslash commands, ORMs' and drivers' introspection queries. OIDs and
-- database names differ between servers, so they are compared, not shown.
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL UNIQUE, email varchar(50), rating numeric DEFAULT 0);
CREATE TABLE book (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, author_id integer, title text, published date);
CREATE INDEX book_author ON book (author_id);
CREATE UNIQUE INDEX book_title ON book (title) NULLS NOT DISTINCT;
CREATE SEQUENCE ticket START 5 INCREMENT 2;
-- psql
\dt
\d
\di
\ds
\dn
\du
\d author
\d book
\d author_pkey
\d book_author
\d ticket
\dt book*
\d nope
-- pg_class, pg_namespace, pg_attribute, pg_type
SELECT c.relname, c.relkind, c.relnatts, c.relhasindex FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY c.relname;
SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef, a.attidentity FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'author' AND a.attnum > 0 ORDER BY a.attnum;
SELECT t.typname, t.typlen, t.typtype, t.typcategory FROM pg_type t WHERE t.typname IN ('int4', 'text', 'varchar', 'bool', '_int4', 'timestamptz', 'uuid', 'jsonb') ORDER BY t.typname;
SELECT typname FROM pg_type WHERE oid = 'integer'::regtype;
SELECT 'integer'::regtype::oid, 'text'::regtype::oid, to_regtype('no_such_type') IS NULL AS missing;
SELECT c.oid = 'author'::regclass AS same, to_regclass('nope') IS NULL AS missing FROM pg_class c WHERE c.relname = 'author';
-- pg_index, pg_constraint, pg_attrdef, pg_sequence, pg_depend
SELECT ic.relname, i.indisunique, i.indisprimary, i.indnullsnotdistinct, i.indnatts, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid WHERE ic.relnamespace = 2200 ORDER BY ic.relname;
SELECT con.conname, con.contype, pg_get_constraintdef(con.oid) FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid WHERE c.relname IN ('author', 'book') ORDER BY con.conname;
SELECT c.relname, d.adnum, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid WHERE c.relnamespace = 2200 ORDER BY 1, 2;
SELECT c.relname, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid ORDER BY 1;
SELECT sequencename, data_type, start_value, increment_by, max_value FROM pg_sequences ORDER BY 1;
SELECT s.relname, t.relname, a.attname, d.deptype FROM pg_depend d JOIN pg_class s ON s.oid = d.objid JOIN pg_class t ON t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND s.relkind = 'S' ORDER BY 1;
SELECT tablename, hasindexes FROM pg_tables WHERE schemaname = 'public' ORDER BY 1;
SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 2;
-- information_schema
SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name;
SELECT table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, numeric_precision, udt_name, is_identity, identity_generation FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position;
SELECT constraint_name, table_name, constraint_type, is_deferrable, nulls_distinct FROM information_schema.table_constraints WHERE table_schema = 'public' AND constraint_type <> 'CHECK' ORDER BY constraint_name;
SELECT count(*) FROM information_schema.table_constraints WHERE table_name = 'author' AND constraint_type = 'CHECK';
SELECT constraint_name, table_name, column_name, ordinal_position FROM information_schema.key_column_usage WHERE table_schema = 'public' ORDER BY constraint_name, ordinal_position;
SELECT sequence_name, data_type, start_value, increment FROM information_schema.sequences ORDER BY 1;
SELECT schema_name FROM information_schema.schemata WHERE schema_name = 'public';
-- what drivers and ORMs send
SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace WHERE pg_catalog.pg_class.relname = 'author' AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog';
SELECT t.oid IS NOT NULL AS found, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname = 'hstore';
SELECT c.relname, CASE WHEN c.relispartition THEN 'p' WHEN c.relkind IN ('m', 'v') THEN 'v' ELSE 't' END, obj_description(c.oid, 'pg_class') FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('f', 'm', 'p', 'r', 'v') AND n.nspname NOT IN ('pg_catalog', 'pg_toast') AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1;
SELECT table_schema, table_name, table_type, is_insertable_into, is_typed FROM information_schema.tables WHERE table_name = 'book' AND table_schema = current_schema() AND table_catalog = current_database();
SELECT current_schemas(true), current_schemas(false), current_user = session_user AS same_user;
SELECT has_table_privilege('author', 'SELECT'), has_schema_privilege('public', 'USAGE');
SELECT pg_get_serial_sequence('author', 'id'), pg_get_serial_sequence('book', 'id');
SELECT a.attname, (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef) FROM pg_attribute a WHERE a.attrelid = 'author'::regclass AND a.attnum > 0 ORDER BY a.attnum;
SELECT c.relname, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS has_pk FROM pg_class c WHERE c.relname IN ('author', 'book', 'ticket') ORDER BY 1;
-- catalog DDL inside a transaction is seen by that transaction only
BEGIN;
CREATE TABLE draft (id integer PRIMARY KEY);
SELECT relname FROM pg_class WHERE relname = 'draft';
ROLLBACK;
SELECT relname FROM pg_class WHERE relname = 'draft';
DROP TABLE book;
DROP TABLE author;
DROP SEQUENCE ticket;
\dt
