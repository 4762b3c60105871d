//! A Jepsen-style history check: many clients run random INSERT / UPDATE /
//! DELETE / SELECT through real connections to several keyclaim proxies that
//! share one store, while the store injects faults (ambiguous outcomes,
//! unavailability, stalls past the lease). Every invocation and answer is
//! recorded; at the end the history and the final state must show:
//!
//! - U: at most one live row per unique key; C: every live row's keys are
//!   claimed by it;
//! - no statement hung (every one was answered, once);
//! - every live row's contents come from a write that succeeded or whose
//!   outcome was reported unknown (40003), never from one that failed;
//! - the last acknowledged write to a row, when nothing else wrote to that
//!   row after it began, is what the row holds;
//! - every 23505 names a key some write had put in place by then;
//! - every row a SELECT returned was written by a write that began before
//!   the SELECT ended, and matches its WHERE.
//!
//! One statement in eight also gets a cancel request after a random delay of
//! up to 3 ms, so 57014 answers are checked like every other error: nothing
//! of the statement may stay.
//!
//! `KEYCLAIM_HISTORY_SECS` sets the budget (default 20), `KEYCLAIM_HISTORY_SEED`
//! the seed (default 1); the report prints both so a run can be repeated.
//! The faults wrap the embedded store, or Cassandra with
//! `KEYCLAIM_TEST_CASSANDRA`.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::types::ToSql;
use tokio_postgres::NoTls;

use keyclaim::catalog::TableDef;
use keyclaim::engine::EngineConfig;
use keyclaim::server::RunningServer;
use keyclaim::store::faults::{FaultConfig, FaultyStore};
use keyclaim::store::Store;
use keyclaim::types::Value;

const PROXIES: usize = 3;
const WORKERS: usize = 12;
const IDS: i32 = 8;
const AS: i32 = 5;
const BS: i32 = 3;
const LEASE: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Insert,
    UpdateA,
    UpdateBc,
    Delete,
    ReadById,
    ReadByA,
}

/// What one statement asked for.
#[derive(Debug, Clone)]
struct Call {
    kind: Kind,
    id: i32,
    a: Option<i32>,
    b: i32,
    c: Option<i32>,
    /// The write's identity: every write sets v to a value no other write uses.
    v: i32,
}

/// A row as a read returned it: (id, a, b, c, v).
type ReadRow = (i32, Option<i32>, i32, Option<i32>, i32);

/// How it was answered.
#[derive(Debug, Clone)]
enum Answer {
    /// Rows affected, or for reads the rows returned.
    Ok(u64, Vec<ReadRow>),
    Err {
        code: String,
        detail: Option<String>,
    },
    /// No answer within the hang limit.
    Hung,
}

#[derive(Debug, Clone)]
struct Op {
    call: Call,
    start: Instant,
    end: Instant,
    answer: Answer,
}

impl Op {
    fn is_write(&self) -> bool {
        matches!(
            self.call.kind,
            Kind::Insert | Kind::UpdateA | Kind::UpdateBc | Kind::Delete
        )
    }

