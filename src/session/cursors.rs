//! The SQL cursors a session has declared (`DECLARE name CURSOR FOR
//! query`), what Django's `QuerySet.iterator()`, SQLAlchemy's
//! `yield_per` and psycopg's named cursors use to read a large result a
//! batch at a time.
//!
//! A cursor keeps its query's row stream, which reads the store page by
//! page as FETCH asks for rows: memory stays bounded whatever the result's
//! size. A cursor declared `WITHOUT HOLD` (the default, only inside a
//! block) ends with its block; one `WITH HOLD` (outside a block) lasts
//! until CLOSE or the session's end, reading as of the snapshot its
//! DECLARE took. The cursors' result columns are shared with the Parse
//! handler (`shapes`), which describes a `FETCH` and a portal named after
//! a cursor without the session.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;

use crate::engine::{Column, RowStream};
use crate::error::{SqlError, SqlResult};

/// The result columns of each open cursor, by name.
pub type CursorShapes = Arc<parking_lot::Mutex<HashMap<String, Arc<Vec<Column>>>>>;

/// The session's open cursors.
#[derive(Clone, Default)]
pub struct Cursors {
    open: HashMap<String, Cursor>,
    /// None until the session shares them (a statement's copy of the
    /// session has neither cursors nor shapes, and costs no allocation).
    shapes: Option<CursorShapes>,
    /// How many cursors were declared so far: each cursor's number, and a
    /// savepoint's mark.
    declared: u64,
}

#[derive(Clone)]
struct Cursor {
    columns: Arc<Vec<Column>>,
    /// Locked by one FETCH at a time, for as long as its rows stream.
    rows: Arc<tokio::sync::Mutex<RowStream>>,
    hold: bool,
    /// Its number in the order of declaration (see [`Cursors::mark`]).
    number: u64,
}

impl std::fmt::Debug for Cursors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.open.keys()).finish()
    }
}

fn missing(name: &str) -> SqlError {
    SqlError::new("34000", format!("cursor \"{name}\" does not exist"))
}

impl Cursors {
    /// No cursors yet; their result columns are kept in `shapes`, which the
    /// Parse handler reads (`txn::PlanView`).
    pub fn sharing(shapes: CursorShapes) -> Cursors {
        shapes.lock().clear();
        Cursors {
            open: HashMap::new(),
            shapes: Some(shapes),
            declared: 0,
        }
    }

    /// Apply `change` to the shared result columns, if they are shared.
    fn shapes(&self, change: impl FnOnce(&mut HashMap<String, Arc<Vec<Column>>>)) {
        if let Some(shapes) = &self.shapes {
            change(&mut shapes.lock());
        }
    }

