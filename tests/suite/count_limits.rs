//! Count limits (docs/count_limits.md): `keyclaim.add_count_limit` and
//! `keyclaim.drop_count_limit`, the 23514 a full group answers with its
//! fields, places freed by DELETE, UPDATE and ROLLBACK, NULL groups,
//! adding a limit to a table that has rows, the calls' errors; and the
//! issue's race: 32 sessions on three proxies, one over a faulty store,
//! one stalled past its lease, plus a proxy killed mid-statement, never
//! holding more live rows in a group than the limit.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::proxies::{self, Conn, Freeze};
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::layer::Layered;
use keyclaim::store::Store;
use keyclaim::types::Value;
use tokio_postgres::Client;

async fn setup(client: &Client, limit: u32) {
    client
        .batch_execute(&format!(
            "CREATE TABLE subs (id int PRIMARY KEY, option_id int, who text);
             SELECT keyclaim.add_count_limit('subs', ARRAY['option_id'], {limit}, 'subs_per_option')"
        ))
        .await
        .unwrap();
}

async fn count(client: &Client, group: i32) -> i64 {
    client
        .query_one("SELECT count(*) FROM subs WHERE option_id = $1", &[&group])
        .await
        .unwrap()
        .get(0)
}

async fn code(client: &Client, sql: &str) -> String {
    common::sqlstate_of(client, sql).await
}

#[tokio::test]
async fn a_full_group_refuses_with_23514_and_a_delete_frees_a_place() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c, 2).await;
    c.batch_execute("INSERT INTO subs VALUES (1, 7, 'a'), (2, 7, 'b'), (3, 8, 'c')")
        .await
        .unwrap();
    let e = c
        .batch_execute("INSERT INTO subs VALUES (4, 7, 'd')")
        .await
        .unwrap_err();
    let db = e.as_db_error().expect("a PostgreSQL error");
    assert_eq!(db.code().code(), "23514");
    assert_eq!(
        db.message(),
        "new row for relation \"subs\" violates count limit \"subs_per_option\""
    );
    assert_eq!(
        db.detail(),
        Some("Key (option_id)=(7) already has 2 rows, the most the limit allows.")
    );
    assert_eq!(db.constraint(), Some("subs_per_option"));
    assert_eq!(db.table(), Some("subs"));
    assert_eq!(db.schema(), Some("public"));
    // A refused statement left nothing: not even the rows before the one
    // that failed.
    assert_eq!(
        code(&c, "INSERT INTO subs VALUES (5, 8, 'e'), (6, 8, 'f')").await,
        "23514"
    );
    assert_eq!(count(&c, 8).await, 1);
    // A prepared insert is refused the same way.
    let insert = c
        .prepare("INSERT INTO subs VALUES ($1, $2, $3)")
        .await
        .unwrap();
    let e = c.execute(&insert, &[&9i32, &7i32, &"p"]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "23514");
    // A delete frees its place at once.
    c.batch_execute("DELETE FROM subs WHERE id = 1")
        .await
        .unwrap();
    c.execute(&insert, &[&4i32, &7i32, &"d"]).await.unwrap();
    assert_eq!(count(&c, 7).await, 2);
    // A row in no group (a NULL) takes no place.
    c.batch_execute("INSERT INTO subs VALUES (10, NULL, 'x'), (11, NULL, 'y'), (12, NULL, 'z')")
        .await
        .unwrap();
    server.shutdown().await;
}

