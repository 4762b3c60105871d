//! The configuration parameters a session knows (PostgreSQL's GUCs): their
//! defaults, how SET values are checked and spelled the way SHOW prints
//! them, and which ones are reported to the client in ParameterStatus.
//!
//! Only settings keyclaim can honour accept values PostgreSQL would format
//! differently: a client that asks for `DateStyle = German` or a non-UTC
//! `TimeZone` gets 0A000 rather than output it did not ask for.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use crate::catalog::naming::quote_ident;
use crate::error::{sqlstate, SqlError, SqlResult};

/// The server version clients see (ParameterStatus, SHOW, version checks).
/// What keyclaim reports as its PostgreSQL version unless configured
/// (`server.server_version`): the version its differential tests compare
/// with, and one pg_dump 15 and later accept.
pub const DEFAULT_SERVER_VERSION: &str = "15.18";

/// The reported version and its `server_version_num`, set once at startup.
static SERVER_VERSION: std::sync::OnceLock<(&'static str, &'static str)> =
    std::sync::OnceLock::new();

/// `15.18` as `server_version_num` (150018); None unless `major.minor`
/// with a major of 10 or later.
pub fn version_num(v: &str) -> Option<u32> {
    let (major, minor) = v.split_once('.')?;
    let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    (major >= 10 && minor < 10_000).then_some(major * 10_000 + minor)
}

/// Report `version` (checked by the config) from now on; the first call wins.
pub fn configure_server_version(version: &str) {
    let num = version_num(version).unwrap_or(150_018);
    let leaked: &'static str = Box::leak(version.to_owned().into_boxed_str());
    let num: &'static str = Box::leak(num.to_string().into_boxed_str());
    let _ = SERVER_VERSION.set((leaked, num));
}

/// The version keyclaim reports, and its number.
pub fn server_version() -> (&'static str, &'static str) {
    *SERVER_VERSION.get_or_init(|| (DEFAULT_SERVER_VERSION, "150018"))
}

/// How a setting's values are checked and canonicalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fixed by the server: SET answers 55P02.
    ReadOnly,
    /// Any text (application_name).
    Text,
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// A duration whose base unit is the millisecond (statement_timeout).
    Millis,
    /// One of `all` (lowercase, in PostgreSQL's order for the hint); those
    /// not in `supported` are valid in PostgreSQL but not something keyclaim
    /// can do (0A000).
    Choice {
        all: &'static [&'static str],
        supported: &'static [&'static str],
    },
    /// A Boolean keyclaim only supports one value of.
    FixedBool(bool),
    DateStyle,
    TimeZone,
    Encoding,
    /// A list of identifiers, quoted as PostgreSQL quotes them (search_path).
    IdentList,
    /// Per-transaction: shows the block's value, else that of `default`.
    Transaction {
        default: &'static str,
    },
}

/// One configuration parameter.
#[derive(Debug)]
pub struct Guc {
    /// The name as PostgreSQL spells it (SHOW's column label).
    pub name: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    /// Reported in ParameterStatus at startup and whenever it changes
    /// (PostgreSQL's GUC_REPORT set as of 16).
    pub report: bool,
    pub description: &'static str,
}

const ISOLATION: Kind = Kind::Choice {
    all: &[
        "serializable",
        "repeatable read",
        "read committed",
        "read uncommitted",
    ],
    supported: &["read committed", "read uncommitted"],
};
/// keyclaim has no interval type, so every style prints the same.
const INTERVAL_STYLES: &[&str] = &["postgres", "postgres_verbose", "sql_standard", "iso_8601"];
const MESSAGE_LEVELS: &[&str] = &[
    "debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error",
];

