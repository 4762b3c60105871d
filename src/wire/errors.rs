//! The one place where errors become ErrorResponses (and notices
//! NoticeResponses), including pgwire's own errors, which are reworded to
//! the text and SQLSTATE PostgreSQL uses so clients can match on them.

use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, SEVERITY_ERROR, SEVERITY_FATAL};
use pgwire::messages::response::NoticeResponse;

use crate::engine::Notice;
use crate::error::SqlError;

/// The ErrorResponse fields of a statement error.
pub(crate) fn error_info(e: &SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new(SEVERITY_ERROR.into(), e.code.into(), e.message.clone());
    info.severity_nonlocalized = Some(SEVERITY_ERROR.into());
    info.detail = e.detail.clone();
    info.hint = e.hint.clone();
    info.schema = e.schema.clone();
    info.table = e.table.clone();
    info.column = e.column.clone();
    info.constraint = e.constraint.clone();
    info.datatype = e.datatype.clone();
    info.position = e.position.map(|p| p.to_string());
    info.where_context = e.context.clone();
    info
}

pub(crate) fn to_pgwire(e: SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(&e)))
}

impl From<SqlError> for PgWireError {
    fn from(e: SqlError) -> PgWireError {
        to_pgwire(e)
    }
}

/// An error that ends the connection, as PostgreSQL's FATAL.
pub(crate) fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    let mut info = ErrorInfo::new(SEVERITY_FATAL.into(), code.into(), message.into());
    info.severity_nonlocalized = Some(SEVERITY_FATAL.into());
    PgWireError::UserError(Box::new(info))
}

pub(crate) fn notice(n: &Notice) -> NoticeResponse {
    let mut info = ErrorInfo::new(n.severity.into(), n.code.into(), n.message.clone());
    info.severity_nonlocalized = Some(n.severity.into());
    info.into()
}

/// pgwire's name for the unnamed statement or portal, shown as "" like PostgreSQL.
fn shown_name(name: &str) -> &str {
    if name == pgwire::api::DEFAULT_NAME {
        ""
    } else {
        name
    }
}

/// PostgreSQL's wording for the errors pgwire raises itself.
fn reworded<C: ClientInfo>(client: &C, error: &PgWireError) -> Option<PgWireError> {
    let user = || {
        client
            .metadata()
            .get(METADATA_USER)
            .cloned()
            .unwrap_or_default()
    };
    Some(match error {
        // SCRAM reports the (usually empty) name from its own exchange;
        // PostgreSQL names the startup user.
        PgWireError::InvalidPassword(_) => fatal(
            "28P01",
            format!("password authentication failed for user \"{}\"", user()),
        ),
        PgWireError::UserNameRequired => fatal(
            "28000",
            "no PostgreSQL user name specified in startup packet",
        ),
        PgWireError::StatementNotFound(name) => to_pgwire(SqlError::new(
            crate::error::sqlstate::UNDEFINED_PREPARED_STATEMENT,
            format!("prepared statement \"{}\" does not exist", shown_name(name)),
        )),
        PgWireError::PortalNotFound(name) => to_pgwire(SqlError::new(
            "34000",
            format!("portal \"{}\" does not exist", shown_name(name)),
        )),
        _ => return None,
    })
}

/// Rewords pgwire's errors and logs what ends a connection. Statement errors
/// are the client's business and only logged at debug.
pub(crate) fn on_error<C: ClientInfo>(client: &C, error: &mut PgWireError) {
    if let Some(better) = reworded(client, error) {
        *error = better;
    }
    let message = match &*error {
        PgWireError::UserError(info) => info.message.clone(),
        other => other.to_string(),
    };
    if error.is_fatal() {
        tracing::info!(code = error.code(), %message, "connection refused or ended");
    } else {
        tracing::debug!(code = error.code(), %message, "statement failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_reaches_the_error_response() {
        let e = SqlError::new(
            "23505",
            "duplicate key value violates unique constraint \"t_pkey\"",
        )
        .with_detail("Key (id)=(1) already exists.")
        .with_hint("h")
        .with_table("t")
        .with_column("id")
        .with_constraint("t_pkey");
        let info = error_info(&SqlError {
            datatype: Some("integer".into()),
            ..e
        });
        assert_eq!(info.severity, "ERROR");
        assert_eq!(info.code, "23505");
        assert_eq!(info.detail.as_deref(), Some("Key (id)=(1) already exists."));
        assert_eq!(info.hint.as_deref(), Some("h"));
        assert_eq!(info.schema.as_deref(), Some("public"));
        assert_eq!(info.table.as_deref(), Some("t"));
        assert_eq!(info.column.as_deref(), Some("id"));
        assert_eq!(info.constraint.as_deref(), Some("t_pkey"));
        assert_eq!(info.datatype.as_deref(), Some("integer"));
    }
}
