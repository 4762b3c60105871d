//! `SqlType` as DDL declares it: `from_ast` (sqlparser's DataType, with
//! PostgreSQL's typmod checks and its internal names such as `bpchar(n)`),
//! and the metadata the wire reports: type OIDs, names and typmods.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{NumericMod, SqlType};
use crate::error::{sqlstate, SqlError, SqlResult};

impl SqlType {
    /// From a sqlparser DataType; unsupported types answer 0A000 with a hint
    /// listing the supported ones.
    pub fn from_ast(dt: &sqlparser::ast::DataType) -> SqlResult<SqlType> {
        use sqlparser::ast::{self, DataType as D, TimezoneInfo};
        let ty = match dt {
            D::SmallInt(None) | D::Int2(None) => SqlType::Int2,
            D::Int(None) | D::Integer(None) | D::Int4(None) => SqlType::Int4,
            D::BigInt(None) | D::Int8(None) => SqlType::Int8,
            D::SmallInt(Some(_)) | D::Int(Some(_)) | D::Integer(Some(_)) | D::BigInt(Some(_)) => {
                return Err(SqlError::syntax("syntax error at or near \"(\""));
            }
            D::Int2(Some(_)) => return Err(no_typmod("int2")),
            D::Int4(Some(_)) => return Err(no_typmod("int4")),
            D::Int8(Some(_)) => return Err(no_typmod("int8")),
            D::Bool | D::Boolean => SqlType::Bool,
            D::Text => SqlType::Text,
            D::Varchar(len) | D::CharacterVarying(len) | D::CharVarying(len) => {
                SqlType::Varchar(ast_char_length(dt, len, "varchar")?)
            }
            D::Char(len) | D::Character(len) => SqlType::Char(ast_char_length(dt, len, "char")?),
            D::Uuid => SqlType::Uuid,
            D::Date => SqlType::Date,
            // The precision of timestamp(p) is accepted and ignored: values keep microseconds.
            D::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
                SqlType::Timestamp
            }
            D::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => SqlType::TimestampTz,
            D::Real | D::Float4 => SqlType::Float4,
            D::DoublePrecision | D::Float8 => SqlType::Float8,
            D::Float(info) => float_precision(info)?,
            D::Numeric(info) | D::Decimal(info) | D::Dec(info) => {
                SqlType::Numeric(ast_numeric_mod(info)?)
            }
            D::Bytea => SqlType::Bytea,
            D::JSON => SqlType::Json,
            D::JSONB => SqlType::Jsonb,
            D::Custom(name, modifiers) => custom_type(dt, name, modifiers)?,
            // `int[]`, `int[3]`, `int ARRAY`: the size is ignored, as in
            // PostgreSQL.
            D::Array(
                ast::ArrayElemTypeDef::SquareBracket(elem, _)
                | ast::ArrayElemTypeDef::Qualified(elem, _),
            ) => SqlType::array_of(SqlType::from_ast(elem)?),
            _ => return Err(unsupported_type(&dt.to_string())),
        };
        Ok(ty)
    }

    /// The PostgreSQL type (OID) for RowDescription / ParameterDescription.
    pub fn pg_type(&self) -> postgres_types::Type {
        use postgres_types::Type;
        match self {
            SqlType::Bool => Type::BOOL,
            SqlType::Int2 => Type::INT2,
            SqlType::Int4 => Type::INT4,
            SqlType::Int8 => Type::INT8,
            SqlType::Float4 => Type::FLOAT4,
            SqlType::Float8 => Type::FLOAT8,
            SqlType::Numeric(_) => Type::NUMERIC,
            SqlType::Text => Type::TEXT,
            SqlType::Varchar(_) => Type::VARCHAR,
            SqlType::Char(_) => Type::BPCHAR,
            SqlType::Bytea => Type::BYTEA,
            SqlType::Uuid => Type::UUID,
            SqlType::Date => Type::DATE,
            SqlType::Timestamp => Type::TIMESTAMP,
            SqlType::TimestampTz => Type::TIMESTAMPTZ,
            SqlType::Json => Type::JSON,
            SqlType::Jsonb => Type::JSONB,
            SqlType::Void => Type::VOID,
            SqlType::Oid => Type::OID,
            SqlType::Array(elem) => super::array::array_pg_type(elem),
        }
    }

    /// From a client-sent parameter type OID (Parse message); None if not one of ours.
    pub fn from_pg_type(ty: &postgres_types::Type) -> Option<SqlType> {
        use postgres_types::Type;
        let t = match *ty {
            Type::BOOL => SqlType::Bool,
            Type::INT2 => SqlType::Int2,
            Type::INT4 => SqlType::Int4,
            Type::INT8 => SqlType::Int8,
            Type::FLOAT4 => SqlType::Float4,
            Type::FLOAT8 => SqlType::Float8,
            Type::NUMERIC => SqlType::Numeric(None),
            Type::TEXT => SqlType::Text,
            Type::VARCHAR => SqlType::Varchar(None),
            Type::BPCHAR => SqlType::Char(None),
            Type::BYTEA => SqlType::Bytea,
            Type::UUID => SqlType::Uuid,
            Type::DATE => SqlType::Date,
            Type::TIMESTAMP => SqlType::Timestamp,
            Type::TIMESTAMPTZ => SqlType::TimestampTz,
            Type::JSON => SqlType::Json,
            Type::JSONB => SqlType::Jsonb,
            _ => return super::array::from_array_pg_type(ty),
        };
        Some(t)
    }

    /// Name as PostgreSQL prints it in messages: "integer", "character varying", "timestamp without time zone", ...
    /// The type without its length or precision (`varchar(6)` is
    /// `varchar`, `numeric(6,2)` is `numeric`): what a literal or parameter
    /// compared with a column of this type is read as, since in PostgreSQL
    /// an expression's type carries no modifier (`name = 'longer than six'`
    /// is false, not an error; `n = 4.444` does not round to 4.44).
    pub fn without_modifier(&self) -> SqlType {
        match self {
            SqlType::Varchar(_) => SqlType::Varchar(None),
            SqlType::Numeric(_) => SqlType::Numeric(None),
            SqlType::Array(elem) => SqlType::Array(Box::new(elem.without_modifier())),
            other => other.clone(),
        }
    }

    pub fn pg_name(&self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int8 => "bigint",
            SqlType::Float4 => "real",
            SqlType::Float8 => "double precision",
            SqlType::Numeric(_) => "numeric",
            SqlType::Text => "text",
            SqlType::Varchar(_) => "character varying",
            SqlType::Char(_) => "character",
            SqlType::Bytea => "bytea",
            SqlType::Uuid => "uuid",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Json => "json",
            SqlType::Jsonb => "jsonb",
            SqlType::Void => "void",
            SqlType::Oid => "oid",
            SqlType::Array(elem) => super::array::array_pg_name(elem),
        }
    }

    /// pg_attribute.atttypmod for RowDescription (-1 when none).
    pub fn type_modifier(&self) -> i32 {
        match self {
            SqlType::Varchar(Some(n)) => (*n as i32).saturating_add(4),
            SqlType::Char(n) => (n.unwrap_or(1) as i32).saturating_add(4),
            SqlType::Numeric(Some(m)) => m.typmod(),
            // An array column's typmod is its element's.
            SqlType::Array(elem) => elem.type_modifier(),
            _ => -1,
        }
    }

    /// The type without a numeric typmod, as PostgreSQL's operators and
    /// functions take and return it: a literal compared with a
    /// `numeric(5,2)` column is a plain numeric, not rounded to 2 places.
    pub fn without_numeric_typmod(&self) -> SqlType {
        match self {
            SqlType::Numeric(_) => SqlType::Numeric(None),
            SqlType::Array(elem) => SqlType::array_of(elem.without_numeric_typmod()),
            other => other.clone(),
        }
    }
}

