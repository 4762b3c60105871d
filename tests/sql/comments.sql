-- COMMENT ON TABLE and COLUMN (SQLAlchemy's comment=, Django's
-- db_comment): kept in the catalog, transactional.
CREATE TABLE cm (id int PRIMARY KEY, name text, qty int);
COMMENT ON TABLE cm IS 'the stock';
COMMENT ON COLUMN cm.name IS 'what it is';
COMMENT ON COLUMN public.cm.qty IS 'how many';
SELECT obj_description('cm'::regclass, 'pg_class'), obj_description('cm'::regclass);
SELECT col_description('cm'::regclass, 2), col_description('cm'::regclass, 1);
SELECT objsubid, description FROM pg_description WHERE objoid = 'cm'::regclass ORDER BY objsubid;
COMMENT ON COLUMN cm.qty IS NULL;
BEGIN;
COMMENT ON TABLE cm IS 'changed';
ROLLBACK;
SELECT obj_description('cm'::regclass, 'pg_class');
SELECT objsubid, description FROM pg_description WHERE objoid = 'cm'::regclass ORDER BY objsubid;
ALTER TABLE cm RENAME COLUMN name TO label;
SELECT col_description('cm'::regclass, 2);
COMMENT ON COLUMN cm.nope IS 'x';
COMMENT ON TABLE nope IS 'x';
COMMENT ON COLUMN cm IS 'x';
DROP TABLE cm;
