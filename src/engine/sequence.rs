//! Sequence counters: `nextval` and `setval` across every proxy sharing a
//! store, with no value ever handed out twice, whatever crashes or times out.
//!
//! A sequence's counter is one catalog-namespace record (`\0seq:<counter
//! id>`), holding PostgreSQL's `last_value` and `is_called`, changed only by
//! compare-and-set on its version. A proxy reserves a block of values at a
//! time (the sequence's CACHE, at least [`BLOCK`]) with one CAS and hands
//! them out from memory, so an insert pays no store round trip for its id in
//! the common case. A value is used only from a block whose CAS is known to
//! have applied: after an unknown outcome the record is read back, and the
//! block is ours only if the record still carries our version; otherwise it
//! is given up. So values never repeat; gaps (a lost block, a proxy that
//! stops with values left) are allowed, as in PostgreSQL.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::catalog::sequence::Options;
use crate::catalog::{store_error, Catalog, SequenceDef, TableDef, COUNTER_PREFIX};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::session::SequenceValues;
use crate::sql::alter_sequence::{AlterSequence, Change};
use crate::sql::expr::{sequence_unsupported, EvalCtx, Expr, SeqFunc};
use crate::store::{Cas, CatalogRecord, Store, StoreError, TxnId};

use super::Notice;
use crate::types::Value;

/// Values a proxy reserves at a time at least (a sequence's CACHE may ask
/// for more). One CAS per this many ids.
pub const BLOCK: i64 = 100;

/// How many times a reservation retries a CAS that lost a race or whose
/// outcome was unknown before it gives up.
const ATTEMPTS: usize = 50;

/// The counter record's content: PostgreSQL's `last_value` and `is_called`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct State {
    last: i64,
    called: bool,
}

/// Values reserved by this proxy and not handed out yet.
#[derive(Debug, Clone, Copy)]
struct Block {
    next: i128,
    /// The last value of the block (inclusive).
    end: i128,
    increment: i64,
}

impl Block {
    /// Whether what is left of it is what `def` would hand out: a block
    /// reserved before ALTER SEQUENCE changed the step, or moved a bound
    /// inside it, is given up (a gap, as a lost block is).
    fn fits(&self, def: &SequenceDef) -> bool {
        let (lo, hi) = (self.next.min(self.end), self.next.max(self.end));
        self.increment == def.increment && lo >= def.min as i128 && hi <= def.max as i128
    }

    fn take(&mut self) -> Option<i64> {
        let ahead = if self.increment > 0 {
            self.next <= self.end
        } else {
            self.next >= self.end
        };
        if !ahead {
            return None;
        }
        let v = self.next as i64;
        self.next += self.increment as i128;
        Some(v)
    }
}

/// This proxy's counters, by counter id.
pub struct Sequences {
    store: Arc<dyn Store>,
    blocks: DashMap<String, Arc<tokio::sync::Mutex<Option<Block>>>>,
}

/// The catalog-namespace record of counter `counter`.
fn record_name(counter: &str) -> String {
    format!("{COUNTER_PREFIX}{counter}")
}

fn decode(rec: &CatalogRecord) -> SqlResult<State> {
    serde_json::from_str(&rec.definition)
        .map_err(|e| SqlError::internal(format!("corrupt sequence counter: {e}")))
}

fn limit_reached(name: &str, def: &SequenceDef) -> SqlError {
    let (which, at) = if def.increment > 0 {
        ("maximum", def.max)
    } else {
        ("minimum", def.min)
    };
    SqlError::new(
        "2200H",
        format!("nextval: reached {which} value of sequence \"{name}\" ({at})"),
    )
}

