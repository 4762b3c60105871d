//! Every `Store` answers every primitive the same way: applied, or not
//! applied together with the partition's current state (whole, as the
//! embedded store returns it). Runs on the embedded store, and on Cassandra
//! too when `KEYCLAIM_TEST_CASSANDRA` is set, where not-applied answers come
//! in three server-dependent shapes (see `store::cassandra::values::Named`).

use crate::common;

use std::collections::BTreeMap;

use common::TestStore;
use keyclaim::catalog::{ColumnDef, TableDef};
use keyclaim::store::memory::MemoryStore;
use keyclaim::store::{
    Cas, CatalogRecord, ClaimRecord, Intent, LockHolder, LockRecord, RowRecord, Store, TxnRecord,
};
use keyclaim::types::{encode_key, SqlType, Value};
use uuid::Uuid;

fn col(name: &str, ty: SqlType) -> ColumnDef {
    ColumnDef::new(name, ty)
}

fn table() -> TableDef {
    let columns = vec![
        col("id", SqlType::Int4),
        col("Name", SqlType::Text),
        col("price", SqlType::Numeric(None)),
        col("at", SqlType::TimestampTz),
        col("tags", SqlType::Jsonb),
    ];
    let id = format!("Things.{}", Uuid::now_v7().simple());
    TableDef {
        pkey_name: "things_pkey".into(),
        ..TableDef::new("Things", &id, columns, vec![0])
    }
}

fn values(id: i32, name: &str) -> Vec<Value> {
    vec![
        Value::Int4(id),
        Value::Text(name.into()),
        Value::Numeric("1.50".parse().unwrap()),
        Value::parse_text(&SqlType::TimestampTz, "2024-01-02 03:04:05.000006+00").unwrap(),
        Value::Null,
    ]
}

fn live(version: Uuid, id: i32, name: &str) -> RowRecord {
    RowRecord::live(
        version,
        BTreeMap::from([("things_name_key.1".to_owned(), version)]),
        values(id, name),
    )
}

fn pk(id: i32) -> Vec<u8> {
    encode_key(&[&Value::Int4(id)])
}

