-- FOREIGN KEY constraints in the catalog as clients read them: psql's
-- `\d` footers, pg_constraint and pg_get_constraintdef, information_schema,
-- and the queries ORMs reflect foreign keys with. OIDs differ between
-- servers, so they are compared or shown as names, never shown.
CREATE TABLE users (id bigint PRIMARY KEY, email text UNIQUE, name text);
CREATE TABLE posts (id bigint PRIMARY KEY, author_id bigint REFERENCES users, editor integer,
  title text,
  CONSTRAINT posts_editor FOREIGN KEY (editor) REFERENCES users ON DELETE SET NULL DEFERRABLE);
CREATE TABLE tags (id int PRIMARY KEY,
  owner text REFERENCES users (email) ON DELETE SET NULL ON UPDATE CASCADE);
-- composite keys, the referenced columns in another order than the key's
CREATE TABLE regions (country text, code int, PRIMARY KEY (country, code));
CREATE TABLE shops (id int PRIMARY KEY, country text, code int,
  FOREIGN KEY (code, country) REFERENCES regions (code, country) ON DELETE RESTRICT ON UPDATE CASCADE
    DEFERRABLE INITIALLY DEFERRED);
-- a table that references itself; a unique index (no constraint) referenced
CREATE TABLE nodes (id int PRIMARY KEY, parent int REFERENCES nodes ON DELETE CASCADE, slug text);
CREATE UNIQUE INDEX nodes_slug ON nodes (slug);
CREATE TABLE "Links" ("From" text REFERENCES nodes (slug), id int PRIMARY KEY);
CREATE TABLE clicks (id int PRIMARY KEY, link int REFERENCES "Links" ON UPDATE SET NULL);
-- psql
\d posts
\d users
\d shops
\d regions
\d nodes
\d "Links"
\d clicks
-- pg_constraint
SELECT conname, contype, condeferrable, condeferred, convalidated, confupdtype, confdeltype, confmatchtype, conkey, confkey, conrelid::regclass, confrelid::regclass, conparentid, contypid, conislocal, coninhcount, connoinherit FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
SELECT conname, pg_get_constraintdef(oid), pg_get_constraintdef(oid, true) FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
SELECT conname, conpfeqop, conppeqop, conffeqop, confdelsetcols, conexclop, conbin FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
SELECT con.conname, i.relname AS index, c.relname AS child, p.relname AS parent FROM pg_constraint con JOIN pg_class i ON i.oid = con.conindid JOIN pg_class c ON c.oid = con.conrelid JOIN pg_class p ON p.oid = con.confrelid WHERE con.contype = 'f' ORDER BY 1;
SELECT count(DISTINCT oid) = count(*) AS distinct_oids FROM pg_constraint WHERE connamespace = 2200;
SELECT conname, confrelid = 'users'::regclass AS to_users FROM pg_constraint WHERE conrelid = 'posts'::regclass ORDER BY 1;
-- the triggers PostgreSQL gives both ends of a foreign key
SELECT relname, relhastriggers FROM pg_class WHERE relnamespace = 2200 AND relkind = 'r' ORDER BY 1;
SELECT tablename, hastriggers FROM pg_tables WHERE schemaname = 'public' ORDER BY 1;
-- dependencies: a constraint on its columns, a foreign key on the index and the columns it references
SELECT con.conname, d.refobjid::regclass, d.refobjsubid, d.deptype FROM pg_depend d JOIN pg_constraint con ON con.oid = d.objid WHERE d.classid = 'pg_constraint'::regclass AND con.conrelid IN ('posts'::regclass, 'shops'::regclass) ORDER BY 1, d.refobjid::regclass::text, 3;
-- the referenced index a foreign key uses is the first whose columns match, in any order
CREATE TABLE pairs (id int PRIMARY KEY, a int, b int, UNIQUE (a, b), UNIQUE (b, a));
CREATE TABLE pair_refs (id int PRIMARY KEY, x int, y int,
  FOREIGN KEY (y, x) REFERENCES pairs (b, a), FOREIGN KEY (x, y) REFERENCES pairs (a, b));
