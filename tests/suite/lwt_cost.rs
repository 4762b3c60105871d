//! The figure to keep low: LWTs and reads per statement (claims.md, "Cost").
//! Counted by the embedded store, so these are exact, not timings.

use crate::common;

use std::sync::atomic::Ordering;

use common::Counter;

impl Counter {
    /// Runs `sql` and returns (LWTs, reads) it cost.
    async fn cost(&mut self, sql: &str) -> (u64, u64) {
        let lwts = self.store.counts.lwts.load(Ordering::Relaxed);
        let reads = self.store.counts.reads.load(Ordering::Relaxed);
        for p in self.engine.prepare(sql, &[]).await.expect(sql) {
            // Failed statements cost LWTs too; count them all the same.
            if let Ok(done) = self.engine.execute(&mut self.session, &p, Vec::new()).await {
                if let keyclaim::engine::Outcome::Rows { rows, .. } = done.outcome {
                    use futures::StreamExt;
                    let _: Vec<_> = rows.collect().await;
                }
            }
        }
        (
            self.store.counts.lwts.load(Ordering::Relaxed) - lwts,
            self.store.counts.reads.load(Ordering::Relaxed) - reads,
        )
    }
}

#[tokio::test]
async fn statement_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE pk_only (id integer PRIMARY KEY, v text)")
        .await;
    c.cost("CREATE TABLE one_key (id integer PRIMARY KEY, k text UNIQUE, v text)")
        .await;
    c.cost("CREATE TABLE two_keys (id integer PRIMARY KEY, a text UNIQUE, b text UNIQUE)")
        .await;

    // INSERT: m claim LWTs in parallel, then one row LWT; no reads.
    assert_eq!(c.cost("INSERT INTO pk_only VALUES (1, 'x')").await, (1, 0));
    assert_eq!(
        c.cost("INSERT INTO one_key VALUES (1, 'k1', 'x')").await,
        (2, 0)
    );
    assert_eq!(
        c.cost("INSERT INTO two_keys VALUES (1, 'a1', 'b1')").await,
        (3, 0)
    );

    // Point reads: primary key one read; unique key the claim then the row.
    assert_eq!(c.cost("SELECT v FROM one_key WHERE id = 1").await, (0, 1));
    assert_eq!(c.cost("SELECT v FROM one_key WHERE k = 'k1'").await, (0, 2));
    // A key given by an expression without columns is read the same way.
    assert_eq!(
        c.cost("SELECT v FROM one_key WHERE k = lower('K' || 1)")
            .await,
        (0, 2)
    );
    // A key list: one read per distinct key (a claim read only for a
    // missing unique key), whatever the table's size; never a scan.
    assert_eq!(
        c.cost("SELECT v FROM one_key WHERE id IN (1, 2, 2, 3)")
            .await,
        (0, 3)
    );
    assert_eq!(
        c.cost("SELECT v FROM one_key WHERE k IN ('k1', 'nope')")
            .await,
        (0, 3)
    );
    assert_eq!(
        c.cost("SELECT v FROM one_key WHERE id IN (0 + 1, abs(-2))")
            .await,
        (0, 2)
    );

    // UPDATE by primary key of a non-key column: one observation, one LWT.
    assert_eq!(
        c.cost("UPDATE one_key SET v = 'y' WHERE id = 1").await,
        (1, 1)
    );
    // Changing a unique key: claim the new value, commit, release the old claim.
    assert_eq!(
        c.cost("UPDATE one_key SET k = 'k2' WHERE id = 1").await,
        (3, 1)
    );
    // DELETE: one observation, one LWT, then the claim cleanup.
    assert_eq!(c.cost("DELETE FROM one_key WHERE id = 1").await, (2, 1));

    // A duplicate costs the failed claim, the owner read, and nothing else
    // (plus the primary-key check PostgreSQL's error order needs).
    c.cost("INSERT INTO one_key VALUES (2, 'k9', 'x')").await;
    assert_eq!(
        c.cost("INSERT INTO one_key VALUES (3, 'k9', 'x')").await.0,
        1
    );
}

#[tokio::test]
async fn transaction_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE one_key (id integer PRIMARY KEY, k text UNIQUE, v text)")
        .await;
    c.cost("INSERT INTO one_key VALUES (1, 'k1', 'x')").await;
    // BEGIN writes nothing: the transaction starts at its first write.
    assert_eq!(c.cost("BEGIN").await, (0, 0));
    // An INSERT in a block: the claim, then the intent; no reads.
    assert_eq!(
        c.cost("INSERT INTO one_key VALUES (2, 'k2', 'x')").await,
        (2, 0)
    );
    // An UPDATE by key: the statement's read, then the partition's read
    // (the row found is a view), then the intent.
    assert_eq!(
        c.cost("UPDATE one_key SET v = 'y' WHERE id = 1").await,
        (1, 2)
    );
    // Reading its own intent costs no record read.
    assert_eq!(c.cost("SELECT v FROM one_key WHERE id = 2").await, (0, 1));
    // COMMIT: one LWT on the transaction record. Folding the intents into
    // the rows happens after the client has its answer.
    assert_eq!(c.cost("COMMIT").await, (1, 0));
    // A ROLLBACK of a block that wrote: one LWT too (the record, aborted).
    c.cost("BEGIN").await;
    c.cost("INSERT INTO one_key VALUES (3, 'k3', 'x')").await;
    assert_eq!(c.cost("ROLLBACK").await, (1, 0));
    // A block that wrote nothing costs nothing to end.
    c.cost("BEGIN").await;
    c.cost("SELECT v FROM one_key WHERE id = 1").await;
    assert_eq!(c.cost("COMMIT").await, (0, 0));
}