/// Sorted by lowercase name (SHOW ALL order).
pub static GUCS: &[Guc] = &[
    Guc {
        name: "application_name",
        default: "",
        kind: Kind::Text,
        report: true,
        description: "Sets the application name to be reported in statistics and logs.",
    },
    Guc {
        name: "bytea_output",
        default: "hex",
        kind: Kind::Choice {
            all: &["escape", "hex"],
            supported: &["hex"],
        },
        report: false,
        description: "Sets the output format for bytea.",
    },
    Guc {
        name: "check_function_bodies",
        default: "on",
        kind: Kind::Bool,
        report: false,
        description: "Check routine bodies during CREATE FUNCTION and CREATE PROCEDURE.",
    },
    Guc {
        name: "client_encoding",
        default: "UTF8",
        kind: Kind::Encoding,
        report: true,
        description: "Sets the client's character set encoding.",
    },
    Guc {
        name: "client_min_messages",
        default: "notice",
        kind: Kind::Choice {
            all: MESSAGE_LEVELS,
            supported: MESSAGE_LEVELS,
        },
        report: false,
        description: "Sets the message levels that are sent to the client.",
    },
    Guc {
        name: "DateStyle",
        default: "ISO, MDY",
        kind: Kind::DateStyle,
        report: true,
        description: "Sets the display format for date and time values.",
    },
    Guc {
        name: "default_table_access_method",
        default: "heap",
        kind: Kind::Choice {
            all: &["heap"],
            supported: &["heap"],
        },
        report: false,
        description: "Sets the default table access method for new tables.",
    },
    Guc {
        name: "default_tablespace",
        default: "",
        kind: Kind::Choice {
            all: &[""],
            supported: &[""],
        },
        report: false,
        description: "Sets the default tablespace to create tables and indexes in.",
    },
    Guc {
        name: "default_transaction_isolation",
        default: "read committed",
        kind: ISOLATION,
        report: false,
        description: "Sets the transaction isolation level of each new transaction.",
    },
    Guc {
        name: "default_transaction_read_only",
        default: "off",
        kind: Kind::Bool,
        report: true,
        description: "Sets the default read-only status of new transactions.",
    },
    Guc {
        name: "extra_float_digits",
        default: "1",
        kind: Kind::Int { min: -15, max: 3 },
        report: false,
        description: "Sets the number of digits displayed for floating-point values.",
    },
    Guc {
        name: "idle_in_transaction_session_timeout",
        default: "0",
        kind: Kind::Millis,
        report: false,
        description: "Sets the maximum allowed idle time between queries, when in a transaction.",
    },
    Guc {
        name: "idle_session_timeout",
        default: "0",
        kind: Kind::Millis,
        report: false,
        description: "Sets the maximum allowed idle time between queries, when not in a transaction.",
    },
    Guc {
        name: "in_hot_standby",
        default: "off",
        kind: Kind::ReadOnly,
        report: true,
        description: "Shows whether hot standby is currently active.",
    },
    Guc {
        name: "integer_datetimes",
        default: "on",
        kind: Kind::ReadOnly,
        report: true,
        description: "Shows whether datetimes are integer based.",
    },
    Guc {
        name: "IntervalStyle",
        default: "postgres",
        kind: Kind::Choice {
            all: INTERVAL_STYLES,
            supported: INTERVAL_STYLES,
        },
        report: true,
        description: "Sets the display format for interval values.",
    },
    Guc {
        name: "is_superuser",
        default: "on",
        kind: Kind::ReadOnly,
        report: true,
        description: "Shows whether the current user is a superuser.",
    },
    Guc {
        name: "jit",
        default: "off",
        kind: Kind::Bool,
        report: false,
        description: "Allow JIT compilation.",
    },
    Guc {
        name: "lock_timeout",
        default: "0",
        kind: Kind::Millis,
        report: false,
        description: "Sets the maximum allowed duration of any wait for a lock.",
    },
    Guc {
        name: "max_identifier_length",
        default: "63",
        kind: Kind::ReadOnly,
        report: false,
        description: "Shows the maximum identifier length.",
    },
    Guc {
        name: "row_security",
        default: "on",
        kind: Kind::Bool,
        report: false,
        description: "Enable row security.",
    },
    Guc {
        name: "scram_iterations",
        default: "4096",
        kind: Kind::Int {
            min: 1,
            max: i32::MAX as i64,
        },
        report: true,
        description: "Sets the iteration count for SCRAM secret generation.",
    },
    Guc {
        name: "search_path",
        default: "\"$user\", public",
        kind: Kind::IdentList,
        report: false,
        description: "Sets the schema search order for names that are not schema-qualified.",
    },
    Guc {
        name: "server_encoding",
        default: "UTF8",
        kind: Kind::ReadOnly,
        report: true,
        description: "Shows the server (database) character set encoding.",
    },
    Guc {
        name: "server_version",
        default: DEFAULT_SERVER_VERSION,
        kind: Kind::ReadOnly,
        report: true,
        description: "Shows the server version.",
    },
    Guc {
        name: "server_version_num",
        default: "150018",
        kind: Kind::ReadOnly,
        report: false,
        description: "Shows the server version as an integer.",
    },
    Guc {
        name: "session_authorization",
        default: "",
        kind: Kind::ReadOnly,
        report: true,
        description: "Sets the session user name.",
    },
    Guc {
        name: "standard_conforming_strings",
        default: "on",
        kind: Kind::FixedBool(true),
        report: true,
        description: "Causes '...' strings to treat backslashes literally.",
    },
    Guc {
        name: "statement_timeout",
        default: "0",
        kind: Kind::Millis,
        report: false,
        description: "Sets the maximum allowed duration of any statement.",
    },
    Guc {
        name: "TimeZone",
        default: "UTC",
        kind: Kind::TimeZone,
        report: true,
        description: "Sets the time zone for displaying and interpreting time stamps.",
    },
    Guc {
        name: "transaction_deferrable",
        default: "off",
        kind: Kind::Transaction {
            default: "default_transaction_deferrable",
        },
        report: false,
        description: "Whether to defer a read-only serializable transaction until it can be executed with no possible serialization failures.",
    },
    Guc {
        name: "transaction_isolation",
        default: "read committed",
        kind: Kind::Transaction {
            default: "default_transaction_isolation",
        },
        report: false,
        description: "Sets the current transaction's isolation level.",
    },
    Guc {
        name: "transaction_read_only",
        default: "off",
        kind: Kind::Transaction {
            default: "default_transaction_read_only",
        },
        report: false,
        description: "Sets the current transaction's read-only status.",
    },
    Guc {
        name: "xmloption",
        default: "content",
        kind: Kind::Choice {
            all: &["content", "document"],
            supported: &["content", "document"],
        },
        report: false,
        description: "Sets whether XML data in implicit parsing and serialization operations is to be considered as documents or content fragments.",
    },
];

