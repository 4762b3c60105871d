CREATE TABLE counters (name text PRIMARY KEY, hits integer NOT NULL DEFAULT 0, tag text UNIQUE);
INSERT INTO counters (name, hits, tag) VALUES ('home', 1, 't1');
INSERT INTO counters (name, hits) VALUES ('home', 1) ON CONFLICT DO NOTHING;
INSERT INTO counters (name, hits) VALUES ('home', 1) ON CONFLICT (name) DO NOTHING RETURNING *;
INSERT INTO counters (name, hits) VALUES ('home', 5) ON CONFLICT (name) DO UPDATE SET hits = counters.hits + EXCLUDED.hits RETURNING name, hits;
INSERT INTO counters (name, hits) VALUES ('home', 5) ON CONFLICT (name) DO UPDATE SET hits = counters.hits + EXCLUDED.hits WHERE counters.hits > 100;
INSERT INTO counters (name, hits, tag) VALUES ('about', 1, 't1') ON CONFLICT (name) DO NOTHING;
INSERT INTO counters (name, hits, tag) VALUES ('about', 1, 't1') ON CONFLICT (tag) DO UPDATE SET hits = 42;
INSERT INTO counters (name, hits, tag) VALUES ('x', 1, 'tx') ON CONFLICT ON CONSTRAINT counters_tag_key DO NOTHING;
INSERT INTO counters (name, hits, tag) VALUES ('y', 1, 'tx') ON CONFLICT ON CONSTRAINT counters_tag_key DO NOTHING;
INSERT INTO counters (name) VALUES ('d1'), ('d2') ON CONFLICT (name) DO UPDATE SET hits = 7;
INSERT INTO counters (name) VALUES ('dup'), ('dup') ON CONFLICT (name) DO UPDATE SET hits = 7;
INSERT INTO counters (name, hits) VALUES ('z', 1) ON CONFLICT (hits) DO NOTHING;
INSERT INTO counters (name, hits) VALUES ('z', 1) ON CONFLICT ON CONSTRAINT nope DO NOTHING;
SELECT * FROM counters ORDER BY name;
DROP TABLE counters;
-- A conflict on the arbiter is handled even when the row's primary key is
-- taken too (an upsert carrying the existing row's own id, as asyncpg and
-- TypeORM send), or taken by another row.
CREATE TABLE people (id integer PRIMARY KEY, email text UNIQUE, name text);
INSERT INTO people VALUES (1, 'a@x', 'Ann'), (2, 'b@x', 'Bob');
INSERT INTO people VALUES (1, 'a@x', 'Anne') ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name RETURNING *;
INSERT INTO people VALUES (2, 'a@x', 'Anna') ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name RETURNING *;
INSERT INTO people VALUES (2, 'c@x', 'Cy') ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name;
INSERT INTO people VALUES (2, 'a@x', 'Al') ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING *;
INSERT INTO people VALUES (3, 'b@x', 'Bo') ON CONFLICT (id) DO NOTHING;
SELECT * FROM people ORDER BY id;
DROP TABLE people;