#[tokio::test]
async fn row_lock_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE jobs (id integer PRIMARY KEY, k text UNIQUE, state text)")
        .await;
    for i in 1..=3 {
        c.cost(&format!("INSERT INTO jobs VALUES ({i}, 'k{i}', 'ready')"))
            .await;
    }
    // Outside a block a lock ends with the statement, so nothing is
    // written: a row no transaction is writing costs what the SELECT costs.
    assert_eq!(
        c.cost("SELECT * FROM jobs WHERE id = 1 FOR UPDATE").await,
        (0, 1)
    );
    assert_eq!(
        c.cost("SELECT * FROM jobs WHERE k = 'k1' FOR UPDATE NOWAIT")
            .await,
        (0, 2)
    );
    // Inside a block: one LWT per row locked (its lock intent), written
    // from the row the statement read, with no second read.
    c.cost("BEGIN").await;
    assert_eq!(
        c.cost("SELECT * FROM jobs WHERE id = 1 FOR UPDATE").await,
        (1, 1)
    );
    // A scan: one page read; row 1, which the block holds already, is read
    // again and not written; row 2 is locked; row 3 is past the LIMIT.
    assert_eq!(
        c.cost("SELECT id FROM jobs WHERE state = 'ready' ORDER BY id LIMIT 1 OFFSET 1 FOR UPDATE SKIP LOCKED")
            .await,
        (1, 2)
    );
    // Writing a locked row costs what any UPDATE in a block costs.
    assert_eq!(
        c.cost("UPDATE jobs SET state = 'running' WHERE id = 1")
            .await,
        (1, 2)
    );
    // COMMIT: the record; folding the lock intents comes after the answer.
    assert_eq!(c.cost("COMMIT").await, (1, 0));
}

#[tokio::test]
async fn sequence_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE items (id bigserial PRIMARY KEY, v text)")
        .await;
    let counter_ops = |c: &Counter| c.store.counts.catalog_ops.load(Ordering::Relaxed);
    // The first id reserves a block of values: one read of the counter and
    // one CAS on it, beside the row's one LWT.
    let before = counter_ops(&c);
    assert_eq!(c.cost("INSERT INTO items (v) VALUES ('a')").await, (1, 0));
    assert_eq!(counter_ops(&c) - before, 2);
    // Later ids come from the proxy's block: a serial key costs nothing
    // beyond the row it fills.
    let before = counter_ops(&c);
    for _ in 0..10 {
        assert_eq!(c.cost("INSERT INTO items (v) VALUES ('b')").await, (1, 0));
    }
    assert_eq!(c.cost("SELECT nextval('items_id_seq')").await, (0, 0));
    assert_eq!(counter_ops(&c), before);
    // setval reads the counter and sets it with one CAS; the block it drops
    // is taken again (read, CAS) by the next id.
    let before = counter_ops(&c);
    c.cost("SELECT setval('items_id_seq', 1000)").await;
    assert_eq!(c.cost("INSERT INTO items (v) VALUES ('c')").await, (1, 0));
    assert_eq!(counter_ops(&c) - before, 4);
}

#[tokio::test]
async fn advisory_lock_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE t (id integer PRIMARY KEY, v text)")
        .await;
    c.cost("INSERT INTO t VALUES (1, 'x')").await;
    // A session that holds no advisory lock writes as before: the fence
    // costs it nothing.
    assert_eq!(c.cost("UPDATE t SET v = 'a' WHERE id = 1").await, (1, 1));
    // Taking a free lock: the partition's read, then one CAS.
    assert_eq!(c.cost("SELECT pg_advisory_lock(1)").await, (1, 1));
    // Re-entrant: counted in the session, nothing sent.
    assert_eq!(c.cost("SELECT pg_advisory_lock(1)").await, (0, 0));
    assert_eq!(c.cost("SELECT pg_try_advisory_lock(1)").await, (0, 0));
    assert_eq!(c.cost("SELECT pg_advisory_unlock(1)").await, (0, 0));
    assert_eq!(c.cost("SELECT pg_advisory_unlock(1)").await, (0, 0));
    // A write under the lock runs as a transaction (the record is the
    // fence) and registers it in the lock's partition first: the
    // statement's and the partition's read, the intent, then a read and a
    // CAS of the lock partition, then the record.
    assert_eq!(c.cost("UPDATE t SET v = 'b' WHERE id = 1").await, (3, 3));
    // (Its intent is folded after the answer; let that happen first.)
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    // Letting go: the partition's read, then one CAS.
    assert_eq!(c.cost("SELECT pg_advisory_unlock(1)").await, (1, 1));
    // Not held: nothing sent, false and a WARNING.
    assert_eq!(c.cost("SELECT pg_advisory_unlock(1)").await, (0, 0));
    // A transaction-level lock outside a block is taken and let go.
    assert_eq!(c.cost("SELECT pg_advisory_xact_lock(2)").await, (2, 2));
}