/// `default_transaction_deferrable` is only a default of a Transaction
/// setting; it has no row of its own in keyclaim's table above, so look-ups
/// fall back to this one.
static DEFERRABLE_DEFAULT: Guc = Guc {
    name: "default_transaction_deferrable",
    default: "off",
    kind: Kind::Bool,
    report: false,
    description: "Sets the default deferrable status of new transactions.",
};

/// The setting named `name` (case-insensitive), if keyclaim knows it.
/// Looked up several times per statement (statement_timeout, the read-only
/// check), so by hash rather than by comparing every name.
pub fn lookup(name: &str) -> Option<&'static Guc> {
    static BY_NAME: LazyLock<HashMap<String, &'static Guc>> = LazyLock::new(|| {
        GUCS.iter()
            .chain(std::iter::once(&DEFERRABLE_DEFAULT))
            .map(|g| (g.name.to_ascii_lowercase(), g))
            .collect()
    });
    BY_NAME.get(folded(name).as_ref()).copied()
}

/// `name` in lower case, copied only if it has upper-case letters (names
/// in keyclaim's own code are lower case already).
pub fn folded(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Every setting with a session-level value (Transaction ones derive theirs).
pub fn stored() -> impl Iterator<Item = &'static Guc> {
    GUCS.iter()
        .chain(std::iter::once(&DEFERRABLE_DEFAULT))
        .filter(|g| !matches!(g.kind, Kind::Transaction { .. }))
}

/// A custom ("placeholder") name such as `my.setting`: PostgreSQL accepts
/// any two-part name and stores its value as text.
pub fn is_custom(name: &str) -> bool {
    name.contains('.')
}

pub fn unrecognized(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::UNRECOGNIZED_PARAMETER,
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

pub fn read_only(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::CANT_CHANGE_RUNTIME_PARAM,
        format!("parameter \"{name}\" cannot be changed"),
    )
}

fn invalid_value(name: &str, value: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
}