impl super::Engine {
    /// ALTER SEQUENCE. Changes of the definition (AS, INCREMENT, MINVALUE,
    /// MAXVALUE, START, CACHE, CYCLE, OWNED BY) and RENAME TO are catalog
    /// changes, transactional in a block. `RESTART [[WITH] n]` sets the
    /// counter as `setval(name, n, false)` does, outside a transaction
    /// block only (PostgreSQL's RESTART rolls back with its block; a
    /// counter cannot). Returns the notices to send (the IF EXISTS skip);
    /// the session answers the command tag.
    pub(super) async fn alter_sequence(
        &self,
        alter: &AlterSequence,
        block: crate::txn::Block,
        open: Option<&crate::txn::OpenTxn>,
        user: &str,
    ) -> SqlResult<Vec<Notice>> {
        let ddl = self.ddl(open, None, crate::claims::now_ms());
        let name = &alter.name;
        let (options, restart, owned_by) = match &alter.change {
            Change::Unsupported(what) => {
                return Err(SqlError::unsupported(
                    format!("ALTER SEQUENCE ... {what} is not supported"),
                    "keyclaim's ALTER SEQUENCE takes AS, INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE, RESTART, OWNED BY, RENAME TO and OWNER TO",
                ))
            }
            Change::Rename(to) => {
                let done =
                    super::rename::rename(&ddl, name, to, alter.if_exists, "ALTER SEQUENCE").await?;
                return Ok(done.notices);
            }
            Change::Alter {
                options,
                restart,
                owned_by,
            } => (options, restart, owned_by),
            Change::Owner(_) => (&Box::default(), &None, &None),
        };
        if restart.is_some() && block != crate::txn::Block::Idle {
            return Err(SqlError::unsupported(
                "ALTER SEQUENCE ... RESTART inside a transaction block is not supported",
                "run it outside the block, or call setval(), which is not rolled back, inside it",
            ));
        }
        let def = match ddl.lookup(name).await? {
            None if alter.if_exists => {
                return Ok(vec![super::ddl::notice(
                    "00000",
                    format!("relation \"{name}\" does not exist, skipping"),
                )])
            }
            None => return Err(SqlError::undefined_table(name)),
            Some(def) => def,
        };
        let Some(seq) = &def.sequence else {
            return Err(SqlError::new(
                "42809",
                format!("\"{name}\" is not a sequence"),
            ));
        };
        if let Change::Owner(role) = &alter.change {
            super::ddl::owner_is_user(role, user)?;
            return Ok(Vec::new());
        }
        if let Some(owner) = owned_by {
            own_sequence(&ddl, name, owner.as_ref()).await?;
        }
        let mut seq = seq.clone();
        if **options != Options::default() {
            seq = seq.altered(options)?;
            if restart.is_none() {
                // PostgreSQL checks the counter against the new bounds.
                let (last, _) = counter_state(self.inner.store.as_ref(), &seq).await?;
                seq.within_bounds("RESTART", last)?;
            }
            ddl.change(name, |current| {
                let mut next =
                    TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(name))?);
                if let Some(s) = next.sequence.as_mut() {
                    *s = s.altered(options)?;
                }
                Ok(Some(next))
            })
            .await?;
        }
        if let Some(at) = restart {
            let value = at.unwrap_or(seq.start);
            seq.within_bounds("RESTART", value)?;
            self.inner.sequences.set(name, &seq, value, false).await?;
        }
        Ok(Vec::new())
    }
}

/// ALTER SEQUENCE ... OWNED BY: the sequence goes with that column's table
/// (DROP TABLE, DROP COLUMN), or with nothing (NONE). A catalog change, so
/// it rolls back with its block.
async fn own_sequence(
    ddl: &super::ddl::Ddl<'_>,
    name: &str,
    owner: Option<&(String, String)>,
) -> SqlResult<()> {
    if let Some((table, column)) = owner {
        let t = ddl
            .lookup(table)
            .await?
            .ok_or_else(|| SqlError::undefined_table(table))?;
        if t.sequence.is_some() {
            return Err(SqlError::new(
                "42809",
                format!("referenced relation \"{table}\" is not a table or foreign table"),
            ));
        }
        super::alter::column_of(&t, column)?;
    }
    ddl.change(name, |current| {
        let mut next = TableDef::clone(current.ok_or_else(|| SqlError::undefined_table(name))?);
        if let Some(s) = next.sequence.as_mut() {
            s.owned_by = owner.cloned();
        }
        Ok(Some(next))
    })
    .await?;
    Ok(())
}

/// What `SELECT * FROM` a sequence shows: PostgreSQL's `last_value` and
/// `is_called` as the counter record holds them (the last value some
/// proxy reserved, not only handed out: a proxy reserves a block at a
/// time, as a sequence's CACHE does in PostgreSQL); before any reservation,
/// the start value, not called.
pub async fn counter_state(store: &dyn Store, def: &SequenceDef) -> SqlResult<(i64, bool)> {
    let rec = store
        .read_catalog(&record_name(&def.counter))
        .await
        .map_err(store_error)?;
    Ok(match rec.as_ref().map(decode).transpose()? {
        Some(state) => (state.last, state.called),
        None => (def.start, false),
    })
}

