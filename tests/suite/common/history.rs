//! The history workload and its checker, shared by tests/suite/history.rs (faults
//! injected into the store in process) and tests/suite/cluster.rs (a real
//! cluster's nodes killed, paused and cut off from quorum).
//!
//! Clients run random INSERT / UPDATE / DELETE / SELECT on one small table
//! with a primary key and two UNIQUE constraints; every invocation and
//! answer is recorded. [`check`] then holds the history and the final state
//! to what the module docs of tests/suite/history.rs list: U and C, every
//! statement answered, no write of a failed statement visible, no lost
//! acknowledged write, every 23505 justified, every read explained.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::types::ToSql;
use tokio_postgres::NoTls;

use keyclaim::catalog::TableDef;
use keyclaim::store::Store;
use keyclaim::types::Value;

pub const IDS: i32 = 8;
const AS: i32 = 5;
const BS: i32 = 3;

/// The table the workload writes.
pub const TABLE: &str = "CREATE TABLE kv (id integer PRIMARY KEY, a integer UNIQUE, \
    b integer NOT NULL, c integer, v integer NOT NULL, UNIQUE (b, c))";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Insert,
    UpdateA,
    UpdateBc,
    Delete,
    ReadById,
    ReadByA,
}

/// What one statement asked for.
#[derive(Debug, Clone)]
pub struct Call {
    pub kind: Kind,
    pub id: i32,
    pub a: Option<i32>,
    pub b: i32,
    pub c: Option<i32>,
    /// The write's identity: every write sets v to a value no other write uses.
    pub v: i32,
}

/// A row as a read returned it: (id, a, b, c, v).
type ReadRow = (i32, Option<i32>, i32, Option<i32>, i32);

/// How it was answered.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Rows affected, or for reads the rows returned.
    Ok(u64, Vec<ReadRow>),
    Err {
        code: String,
        detail: Option<String>,
    },
    /// The connection was lost before an answer (its proxy died): the
    /// statement may or may not have taken effect. The error is read only
    /// by the history's Debug output, which a failed check prints.
    Lost(#[allow(dead_code)] String),
    /// No answer within the hang limit.
    Hung,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub call: Call,
    pub start: Instant,
    pub end: Instant,
    pub answer: Answer,
}

impl Op {
    pub fn is_write(&self) -> bool {
        matches!(
            self.call.kind,
            Kind::Insert | Kind::UpdateA | Kind::UpdateBc | Kind::Delete
        )
    }

    pub fn code(&self) -> Option<&str> {
        match &self.answer {
            Answer::Err { code, .. } => Some(code),
            Answer::Lost(_) => Some("connection lost"),
            Answer::Hung => Some("hung"),
            Answer::Ok(..) => None,
        }
    }

    pub fn succeeded(&self) -> bool {
        matches!(self.answer, Answer::Ok(..))
    }

    /// The write may have taken effect: acknowledged with a row, or unknown.
    pub fn may_have_written(&self) -> bool {
        match &self.answer {
            Answer::Ok(n, _) => *n > 0,
            // 40003 may mean either; a hang is an anomaly reported anyway.
            Answer::Err { code, .. } => code == "40003",
            Answer::Lost(_) | Answer::Hung => true,
        }
    }
}