// The stored form (catalog definitions are JSON): serde's derived form,
// except that a numeric without a typmod stays the bare "Numeric" that
// builds before typmods wrote for every numeric column. Old catalogs read
// unchanged, and so do new ones without typmods, by older builds too.

impl Serialize for SqlType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SqlType::Numeric(None) => s.serialize_unit_variant("SqlType", 6, "Numeric"),
            other => SqlType::serialize(other, s),
        }
    }
}

impl<'de> Deserialize<'de> for SqlType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SqlType, D::Error> {
        #[derive(Deserialize)]
        enum Bare {
            Numeric,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Bare(Bare),
            Derived(#[serde(deserialize_with = "SqlType::deserialize")] SqlType),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Bare(Bare::Numeric) => SqlType::Numeric(None),
            Stored::Derived(ty) => ty,
        })
    }
}

const SUPPORTED_TYPES_HINT: &str = "supported types: smallint, integer, bigint, boolean, text, varchar(n), char(n), uuid, timestamp, timestamptz, date, real, double precision, numeric, bytea, json, jsonb";

/// PostgreSQL's MaxAttrSize-derived limit for varchar(n) / char(n).
const MAX_CHAR_LENGTH: u64 = 10_485_760;

fn unsupported_type(name: &str) -> SqlError {
    SqlError::unsupported(
        format!("type {name} is not supported"),
        SUPPORTED_TYPES_HINT,
    )
}