/// TRUNCATE frees every place (the limit's slots are claimed afresh), and
/// a rolled-back TRUNCATE keeps them taken. Prepared statements made
/// before it write to the emptied table.
#[tokio::test]
async fn truncate_frees_every_place_unless_rolled_back() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c, 1).await;
    let insert = c
        .prepare("INSERT INTO subs VALUES ($1, $2, $3)")
        .await
        .unwrap();
    c.execute(&insert, &[&1i32, &7i32, &"a"]).await.unwrap();
    c.batch_execute("BEGIN; TRUNCATE subs; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(count(&c, 7).await, 1);
    let e = c.execute(&insert, &[&2i32, &7i32, &"b"]).await.unwrap_err();
    assert_eq!(e.code().unwrap().code(), "23514");
    c.batch_execute("TRUNCATE subs").await.unwrap();
    assert_eq!(count(&c, 7).await, 0);
    c.execute(&insert, &[&2i32, &7i32, &"b"]).await.unwrap();
    assert_eq!(count(&c, 7).await, 1);
    assert_eq!(
        code(&c, "INSERT INTO subs VALUES (3, 7, 'c')").await,
        "23514"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_update_moves_a_row_only_into_a_free_place() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c, 2).await;
    c.batch_execute("INSERT INTO subs VALUES (1, 7, 'a'), (2, 7, 'b'), (3, 8, 'c')")
        .await
        .unwrap();
    assert_eq!(
        code(&c, "UPDATE subs SET option_id = 7 WHERE id = 3").await,
        "23514"
    );
    assert_eq!(count(&c, 8).await, 1, "the refused update changed nothing");
    // Changing other columns keeps the row's place.
    c.batch_execute("UPDATE subs SET who = 'z' WHERE option_id = 7")
        .await
        .unwrap();
    // Moving out frees the place in the group it leaves.
    c.batch_execute("UPDATE subs SET option_id = 8 WHERE id = 1")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO subs VALUES (4, 7, 'd')")
        .await
        .unwrap();
    assert_eq!(
        code(
            &c,
            "UPDATE subs SET option_id = NULL WHERE id = 9; INSERT INTO subs VALUES (5, 8, 'e')"
        )
        .await,
        "23514"
    );
    // Out to no group, and the place is free.
    c.batch_execute(
        "UPDATE subs SET option_id = NULL WHERE id = 1; INSERT INTO subs VALUES (5, 8, 'e')",
    )
    .await
    .unwrap();
    assert_eq!((count(&c, 7).await, count(&c, 8).await), (2, 2));
    server.shutdown().await;
}

#[tokio::test]
async fn a_rolled_back_block_frees_its_places() {
    let server = common::start().await;
    let (c, other) = (server.connect().await, server.connect().await);
    setup(&c, 2).await;
    c.batch_execute("BEGIN; INSERT INTO subs VALUES (1, 7, 'a'), (2, 7, 'b')")
        .await
        .unwrap();
    // The block's rows hold their places: another session waits for the
    // block, then finds the group full once it commits, or free once it
    // rolls back.
    assert_eq!(
        code(
            &other,
            "SET lock_timeout = '200ms'; INSERT INTO subs VALUES (3, 7, 'c')"
        )
        .await,
        "55P03"
    );
    assert_eq!(
        code(&c, "INSERT INTO subs VALUES (4, 7, 'd')").await,
        "23514"
    );
    c.batch_execute("ROLLBACK").await.unwrap();
    other
        .batch_execute("RESET lock_timeout; INSERT INTO subs VALUES (3, 7, 'c'), (4, 7, 'd')")
        .await
        .unwrap();
    // A block that frees a place and takes it again before it commits is
    // refused (0A000 with a hint), never answered with a false 23514.
    assert_eq!(
        code(
            &c,
            "BEGIN; DELETE FROM subs WHERE id = 3; INSERT INTO subs VALUES (5, 7, 'e')"
        )
        .await,
        "0A000"
    );
    c.batch_execute("ROLLBACK").await.unwrap();
    // Committed in a block, places count as any others.
    c.batch_execute(
        "BEGIN; DELETE FROM subs WHERE id = 3; COMMIT; INSERT INTO subs VALUES (5, 7, 'e')",
    )
    .await
    .unwrap();
    assert_eq!(count(&c, 7).await, 2);
    server.shutdown().await;
}