#[tokio::test]
async fn foreign_key_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE fk_parent (id integer PRIMARY KEY, name text)")
        .await;
    c.cost(
        "CREATE TABLE fk_child (id integer PRIMARY KEY, parent_id integer REFERENCES fk_parent)",
    )
    .await;
    // One row at a time: the fast path leaves no intent behind to settle.
    c.cost("INSERT INTO fk_parent VALUES (1, 'p')").await;
    c.cost("INSERT INTO fk_parent VALUES (2, 'q')").await;
    c.cost("INSERT INTO fk_parent VALUES (3, 'r')").await;
    // What a transaction folds in the background after its answer is
    // counted by the store too: let it land before measuring the next.
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(50));
    // A child row alone: a transaction of its own. The row's intent, then
    // the parent found (one read) and locked from that read (an intent:
    // one LWT), then the record.
    assert_eq!(c.cost("INSERT INTO fk_child VALUES (10, 1)").await, (3, 1));
    settle().await;
    // Two children of one parent in one statement lock it once.
    assert_eq!(
        c.cost("INSERT INTO fk_child VALUES (11, 2), (12, 2)").await,
        (4, 1),
        "two rows, one parent read and lock, one record"
    );
    settle().await;
    // A NULL reference references nothing: no lock, no parent read.
    assert_eq!(
        c.cost("INSERT INTO fk_child VALUES (13, NULL)").await,
        (2, 0),
        "the row's intent and the record"
    );
    settle().await;
    // An UPDATE of the parent that sets no referenced column checks
    // nothing and keeps the fast path: its read and one LWT.
    assert_eq!(
        c.cost("UPDATE fk_parent SET name = 'pp' WHERE id = 1")
            .await,
        (1, 1)
    );
    settle().await;
    // Deleting an unreferenced parent: the statement's read, the
    // partition's read (the row found is a view), its intent, the
    // referencing rows searched (a scan of the child table: its key is not
    // the referencing column), the record.
    assert_eq!(
        c.cost("DELETE FROM fk_parent WHERE id = 3").await,
        (2, 3),
        "the delete's intent and the record; two row reads and a scan"
    );
}

#[tokio::test]
async fn count_limit_costs_match_the_design() {
    let mut c = Counter::new();
    c.cost("CREATE TABLE plain (id integer PRIMARY KEY, g integer, who text)")
        .await;
    c.cost("CREATE TABLE limited (id integer PRIMARY KEY, g integer, who text)")
        .await;
    c.cost("SELECT keyclaim.add_count_limit('limited', ARRAY['g'], 2)")
        .await;
    // Joining a group with room: the slot's claim, then the row.
    let plain = c.cost("INSERT INTO plain VALUES (1, 7, 'a')").await;
    assert_eq!(plain, (1, 0));
    assert_eq!(
        c.cost("INSERT INTO limited VALUES (1, 7, 'a')").await,
        (2, 0)
    );
    // A NULL group takes no slot.
    assert_eq!(
        c.cost("INSERT INTO limited VALUES (2, NULL, 'b')").await,
        plain
    );
    // Changing other columns keeps the slot: as on a table without one.
    let plain = c.cost("UPDATE plain SET who = 'z' WHERE id = 1").await;
    assert_eq!(
        c.cost("UPDATE limited SET who = 'z' WHERE id = 1").await,
        plain
    );
    // A delete releases the slot: one more LWT.
    let plain = c.cost("DELETE FROM plain WHERE id = 1").await;
    assert_eq!(
        c.cost("DELETE FROM limited WHERE id = 1").await,
        (plain.0 + 1, plain.1)
    );
    // A refusal of a full group of two: each slot tried (an LWT and its
    // owner row read), then each claim and row read twice.
    c.cost("INSERT INTO limited VALUES (3, 8, 'c'), (4, 8, 'd')")
        .await;
    // Two rows are a transaction: let it fold its intents (after its
    // answer) before measuring, or each row read reads its record too.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(
        c.cost("INSERT INTO limited VALUES (5, 8, 'e')").await,
        (2, 10)
    );
}
