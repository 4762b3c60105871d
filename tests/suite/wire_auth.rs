//! Authentication as configured in `[auth]`, and the connection limit.

use crate::common;

use std::time::Duration;

use keyclaim::config::{AuthMethod, Config, UserConfig};
use tokio_postgres::error::SqlState;

fn with_users(method: AuthMethod) -> impl FnOnce(&mut Config) {
    move |c| {
        c.auth.method = method;
        c.auth.users = vec![UserConfig {
            name: "app".into(),
            password: "s3cret".into(),
        }];
    }
}

async fn login(
    server: &common::TestServer,
    user: &str,
    password: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mut config = server.client_config(user);
    config.password(password);
    server.connect_with(config).await
}

/// The FATAL a wrong password gets, whichever the method.
fn assert_auth_failed(e: tokio_postgres::Error, user: &str) {
    let db = e
        .as_db_error()
        .unwrap_or_else(|| panic!("not a server error: {e}"));
    assert_eq!(db.severity(), "FATAL");
    assert_eq!(db.code(), &SqlState::INVALID_PASSWORD);
    assert_eq!(
        db.message(),
        format!("password authentication failed for user \"{user}\"")
    );
}

#[tokio::test]
async fn trust_lets_anyone_in() {
    let server = common::start().await;
    for user in ["keyclaim", "someone_else"] {
        let client = server
            .connect_with(server.client_config(user))
            .await
            .unwrap();
        let row = client
            .query_one("SHOW session_authorization", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, &str>(0), user);
    }
}

/// The right password logs in; a wrong one, or an unknown user, fails the
/// same way (with SCRAM the unknown user goes through the whole exchange).
async fn passwords_are_checked(method: AuthMethod) {
    let server = common::start_with(with_users(method)).await;
    let client = login(&server, "app", "s3cret").await.unwrap();
    client.batch_execute("SHOW server_version").await.unwrap();
    assert_auth_failed(login(&server, "app", "wrong").await.unwrap_err(), "app");
    assert_auth_failed(
        login(&server, "nobody", "s3cret").await.unwrap_err(),
        "nobody",
    );
}

#[tokio::test]
async fn cleartext_password() {
    passwords_are_checked(AuthMethod::Cleartext).await;
}

#[tokio::test]
async fn scram_sha_256_password() {
    passwords_are_checked(AuthMethod::ScramSha256).await;
}

#[tokio::test]
async fn beyond_max_connections_clients_are_refused_with_53300() {
    let server = common::start_with(|c| c.server.max_connections = 2).await;
    let first = server.connect().await;
    let second = server.connect().await;
    let e = server
        .connect_with(server.client_config(common::USER))
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.severity(), "FATAL");
    assert_eq!(db.code(), &SqlState::TOO_MANY_CONNECTIONS);
    assert_eq!(db.message(), "sorry, too many clients already");
    // A refused connection does not take a slot; a closed one gives it back.
    second.batch_execute("SHOW server_version").await.unwrap();
    drop(second);
    let mut again = None;
    for _ in 0..50 {
        match server
            .connect_with(server.client_config(common::USER))
            .await
        {
            Ok(client) => {
                again = Some(client);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let again = again.expect("a slot frees up when a connection closes");
    again.batch_execute("SHOW server_version").await.unwrap();
    first.batch_execute("SHOW server_version").await.unwrap();
}