fn unsupported(name: &str, value: &str, supported: &str) -> SqlError {
    SqlError::unsupported(
        format!("keyclaim does not support {name} = '{value}'"),
        format!("keyclaim supports {name} = {supported}"),
    )
}

pub fn one_argument(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("SET {name} takes only one argument"),
    )
}

impl Guc {
    /// The built-in value; the version settings report what the config set.
    pub fn default_value(&self) -> &'static str {
        match self.name {
            "server_version" => server_version().0,
            "server_version_num" => server_version().1,
            _ => self.default,
        }
    }

    /// Whether `SET name = a, b` is a list rather than an error.
    pub fn takes_list(&self) -> bool {
        matches!(self.kind, Kind::IdentList | Kind::DateStyle)
    }

    /// Checks the value(s) of `SET name = v1, v2` and returns the value as
    /// SHOW prints it.
    pub fn canonical(&self, values: &[String]) -> SqlResult<String> {
        let single = || -> SqlResult<&str> {
            match values {
                [one] => Ok(one.as_str()),
                _ => Err(one_argument(self.name)),
            }
        };
        match self.kind {
            Kind::ReadOnly => Err(read_only(self.name)),
            Kind::Text => Ok(single()?.to_owned()),
            Kind::Bool => self.boolean(single()?).map(on_off),
            Kind::FixedBool(only) => {
                let raw = single()?;
                if self.boolean(raw)? == only {
                    Ok(on_off(only))
                } else {
                    Err(unsupported(self.name, raw, &on_off(only)))
                }
            }
            Kind::Int { min, max } => {
                let raw = single()?;
                let n: i64 = raw
                    .trim()
                    .parse()
                    .map_err(|_| invalid_value(self.name, raw))?;
                if n < min || n > max {
                    return Err(out_of_range(self.name, &n.to_string(), min, max));
                }
                Ok(n.to_string())
            }
            Kind::Millis => {
                let ms = parse_millis(self.name, single()?)?;
                Ok(format_millis(ms))
            }
            Kind::Choice { all, supported } => {
                let raw = single()?;
                let lower = raw.trim().to_ascii_lowercase();
                if let Some(v) = supported.iter().find(|v| **v == lower) {
                    Ok((*v).to_owned())
                } else if all.contains(&lower.as_str()) {
                    Err(unsupported(self.name, raw, &supported.join(" or ")))
                } else {
                    Err(invalid_value(self.name, raw)
                        .with_hint(format!("Available values: {}.", all.join(", "))))
                }
            }
            Kind::DateStyle => date_style(values),
            Kind::TimeZone => time_zone(single()?),
            Kind::Encoding => {
                let raw = single()?;
                match raw.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
                    "utf8" | "unicode" => Ok("UTF8".into()),
                    _ => Err(unsupported(self.name, raw, "'UTF8'")),
                }
            }
            Kind::IdentList => Ok(values
                .iter()
                .map(|v| quote_ident(v))
                .collect::<Vec<_>>()
                .join(", ")),
            Kind::Transaction { default } => {
                let default = lookup(default).expect("transaction settings have defaults");
                default.canonical(values)
            }
        }
    }
}

impl Guc {
    fn boolean(&self, raw: &str) -> SqlResult<bool> {
        parse_bool(raw).ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("parameter \"{}\" requires a Boolean value", self.name),
            )
        })
    }
}

fn out_of_range(name: &str, value: &str, min: i64, max: i64) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("{value} is outside the valid range for parameter \"{name}\" ({min} .. {max})"),
    )
}

