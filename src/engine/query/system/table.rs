//! A system relation as rows of cells, made into an in-memory table.
//!
//! System relations are small (a few rows per relation keyclaim keeps) and
//! built for one execution, so a plain list of cells per row is all they
//! need; each column's [`Col`] type turns its cells into one Arrow array.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float32Builder, Int16Builder, Int32Builder, Int64Builder,
    ListBuilder, StringBuilder, UInt32Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Result as DfResult;
use datafusion::datasource::MemTable;

/// A system column's type, as PostgreSQL declares it, and its Arrow form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Col {
    /// `oid` and the reg* types: an unsigned 32-bit number.
    Oid,
    /// `name`, `text`, `"char"`, `regproc` and the other text-like types.
    Text,
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    /// `int2[]`.
    Int2List,
    /// `oid[]`.
    OidList,
    /// `int2vector`: a list in the engine, its space-separated text to
    /// the client (`query::types::is_vector`).
    Int2Vector,
    /// `oidvector`, likewise.
    OidVector,
    /// `text[]`, `name[]`, `aclitem[]`.
    TextList,
}

impl Col {
    fn data_type(self) -> DataType {
        let item = |dt| DataType::List(Arc::new(Field::new("item", dt, true)));
        match self {
            Col::Oid => DataType::UInt32,
            Col::Text => DataType::Utf8,
            Col::Bool => DataType::Boolean,
            Col::Int2 => DataType::Int16,
            Col::Int4 => DataType::Int32,
            Col::Int8 => DataType::Int64,
            Col::Float4 => DataType::Float32,
            Col::Int2List | Col::Int2Vector => item(DataType::Int16),
            Col::OidList | Col::OidVector => item(DataType::UInt32),
            Col::TextList => item(DataType::Utf8),
        }
    }
}

/// One value of a system row; [`Cell::Null`] fits any column.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
    List(Vec<Cell>),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&String> for Cell {
    fn from(s: &String) -> Cell {
        Cell::Text(s.clone())
    }
}

impl From<bool> for Cell {
    fn from(b: bool) -> Cell {
        Cell::Bool(b)
    }
}

impl From<u32> for Cell {
    fn from(n: u32) -> Cell {
        Cell::Int(n.into())
    }
}

impl From<i64> for Cell {
    fn from(n: i64) -> Cell {
        Cell::Int(n)
    }
}

impl From<i32> for Cell {
    fn from(n: i32) -> Cell {
        Cell::Int(n.into())
    }
}

impl From<usize> for Cell {
    fn from(n: usize) -> Cell {
        Cell::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }
}

/// A row from cells of any convertible types.
macro_rules! row {
    ($($cell:expr),* $(,)?) => {
        vec![$($crate::engine::query::system::table::Cell::from($cell)),*]
    };
}
pub(super) use row;

/// A list cell.
pub(super) fn list<T: Into<Cell>>(items: impl IntoIterator<Item = T>) -> Cell {
    Cell::List(items.into_iter().map(Into::into).collect())
}

/// A system relation's definition: its name and columns.
pub(super) struct Def {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Col)],
}

impl Def {
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|(name, col)| {
                let field = Field::new(*name, col.data_type(), true);
                match col {
                    Col::Int2Vector => super::super::types::vector_field(field, "int2vector"),
                    Col::OidVector => super::super::types::vector_field(field, "oidvector"),
                    _ => field,
                }
            })
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The relation holding `rows` (each as wide as the columns).
    pub fn table(&self, rows: Vec<Vec<Cell>>) -> DfResult<MemTable> {
        let schema = self.schema();
        let arrays = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, col))| array(*col, rows.iter().map(|r| r.get(i).unwrap_or(&Cell::Null))))
            .collect::<Vec<_>>();
        let batch = if rows.is_empty() {
            RecordBatch::new_empty(schema.clone())
        } else {
            RecordBatch::try_new(schema.clone(), arrays)?
        };
        MemTable::try_new(schema, vec![vec![batch]])
    }
}

fn int(c: &Cell) -> Option<i64> {
    match c {
        Cell::Int(n) => Some(*n),
        Cell::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn text(c: &Cell) -> Option<String> {
    match c {
        Cell::Text(s) => Some(s.clone()),
        Cell::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One column's cells as an Arrow array of the column's type; a cell of
/// the wrong kind is a NULL (system rows are built here, not by users).
fn array<'a>(col: Col, cells: impl Iterator<Item = &'a Cell>) -> ArrayRef {
    macro_rules! build {
        ($builder:expr, $get:expr) => {{
            let mut b = $builder;
            for c in cells {
                b.append_option($get(c));
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    macro_rules! list {
        ($inner:expr, $get:expr) => {{
            let mut b = ListBuilder::new($inner);
            for c in cells {
                match c {
                    Cell::List(items) => {
                        for item in items {
                            b.values().append_option($get(item));
                        }
                        b.append(true);
                    }
                    _ => b.append(false),
                }
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    match col {
        Col::Oid => build!(UInt32Builder::new(), |c| int(c)
            .and_then(|n| u32::try_from(n).ok())),
        Col::Text => build!(StringBuilder::new(), text),
        Col::Bool => build!(BooleanBuilder::new(), |c: &Cell| match c {
            Cell::Bool(b) => Some(*b),
            _ => None,
        }),
        Col::Int2 => build!(Int16Builder::new(), |c| int(c)
            .and_then(|n| i16::try_from(n).ok())),
        Col::Int4 => build!(Int32Builder::new(), |c| int(c)
            .and_then(|n| i32::try_from(n).ok())),
        Col::Int8 => build!(Int64Builder::new(), int),
        Col::Float4 => build!(Float32Builder::new(), |c| int(c).map(|n| n as f32)),
        Col::Int2List | Col::Int2Vector => list!(Int16Builder::new(), |c| int(c)
            .and_then(|n| i16::try_from(n).ok())),
        Col::OidList | Col::OidVector => list!(UInt32Builder::new(), |c| int(c)
            .and_then(|n| u32::try_from(n).ok())),
        Col::TextList => list!(StringBuilder::new(), text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::UInt32Type;

    const DEF: Def = Def {
        name: "t",
        columns: &[
            ("oid", Col::Oid),
            ("name", Col::Text),
            ("keys", Col::Int2List),
        ],
    };

    #[test]
    fn cells_become_typed_columns_with_nulls() {
        let rows = vec![
            row![16384u32, "a", list([1i64, 2])],
            row![Cell::Null, Cell::Null, Cell::Null],
        ];
        let schema = DEF.schema();
        let arrays: Vec<ArrayRef> = DEF
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, c))| array(*c, rows.iter().map(|r| &r[i])))
            .collect();
        let batch = RecordBatch::try_new(schema, arrays).unwrap();
        let oids = batch.column(0).as_primitive::<UInt32Type>();
        assert_eq!(oids.value(0), 16384);
        assert!(oids.is_null(1));
        assert_eq!(batch.column(1).as_string::<i32>().value(0), "a");
        let keys = batch.column(2).as_list::<i32>();
        assert_eq!(keys.value(0).len(), 2);
        assert!(keys.is_null(1));
        assert!(DEF.table(rows).is_ok());
    }
}
