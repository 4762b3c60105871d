-- CREATE EXTENSION of the extensions whose functions keyclaim has built in.
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE e1 (id uuid PRIMARY KEY DEFAULT uuid_generate_v4(), n int);
INSERT INTO e1 (n) VALUES (1);
SELECT count(*) FROM e1 WHERE id IS NOT NULL;
DROP TABLE e1;