    fn code(&self) -> Option<&str> {
        match &self.answer {
            Answer::Err { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The write may have taken effect: acknowledged with a row, or unknown.
    fn may_have_written(&self) -> bool {
        match &self.answer {
            Answer::Ok(n, _) => *n > 0,
            // 40003 may mean either; a hang is an anomaly reported anyway.
            Answer::Err { code, .. } => code == "40003",
            Answer::Hung => true,
        }
    }
}

fn random_call(rng: &mut StdRng, v: i32) -> Call {
    let kind = match rng.gen_range(0..100) {
        0..=34 => Kind::Insert,
        35..=49 => Kind::UpdateA,
        50..=59 => Kind::UpdateBc,
        60..=74 => Kind::Delete,
        75..=89 => Kind::ReadById,
        _ => Kind::ReadByA,
    };
    Call {
        kind,
        id: rng.gen_range(0..IDS),
        a: (rng.gen_range(0..5) > 0).then(|| rng.gen_range(0..AS)),
        b: rng.gen_range(0..BS),
        c: (rng.gen_range(0..4) > 0).then(|| rng.gen_range(0..BS)),
        v,
    }
}

async fn run_call(
    client: &tokio_postgres::Client,
    call: &Call,
) -> Result<Answer, tokio_postgres::Error> {
    let Call { id, a, b, c, v, .. } = call;
    let rows = |rows: Vec<tokio_postgres::Row>| {
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect();
        Answer::Ok(got.len() as u64, got)
    };
    let select = "SELECT id, a, b, c, v FROM kv WHERE";
    Ok(match call.kind {
        Kind::Insert => {
            let n = client
                .execute(
                    "INSERT INTO kv (id, a, b, c, v) VALUES ($1, $2, $3, $4, $5)",
                    &[id as &(dyn ToSql + Sync), a, b, c, v],
                )
                .await?;
            Answer::Ok(n, Vec::new())
        }
        Kind::UpdateA => Answer::Ok(
            client
                .execute(
                    "UPDATE kv SET a = $1, v = $2 WHERE id = $3",
                    &[a as &(dyn ToSql + Sync), v, id],
                )
                .await?,
            Vec::new(),
        ),
        Kind::UpdateBc => Answer::Ok(
            client
                .execute(
                    "UPDATE kv SET b = $1, c = $2, v = $3 WHERE id = $4",
                    &[b as &(dyn ToSql + Sync), c, v, id],
                )
                .await?,
            Vec::new(),
        ),
        Kind::Delete => Answer::Ok(
            client
                .execute("DELETE FROM kv WHERE id = $1", &[id])
                .await?,
            Vec::new(),
        ),
        Kind::ReadById => rows(client.query(&format!("{select} id = $1"), &[id]).await?),
        Kind::ReadByA => rows(client.query(&format!("{select} a = $1"), &[a]).await?),
    })
}

async fn proxy(store: Arc<dyn Store>) -> RunningServer {
    common::proxy(
        store,
        EngineConfig {
            lease: LEASE,
            lock_timeout: Duration::from_secs(5),
            max_retries: 2,
            ..EngineConfig::default()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_under_faults_are_correct() {
    let secs = common::env_or("KEYCLAIM_HISTORY_SECS", 20);
    let seed = common::env_or("KEYCLAIM_HISTORY_SEED", 1);
    let test = common::TestStore::fresh().await;
    let base = test.store.clone();
    let faulty = Arc::new(FaultyStore::new(
        base.clone(),
        FaultConfig {
            applied_then_unknown: 20,
            lost_then_unknown: 20,
            unavailable: 10,
            read_unknown: 10,
            stall: 5,
            stall_for: LEASE * 2,
            max_latency: Duration::from_millis(2),
            ..FaultConfig::none(seed)
        },
    ));
    let mut proxies = Vec::new();
    for _ in 0..PROXIES {
        proxies.push(proxy(faulty.clone()).await);
    }
    common::connect_to(proxies[0].addr())
        .await
        .batch_execute(
            "CREATE TABLE kv (id integer PRIMARY KEY, a integer UNIQUE, b integer NOT NULL, c integer, v integer NOT NULL, UNIQUE (b, c))",
        )
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let client = common::connect_to(proxies[w % PROXIES].addr()).await;
        workers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed * 1000 + w as u64);
            let mut ops = Vec::new();
            let mut seq = 0;
            while Instant::now() < deadline {
                seq += 1;
                let call = random_call(&mut rng, (w as i32) << 20 | seq);
                // A late cancel may hit this worker's next statement instead;
                // any statement may be canceled, as long as it says so.
                if rng.gen_range(0..8) == 0 {
                    let cancel = client.cancel_token();
                    let after = Duration::from_micros(rng.gen_range(0..3000));
                    tokio::spawn(async move {
                        tokio::time::sleep(after).await;
                        let _ = cancel.cancel_query(NoTls).await;
                    });
                }
                let start = Instant::now();
                let answer =
                    match tokio::time::timeout(Duration::from_secs(30), run_call(&client, &call))
                        .await
                    {
                        Err(_) => Answer::Hung,
                        Ok(Ok(a)) => a,
                        Ok(Err(e)) => match e.as_db_error() {
                            Some(db) => Answer::Err {
                                code: db.code().code().to_owned(),
                                detail: db.detail().map(str::to_owned),
                            },
                            None => Answer::Err {
                                code: format!("client: {e}"),
                                detail: None,
                            },
                        },
                    };
                let hung = matches!(answer, Answer::Hung);
                ops.push(Op {
                    call,
                    start,
                    end: Instant::now(),
                    answer,
                });
                if hung {
                    break;
                }
            }
            ops
        }));
    }
    let mut history = Vec::new();
    for w in workers {
        history.extend(w.await.unwrap());
    }

    // The final state, read past the faults.
    let rec = base.read_catalog("kv").await.unwrap().unwrap();
    let def: TableDef = serde_json::from_str(&rec.definition).unwrap();
    let mut live: BTreeMap<i32, Vec<Value>> = BTreeMap::new();
    let mut after = None;
    loop {
        let page = base.scan_rows(&def, after.as_deref(), 100).await.unwrap();
        for (_, r) in page.rows.into_iter().filter(|(_, r)| r.live) {
            let Value::Int4(id) = r.values[0] else {
                panic!("id")
            };
            live.insert(id, r.values);
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }

    let mut anomalies = check(&history, &live);
    // C: every live row's non-NULL keys are claimed by it.
    for values in live.values() {
        for u in &def.uniques {
            if let Some(key) = u.key_of(values) {
                let claim = base.read_claim(&u.id, &key).await.unwrap();
                if claim.is_none_or(|c| c.owner != def.pk_bytes(values)) {
                    anomalies.push(format!("C: row {values:?} has no claim on {}", u.name));
                }
            }
        }
    }

    let count = |f: &dyn Fn(&Op) -> bool| history.iter().filter(|o| f(o)).count();
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    for o in &history {
        *codes
            .entry(o.code().unwrap_or("ok").to_owned())
            .or_default() += 1;
    }
    eprintln!(
        "history: {} store, seed {seed}, {secs} s, {} operations ({} writes), answers {codes:?}, faults injected {} \
         (applied-then-unknown {}, lost-then-unknown {}, unavailable {}, read timeouts {}, stalls {}), \
         {} live rows, anomalies {}",
        base.kind(),
        history.len(),
        count(&|o| o.is_write()),
        faulty.counts.total(),
        faulty.counts.applied_then_unknown.load(Ordering::Relaxed),
        faulty.counts.lost_then_unknown.load(Ordering::Relaxed),
        faulty.counts.unavailable.load(Ordering::Relaxed),
        faulty.counts.read_unknown.load(Ordering::Relaxed),
        faulty.counts.stalls.load(Ordering::Relaxed),
        live.len(),
        anomalies.len()
    );
    assert!(
        anomalies.is_empty(),
        "{} anomalies:\n{}",
        anomalies.len(),
        anomalies.join("\n")
    );
    // Not vacuous: the run did real work, met faults, and saw conflicts.
    assert!(history.len() > 200, "only {} operations", history.len());
    assert!(faulty.counts.total() > 10, "too few faults injected");
    assert!(
        codes.get("23505").copied().unwrap_or(0) > 10,
        "too few conflicts: {codes:?}"
    );
    assert!(count(&|o| o.is_write() && matches!(o.answer, Answer::Ok(1, _))) > 50);
    assert!(
        count(&|o| o.is_write() && o.code() == Some("57014")) > 5,
        "too few canceled writes: {codes:?}"
    );
    for p in proxies {
        p.shutdown().await;
    }
    test.cleanup().await;
}

/// The history checks that need no store access.
fn check(history: &[Op], live: &BTreeMap<i32, Vec<Value>>) -> Vec<String> {
    let mut anomalies = Vec::new();
    let int = |v: &Value| match v {
        Value::Int4(i) => Some(*i),
        _ => None,
    };
    // U, on the final state.
    let mut seen_a: HashMap<i32, i32> = HashMap::new();
    let mut seen_bc: HashMap<(i32, i32), i32> = HashMap::new();
    for (id, values) in live {
        if let Some(a) = int(&values[1]) {
            if let Some(other) = seen_a.insert(a, *id) {
                anomalies.push(format!("U: rows {other} and {id} both hold a = {a}"));
            }
        }
        if let (Some(b), Some(c)) = (int(&values[2]), int(&values[3])) {
            if let Some(other) = seen_bc.insert((b, c), *id) {
                anomalies.push(format!(
                    "U: rows {other} and {id} both hold (b, c) = ({b}, {c})"
                ));
            }
        }
    }
    // Every statement answered.
    for o in history.iter().filter(|o| matches!(o.answer, Answer::Hung)) {
        anomalies.push(format!("no answer within 30 s: {:?}", o.call));
    }
    let writes_by_v: HashMap<i32, &Op> = history
        .iter()
        .filter(|o| o.is_write() && o.call.kind != Kind::Delete)
        .map(|o| (o.call.v, o))
        .collect();
    // Live rows come from writes that may have happened, on that row.
    for (id, values) in live {
        let v = int(&values[4]).unwrap_or(-1);
        match writes_by_v.get(&v) {
            None => anomalies.push(format!("row {id} holds v = {v}, which no statement wrote")),
            Some(o) if !o.may_have_written() => anomalies.push(format!(
                "row {id} holds the write of a statement answered {:?}: {:?}",
                o.answer, o.call
            )),
            Some(o) if o.call.id != *id => anomalies.push(format!(
                "row {id} holds v = {v} written for row {}",
                o.call.id
            )),
            Some(_) => {}
        }
    }
    // The last acknowledged write to a row, with nothing else writing that
    // row after it began, is what the row holds.
    for id in 0..IDS {
        let writes: Vec<&Op> = history
            .iter()
            .filter(|o| o.is_write() && o.call.id == id && o.may_have_written())
            .collect();
        let Some(last) = writes
            .iter()
            .filter(|o| matches!(o.answer, Answer::Ok(1, _)))
            .max_by_key(|o| o.end)
        else {
            continue;
        };
        let overlapped = writes
            .iter()
            .any(|o| o.call.v != last.call.v && o.end > last.start);
        if overlapped {
            continue;
        }
        let holds = live.get(&id).and_then(|vals| int(&vals[4]));
        let expected = (last.call.kind != Kind::Delete).then_some(last.call.v);
        if holds != expected {
            anomalies.push(format!(
                "lost write: row {id} holds v = {holds:?}, but the last acknowledged write was {:?}",
                last.call
            ));
        }
    }
    // Every 23505 names a key that some write had put in place by then.
    for o in history.iter().filter(|o| o.code() == Some("23505")) {
        let Answer::Err {
            detail: Some(detail),
            ..
        } = &o.answer
        else {
            anomalies.push(format!("23505 without detail: {:?}", o.call));
            continue;
        };
        let justified = history.iter().any(|w| {
            w.is_write()
                && w.call.kind != Kind::Delete
                && w.may_have_written()
                && w.start < o.end
                && w.call.v != o.call.v
                && match detail.as_str() {
                    d if d.starts_with("Key (id)=") => {
                        d == format!("Key (id)=({}) already exists.", w.call.id)
                    }
                    d if d.starts_with("Key (a)=") => {
                        w.call.kind != Kind::UpdateBc
                            && w.call
                                .a
                                .is_some_and(|a| d == format!("Key (a)=({a}) already exists."))
                    }
                    d => w.call.c.is_some_and(|c| {
                        d == format!("Key (b, c)=({}, {c}) already exists.", w.call.b)
                    }),
                }
        });
        if !justified {
            anomalies.push(format!("unjustified 23505 ({detail}) for {:?}", o.call));
        }
    }
    // Reads return rows some write made, before the read ended, matching the WHERE.
    for o in history
        .iter()
        .filter(|o| matches!(o.call.kind, Kind::ReadById | Kind::ReadByA))
    {
        let Answer::Ok(_, rows) = &o.answer else {
            continue;
        };
        for (id, a, _, _, v) in rows {
            let matches = match o.call.kind {
                Kind::ReadById => *id == o.call.id,
                _ => *a == o.call.a,
            };
            let written = writes_by_v
                .get(v)
                .is_some_and(|w| w.start < o.end && w.may_have_written());
            if !matches || !written {
                anomalies.push(format!("read {:?} returned ({id}, {a:?}, v = {v})", o.call));
            }
        }
    }
    anomalies
}