async fn rows(store: &dyn Store, t: &TableDef) {
    store.create_table(t).await.unwrap();
    let (v1, v2, v3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    assert_eq!(store.read_row(t, &pk(1)).await.unwrap(), None);

    // INSERT IF NOT EXISTS, and its answer when the row exists.
    let first = live(v1, 1, "a");
    let cas = store.insert_row(t, &pk(1), first.clone()).await.unwrap();
    assert_eq!(cas, Cas::Applied);
    let cas = store.insert_row(t, &pk(1), live(v2, 1, "b")).await.unwrap();
    assert_eq!(cas, Cas::NotApplied(Some(first.clone())));
    assert_eq!(
        store.read_row(t, &pk(1)).await.unwrap(),
        Some(first.clone())
    );

    // UPDATE IF __version: a wrong version answers with the whole row.
    let cas = store
        .update_row(t, &pk(1), v3, live(v2, 1, "b"))
        .await
        .unwrap();
    assert_eq!(cas, Cas::NotApplied(Some(first.clone())));
    let second = live(v2, 1, "b");
    let cas = store
        .update_row(t, &pk(1), v1, second.clone())
        .await
        .unwrap();
    assert_eq!(cas, Cas::Applied);
    assert_eq!(store.read_row(t, &pk(1)).await.unwrap(), Some(second));
    // No partition: nothing to compare with.
    let cas = store
        .update_row(t, &pk(9), v1, live(v2, 9, "z"))
        .await
        .unwrap();
    assert_eq!(cas, Cas::NotApplied(None));
    assert_eq!(store.read_row(t, &pk(9)).await.unwrap(), None);

    // DELETE leaves the partition dead, without data or claims.
    let cas = store
        .update_row(t, &pk(1), v2, RowRecord::dead(v3))
        .await
        .unwrap();
    assert_eq!(cas, Cas::Applied);
    assert_eq!(
        store.read_row(t, &pk(1)).await.unwrap(),
        Some(RowRecord::dead(v3))
    );
    // A fence from absent: a dead partition with a fresh version.
    let fence = RowRecord::dead(Uuid::now_v7());
    assert_eq!(
        store.insert_row(t, &pk(2), fence.clone()).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(
        store.insert_row(t, &pk(2), live(v1, 2, "x")).await.unwrap(),
        Cas::NotApplied(Some(fence.clone()))
    );
    // Re-inserting over a dead version.
    let back = live(Uuid::now_v7(), 1, "c");
    let cas = store.update_row(t, &pk(1), v3, back.clone()).await.unwrap();
    assert_eq!(cas, Cas::Applied);
    assert_eq!(store.read_row(t, &pk(1)).await.unwrap(), Some(back));
}

async fn scans(store: &dyn Store, t: &TableDef) {
    // Partitions 1 and 2 exist from `rows`; add more and page through all.
    for id in 3..=7 {
        let cas = store
            .insert_row(t, &pk(id), live(Uuid::now_v7(), id, "s"))
            .await
            .unwrap();
        assert_eq!(cas, Cas::Applied);
    }
    let mut seen = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    let mut pages = 0;
    loop {
        let page = store.scan_rows(t, after.as_deref(), 2).await.unwrap();
        assert!(page.rows.len() <= 2);
        for (key, row) in &page.rows {
            if row.live {
                assert_eq!(
                    &t.pk_bytes(&row.values),
                    key,
                    "scan keys are the canonical pk"
                );
            }
            seen.push(key.clone());
        }
        pages += 1;
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    seen.sort();
    let mut want: Vec<Vec<u8>> = (1..=7).map(pk).collect();
    want.sort();
    assert_eq!(seen, want, "every partition exactly once, dead ones too");
    assert!(pages >= 4, "{pages} pages of at most 2");
}

async fn claims(store: &dyn Store) {
    let c = format!("c.{}", Uuid::now_v7().simple());
    let key = encode_key(&[&Value::Text("k".into())]);
    let (t1, t2, t3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let mine = ClaimRecord {
        owner: pk(1),
        txn: t1,
    };
    assert_eq!(store.read_claim(&c, &key).await.unwrap(), None);
    assert_eq!(
        store.insert_claim(&c, &key, mine.clone()).await.unwrap(),
        Cas::Applied
    );
    let other = ClaimRecord {
        owner: pk(2),
        txn: t2,
    };
    assert_eq!(
        store.insert_claim(&c, &key, other).await.unwrap(),
        Cas::NotApplied(Some(mine.clone()))
    );
    // Conditional re-stamp and delete answer with the whole claim.
    assert_eq!(
        store.restamp_claim(&c, &key, t3, t2).await.unwrap(),
        Cas::NotApplied(Some(mine.clone()))
    );
    assert_eq!(
        store.restamp_claim(&c, &key, t1, t2).await.unwrap(),
        Cas::Applied
    );
    let restamped = ClaimRecord {
        owner: pk(1),
        txn: t2,
    };
    assert_eq!(
        store.read_claim(&c, &key).await.unwrap(),
        Some(restamped.clone())
    );
    assert_eq!(
        store.delete_claim(&c, &key, t1).await.unwrap(),
        Cas::NotApplied(Some(restamped))
    );
    assert_eq!(
        store.delete_claim(&c, &key, t2).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(store.read_claim(&c, &key).await.unwrap(), None);
    assert_eq!(
        store.delete_claim(&c, &key, t2).await.unwrap(),
        Cas::NotApplied(None)
    );
    assert_eq!(
        store.restamp_claim(&c, &key, t2, t3).await.unwrap(),
        Cas::NotApplied(None)
    );

    // Dropping a constraint's claims leaves other constraints' alone.
    let d = format!("d.{}", Uuid::now_v7().simple());
    for i in 0..20 {
        let k = encode_key(&[&Value::Int4(i)]);
        for constraint in [&c, &d] {
            let claim = ClaimRecord {
                owner: pk(i),
                txn: t1,
            };
            assert!(store
                .insert_claim(constraint, &k, claim)
                .await
                .unwrap()
                .applied());
        }
    }
    store.drop_claims(&c).await.unwrap();
    for i in 0..20 {
        let k = encode_key(&[&Value::Int4(i)]);
        assert_eq!(store.read_claim(&c, &k).await.unwrap(), None);
        assert!(store.read_claim(&d, &k).await.unwrap().is_some());
    }
}

async fn catalog(store: &dyn Store) {
    let name = format!("t{}", Uuid::now_v7().simple());
    let rec = |def: &str| CatalogRecord {
        version: Uuid::now_v7(),
        definition: def.into(),
    };
    let (a, b, c) = (rec("{\"a\":1}"), rec("{\"b\":2}"), rec("{\"c\":3}"));
    assert_eq!(store.read_catalog(&name).await.unwrap(), None);
    assert_eq!(
        store.insert_catalog(&name, a.clone()).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(
        store.insert_catalog(&name, b.clone()).await.unwrap(),
        Cas::NotApplied(Some(a.clone()))
    );
    assert_eq!(
        store
            .update_catalog(&name, c.version, b.clone())
            .await
            .unwrap(),
        Cas::NotApplied(Some(a.clone()))
    );
    assert_eq!(
        store
            .update_catalog(&name, a.version, b.clone())
            .await
            .unwrap(),
        Cas::Applied
    );
    let listed = store.list_catalog().await.unwrap();
    assert!(listed.contains(&(name.clone(), b.clone())), "{listed:?}");
    assert_eq!(
        store.delete_catalog(&name, a.version).await.unwrap(),
        Cas::NotApplied(Some(b.clone()))
    );
    assert_eq!(
        store.delete_catalog(&name, b.version).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(store.read_catalog(&name).await.unwrap(), None);
    assert_eq!(
        store.update_catalog(&name, b.version, c).await.unwrap(),
        Cas::NotApplied(None)
    );
}

/// A composite key declared in another order than the columns: the key
/// bytes follow the key's order, the partition key too.
async fn composite_key(store: &dyn Store) {
    // Its integer key column is stored at 64 bits (`wide_ints`), read
    // back at its own width.
    let t = TableDef {
        wide_ints: true,
        ..TableDef::new(
            "pairs",
            &format!("pairs.{}", Uuid::now_v7().simple()),
            vec![
                col("a", SqlType::Text),
                col("b", SqlType::Int4),
                col("v", SqlType::Text),
            ],
            vec![1, 0],
        )
    };
    store.create_table(&t).await.unwrap();
    let row = |b: i32, a: &str, v: &str| {
        RowRecord::live(
            Uuid::now_v7(),
            BTreeMap::new(),
            vec![Value::Text(a.into()), Value::Int4(b), Value::Text(v.into())],
        )
    };
    let r1 = row(1, "x", "one");
    let k1 = t.pk_bytes(&r1.values);
    assert_eq!(
        store.insert_row(&t, &k1, r1.clone()).await.unwrap(),
        Cas::Applied
    );
    let r2 = row(2, "x", "two");
    let k2 = t.pk_bytes(&r2.values);
    assert_eq!(
        store.insert_row(&t, &k2, r2.clone()).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(store.read_row(&t, &k1).await.unwrap(), Some(r1.clone()));
    let r1b = RowRecord {
        version: Uuid::now_v7(),
        ..row(1, "x", "uno")
    };
    let cas = store
        .update_row(&t, &k1, r1.version, r1b.clone())
        .await
        .unwrap();
    assert_eq!(cas, Cas::Applied);
    let page = store.scan_rows(&t, None, 10).await.unwrap();
    let mut got: Vec<(Vec<u8>, RowRecord)> = page.rows;
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want = vec![(k1, r1b), (k2, r2)];
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    assert_eq!(page.next, None);
    store.drop_table(&t).await.unwrap();
}

/// A transaction record is decided once; a row carries an intent beside
/// its committed state, and a CAS replaces both.
async fn transactions(store: &dyn Store, t: &TableDef) {
    let txn = Uuid::now_v7();
    assert_eq!(store.read_txn_record(txn).await.unwrap(), None);
    let committed = TxnRecord::committed(1_764_150_000_123_456_789);
    let aborted = TxnRecord::aborted();
    assert_eq!(
        store.insert_txn_record(txn, committed).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(
        store.insert_txn_record(txn, aborted).await.unwrap(),
        Cas::NotApplied(Some(committed))
    );
    assert_eq!(store.read_txn_record(txn).await.unwrap(), Some(committed));

    let v1 = Uuid::now_v7();
    let mut row = live(v1, 40, "before");
    row.intent = Some(Box::new(Intent {
        txn,
        live: true,
        claims: BTreeMap::from([("u".to_owned(), txn)]),
        values: values(40, "after"),
    }));
    assert!(store
        .insert_row(t, &pk(40), row.clone())
        .await
        .unwrap()
        .applied());
    assert_eq!(store.read_row(t, &pk(40)).await.unwrap(), Some(row.clone()));
    // Folded: the intent becomes the committed state, stamped, and the
    // state before is kept.
    let v2 = Uuid::now_v7();
    let mut folded = row.succeeded(
        true,
        BTreeMap::from([("u".to_owned(), txn)]),
        values(40, "after"),
        committed.at,
        txn,
    );
    folded.version = v2;
    assert_eq!(folded.prev.as_ref().unwrap().values, values(40, "before"));
    assert!(store
        .update_row(t, &pk(40), v1, folded.clone())
        .await
        .unwrap()
        .applied());
    assert_eq!(
        store.read_row(t, &pk(40)).await.unwrap(),
        Some(folded.clone())
    );
    // Deleted: dead, with its last live state kept.
    let mut dead = folded.succeeded(false, BTreeMap::new(), Vec::new(), u64::MAX >> 1, v2);
    dead.version = Uuid::now_v7();
    assert!(store
        .update_row(t, &pk(40), v2, dead.clone())
        .await
        .unwrap()
        .applied());
    assert_eq!(store.read_row(t, &pk(40)).await.unwrap(), Some(dead));

    store.write_heartbeat(7, 1234).await.unwrap();
    store.write_heartbeat(7, 1250).await.unwrap();
    assert_eq!(store.read_heartbeat(7).await.unwrap(), Some(1250));
    assert_eq!(store.read_heartbeat(8).await.unwrap(), None);
}

/// An advisory lock partition: created once, then changed only from the
/// version its writer saw; a not-applied answer carries the holders.
async fn advisory_locks(store: &dyn Store) {
    let key = [1u8, 0, 0, 0, 0, 0, 0, 0, 42];
    assert_eq!(store.read_lock(&key).await.unwrap(), None);
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let v1 = Uuid::now_v7();
    let first = LockRecord {
        version: v1,
        holders: BTreeMap::from([(
            a,
            LockHolder {
                exclusive: true,
                shared: false,
                txns: vec![Uuid::now_v7()],
            },
        )]),
    };
    assert_eq!(
        store.insert_lock(&key, first.clone()).await.unwrap(),
        Cas::Applied
    );
    let other = LockRecord {
        version: Uuid::now_v7(),
        holders: BTreeMap::new(),
    };
    assert_eq!(
        store.insert_lock(&key, other.clone()).await.unwrap(),
        Cas::NotApplied(Some(first.clone()))
    );
    assert_eq!(store.read_lock(&key).await.unwrap(), Some(first.clone()));
    let second = LockRecord {
        version: Uuid::now_v7(),
        holders: BTreeMap::from([(
            b,
            LockHolder {
                exclusive: false,
                shared: true,
                txns: Vec::new(),
            },
        )]),
    };
    assert_eq!(
        store
            .update_lock(&key, Uuid::now_v7(), second.clone())
            .await
            .unwrap(),
        Cas::NotApplied(Some(first))
    );
    assert_eq!(
        store.update_lock(&key, v1, second.clone()).await.unwrap(),
        Cas::Applied
    );
    assert_eq!(store.read_lock(&key).await.unwrap(), Some(second));
    let absent = [2u8, 0, 0, 0, 1, 0, 0, 0, 2];
    assert_eq!(
        store.update_lock(&absent, v1, other).await.unwrap(),
        Cas::NotApplied(None)
    );
}

/// Index entries: plain writes, idempotent, read back in key order a page
/// at a time, each key its own partition, each index dropped on its own.
async fn index_entries(store: &dyn Store) {
    let (index, other) = (
        format!("t_a_idx.{}", Uuid::now_v7().simple()),
        format!("t_b_idx.{}", Uuid::now_v7().simple()),
    );
    let key = encode_key(&[&Value::Text("ann".into())]);
    let pk = |i: i32| encode_key(&[&Value::Int4(i)]);
    let read = |index: String, after: Option<Vec<u8>>, limit: usize| {
        let key = key.clone();
        async move {
            store
                .read_index(&index, &key, after.as_deref(), limit)
                .await
                .unwrap()
        }
    };
    assert!(read(index.clone(), None, 10).await.pks.is_empty());
    for i in [3, 1, 2, 1] {
        store.add_index_entry(&index, &key, &pk(i)).await.unwrap();
    }
    store.add_index_entry(&other, &key, &pk(9)).await.unwrap();
    let elsewhere = encode_key(&[&Value::Text("bob".into())]);
    store
        .add_index_entry(&index, &elsewhere, &pk(7))
        .await
        .unwrap();
    let all = read(index.clone(), None, 10).await;
    assert_eq!(all.pks, [pk(1), pk(2), pk(3)]);
    assert_eq!(all.next, None);
    let first = read(index.clone(), None, 2).await;
    assert_eq!(first.pks, [pk(1), pk(2)]);
    assert_eq!(first.next, Some(pk(2)));
    let rest = read(index.clone(), first.next, 2).await;
    assert_eq!(rest.pks, [pk(3)]);
    assert_eq!(rest.next, None);
    store.drop_index(&index).await.unwrap();
    assert!(read(index.clone(), None, 10).await.pks.is_empty());
    assert_eq!(read(other.clone(), None, 10).await.pks, [pk(9)]);
    store.drop_index(&other).await.unwrap();
}

async fn conformance(store: &dyn Store) {
    composite_key(store).await;
    index_entries(store).await;
    let t = table();
    rows(store, &t).await;
    scans(store, &t).await;
    claims(store).await;
    catalog(store).await;
    transactions(store, &t).await;
    advisory_locks(store).await;
    store.drop_table(&t).await.unwrap();
}

#[tokio::test]
async fn the_embedded_store_keeps_the_contract() {
    conformance(&MemoryStore::new()).await;
}

/// The store the environment names: Cassandra with `KEYCLAIM_TEST_CASSANDRA`.
#[tokio::test]
async fn the_configured_store_keeps_the_contract() {
    let test = TestStore::fresh().await;
    conformance(test.store.as_ref()).await;
    test.cleanup().await;
}

/// Every request about one partition can go straight to a replica of it:
/// the driver routes a prepared statement by token when it knows which
/// bound values are the partition key, which it does only if the key is
/// bound (not written into the text) and fully given. Only the scans of a
/// whole table (by token range) and the listings (`catalog_list`, and
/// `claim_keys_of` and `index_keys_of`, which filter) are not point
/// requests. Cassandra only:
/// the embedded store routes nothing.
#[tokio::test]
async fn every_point_request_is_routed_by_its_partition_key() {
    let test = TestStore::fresh().await;
    let Some(c) = test.cassandra().cloned() else {
        return;
    };
    let t = table();
    c.create_table(&t).await.unwrap();
    let stmts = c.statements();
    let table = stmts.table(&t).await.unwrap();
    let f = &stmts.fixed;
    let point = [
        ("claim_read", &f.claim_read),
        ("claim_insert", &f.claim_insert),
        ("claim_restamp", &f.claim_restamp),
        ("claim_delete", &f.claim_delete),
        ("claim_drop", &f.claim_drop),
        ("catalog_read", &f.catalog_read),
        ("catalog_insert", &f.catalog_insert),
        ("catalog_update", &f.catalog_update),
        ("catalog_delete", &f.catalog_delete),
        ("txn_insert", &f.txn_insert),
        ("txn_read", &f.txn_read),
        ("heartbeat_write", &f.heartbeat_write),
        ("heartbeat_read", &f.heartbeat_read),
        ("lock_read", &f.lock_read),
        ("lock_insert", &f.lock_insert),
        ("lock_update", &f.lock_update),
        ("index_add", &f.index_add),
        ("index_read", &f.index_read),
        ("index_drop", &f.index_drop),
        ("row read", &table.read),
        ("row insert", &table.insert),
        ("row update", &table.update),
    ];
    let unrouted: Vec<&str> = point
        .iter()
        .filter(|(_, s)| !s.is_token_aware())
        .map(|(name, _)| *name)
        .collect();
    assert!(unrouted.is_empty(), "not routed by token: {unrouted:?}");
    // The listings are not point requests, and the driver knows it.
    assert!(!f.catalog_list.is_token_aware());
    assert!(!table.scan_first.is_token_aware());
    c.drop_table(&t).await.unwrap();
    test.cleanup().await;
}
