\set id random(1, 10000)
UPDATE bench_users SET name = 'n' || :id WHERE id = :id;