SELECT con.conname, i.relname, pg_get_constraintdef(con.oid) FROM pg_constraint con JOIN pg_class i ON i.oid = con.conindid WHERE con.conrelid = 'pair_refs'::regclass AND con.contype = 'f' ORDER BY 1;
SELECT constraint_name, column_name, ordinal_position, position_in_unique_constraint FROM information_schema.key_column_usage WHERE table_name = 'pair_refs' ORDER BY 1, 3;
SELECT constraint_name, unique_constraint_name FROM information_schema.referential_constraints WHERE constraint_name LIKE 'pair_refs%' ORDER BY 1;
DROP TABLE pair_refs, pairs;
-- regclass prints a name, compares as an OID
SELECT pg_partition_ancestors('users'), pg_partition_ancestors('users') = 'users'::regclass AS same;
SELECT a.relid::regclass, a.depth FROM pg_partition_ancestors('posts') WITH ORDINALITY AS a(relid, depth);
SELECT 'users'::regclass, 'pg_class'::regclass, 'information_schema.tables'::regclass, '"Links"'::regclass, to_regclass('nodes_slug');
SELECT relname FROM pg_class WHERE oid IN (SELECT pg_partition_ancestors('tags') UNION ALL VALUES ('users'::regclass)) ORDER BY 1;
-- information_schema
SELECT constraint_name, table_name, constraint_type, is_deferrable, initially_deferred, enforced, nulls_distinct FROM information_schema.table_constraints WHERE table_schema = 'public' AND constraint_type <> 'CHECK' ORDER BY table_name, constraint_name;
SELECT constraint_name, table_name, column_name, ordinal_position, position_in_unique_constraint FROM information_schema.key_column_usage WHERE table_schema = 'public' ORDER BY table_name, constraint_name, ordinal_position;
SELECT constraint_name, unique_constraint_schema, unique_constraint_name, match_option, update_rule, delete_rule FROM information_schema.referential_constraints ORDER BY constraint_name;
SELECT constraint_name, table_name, column_name FROM information_schema.constraint_column_usage WHERE table_schema = 'public' ORDER BY constraint_name, table_name, column_name;
SELECT count(*) = count(DISTINCT constraint_catalog) * count(*) AS one_catalog FROM information_schema.referential_constraints WHERE unique_constraint_catalog = constraint_catalog;
-- what ORMs send: SQLAlchemy's get_foreign_keys (psycopg2 inlines its parameters)
SELECT pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname, CASE WHEN (pg_catalog.pg_constraint.oid IS NOT NULL) THEN pg_catalog.pg_get_constraintdef(pg_catalog.pg_constraint.oid, true) END AS anon_1, nsp_ref.nspname, pg_catalog.pg_description.description 
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_constraint ON pg_catalog.pg_class.oid = pg_catalog.pg_constraint.conrelid AND pg_catalog.pg_constraint.contype = 'f' LEFT OUTER JOIN pg_catalog.pg_class AS cls_ref ON cls_ref.oid = pg_catalog.pg_constraint.confrelid LEFT OUTER JOIN pg_catalog.pg_namespace AS nsp_ref ON cls_ref.relnamespace = nsp_ref.oid LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS) JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog' AND pg_catalog.pg_class.relname IN ('posts', 'shops', 'users') ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname;
-- Django's get_relations
SELECT a1.attname, c2.relname, a2.attname
FROM pg_constraint con
LEFT JOIN pg_class c1 ON con.conrelid = c1.oid
LEFT JOIN pg_class c2 ON con.confrelid = c2.oid
LEFT JOIN
    pg_attribute a1 ON c1.oid = a1.attrelid AND a1.attnum = con.conkey[1]
LEFT JOIN
    pg_attribute a2 ON c2.oid = a2.attrelid AND a2.attnum = con.confkey[1]
WHERE
    c1.relname = 'posts' AND
    con.contype = 'f' AND
    c1.relnamespace = c2.relnamespace AND
    pg_catalog.pg_table_is_visible(c1.oid)
ORDER BY 1;
-- Django's get_key_columns (before 4.1)
SELECT kcu.column_name, ccu.table_name AS referenced_table, ccu.column_name AS referenced_column
FROM information_schema.constraint_column_usage ccu
LEFT JOIN information_schema.key_column_usage kcu
    ON ccu.constraint_catalog = kcu.constraint_catalog
        AND ccu.constraint_schema = kcu.constraint_schema
        AND ccu.constraint_name = kcu.constraint_name
LEFT JOIN information_schema.table_constraints tc
    ON ccu.constraint_catalog = tc.constraint_catalog
        AND ccu.constraint_schema = tc.constraint_schema
        AND ccu.constraint_name = tc.constraint_name
WHERE kcu.table_name = 'posts' AND tc.constraint_type = 'FOREIGN KEY'
ORDER BY 1;
-- a composite key's column pairs, as information_schema gives them
SELECT rc.constraint_name, kcu.column_name, kcu2.table_name AS ref_table, kcu2.column_name AS ref_column, rc.update_rule, rc.delete_rule
FROM information_schema.referential_constraints rc
JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = rc.constraint_name AND kcu.constraint_schema = rc.constraint_schema
JOIN information_schema.key_column_usage kcu2 ON kcu2.constraint_name = rc.unique_constraint_name AND kcu2.constraint_schema = rc.unique_constraint_schema AND kcu2.ordinal_position = kcu.position_in_unique_constraint
ORDER BY 1, 2;
-- the trigger query psql 11 and 12 send for `\d` (the table's OID as a name here)
SELECT t.tgname, pg_catalog.pg_get_triggerdef(t.oid, true), t.tgenabled, t.tgisinternal
FROM pg_catalog.pg_trigger t
WHERE t.tgrelid = 'posts'::regclass AND (NOT t.tgisinternal OR (t.tgisinternal AND t.tgenabled = 'D') 
    OR EXISTS (SELECT 1 FROM pg_catalog.pg_depend WHERE objid = t.oid 
        AND refclassid = 'pg_catalog.pg_trigger'::pg_catalog.regclass))
ORDER BY 1;
-- a foreign key its own transaction sees, and nobody after a rollback
BEGIN;
CREATE TABLE drafts (id int PRIMARY KEY, author bigint REFERENCES users);
SELECT conname, confrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'drafts'::regclass;
\d users
ROLLBACK;
SELECT count(*) FROM pg_constraint WHERE conname = 'drafts_author_fkey';
-- a foreign key added and dropped; a dropped child
ALTER TABLE tags DROP CONSTRAINT tags_owner_fkey;
ALTER TABLE tags ADD CONSTRAINT tags_owner FOREIGN KEY (owner) REFERENCES users (email) ON UPDATE RESTRICT;
DROP TABLE posts;
\d users
\d tags
SELECT conname, conrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' ORDER BY 1;
DROP TABLE tags, shops, clicks, "Links";
\d users
DROP TABLE users, regions, nodes;