impl Sequences {
    pub fn new(store: Arc<dyn Store>) -> Sequences {
        Sequences {
            store,
            blocks: DashMap::new(),
        }
    }

    fn block_of(&self, def: &SequenceDef) -> Arc<tokio::sync::Mutex<Option<Block>>> {
        self.blocks
            .entry(def.counter.clone())
            .or_default()
            .value()
            .clone()
    }

    /// The next `n` values of sequence `name`, in order.
    pub async fn draw(&self, name: &str, def: &SequenceDef, n: usize) -> SqlResult<Vec<i64>> {
        let block = self.block_of(def);
        let mut block = block.lock().await;
        let mut out = Vec::with_capacity(n);
        if block.as_ref().is_some_and(|b| !b.fits(def)) {
            *block = None;
        }
        while out.len() < n {
            if let Some(v) = block.as_mut().and_then(Block::take) {
                out.push(v);
                continue;
            }
            let want = (n - out.len()) as i64;
            *block = Some(
                self.reserve(name, def, want.max(def.cache).max(BLOCK))
                    .await?,
            );
        }
        Ok(out)
    }

    /// `setval(name, value, called)`: the counter says so from now on; this
    /// proxy forgets its block (other proxies use theirs up first, as other
    /// sessions' cached values do in PostgreSQL).
    pub async fn set(
        &self,
        name: &str,
        def: &SequenceDef,
        value: i64,
        called: bool,
    ) -> SqlResult<()> {
        def.check_bounds(name, value)?;
        let block = self.block_of(def);
        let mut block = block.lock().await;
        *block = None;
        self.change(def, |_| {
            Ok(State {
                last: value,
                called,
            })
        })
        .await?;
        Ok(())
    }

    /// Reserve up to `want` values with one CAS.
    async fn reserve(&self, name: &str, def: &SequenceDef, want: i64) -> SqlResult<Block> {
        let mut block = None;
        self.change(def, |state| {
            let inc = def.increment as i128;
            let (lo, hi) = (def.min as i128, def.max as i128);
            let mut first = match state {
                Some(s) if s.called => s.last as i128 + inc,
                Some(s) => s.last as i128,
                None => def.start as i128,
            };
            if first < lo || first > hi {
                if !def.cycle {
                    return Err(limit_reached(name, def));
                }
                first = if inc > 0 { lo } else { hi };
            }
            let room = if inc > 0 {
                (hi - first) / inc + 1
            } else {
                (first - lo) / -inc + 1
            };
            let take = room.min(want as i128);
            let end = first + (take - 1) * inc;
            block = Some(Block {
                next: first,
                end,
                increment: def.increment,
            });
            Ok(State {
                last: end as i64,
                called: true,
            })
        })
        .await?;
        Ok(block.expect("a reservation that applied computed its block"))
    }

    /// Replace the counter's state by `next(current)` with one CAS that is
    /// known to have applied; retried on a lost race, and on an unknown
    /// outcome unless the record shows our write landed.
    async fn change(
        &self,
        def: &SequenceDef,
        mut next: impl FnMut(Option<State>) -> SqlResult<State>,
    ) -> SqlResult<()> {
        let name = record_name(&def.counter);
        let mut current = self.store.read_catalog(&name).await.map_err(store_error)?;
        for _ in 0..ATTEMPTS {
            let state = current.as_ref().map(decode).transpose()?;
            let rec = CatalogRecord {
                version: Uuid::now_v7(),
                definition: serde_json::to_string(&next(state)?)
                    .map_err(|e| SqlError::internal(format!("sequence counter: {e}")))?,
            };
            let ours = rec.version;
            let written = match &current {
                None => self.store.insert_catalog(&name, rec).await,
                Some(cur) => self.store.update_catalog(&name, cur.version, rec).await,
            };
            match written {
                Ok(Cas::Applied) => return Ok(()),
                Ok(Cas::NotApplied(now)) => current = now,
                Err(StoreError::Unknown(_)) => {
                    current = self.store.read_catalog(&name).await.map_err(store_error)?;
                    if current.as_ref().map(|c| c.version) == Some(ours) {
                        return Ok(());
                    }
                }
                Err(e) => return Err(store_error(e)),
            }
        }
        Err(SqlError::new(
            "55000",
            "could not update the sequence counter: too many concurrent changes",
        )
        .with_hint("retry the statement"))
    }

