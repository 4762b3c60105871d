// knex 3 on node-postgres, run unchanged against PostgreSQL and keyclaim.
//
//     NODE_PATH=<node_modules with knex and pg> node knex_app.js postgresql://user@host:port/db
//
// Each step prints one line, `step: <JSON of what it observed>`: rows,
// counts, SQLSTATEs, constraint names; never timings or OIDs. Steps in
// KNOWN_FAILURES (keyclaim answers differently from PostgreSQL; see
// tests/orm/README.md) run only with ORM_KNOWN_FAILURES=1. ORM_ECHO=1 logs
// every statement knex sends (to stderr).
"use strict";

const knexFactory = require("knex");

const KNOWN_FAILURES = new Set([]);

function out(step, value) {
  process.stdout.write(`${step}: ${JSON.stringify(value === undefined ? "ok" : value)}\n`);
}

// The parts of a database error that must match PostgreSQL's.
function describeError(e) {
  return { code: e.code, message: e.message.split(" - ").pop(), detail: e.detail, constraint: e.constraint };
}

async function main() {
  const dsn = process.argv[2];
  const knex = knexFactory({ client: "pg", connection: dsn, pool: { min: 1, max: 2 } });
  if (process.env.ORM_ECHO === "1") {
    knex.on("query", (q) => process.stderr.write(`${q.sql} ${JSON.stringify(q.bindings || [])}\n`));
  }
  const step = async (name, fn) => {
    if (KNOWN_FAILURES.has(name) && process.env.ORM_KNOWN_FAILURES !== "1") {
      out(name, "skipped (known keyclaim failure)");
      return;
    }
    try {
      out(name, await fn());
    } catch (e) {
      process.stderr.write(`${name}: ${e.stack}\n`);
      out(name, { error: describeError(e) });
    }
  };

  await step("create tables", async () => {
    await knex.schema.createTable("authors", (t) => {
      t.increments("id");
      t.string("email", 200).notNullable().unique();
      t.string("name", 100).notNullable();
      t.timestamp("joined", { useTz: true }).defaultTo(knex.fn.now());
    });
    await knex.schema.createTable("books", (t) => {
      t.increments("id");
      t.integer("author_id").notNullable().references("id").inTable("authors").onDelete("CASCADE");
      t.string("title", 200).notNullable();
      t.decimal("price", 10, 2).notNullable();
      t.jsonb("meta");
      t.unique(["author_id", "title"]);
      t.index(["title"]);
    });
    return [await knex.schema.hasTable("authors"), await knex.schema.hasColumn("books", "price")];
  });

  await step("insert returning", async () => {
    const rows = await knex("authors")
      .insert([
        { email: "ann@example.com", name: "Ann" },
        { email: "bob@example.com", name: "Bob" },
        { email: "cyd@example.com", name: "Cyd" },
      ])
      .returning(["id", "email"]);
    return rows;
  });

  await step("duplicate unique", async () => {
    try {
      await knex("authors").insert({ email: "ann@example.com", name: "Ann again" });
      return "no error";
    } catch (e) {
      return describeError(e);
    }
  });

  await step("books", async () => {
    const ids = Object.fromEntries((await knex("authors").select("id", "name")).map((r) => [r.name, r.id]));
    await knex("books").insert([
      { author_id: ids.Ann, title: "Poems", price: "10.50", meta: { tags: ["verse"], pages: 80 } },
      { author_id: ids.Ann, title: "Essays", price: "20.00", meta: { pages: 200 } },
      { author_id: ids.Bob, title: "Sonnets", price: "7.25", meta: null },
    ]);
    return knex("books").count({ n: "*" }).first();
  });

  await step("foreign key violation", async () => {
    try {
      await knex("books").insert({ author_id: 4242, title: "Orphan", price: 1 });
      return "no error";
    } catch (e) {
      return describeError(e);
    }
  });

  await step("join with group by", async () => {
    return knex("authors as a")
      .leftJoin("books as b", "b.author_id", "a.id")
      .select("a.name")
      .count({ books: "b.id" })
      .sum({ total: "b.price" })
      .groupBy("a.name")
      .orderBy("a.name");
  });

  await step("whereIn, whereLike, orderBy, limit, offset", async () => {
    const names = await knex("authors").whereIn("email", ["ann@example.com", "cyd@example.com", "zed@example.com"]).orderBy("name").pluck("name");
    const like = await knex("books").whereILike("title", "%s%").orderBy("title").pluck("title");
    const page = await knex("books").orderBy("price", "desc").limit(2).offset(1).pluck("title");
    return { names, like, page };
  });

  await step("jsonb", async () => {
    return knex("books").whereRaw("meta ->> 'pages' = ?", ["80"]).pluck("title");
  });

  await step("subquery", async () => {
    return knex("authors")
      .whereIn("id", knex("books").select("author_id").where("price", ">", 8))
      .orderBy("name")
      .pluck("name");
  });

  await step("transaction rolled back on a duplicate", async () => {
    const before = await knex("authors").count({ n: "*" }).first();
    let code = null;
    try {
      await knex.transaction(async (trx) => {
        await trx("authors").insert({ email: "dan@example.com", name: "Dan" });
        await trx("authors").insert({ email: "bob@example.com", name: "Bob twin" });
      });
    } catch (e) {
      code = e.code;
    }
    const after = await knex("authors").count({ n: "*" }).first();
    const dan = await knex("authors").where({ email: "dan@example.com" }).first();
    return { before, code, after, dan: dan === undefined ? null : dan.name };
  });

  await step("transaction committed", async () => {
    await knex.transaction(async (trx) => {
      const [eve] = await trx("authors").insert({ email: "eve@example.com", name: "Eve" }).returning("id");
      await trx("books").insert({ author_id: eve.id, title: "Diary", price: "3.00" });
    });
    return knex("books").join("authors", "authors.id", "books.author_id").where("authors.name", "Eve").pluck("title");
  });

  await step("upsert", async () => {
    await knex("authors")
      .insert([{ email: "bob@example.com", name: "Robert" }, { email: "fay@example.com", name: "Fay" }])
      .onConflict("email")
      .merge(["name"]);
    await knex("authors").insert({ email: "ann@example.com", name: "nobody" }).onConflict("email").ignore();
    return knex("authors").orderBy("email").select("email", "name");
  });

  await step("update and increment", async () => {
    const n = await knex("books").where("price", "<", 10).increment("price", 1);
    const prices = await knex("books").orderBy("title").select("title", "price");
    return { n, prices };
  });

  await step("alter table", async () => {
    await knex.schema.alterTable("books", (t) => {
      t.integer("pages").nullable();
      t.string("title", 300).notNullable().alter();
    });
    await knex("books").update({ pages: 10 }).where("title", "Poems");
    return knex("information_schema.columns")
      .where({ table_name: "books" })
      .orderBy("ordinal_position")
      .select("column_name", "data_type", "character_maximum_length", "is_nullable");
  });

  await step("delete cascade", async () => {
    const n = await knex("authors").where({ name: "Ann" }).del();
    return { n, books: await knex("books").orderBy("title").pluck("title") };
  });

  await step("drop tables", async () => {
    await knex.schema.dropTable("books");
    await knex.schema.dropTableIfExists("authors");
    return [await knex.schema.hasTable("authors"), await knex.schema.hasTable("books")];
  });

  await knex.destroy();
}

main().catch((e) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});