/// PostgreSQL's parse_bool: on/off, true/false, yes/no, 1/0 and prefixes.
pub fn parse_bool(s: &str) -> Option<bool> {
    let s = s.trim().to_ascii_lowercase();
    let matches = |word: &str, min: usize| s.len() >= min && word.starts_with(s.as_str());
    if matches("true", 1) || matches("yes", 1) || s == "on" || s == "1" {
        Some(true)
    } else if matches("false", 1) || matches("no", 1) || matches("off", 2) || s == "0" {
        Some(false)
    } else {
        None
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

const UNITS_MS: &[(&str, f64)] = &[
    ("us", 0.001),
    ("ms", 1.0),
    ("s", 1000.0),
    ("min", 60_000.0),
    ("h", 3_600_000.0),
    ("d", 86_400_000.0),
];

/// A duration setting in milliseconds, as PostgreSQL parses it: a number
/// (fractions allowed) with an optional unit, rounded half to even.
pub fn parse_millis(name: &str, raw: &str) -> SqlResult<i64> {
    let s = raw.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (number, unit) = (s[..split].trim(), s[split..].trim());
    let number: f64 = number.parse().map_err(|_| invalid_value(name, raw))?;
    let factor = match unit {
        "" => 1.0,
        u => UNITS_MS
            .iter()
            .find(|(name, _)| *name == u)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                invalid_value(name, raw).with_hint(
                    "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
                )
            })?,
    };
    let ms = (number * factor).round_ties_even();
    if ms > i32::MAX as f64 {
        return Err(invalid_value(name, raw).with_hint("Value exceeds integer range."));
    }
    if ms < 0.0 {
        return Err(out_of_range(
            name,
            &format!("{} ms", ms as i64),
            0,
            i32::MAX as i64,
        ));
    }
    Ok(ms as i64)
}

/// As SHOW prints a duration: in the largest unit that divides it.
pub fn format_millis(ms: i64) -> String {
    if ms == 0 {
        return "0".into();
    }
    for (unit, factor) in UNITS_MS.iter().rev() {
        let factor = *factor as i64;
        if factor >= 1 && ms % factor == 0 {
            return format!("{}{unit}", ms / factor);
        }
    }
    format!("{ms}ms")
}

/// DateStyle: keyclaim prints dates in ISO style only, so any order (MDY,
/// DMY, YMD) is accepted with ISO, and other output styles are 0A000.
fn date_style(values: &[String]) -> SqlResult<String> {
    let mut style: Option<&str> = None;
    let mut order: Option<&str> = None;
    let joined = values.join(", ");
    for word in values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|w| w.trim().to_ascii_lowercase())
    {
        match word.as_str() {
            "iso" => style = Some("ISO"),
            "sql" | "postgres" | "german" => {
                return Err(unsupported(
                    "DateStyle",
                    &joined,
                    "'ISO' (with MDY, DMY or YMD)",
                ))
            }
            "mdy" | "us" | "noneuropean" => order = Some("MDY"),
            "dmy" | "euro" | "european" => order = Some("DMY"),
            "ymd" => order = Some("YMD"),
            "default" => {}
            _ => return Err(invalid_value("DateStyle", &joined)),
        }
    }
    Ok(format!(
        "{}, {}",
        style.unwrap_or("ISO"),
        order.unwrap_or("MDY")
    ))
}

/// Spellings of UTC PostgreSQL's tz database accepts, as SHOW prints them.
pub(crate) const UTC_NAMES: &[&str] = &[
    "UTC",
    "Etc/UTC",
    "GMT",
    "Etc/GMT",
    "UCT",
    "Etc/UCT",
    "Universal",
    "Etc/Universal",
    "Zulu",
    "Etc/Zulu",
    "Greenwich",
    "Etc/Greenwich",
    // `SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE` (`sql::time_zone`).
    "<+00>-00",
];

