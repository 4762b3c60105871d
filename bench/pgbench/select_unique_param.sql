\set id random(1, 10000)
SELECT id, name FROM bench_users WHERE email = 'seed' || :id::text || '@example.com';