fn no_typmod(name: &str) -> SqlError {
    SqlError::syntax(format!("type modifier is not allowed for type \"{name}\""))
}

fn check_char_length(length: u64, pg_name: &str) -> SqlResult<u32> {
    if length < 1 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("length for type {pg_name} must be at least 1"),
        ));
    }
    if length > MAX_CHAR_LENGTH {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("length for type {pg_name} cannot exceed {MAX_CHAR_LENGTH}"),
        ));
    }
    Ok(length as u32)
}

fn ast_char_length(
    dt: &sqlparser::ast::DataType,
    len: &Option<sqlparser::ast::CharacterLength>,
    pg_name: &str,
) -> SqlResult<Option<u32>> {
    use sqlparser::ast::CharacterLength;
    match len {
        None => Ok(None),
        Some(CharacterLength::IntegerLength { length, unit: None }) => {
            check_char_length(*length, pg_name).map(Some)
        }
        Some(_) => Err(unsupported_type(&dt.to_string())),
    }
}

fn float_precision(info: &sqlparser::ast::ExactNumberInfo) -> SqlResult<SqlType> {
    use sqlparser::ast::ExactNumberInfo;
    match info {
        ExactNumberInfo::None => Ok(SqlType::Float8),
        ExactNumberInfo::Precision(p) => match *p {
            0 => Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "precision for type float must be at least 1 bit",
            )),
            1..=24 => Ok(SqlType::Float4),
            25..=53 => Ok(SqlType::Float8),
            _ => Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "precision for type float must be less than 54 bits",
            )),
        },
        ExactNumberInfo::PrecisionAndScale(..) => {
            Err(SqlError::syntax("syntax error at or near \",\""))
        }
    }
}

impl NumericMod {
    /// pg_attribute.atttypmod of `numeric(p, s)`: PostgreSQL 15 keeps the
    /// scale in the low 11 bits, so a negative one wraps.
    pub fn typmod(self) -> i32 {
        ((i32::from(self.precision) << 16) | (i32::from(self.scale) & 0x7ff)) + 4
    }

    /// The precision and scale a numeric typmod holds (None for -1).
    pub fn from_typmod(typmod: i32) -> Option<NumericMod> {
        let m = typmod.checked_sub(4).filter(|m| *m >= 0)?;
        Some(NumericMod {
            precision: ((m >> 16) & 0xffff) as u16,
            // Sign-extend the 11-bit scale, as numeric.c does.
            scale: (((m & 0x7ff) ^ 1024) - 1024) as i16,
        })
    }
}

/// The most fraction digits a keyclaim numeric holds (rust_decimal's),
/// so the most a column can be padded to.
const MAX_NUMERIC_SCALE: i64 = 28;

/// `numeric(p, s)` after PostgreSQL's typmod checks (22023), then
/// keyclaim's: a scale its values cannot be padded to is refused (0A000)
/// rather than shown with fewer digits.
fn numeric_mod(precision: i64, scale: i64) -> SqlResult<NumericMod> {
    if !(1..=1000).contains(&precision) {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("NUMERIC precision {precision} must be between 1 and 1000"),
        ));
    }
    if !(-1000..=1000).contains(&scale) {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("NUMERIC scale {scale} must be between -1000 and 1000"),
        ));
    }
    if scale > MAX_NUMERIC_SCALE {
        return Err(SqlError::unsupported(
            format!("NUMERIC scale {scale} is not supported"),
            "keyclaim stores numeric values with at most 28 digits after the decimal point",
        ));
    }
    Ok(NumericMod {
        precision: precision as u16,
        scale: scale as i16,
    })
}

fn ast_numeric_mod(info: &sqlparser::ast::ExactNumberInfo) -> SqlResult<Option<NumericMod>> {
    use sqlparser::ast::ExactNumberInfo;
    let precision = |p: &u64| i64::try_from(*p).unwrap_or(i64::MAX);
    match info {
        ExactNumberInfo::None => Ok(None),
        ExactNumberInfo::Precision(p) => numeric_mod(precision(p), 0).map(Some),
        ExactNumberInfo::PrecisionAndScale(p, s) => numeric_mod(precision(p), *s).map(Some),
    }
}