    /// Remove a dropped sequence's counter (best effort: nothing names it).
    pub async fn remove(store: &dyn Store, counter: &str) -> Result<(), StoreError> {
        let name = record_name(counter);
        if let Some(rec) = store.read_catalog(&name).await? {
            store.delete_catalog(&name, rec.version).await?;
        }
        Ok(())
    }
}

/// What one statement's sequence functions answer: values drawn and
/// setval done before evaluation (`prepare`), and the session's currval /
/// lastval as the statement changes them.
#[derive(Debug, Default)]
pub struct StatementSequences {
    /// Drawn values not yet handed out, by sequence name, in order.
    pools: HashMap<String, VecDeque<i64>>,
    /// setval results in evaluation order: (sequence, value, is_called).
    setvals: VecDeque<(String, i64, bool)>,
    /// pg_get_serial_sequence answers by (table, column).
    serials: HashMap<(String, String), Value>,
    pub values: SequenceValues,
}

impl StatementSequences {
    pub fn new(values: SequenceValues) -> StatementSequences {
        StatementSequences {
            values,
            ..StatementSequences::default()
        }
    }

    /// Evaluate sequence function `f` on `args` from what was prepared.
    pub fn call(&mut self, f: SeqFunc, args: &[Value]) -> SqlResult<Value> {
        let text = |i: usize| args.get(i).and_then(Value::to_text);
        match f {
            SeqFunc::LastVal => self.values.last.map(Value::Int8).ok_or_else(|| {
                SqlError::new("55000", "lastval is not yet defined in this session")
            }),
            SeqFunc::NextVal => {
                let Some(name) = text(0) else {
                    return Ok(Value::Null);
                };
                let name = relation_name(&name)?;
                let v = self
                    .pools
                    .get_mut(&name)
                    .and_then(VecDeque::pop_front)
                    .ok_or_else(|| sequence_unsupported(f))?;
                self.values.current.insert(name, v);
                self.values.last = Some(v);
                Ok(Value::Int8(v))
            }
            SeqFunc::CurrVal => {
                let Some(name) = text(0) else {
                    return Ok(Value::Null);
                };
                let name = relation_name(&name)?;
                self.values
                    .current
                    .get(&name)
                    .map(|v| Value::Int8(*v))
                    .ok_or_else(|| {
                        SqlError::new(
                            "55000",
                            format!(
                                "currval of sequence \"{name}\" is not yet defined in this session"
                            ),
                        )
                    })
            }
            SeqFunc::SetVal => {
                let (name, v, called) = self
                    .setvals
                    .pop_front()
                    .ok_or_else(|| sequence_unsupported(f))?;
                if called {
                    self.values.current.insert(name, v);
                }
                Ok(Value::Int8(v))
            }
            SeqFunc::SerialSequence => {
                let key = (text(0).unwrap_or_default(), text(1).unwrap_or_default());
                self.serials
                    .get(&key)
                    .cloned()
                    .ok_or_else(|| sequence_unsupported(f))
            }
        }
    }
}

/// A relation named in text, as `nextval('...')` and `'...'::regclass`
/// read it: optionally `public.`-qualified, folded to lower case unless
/// double-quoted.
pub fn relation_name(text: &str) -> SqlResult<String> {
    let parts = crate::catalog::naming::split_qualified(text)?;
    match parts.as_slice() {
        [name] => Ok(name.clone()),
        [schema, name] if schema == "public" || schema == "pg_catalog" => Ok(name.clone()),
        [schema, _] => Err(SqlError::new(
            "3F000",
            format!("schema \"{schema}\" does not exist"),
        )),
        _ => Err(SqlError::new(
            "42601",
            format!("improper relation name (too many dotted names): {text}"),
        )),
    }
}

/// Where an argument stands in the query, for the error cursor.
fn located(e: SqlError, arg: &Expr) -> SqlError {
    match arg {
        Expr::Unknown(_, loc) => e.at(*loc),
        _ => e,
    }
}

/// The sequence a statement names; 42P01 if absent, 42809 if not one.
async fn resolve(
    catalog: &Catalog,
    own: Option<TxnId>,
    name: &str,
) -> SqlResult<(Arc<TableDef>, SequenceDef)> {
    let def = catalog.lookup(name, own).await?.ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    })?;
    let seq = def
        .sequence
        .clone()
        .ok_or_else(|| SqlError::new("42809", format!("\"{name}\" is not a sequence")))?;
    Ok((def, seq))
}

