//! Values on the wire: result descriptions with real type OIDs, DataRow
//! bytes in the format each column was asked for, and Bind parameters
//! decoded in the format the client sent them.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use futures::StreamExt;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::results::{FieldFormat, FieldInfo, SendableRowStream};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};

use crate::engine::{Column, Prepared, RowStream};
use crate::error::{sqlstate, SqlError, SqlResult};
use crate::types::{SqlType, Value};

/// pg_type.typlen, which RowDescription carries: the fixed width, or -1.
fn type_size(ty: &SqlType) -> i16 {
    match ty {
        SqlType::Bool => 1,
        SqlType::Int2 => 2,
        SqlType::Int4 | SqlType::Float4 | SqlType::Date | SqlType::Oid => 4,
        SqlType::Int8 | SqlType::Float8 | SqlType::Timestamp | SqlType::TimestampTz => 8,
        SqlType::Uuid => 16,
        SqlType::Numeric(_)
        | SqlType::Text
        | SqlType::Varchar(_)
        | SqlType::Char(_)
        | SqlType::Bytea
        | SqlType::Json
        | SqlType::Jsonb
        | SqlType::Array(_) => -1,
        SqlType::Void => 4,
    }
}

/// The format of each result column from Bind's result format codes.
pub(crate) fn result_formats(format: &Format, columns: usize) -> SqlResult<Arc<[FieldFormat]>> {
    match format {
        Format::UnifiedText => Ok(std::iter::repeat_n(FieldFormat::Text, columns).collect()),
        Format::UnifiedBinary => Ok(std::iter::repeat_n(FieldFormat::Binary, columns).collect()),
        Format::Individual(codes) if codes.len() == columns => {
            Ok(codes.iter().map(|c| FieldFormat::from(*c)).collect())
        }
        Format::Individual(codes) => Err(SqlError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message has {} result formats but query has {columns} columns",
                codes.len()
            ),
        )),
    }
}

/// A result's columns in the formats the client asked for: what its
/// RowDescription says. The columns are the prepared statement's own, so
/// describing a result copies nothing until a RowDescription is sent (an
/// Execute sends none).
pub(crate) struct Described {
    pub columns: Arc<Vec<Column>>,
    pub formats: Arc<[FieldFormat]>,
}

impl Described {
    pub(crate) fn new(columns: Arc<Vec<Column>>, format: &Format) -> SqlResult<Described> {
        let formats = result_formats(format, columns.len())?;
        Ok(Described { columns, formats })
    }

    /// The RowDescription message.
    pub(crate) fn row_description(&self) -> RowDescription {
        RowDescription::new(self.each().collect())
    }

    /// The fields as pgwire's API takes them (Describe, QueryResponse).
    pub(crate) fn fields(&self) -> Vec<FieldInfo> {
        self.each().map(FieldInfo::from).collect()
    }

    /// Each field: name, the table column it is (or zeros), type.
    fn each(&self) -> impl Iterator<Item = FieldDescription> + '_ {
        self.columns.iter().zip(self.formats.iter()).map(|(c, f)| {
            let origin = c.origin.unwrap_or_default();
            FieldDescription::new(
                c.name.clone(),
                // The OID travels as the wire's Int32: its bits, whatever the sign.
                origin.table_oid as i32,
                origin.attnum,
                c.ty.pg_type().oid(),
                type_size(&c.ty),
                c.ty.type_modifier(),
                f.value(),
            )
        })
    }

    /// The engine's rows as DataRows, encoded as they stream.
    pub(crate) fn data_rows(&self, rows: RowStream) -> SendableRowStream {
        let columns = self.columns.clone();
        let formats = self.formats.clone();
        rows.map(move |row| {
            row.and_then(|values| data_row(&values, &columns, &formats))
                .map_err(super::errors::to_pgwire)
        })
        .boxed()
    }
}

/// One DataRow, each value in its column's format.
pub(crate) fn data_row(
    values: &[Value],
    columns: &[Column],
    formats: &[FieldFormat],
) -> SqlResult<DataRow> {
    if values.len() != columns.len() {
        return Err(SqlError::internal(format!(
            "row has {} values for {} columns",
            values.len(),
            columns.len()
        )));
    }
    let mut buf = BytesMut::with_capacity(16 * values.len());
    for ((value, column), format) in values.iter().zip(columns).zip(formats) {
        let at = buf.len();
        buf.put_i32(-1);
        let present = match format {
            FieldFormat::Text => match value.to_text() {
                Some(text) => {
                    buf.put_slice(text.as_bytes());
                    true
                }
                None => false,
            },
            FieldFormat::Binary => value.encode_binary(&column.ty, &mut buf)?,
        };
        if present {
            let len = (buf.len() - at - 4) as i32;
            buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        } else {
            buf.truncate(at + 4);
        }
    }
    Ok(DataRow::new(buf, values.len() as i16))
}

/// Bind's parameters as values. A parameter the client declared a type for
/// in Parse is decoded as that type (its bytes are in that type's format);
/// the others as the type the engine inferred.
pub(crate) fn parameters(portal: &Portal<Prepared>) -> SqlResult<Vec<Value>> {
    let stored = &portal.statement;
    let inferred = &stored.statement.param_types;
    let given = portal.parameters.len();
    if given != inferred.len() {
        let name = if stored.id == pgwire::api::DEFAULT_NAME {
            ""
        } else {
            &stored.id
        };
        return Err(SqlError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {given} parameters, but prepared statement \"{name}\" requires {}",
                inferred.len()
            ),
        ));
    }
    if let Format::Individual(codes) = &portal.parameter_format {
        if codes.len() != given {
            return Err(SqlError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} parameter formats but {given} parameters",
                    codes.len()
                ),
            ));
        }
    }
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let Some(bytes) = bytes else {
                return Ok(Value::Null);
            };
            let declared = stored
                .parameter_types
                .get(i)
                .and_then(|t| t.as_ref())
                .and_then(SqlType::from_pg_type);
            let ty = declared.as_ref().unwrap_or(&inferred[i]);
            if portal.parameter_format.is_binary(i) {
                Value::decode_binary(ty, bytes)
            } else {
                Value::parse_text(ty, super::utf8::check(bytes)?)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_formats_follow_bind() {
        assert_eq!(
            *result_formats(&Format::UnifiedBinary, 2).unwrap(),
            [FieldFormat::Binary, FieldFormat::Binary]
        );
        assert_eq!(
            *result_formats(&Format::Individual(vec![0, 1]), 2).unwrap(),
            [FieldFormat::Text, FieldFormat::Binary]
        );
        let e = result_formats(&Format::Individual(vec![0, 1, 1]), 2).unwrap_err();
        assert_eq!(e.code, "08P01");
        assert_eq!(
            e.message,
            "bind message has 3 result formats but query has 2 columns"
        );
    }

    #[test]
    fn nulls_are_minus_one_without_bytes() {
        let columns = vec![Column::computed("a", SqlType::Text)];
        let row = data_row(&[Value::Null], &columns, &[FieldFormat::Text]).unwrap();
        assert_eq!(row.field_count, 1);
        assert_eq!(&row.data[..], &(-1i32).to_be_bytes());
    }
}