/// keyclaim stores and prints timestamptz in UTC, so only UTC is accepted.
fn time_zone(raw: &str) -> SqlResult<String> {
    match UTC_NAMES
        .iter()
        .find(|n| n.eq_ignore_ascii_case(raw.trim()))
    {
        Some(name) => Ok((*name).to_owned()),
        None => Err(unsupported("TimeZone", raw, "'UTC'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, values: &[&str]) -> SqlResult<String> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        lookup(name).unwrap().canonical(&values)
    }

    #[test]
    fn table_is_sorted_for_show_all() {
        let names: Vec<String> = GUCS.iter().map(|g| g.name.to_ascii_lowercase()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    #[test]
    fn defaults_are_canonical() {
        for g in GUCS {
            if matches!(g.kind, Kind::ReadOnly) || g.default.is_empty() {
                continue;
            }
            let values = match g.kind {
                Kind::IdentList => vec!["$user".to_owned(), "public".to_owned()],
                _ => vec![g.default.to_owned()],
            };
            assert_eq!(g.canonical(&values).unwrap(), g.default, "{}", g.name);
        }
    }

    #[test]
    fn durations_as_postgres_prints_them() {
        let cases = [
            ("1000ms", "1s"),
            ("60000", "1min"),
            ("1.5s", "1500ms"),
            ("100", "100ms"),
            ("100.4", "100ms"),
            (" 10 s ", "10s"),
            ("5 min", "5min"),
            ("1h", "1h"),
            ("86400000", "1d"),
            ("1us", "0"),
            ("1500us", "2ms"),
        ];
        for (input, shown) in cases {
            assert_eq!(
                set("statement_timeout", &[input]).unwrap(),
                shown,
                "{input}"
            );
        }
    }

    #[test]
    fn duration_errors_match_postgres() {
        let e = set("statement_timeout", &["abc"]).unwrap_err();
        assert_eq!(e.code, "22023");
        assert_eq!(
            e.message,
            "invalid value for parameter \"statement_timeout\": \"abc\""
        );
        let e = set("statement_timeout", &["-1"]).unwrap_err();
        assert_eq!(
            e.message,
            "-1 ms is outside the valid range for parameter \"statement_timeout\" (0 .. 2147483647)"
        );
        let e = set("statement_timeout", &["10 sec"]).unwrap_err();
        assert!(e.hint.unwrap().starts_with("Valid units"));
        let e = set("statement_timeout", &["2147483648"]).unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("Value exceeds integer range."));
    }

    #[test]
    fn values_as_postgres_canonicalises_them() {
        assert_eq!(
            set("search_path", &["a", "B", "c", "$user"]).unwrap(),
            "a, \"B\", c, \"$user\""
        );
        assert_eq!(set("search_path", &["a,b"]).unwrap(), "\"a,b\"");
        assert_eq!(set("DateStyle", &["iso"]).unwrap(), "ISO, MDY");
        assert_eq!(set("datestyle", &["dmy, iso"]).unwrap(), "ISO, DMY");
        assert_eq!(set("DateStyle", &["ISO", "euro"]).unwrap(), "ISO, DMY");
        assert_eq!(set("client_encoding", &["utf-8"]).unwrap(), "UTF8");
        assert_eq!(set("TimeZone", &["utc"]).unwrap(), "UTC");
        assert_eq!(set("timezone", &["etc/utc"]).unwrap(), "Etc/UTC");
        assert_eq!(set("standard_conforming_strings", &["yes"]).unwrap(), "on");
        assert_eq!(set("row_security", &["of"]).unwrap(), "off");
        assert_eq!(set("row_security", &["o"]).unwrap_err().code, "22023");
        assert_eq!(set("jit", &["0"]).unwrap(), "off");
    }

    #[test]
    fn errors_match_postgres() {
        let e = set("extra_float_digits", &["5"]).unwrap_err();
        assert_eq!(
            e.message,
            "5 is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"
        );
        let e = set("bytea_output", &["x"]).unwrap_err();
        assert_eq!(
            e.message,
            "invalid value for parameter \"bytea_output\": \"x\""
        );
        assert_eq!(e.hint.as_deref(), Some("Available values: escape, hex."));
        let e = set("row_security", &["maybe"]).unwrap_err();
        assert_eq!(
            e.message,
            "parameter \"row_security\" requires a Boolean value"
        );
        let e = set("application_name", &["a", "b"]).unwrap_err();
        assert_eq!(e.message, "SET application_name takes only one argument");
        let e = set("server_version", &["1"]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("55P02", "parameter \"server_version\" cannot be changed")
        );
    }

    #[test]
    fn what_keyclaim_cannot_do_is_0a000() {
        for (name, value) in [
            ("DateStyle", "German"),
            ("TimeZone", "Europe/Berlin"),
            ("client_encoding", "LATIN1"),
            ("bytea_output", "escape"),
            ("standard_conforming_strings", "off"),
            ("default_transaction_isolation", "serializable"),
        ] {
            assert_eq!(set(name, &[value]).unwrap_err().code, "0A000", "{name}");
        }
    }
}
