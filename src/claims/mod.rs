//! claims
