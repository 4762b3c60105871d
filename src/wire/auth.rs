//! Password checks for the `[auth]` methods: the configured users, and the
//! pgwire mechanism (cleartext or SCRAM-SHA-256) each connection runs.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::cleartext::CleartextPasswordAuth;
use pgwire::api::auth::mechanism::{AuthMechanism, AuthMechanismFactory};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, SCRAM_ITERATIONS};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};

use crate::config::{AuthConfig, AuthMethod};

/// The configured users. Passwords are kept to compare cleartext logins and
/// salted once at startup for SCRAM.
struct Users {
    users: HashMap<String, Credential>,
}

struct Credential {
    password: String,
    salt: Vec<u8>,
    salted_password: Vec<u8>,
}

impl std::fmt::Debug for Users {
    // Never the passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users")
            .field("names", &self.users.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Users {
    fn new(config: &AuthConfig) -> Users {
        let users = config
            .users
            .iter()
            .map(|u| {
                let salt = rand::random::<[u8; 16]>().to_vec();
                let salted_password = gen_salted_password(&u.password, &salt, SCRAM_ITERATIONS);
                let credential = Credential {
                    password: u.password.clone(),
                    salt,
                    salted_password,
                };
                (u.name.clone(), credential)
            })
            .collect();
        Users { users }
    }
}

#[async_trait]
impl AuthSource for Users {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        Ok(match self.users.get(login.user().unwrap_or_default()) {
            Some(c) => Password::new(Some(c.salt.clone()), c.salted_password.clone()),
            // Like PostgreSQL, let an unknown user run the whole SCRAM
            // exchange against a secret nobody knows, so that failing tells
            // nothing about which users exist.
            None => Password::new(
                Some(rand::random::<[u8; 16]>().to_vec()),
                rand::random::<[u8; 32]>().to_vec(),
            ),
        })
    }

    async fn verify_password(
        &self,
        login: &LoginInfo,
        presented: &[u8],
    ) -> PgWireResult<Option<()>> {
        let user = login.user().unwrap_or_default();
        match self.users.get(user) {
            Some(c) if c.password.as_bytes() == presented => Ok(None),
            _ => Err(PgWireError::InvalidPassword(user.to_owned())),
        }
    }
}

/// Which mechanism a connection authenticates with.
pub(crate) struct Authenticator {
    method: AuthMethod,
    cleartext: CleartextPasswordAuth<Users>,
    scram: ScramAuth,
    /// SCRAM with channel binding (SCRAM-SHA-256-PLUS), offered only over
    /// TLS: libpq refuses a server that offers it on a plain connection.
    scram_tls: Option<ScramAuth>,
}

impl Authenticator {
    /// `cert_pem` is the TLS certificate, when TLS is on.
    pub(crate) fn new(config: &AuthConfig, cert_pem: Option<&[u8]>) -> Result<Self, String> {
        let users = Arc::new(Users::new(config));
        let scram = ScramAuth::new(users.clone());
        let scram_tls = match cert_pem {
            Some(pem) => {
                let mut with_binding = scram.clone();
                with_binding.configure_certificate(pem).map_err(|e| {
                    format!("tls.cert: cannot use it for SCRAM channel binding: {e}")
                })?;
                Some(with_binding)
            }
            None => None,
        };
        Ok(Authenticator {
            method: config.method,
            cleartext: CleartextPasswordAuth::new(users),
            scram,
            scram_tls,
        })
    }

    /// None for `trust`: the connection is in without a password.
    pub(crate) fn mechanism(&self, secure: bool) -> Option<Box<dyn AuthMechanism>> {
        match self.method {
            AuthMethod::Trust => None,
            AuthMethod::Cleartext => Some(self.cleartext.create()),
            AuthMethod::ScramSha256 => Some(match (&self.scram_tls, secure) {
                (Some(with_binding), true) => with_binding.create(),
                _ => self.scram.create(),
            }),
        }
    }
}