#[tokio::test]
async fn adding_a_limit_checks_the_rows_a_table_has() {
    let server = common::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE subs (id int PRIMARY KEY, option_id int, who text);
         INSERT INTO subs VALUES (1, 7, 'a'), (2, 7, 'b'), (3, 7, 'c'), (4, 8, 'd')",
    )
    .await
    .unwrap();
    let e = c
        .batch_execute("SELECT keyclaim.add_count_limit('subs', ARRAY['option_id'], 2)")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code().code(), "23514");
    assert_eq!(
        db.message(),
        "count limit \"subs_option_id_limit\" of relation \"subs\" is violated by some row"
    );
    assert_eq!(
        db.detail(),
        Some("Key (option_id)=(7) has more than 2 rows.")
    );
    // Nothing of the failed limit stayed.
    c.batch_execute("INSERT INTO subs VALUES (5, 7, 'e')")
        .await
        .unwrap();
    c.batch_execute("SELECT keyclaim.add_count_limit('subs', ARRAY['option_id'], 5)")
        .await
        .unwrap();
    // The rows that were there hold places: one more fits, then none.
    c.batch_execute("INSERT INTO subs VALUES (6, 7, 'f')")
        .await
        .unwrap();
    assert_eq!(
        code(&c, "INSERT INTO subs VALUES (7, 7, 'g')").await,
        "23514"
    );
    // Dropped, the limit keeps nothing back.
    c.batch_execute("SELECT keyclaim.drop_count_limit('subs', 'subs_option_id_limit'); INSERT INTO subs VALUES (7, 7, 'g')")
        .await
        .unwrap();
    assert_eq!(count(&c, 7).await, 6);
    server.shutdown().await;
}

#[tokio::test]
async fn the_calls_answer_postgresql_errors() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c, 2).await;
    let cases = [
        (
            "SELECT keyclaim.add_count_limit('nope', ARRAY['a'], 1)",
            "42P01",
        ),
        (
            "SELECT keyclaim.add_count_limit('subs', ARRAY['nope'], 1)",
            "42703",
        ),
        (
            "SELECT keyclaim.add_count_limit('subs', ARRAY['who'], -1)",
            "22023",
        ),
        (
            "SELECT keyclaim.add_count_limit('subs', ARRAY['who'], NULL)",
            "22023",
        ),
        (
            "SELECT keyclaim.add_count_limit('subs', ARRAY['who'], 1, 'subs_per_option')",
            "42710",
        ),
        (
            "SELECT keyclaim.add_count_limit('subs', ARRAY['who'])",
            "42883",
        ),
        ("SELECT keyclaim.drop_count_limit('subs', 'nope')", "42704"),
        (
            "SELECT keyclaim.drop_count_limit('subs', 'subs_per_option') FROM subs",
            "0A000",
        ),
        (
            "BEGIN; SELECT keyclaim.add_count_limit('subs', ARRAY['who'], 1)",
            "25001",
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(code(&c, sql).await, expected, "{sql}");
        c.batch_execute("ROLLBACK").await.unwrap();
    }
    // The call answers one row of type void, as a PostgreSQL function
    // returning void does.
    let rows = c
        .simple_query("SELECT keyclaim.drop_count_limit('subs', 'subs_per_option')")
        .await
        .unwrap();
    let data: Vec<_> = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_owned)),
            _ => None,
        })
        .collect();
    assert_eq!(data, vec![Some(String::new())], "one row, its value void");
    server.shutdown().await;
}

// ---------------------------------------------------------------------------
// The race.

const LEASE: Duration = Duration::from_millis(500);
const LIMIT: i32 = 10;

/// What one session saw.
#[derive(Default)]
struct Seen {
    /// Inserts acknowledged and not deleted since.
    live: HashSet<i32>,
    /// Inserts refused with 23514 (and so never written).
    refused: HashSet<i32>,
    /// Inserts and deletes whose outcome was not known (40003, 53000 from
    /// the faulty store): either way.
    unknown: HashSet<i32>,
}