/// Answers by SQLSTATE ("ok" for successes).
pub fn answers_by_code(history: &[Op]) -> BTreeMap<String, usize> {
    let mut codes = BTreeMap::new();
    for o in history {
        *codes
            .entry(o.code().unwrap_or("ok").to_owned())
            .or_default() += 1;
    }
    codes
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

/// How one client runs.
pub struct Worker {
    /// Its number: seeds its random calls and tags its writes.
    pub n: usize,
    pub seed: u64,
    /// The proxies it may use, the first one first; after a lost
    /// connection it moves on to the next that accepts one.
    pub proxies: Vec<SocketAddr>,
    /// Set when it should stop (after the statement running then).
    pub stop: Arc<AtomicBool>,
    /// A statement without an answer this long is recorded as hung.
    pub hang_after: Duration,
    /// Send one statement in eight a cancel request after a random delay
    /// of up to 3 ms (57014 answers are then checked like any other).
    pub cancels: bool,
}

impl Worker {
    /// Runs random statements until told to stop; the history it made.
    pub async fn run(self) -> Vec<Op> {
        let mut rng = StdRng::seed_from_u64(self.seed * 1000 + self.n as u64);
        let mut ops = Vec::new();
        let mut seq = 0;
        let mut next_proxy = 0;
        let mut client = None;
        while !self.stop.load(Ordering::Relaxed) {
            let Some(c) = &client else {
                client = connect_next(&self.proxies, &mut next_proxy).await;
                continue;
            };
            seq += 1;
            let call = random_call(&mut rng, (self.n as i32) << 20 | seq);
            // A late cancel may hit this worker's next statement instead;
            // any statement may be canceled, as long as it says so.
            if self.cancels && rng.gen_range(0..8) == 0 {
                let cancel = c.cancel_token();
                let after = Duration::from_micros(rng.gen_range(0..3000));
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = cancel.cancel_query(NoTls).await;
                });
            }
            let start = Instant::now();
            let answer = match tokio::time::timeout(self.hang_after, run_call(c, &call)).await {
                Err(_) => Answer::Hung,
                Ok(Ok(a)) => a,
                Ok(Err(e)) => match e.as_db_error() {
                    Some(db) => Answer::Err {
                        code: db.code().code().to_owned(),
                        detail: db.detail().map(str::to_owned),
                    },
                    None => Answer::Lost(e.to_string()),
                },
            };
            let (hung, lost) = (
                matches!(answer, Answer::Hung),
                matches!(answer, Answer::Lost(_)),
            );
            ops.push(Op {
                call,
                start,
                end: Instant::now(),
                answer,
            });
            if hung {
                break;
            }
            if lost {
                client = None;
            }
        }
        ops
    }
}

/// A connection to proxy `next` of `proxies` (counting round), moving
/// `next` on; None, after a short pause, when that one takes none (it
/// died): the caller tries again, with the next.
pub async fn connect_next(
    proxies: &[SocketAddr],
    next: &mut usize,
) -> Option<tokio_postgres::Client> {
    let addr = proxies[*next % proxies.len()];
    *next += 1;
    let config = super::client_config(addr, super::USER);
    match tokio::time::timeout(Duration::from_secs(5), super::connect_with(config)).await {
        Ok(Ok(client)) => Some(client),
        _ => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            None
        }
    }
}

/// The workload table's definition and its live rows by id, read from the
/// store directly (past any proxy).
pub async fn final_state(store: &dyn Store) -> (TableDef, BTreeMap<i32, Vec<Value>>) {
    let rec = store.read_catalog("kv").await.unwrap().unwrap();
    let def: TableDef = serde_json::from_str(&rec.definition).unwrap();
    let mut live: BTreeMap<i32, Vec<Value>> = BTreeMap::new();
    let mut after = None;
    loop {
        let page = store.scan_rows(&def, after.as_deref(), 100).await.unwrap();
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
    (def, live)
}

/// A flag that turns true `after` from now.
pub fn stop_after(after: Duration) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        flag.store(true, Ordering::Relaxed);
    });
    stop
}

/// Every anomaly the history and the store's final state show.
pub async fn anomalies(history: &[Op], store: &dyn Store) -> (Vec<String>, usize) {
    let (def, live) = final_state(store).await;
    let mut anomalies = check(history, &live);
    // C: every live row's non-NULL keys are claimed by it.
    for values in live.values() {
        for u in &def.uniques {
            if let Some(key) = u.key_of(values) {
                let claim = store.read_claim(&u.id, &key).await.unwrap();
                if claim.is_none_or(|c| c.owner != def.pk_bytes(values)) {
                    anomalies.push(format!("C: row {values:?} has no claim on {}", u.name));
                }
            }
        }
    }
    (anomalies, live.len())
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
        anomalies.push(format!("no answer within the hang limit: {:?}", o.call));
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