    /// Open cursor `name` over `rows`.
    pub fn declare(
        &mut self,
        name: &str,
        columns: Arc<Vec<Column>>,
        rows: RowStream,
        hold: bool,
    ) -> SqlResult<()> {
        if self.open.contains_key(name) {
            return Err(SqlError::new(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        self.shapes(|s| {
            s.insert(name.to_owned(), columns.clone());
        });
        let rows = Arc::new(tokio::sync::Mutex::new(rows));
        self.declared += 1;
        self.open.insert(
            name.to_owned(),
            Cursor {
                columns,
                rows,
                hold,
                number: self.declared,
            },
        );
        Ok(())
    }

    /// The next `count` rows of cursor `name` (all that are left: None),
    /// as they come from its query.
    pub fn fetch(
        &self,
        name: &str,
        count: Option<u64>,
    ) -> SqlResult<(Arc<Vec<Column>>, RowStream)> {
        let cursor = self.open.get(name).ok_or_else(|| missing(name))?;
        let rows =
            futures::stream::unfold((cursor.rows.clone(), count), |(rows, left)| async move {
                if left == Some(0) {
                    return None;
                }
                let next = rows.lock().await.next().await?;
                Some((next, (rows, left.map(|n| n - 1))))
            });
        Ok((cursor.columns.clone(), Box::pin(rows)))
    }

    /// CLOSE `name`, or every cursor (None: CLOSE ALL).
    pub fn close(&mut self, name: Option<&str>) -> SqlResult<()> {
        match name {
            Some(name) => {
                self.open.remove(name).ok_or_else(|| missing(name))?;
                self.shapes(|s| {
                    s.remove(name);
                });
            }
            None => {
                self.open.clear();
                self.shapes(HashMap::clear);
            }
        }
        Ok(())
    }

    /// The block ended: its cursors without HOLD close with it.
    pub fn end_block(&mut self) {
        self.retain(|c| c.hold);
    }

    /// Where a savepoint stands among the declarations.
    pub fn mark(&self) -> u64 {
        self.declared
    }

    /// ROLLBACK TO a savepoint that took `mark`: the cursors declared
    /// since close, WITH HOLD or not, as in PostgreSQL. Those declared
    /// before stay where their fetches left them.
    pub fn roll_back_to(&mut self, mark: u64) {
        self.retain(|c| c.number <= mark);
    }

    fn retain(&mut self, keep: impl Fn(&Cursor) -> bool) {
        self.open.retain(|_, c| keep(c));
        let open = &self.open;
        if let Some(shapes) = &self.shapes {
            shapes.lock().retain(|name, _| open.contains_key(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{SqlType, Value};

    fn rows(n: i32) -> RowStream {
        Box::pin(futures::stream::iter(
            (1..=n).map(|i| Ok(vec![Value::Int4(i)])),
        ))
    }

    fn columns() -> Arc<Vec<Column>> {
        Arc::new(vec![Column::computed("x", SqlType::Int4)])
    }

    async fn fetched(c: &Cursors, name: &str, count: Option<u64>) -> Vec<Value> {
        let (_, rows) = c.fetch(name, count).unwrap();
        rows.map(|r| r.unwrap().remove(0)).collect().await
    }

    #[tokio::test]
    async fn fetches_continue_where_the_last_stopped_and_blocks_close_their_cursors() {
        let shapes = CursorShapes::default();
        let mut c = Cursors::sharing(shapes.clone());
        c.declare("a", columns(), rows(5), false).unwrap();
        c.declare("h", columns(), rows(2), true).unwrap();
        let e = c.declare("a", columns(), rows(1), false).unwrap_err();
        assert_eq!(e.code, "42P03");
        assert_eq!(
            fetched(&c, "a", Some(2)).await,
            vec![Value::Int4(1), Value::Int4(2)]
        );
        assert_eq!(fetched(&c, "a", None).await.len(), 3);
        assert!(fetched(&c, "a", Some(1)).await.is_empty());
        assert_eq!(shapes.lock().len(), 2);
        c.end_block();
        assert_eq!(c.fetch("a", Some(1)).err().map(|e| e.code), Some("34000"));
        assert_eq!(shapes.lock().keys().collect::<Vec<_>>(), vec!["h"]);
        c.close(None).unwrap();
        assert!(shapes.lock().is_empty());
        assert_eq!(c.close(Some("h")).unwrap_err().code, "34000");
    }

    #[tokio::test]
    async fn rolling_back_to_a_savepoint_closes_the_cursors_declared_since() {
        let shapes = CursorShapes::default();
        let mut c = Cursors::sharing(shapes.clone());
        c.declare("before", columns(), rows(3), false).unwrap();
        let mark = c.mark();
        c.declare("after", columns(), rows(1), false).unwrap();
        c.declare("held", columns(), rows(1), true).unwrap();
        assert_eq!(fetched(&c, "before", Some(1)).await, vec![Value::Int4(1)]);
        c.roll_back_to(mark);
        for gone in ["after", "held"] {
            assert_eq!(c.fetch(gone, Some(1)).err().map(|e| e.code), Some("34000"));
        }
        assert_eq!(shapes.lock().keys().collect::<Vec<_>>(), vec!["before"]);
        // Its fetch is not undone.
        assert_eq!(fetched(&c, "before", Some(1)).await, vec![Value::Int4(2)]);
        // A name closed this way may be declared again.
        c.declare("after", columns(), rows(1), false).unwrap();
    }
}