/// What `pg_get_serial_sequence` answers once the table is found: the
/// qualified name of the sequence `column` draws from and that is owned by
/// it (`sequence` finds a sequence's definition by name), None when there
/// is none; 42703 when the table has no such column.
pub fn serial_sequence(
    def: &TableDef,
    column: &str,
    sequence: impl FnOnce(&str) -> Option<Arc<TableDef>>,
) -> SqlResult<Option<String>> {
    let col = def
        .columns
        .iter()
        .find(|c| c.name == column)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{column}\" of relation \"{}\" does not exist",
                    def.name
                ),
            )
        })?;
    let Some(seq) = drawn_sequence(col) else {
        return Ok(None);
    };
    let owner = sequence(&seq).and_then(|d| d.sequence.as_ref().and_then(|s| s.owned_by.clone()));
    let owned = owner == Some((def.name.clone(), col.name.clone()));
    Ok(owned.then(|| format!("public.{}", crate::catalog::naming::quote_ident(&seq))))
}

/// The sequence a serial or identity column draws from: the one its
/// default names.
pub fn owned_sequence(col: &crate::catalog::ColumnDef) -> Option<String> {
    let d = col.default.as_deref()?;
    let inner = d.strip_prefix("nextval('")?.strip_suffix("'::regclass)")?;
    relation_name(&inner.replace("''", "'")).ok()
}

/// The sequence a column's default draws from, when the default is a
/// `nextval` of a sequence named by a constant (what serial and identity
/// columns, and ORMs' defaults, are).
pub fn drawn_sequence(c: &crate::catalog::ColumnDef) -> Option<String> {
    if let Some(seq) = owned_sequence(c) {
        return Some(seq);
    }
    let expr = crate::sql::parse_expr(c.default.as_deref()?).ok()?;
    crate::sql::ddl::nextval_of(&expr)
}

/// Before a statement evaluates anything: draw the values its nextval calls
/// will take, do its setval calls, and look up what pg_get_serial_sequence
/// and currval name, for the expressions `exprs` it evaluates in this order.
pub async fn prepare(
    sequences: &Sequences,
    catalog: &Catalog,
    own: Option<TxnId>,
    exprs: &[&Expr],
    cx: &EvalCtx<'_>,
    into: &mut StatementSequences,
) -> SqlResult<()> {
    let mut calls = Vec::new();
    for e in exprs {
        e.sequence_calls(&mut calls);
    }
    let mut wanted: Vec<(String, SequenceDef, usize)> = Vec::new();
    for (f, args) in calls {
        let arg = |i: usize| -> SqlResult<Option<String>> {
            match args.get(i) {
                Some(a) => Ok(a.eval(cx)?.to_text()),
                None => Ok(None),
            }
        };
        match f {
            SeqFunc::LastVal => {}
            SeqFunc::NextVal | SeqFunc::CurrVal | SeqFunc::SetVal => {
                let Some(text) = arg(0)? else { continue };
                let name = relation_name(&text).map_err(|e| located(e, &args[0]))?;
                let (_, seq) = resolve(catalog, own, &name)
                    .await
                    .map_err(|e| located(e, &args[0]))?;
                match f {
                    SeqFunc::NextVal => match wanted.iter_mut().find(|w| w.0 == name) {
                        Some(w) => w.2 += 1,
                        None => wanted.push((name, seq, 1)),
                    },
                    SeqFunc::SetVal => {
                        let value = match args[1].eval(cx)?.cast_to(&crate::types::SqlType::Int8)? {
                            Value::Int8(v) => v,
                            _ => continue,
                        };
                        let called = match args.get(2).map(|a| a.eval(cx)).transpose()? {
                            Some(Value::Bool(b)) => b,
                            Some(Value::Null) => continue,
                            _ => true,
                        };
                        // Values asked for before this setval come first.
                        draw_all(sequences, &mut wanted, into).await?;
                        sequences.set(&name, &seq, value, called).await?;
                        into.setvals.push_back((name, value, called));
                    }
                    _ => {}
                }
            }
            SeqFunc::SerialSequence => {
                let (Some(table), Some(column)) = (arg(0)?, arg(1)?) else {
                    continue;
                };
                let name = relation_name(&table).map_err(|e| located(e, &args[0]))?;
                let def = catalog
                    .lookup(&name, own)
                    .await?
                    .ok_or_else(|| located(SqlError::undefined_table(&name), &args[0]))?;
                let drawn = def
                    .columns
                    .iter()
                    .find(|c| c.name == column)
                    .and_then(drawn_sequence);
                let seq = match drawn {
                    Some(seq) => catalog.lookup(&seq, own).await?,
                    None => None,
                };
                let answer =
                    serial_sequence(&def, &column, |_| seq)?.map_or(Value::Null, Value::Text);
                into.serials.insert((table, column), answer);
            }
        }
    }
    draw_all(sequences, &mut wanted, into).await
}

