-- What drivers and ORMs send as a matter of course.
-- Sequelize at connect:
SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE;
SHOW TimeZone;
SET TIME ZONE 'UTC';
-- Prisma qualifies every column with schema and table:
CREATE TABLE "User" (id serial PRIMARY KEY, email text UNIQUE NOT NULL, name text);
INSERT INTO "public"."User" ("email","name") VALUES ('a@x','Ann') RETURNING "public"."User"."id", "public"."User"."email";
SELECT "public"."User"."id", "public"."User"."name" FROM "public"."User" WHERE ("public"."User"."email" = 'a@x' AND 1=1) LIMIT 1 OFFSET 0;
UPDATE "public"."User" SET "name" = 'Anne' WHERE "public"."User"."id" = 1 RETURNING "public"."User"."name";
DELETE FROM "public"."User" WHERE "public"."User"."id" IN (1) RETURNING "public"."User"."id";
SELECT pg_get_serial_sequence('"User"', 'id'), currval('"User_id_seq"');
DROP TABLE "User";
-- What connection pools send to reset a connection (asyncpg on every
-- release): keyclaim has no cursors and no LISTEN, so nothing to close.
CLOSE ALL;
UNLISTEN *;
UNLISTEN some_channel;
CLOSE no_such_cursor;
SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;