/// 32 sessions on three proxies insert into one group with a limit of 10
/// and delete their own rows again, many rounds: one proxy over a store
/// that fails now and then, one stalled past its lease mid-run, and a
/// fourth killed with statements in flight. No moment ever has more than
/// 10 rows the sessions were told are in the group (the rows whose insert
/// was acknowledged and whose delete was not yet sent are all live at
/// once); each refusal is 23514 and wrote nothing; at the end every place
/// is free again once the rows are deleted, even those the killed proxy
/// was taking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_sessions_on_three_proxies_never_exceed_the_limit() {
    common::init_logging();
    let test = common::TestStore::fresh().await;
    let faulty: Arc<dyn Store> = Arc::new(FaultyStore::new(
        test.store.clone(),
        FaultConfig {
            applied_then_unknown: 20,
            lost_then_unknown: 20,
            unavailable: 20,
            read_unknown: 20,
            max_latency: Duration::from_millis(2),
            ..FaultConfig::none(11)
        },
    ));
    let freeze = Freeze::default();
    let stalling: Arc<dyn Store> = Arc::new(Layered::wrap(test.store.clone(), freeze.clone()));
    let doom = Freeze::default();
    let dying: Arc<dyn Store> = Arc::new(Layered::wrap(test.store.clone(), doom.clone()));
    let engines = [
        proxies::engine(test.store.clone(), LEASE),
        proxies::engine(faulty, LEASE),
        proxies::engine(stalling, LEASE),
    ];
    let doomed = proxies::engine(dying, LEASE);
    let mut admin = Conn::new(&engines[0]);
    admin
        .ok("CREATE TABLE subs (id int PRIMARY KEY, option_id int, who text)")
        .await;
    admin
        .ok(&format!(
            "SELECT keyclaim.add_count_limit('subs', ARRAY['option_id'], {LIMIT}, 'subs_per_option')"
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;

    // The killed proxy: one row of its own in the group, then an insert
    // that takes its place and stops before writing the row (the proxy
    // stops answering, for good).
    let mut victim = Conn::new(&doomed);
    victim.ok("INSERT INTO subs VALUES (90000, 1, 'k')").await;
    doom.freeze_after(1);
    let killed = tokio::spawn(async move {
        let _ = victim.run("INSERT INTO subs VALUES (90001, 1, 'k')").await;
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    killed.abort();
    drop(doomed);

    let definitely_live = Arc::new(AtomicI32::new(0));
    let most = Arc::new(AtomicI32::new(0));
    let rounds = 20;
    let mut tasks = Vec::new();
    for s in 0..32 {
        let e = &engines[s % 3];
        let mut c = Conn::new(e);
        let (definitely_live, most) = (definitely_live.clone(), most.clone());
        let (freeze, stall) = (freeze.clone(), s == 2);
        tasks.push(tokio::spawn(async move {
            let mut seen = Seen::default();
            for round in 0..rounds {
                let id = (s * 100 + round) as i32;
                if stall && round == 3 {
                    // Its proxy stops past the lease with this insert in flight.
                    freeze.set(true);
                    let f = freeze.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(LEASE * 3).await;
                        f.set(false);
                    });
                }
                match c
                    .run(&format!("INSERT INTO subs VALUES ({id}, 1, 's')"))
                    .await
                {
                    Ok(_) => {
                        let now = definitely_live.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        seen.live.insert(id);
                    }
                    Err(e) if e.code == "23514" => {
                        assert!(e.message.contains("subs_per_option"), "{e:?}");
                        seen.refused.insert(id);
                    }
                    Err(e) if matches!(e.code, "40003" | "53000" | "55P03" | "40001") => {
                        seen.unknown.insert(id);
                    }
                    Err(e) => panic!("insert {id}: {e:?}"),
                }
                // Now and then give a place back.
                if round % 2 == 1 {
                    if let Some(&gone) = seen.live.iter().next() {
                        seen.live.remove(&gone);
                        definitely_live.fetch_sub(1, Ordering::SeqCst);
                        match c.run(&format!("DELETE FROM subs WHERE id = {gone}")).await {
                            Ok(_) => {}
                            Err(e) if matches!(e.code, "40003" | "53000" | "55P03" | "40001") => {
                                seen.unknown.insert(gone);
                            }
                            Err(e) => panic!("delete {gone}: {e:?}"),
                        }
                    }
                }
            }
            seen
        }));
    }
    let mut all = Seen::default();
    for t in tasks {
        let seen = t.await.unwrap();
        all.live.extend(seen.live);
        all.refused.extend(seen.refused);
        all.unknown.extend(seen.unknown);
    }
    let most = most.load(Ordering::SeqCst);
    eprintln!(
        "at most {most} live at once; {} live, {} refused, {} unknown at the end",
        all.live.len(),
        all.refused.len(),
        all.unknown.len()
    );
    assert!(most <= LIMIT, "{most} rows were live at once");
    assert!(!all.refused.is_empty(), "the group was full at times");

    // Quiescent: the group holds what the sessions were told, give or take
    // the unknown outcomes, and never more than the limit.
    let mut check = Conn::new(&engines[0]);
    let mut present = HashSet::new();
    for id in all.live.iter().chain(&all.refused).chain(&all.unknown) {
        if check
            .ok(&format!("SELECT id FROM subs WHERE id = {id}"))
            .await
            .is_some()
        {
            present.insert(*id);
        }
    }
    for id in &all.live {
        assert!(
            present.contains(id) || all.unknown.contains(id),
            "acknowledged row {id} is gone"
        );
    }
    for id in &all.refused {
        assert!(!present.contains(id), "refused row {id} was written");
    }
    let Some(Value::Int8(n)) = check
        .ok("SELECT count(*) FROM subs WHERE option_id = 1")
        .await
    else {
        panic!("no count")
    };
    assert!(n <= i64::from(LIMIT), "{n} rows in the group");

    // Every place can be taken again once the rows are gone, those the
    // killed proxy and the faults left claimed included (after a lease).
    check.ok("DELETE FROM subs").await;
    tokio::time::sleep(LEASE * 2).await;
    for id in 0..LIMIT {
        check
            .ok(&format!(
                "INSERT INTO subs VALUES ({}, 1, 'again')",
                500_000 + id
            ))
            .await;
    }
    assert_eq!(
        check
            .code("INSERT INTO subs VALUES (600000, 1, 'one too many')")
            .await,
        "23514"
    );
    test.cleanup().await;
}

/// A limit is listed as a CHECK constraint: pg_constraint (contype `c`),
/// pg_get_constraintdef, pg_class.relchecks (which makes psql's `\d` print
/// it under "Check constraints:"), information_schema.table_constraints.
#[tokio::test]
async fn a_limit_shows_in_the_catalog_as_a_check_constraint() {
    let server = common::start().await;
    let c = server.connect().await;
    setup(&c, 10).await;
    let row = c
        .query_one(
            "SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint
             WHERE conname = 'subs_per_option'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "c");
    assert_eq!(
        row.get::<_, String>(1),
        "CHECK (count(*) OVER (PARTITION BY option_id) <= 10)"
    );
    let checks: i16 = c
        .query_one("SELECT relchecks FROM pg_class WHERE relname = 'subs'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(checks, 1);
    let kind: String = c
        .query_one(
            "SELECT constraint_type FROM information_schema.table_constraints
             WHERE constraint_name = 'subs_per_option'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "CHECK");
    c.batch_execute("SELECT keyclaim.drop_count_limit('subs', 'subs_per_option')")
        .await
        .unwrap();
    let gone: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'c'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(gone, 0);
    server.shutdown().await;
}