/// Types sqlparser does not know as keywords arrive as `Custom`: PostgreSQL's
/// internal names (`bpchar(n)`, `"int4"`, ...) and everything unsupported.
fn custom_type(
    dt: &sqlparser::ast::DataType,
    name: &sqlparser::ast::ObjectName,
    modifiers: &[String],
) -> SqlResult<SqlType> {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
        .collect();
    let base = match parts.as_slice() {
        [one] => one.as_str(),
        [schema, one] if schema == "pg_catalog" => one.as_str(),
        _ => return Err(unsupported_type(&dt.to_string())),
    };
    // PostgreSQL's internal array type names: `_int4` is `int4[]`.
    if let Some(elem) = base.strip_prefix('_') {
        let elem = custom_type(
            dt,
            &sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(elem)]),
            modifiers,
        )?;
        return Ok(SqlType::array_of(elem));
    }
    let mut mods = Vec::with_capacity(modifiers.len());
    for m in modifiers {
        match m.trim().parse::<i64>() {
            Ok(v) => mods.push(v),
            Err(_) => {
                return Err(SqlError::syntax(
                    "type modifiers must be simple constants or identifiers",
                ))
            }
        }
    }
    let plain = |ty: SqlType| {
        if mods.is_empty() {
            Ok(ty)
        } else {
            Err(no_typmod(base))
        }
    };
    let length = |pg_name: &str| -> SqlResult<Option<u32>> {
        match mods.as_slice() {
            [] => Ok(None),
            [n] => check_char_length(u64::try_from(*n).unwrap_or(0), pg_name).map(Some),
            _ => Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                format!("invalid type modifier for type {pg_name}"),
            )),
        }
    };
    match base {
        "int2" => plain(SqlType::Int2),
        "int4" => plain(SqlType::Int4),
        "int8" => plain(SqlType::Int8),
        "bool" => plain(SqlType::Bool),
        "float4" => plain(SqlType::Float4),
        "float8" => plain(SqlType::Float8),
        "text" => plain(SqlType::Text),
        "uuid" => plain(SqlType::Uuid),
        "date" => plain(SqlType::Date),
        "bytea" => plain(SqlType::Bytea),
        "json" => plain(SqlType::Json),
        "jsonb" => plain(SqlType::Jsonb),
        "timestamp" => Ok(SqlType::Timestamp),
        "timestamptz" => Ok(SqlType::TimestampTz),
        "varchar" => length("varchar").map(SqlType::Varchar),
        "bpchar" => match length("char")? {
            Some(n) => Ok(SqlType::Char(Some(n))),
            // PostgreSQL's bare bpchar is blank-trimmed text of any length,
            // which char(n) cannot represent.
            None => Err(unsupported_type("bpchar without a length")),
        },
        "numeric" | "decimal" => match mods.as_slice() {
            [] => Ok(SqlType::Numeric(None)),
            [p] => numeric_mod(*p, 0).map(|m| SqlType::Numeric(Some(m))),
            [p, s] => numeric_mod(*p, *s).map(|m| SqlType::Numeric(Some(m))),
            _ => Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "invalid NUMERIC type modifier",
            )),
        },
        _ => Err(unsupported_type(&dt.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use crate::types::test_util::{assert_error, from_ast_err, numeric, ty};
    use crate::types::SqlType;

    #[test]
    fn from_ast_supported_types() {
        let cases: &[(&str, SqlType)] = &[
            ("smallint", SqlType::Int2),
            ("int2", SqlType::Int2),
            ("integer", SqlType::Int4),
            ("int", SqlType::Int4),
            ("int4", SqlType::Int4),
            ("bigint", SqlType::Int8),
            ("int8", SqlType::Int8),
            ("boolean", SqlType::Bool),
            ("bool", SqlType::Bool),
            ("text", SqlType::Text),
            ("varchar", SqlType::Varchar(None)),
            ("varchar(10)", SqlType::Varchar(Some(10))),
            ("character varying(3)", SqlType::Varchar(Some(3))),
            ("char varying(3)", SqlType::Varchar(Some(3))),
            ("char", SqlType::Char(None)),
            ("character", SqlType::Char(None)),
            ("char(4)", SqlType::Char(Some(4))),
            ("character(4)", SqlType::Char(Some(4))),
            ("bpchar(4)", SqlType::Char(Some(4))),
            ("uuid", SqlType::Uuid),
            ("timestamp", SqlType::Timestamp),
            ("timestamp(3)", SqlType::Timestamp),
            ("timestamp without time zone", SqlType::Timestamp),
            ("timestamptz", SqlType::TimestampTz),
            ("timestamp with time zone", SqlType::TimestampTz),
            ("timestamp(0) with time zone", SqlType::TimestampTz),
            ("date", SqlType::Date),
            ("real", SqlType::Float4),
            ("float4", SqlType::Float4),
            ("float(24)", SqlType::Float4),
            ("float(1)", SqlType::Float4),
            ("double precision", SqlType::Float8),
            ("float8", SqlType::Float8),
            ("float", SqlType::Float8),
            ("float(25)", SqlType::Float8),
            ("float(53)", SqlType::Float8),
            ("numeric", SqlType::Numeric(None)),
            ("numeric(10)", numeric(10, 0)),
            ("numeric(10, 2)", numeric(10, 2)),
            ("numeric(5, -2)", numeric(5, -2)),
            ("numeric(2, 5)", numeric(2, 5)),
            ("decimal(10, 2)", numeric(10, 2)),
            ("pg_catalog.numeric(7, 3)", numeric(7, 3)),
            ("dec", SqlType::Numeric(None)),
            ("bytea", SqlType::Bytea),
            ("json", SqlType::Json),
            ("jsonb", SqlType::Jsonb),
            ("\"int4\"", SqlType::Int4),
            ("pg_catalog.int8", SqlType::Int8),
        ];
        for (sql, expected) in cases {
            assert_eq!(ty(sql), *expected, "{sql}");
        }
    }

    #[test]
    fn from_ast_rejections() {
        let hint = "supported types: smallint, integer, bigint, boolean, text, varchar(n), char(n), uuid, timestamp, timestamptz, date, real, double precision, numeric, bytea, json, jsonb";
        for sql in [
            "serial",
            "bigserial",
            "smallserial",
            "time",
            "interval",
            "money",
            "xml",
        ] {
            let e = from_ast_err(sql);
            assert_eq!(e.code, "0A000", "{sql}");
            assert!(
                e.message.starts_with("type ") && e.message.ends_with(" is not supported"),
                "{e:?}"
            );
            assert_eq!(e.hint.as_deref(), Some(hint), "{sql}");
        }
        assert_eq!(
            from_ast_err("serial").message,
            "type serial is not supported"
        );
        assert_eq!(
            from_ast_err("bpchar").message,
            "type bpchar without a length is not supported"
        );
        // PostgreSQL's own typmod errors.
        let cases: &[(&str, &str, &str)] = &[
            (
                "varchar(0)",
                "22023",
                "length for type varchar must be at least 1",
            ),
            (
                "varchar(10485761)",
                "22023",
                "length for type varchar cannot exceed 10485760",
            ),
            (
                "char(0)",
                "22023",
                "length for type char must be at least 1",
            ),
            (
                "float(0)",
                "22023",
                "precision for type float must be at least 1 bit",
            ),
            (
                "float(54)",
                "22023",
                "precision for type float must be less than 54 bits",
            ),
            (
                "numeric(0)",
                "22023",
                "NUMERIC precision 0 must be between 1 and 1000",
            ),
            (
                "numeric(1001)",
                "22023",
                "NUMERIC precision 1001 must be between 1 and 1000",
            ),
            (
                "numeric(5, 1001)",
                "22023",
                "NUMERIC scale 1001 must be between -1000 and 1000",
            ),
            (
                "numeric(5, -1001)",
                "22023",
                "NUMERIC scale -1001 must be between -1000 and 1000",
            ),
            // keyclaim's own limit: no value could be padded to the scale.
            (
                "numeric(40, 29)",
                "0A000",
                "NUMERIC scale 29 is not supported",
            ),
            ("int(11)", "42601", "syntax error at or near \"(\""),
            (
                "text(5)",
                "42601",
                "type modifier is not allowed for type \"text\"",
            ),
        ];
        for (sql, code, message) in cases {
            assert_error(&from_ast_err(sql), code, message);
        }
    }

    #[test]
    fn type_metadata() {
        use crate::types::NumericMod;
        use postgres_types::Type;
        let all = [
            (SqlType::Bool, Type::BOOL, "boolean"),
            (SqlType::Int2, Type::INT2, "smallint"),
            (SqlType::Int4, Type::INT4, "integer"),
            (SqlType::Int8, Type::INT8, "bigint"),
            (SqlType::Float4, Type::FLOAT4, "real"),
            (SqlType::Float8, Type::FLOAT8, "double precision"),
            (SqlType::Numeric(None), Type::NUMERIC, "numeric"),
            (SqlType::Text, Type::TEXT, "text"),
            (SqlType::Varchar(None), Type::VARCHAR, "character varying"),
            (SqlType::Char(None), Type::BPCHAR, "character"),
            (SqlType::Bytea, Type::BYTEA, "bytea"),
            (SqlType::Uuid, Type::UUID, "uuid"),
            (SqlType::Date, Type::DATE, "date"),
            (
                SqlType::Timestamp,
                Type::TIMESTAMP,
                "timestamp without time zone",
            ),
            (
                SqlType::TimestampTz,
                Type::TIMESTAMPTZ,
                "timestamp with time zone",
            ),
            (SqlType::Json, Type::JSON, "json"),
            (SqlType::Jsonb, Type::JSONB, "jsonb"),
        ];
        for (t, pg, name) in all {
            assert_eq!(t.pg_type(), pg);
            assert_eq!(SqlType::from_pg_type(&pg), Some(t.clone()));
            assert_eq!(t.pg_name(), name);
        }
        assert_eq!(SqlType::Varchar(Some(3)).pg_type(), Type::VARCHAR);
        assert_eq!(SqlType::Char(Some(3)).pg_type(), Type::BPCHAR);
        assert_eq!(SqlType::from_pg_type(&Type::UNKNOWN), None);
        // An oid is never a column's type, so neither is a parameter
        // declared oid taken as one.
        assert_eq!(SqlType::from_pg_type(&Type::OID), None);
        assert_eq!(SqlType::Oid.pg_type(), Type::OID);
        assert_eq!(SqlType::Oid.pg_name(), "oid");
        assert_eq!(SqlType::array_of(SqlType::Oid).pg_type(), Type::OID_ARRAY);
        assert_eq!(SqlType::from_pg_type(&Type::INTERVAL), None);
        // pg_attribute.atttypmod as PostgreSQL reports it.
        assert_eq!(SqlType::Varchar(Some(3)).type_modifier(), 7);
        assert_eq!(SqlType::Char(Some(4)).type_modifier(), 8);
        assert_eq!(SqlType::Char(None).type_modifier(), 5);
        assert_eq!(SqlType::Varchar(None).type_modifier(), -1);
        assert_eq!(SqlType::Numeric(None).type_modifier(), -1);
        // ((precision << 16) | scale) + 4, the scale in 11 bits.
        assert_eq!(numeric(5, 2).type_modifier(), 327_686);
        assert_eq!(numeric(3, 0).type_modifier(), 196_612);
        assert_eq!(numeric(4, -2).type_modifier(), 264_194);
        assert_eq!(numeric(1000, -1000).type_modifier(), 65_537_052);
        assert_eq!(SqlType::array_of(numeric(5, 2)).type_modifier(), 327_686);
        for t in [
            numeric(5, 2),
            numeric(4, -2),
            numeric(1000, -1000),
            numeric(1, 28),
        ] {
            let SqlType::Numeric(m) = t else {
                unreachable!()
            };
            assert_eq!(NumericMod::from_typmod(t.type_modifier()), m);
        }
        assert_eq!(NumericMod::from_typmod(-1), None);
        assert_eq!(SqlType::Int4.type_modifier(), -1);
    }

    #[test]
    fn stored_form_keeps_bare_numeric() {
        let json = |t: &SqlType| serde_json::to_string(t).unwrap();
        let back = |s: &str| serde_json::from_str::<SqlType>(s).unwrap();
        // What every catalog held before typmods were kept, and still
        // holds for a numeric without one.
        assert_eq!(json(&SqlType::Numeric(None)), r#""Numeric""#);
        assert_eq!(back(r#""Numeric""#), SqlType::Numeric(None));
        assert_eq!(
            back(r#"{"Array":"Numeric"}"#),
            SqlType::array_of(SqlType::Numeric(None))
        );
        assert_eq!(
            json(&numeric(5, -2)),
            r#"{"Numeric":{"precision":5,"scale":-2}}"#
        );
        for t in [
            SqlType::Numeric(None),
            numeric(5, 2),
            numeric(4, -2),
            SqlType::array_of(numeric(5, 2)),
            SqlType::array_of(SqlType::Numeric(None)),
            SqlType::Varchar(Some(3)),
            SqlType::Varchar(None),
            SqlType::Int4,
            SqlType::Jsonb,
        ] {
            assert_eq!(back(&json(&t)), t, "{}", json(&t));
        }
    }
}