/// Draw the values `wanted` asks for into the statement's pools.
async fn draw_all(
    sequences: &Sequences,
    wanted: &mut Vec<(String, SequenceDef, usize)>,
    into: &mut StatementSequences,
) -> SqlResult<()> {
    for (name, seq, n) in wanted.drain(..) {
        let values = sequences.draw(&name, &seq, n).await?;
        into.pools.entry(name).or_default().extend(values);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::sequence::Options;
    use crate::store::memory::MemoryStore;
    use crate::types::SqlType;

    fn seq(o: Options) -> SequenceDef {
        let mut d = o.define().unwrap();
        d.counter = format!("s.{}", Uuid::now_v7().simple());
        d
    }

    #[tokio::test]
    async fn two_proxies_never_hand_out_the_same_value() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let def = seq(Options::default());
        let (a, b) = (Sequences::new(store.clone()), Sequences::new(store));
        let mut all = Vec::new();
        for _ in 0..3 {
            all.extend(a.draw("s", &def, 70).await.unwrap());
            all.extend(b.draw("s", &def, 70).await.unwrap());
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a value was handed out twice");
        // One proxy's values come in order, from its block.
        let first = a.draw("s", &def, 3).await.unwrap();
        assert!(first[0] < first[1] && first[1] < first[2], "{first:?}");
    }

    /// Unknown outcomes on one write in five, lost or landed: a block is
    /// used only once the record shows it is ours, so no value repeats
    /// (taking an unknown outcome as applied hands a lost block out twice).
    #[tokio::test]
    async fn unknown_outcomes_never_hand_a_value_out_twice() {
        use crate::store::faults::{FaultConfig, FaultyStore};
        let store: Arc<dyn Store> = Arc::new(FaultyStore::new(
            Arc::new(MemoryStore::new()),
            FaultConfig {
                applied_then_unknown: 100,
                lost_then_unknown: 100,
                ..FaultConfig::none(3)
            },
        ));
        let def = seq(Options::default());
        let (a, b) = (Sequences::new(store.clone()), Sequences::new(store));
        let mut all = Vec::new();
        for _ in 0..100 {
            for s in [&a, &b] {
                if let Ok(v) = s.draw("s", &def, BLOCK as usize).await {
                    all.extend(v);
                }
            }
        }
        let n = all.len();
        assert!(n >= 100 * BLOCK as usize, "too few draws succeeded: {n}");
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a value was handed out twice");
    }

    #[tokio::test]
    async fn bounds_cycle_and_setval() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let s = Sequences::new(store);
        let small = seq(Options {
            ty: Some(SqlType::Int2),
            max: Some(Some(3)),
            ..Options::default()
        });
        assert_eq!(s.draw("s2", &small, 3).await.unwrap(), vec![1, 2, 3]);
        let err = s.draw("s2", &small, 1).await.unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                "2200H",
                "nextval: reached maximum value of sequence \"s2\" (3)"
            )
        );
        let cyc = seq(Options {
            max: Some(Some(2)),
            cycle: Some(true),
            ..Options::default()
        });
        assert_eq!(s.draw("c", &cyc, 5).await.unwrap(), vec![1, 2, 1, 2, 1]);
        let plain = seq(Options::default());
        assert_eq!(s.draw("p", &plain, 1).await.unwrap(), vec![1]);
        s.set("p", &plain, 10, true).await.unwrap();
        assert_eq!(s.draw("p", &plain, 1).await.unwrap(), vec![11]);
        s.set("p", &plain, 10, false).await.unwrap();
        assert_eq!(s.draw("p", &plain, 1).await.unwrap(), vec![10]);
        let err = s.set("p", &plain, 0, true).await.unwrap_err();
        assert_eq!(err.code, "22003");
    }
}
