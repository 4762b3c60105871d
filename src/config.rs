//! The configuration: TOML with a default for every field, then
//! `KEYCLAIM_<SECTION>_<KEY>` environment overrides, then command-line flags.
//!
//! Loading reports every problem it finds at once (each section is read on
//! its own, then the values are checked together), so one restart fixes a
//! config instead of one restart per typo.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::engine::EngineConfig;

/// Prefix of every environment override.
pub const ENV_PREFIX: &str = "KEYCLAIM_";

/// Environment variables read by the command line itself, not config keys.
const CLI_ENV: &[&str] = &["KEYCLAIM_CONFIG", "KEYCLAIM_LISTEN"];

/// One user with a password from the environment, as PostgreSQL's image
/// takes POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_PASSWORD_FILE: a
/// container gets password authentication without a config file. The
/// `_FILE` forms read the value from a file (a Docker or Kubernetes secret).
const USER_ENV: &str = "KEYCLAIM_USER";
const PASSWORD_ENV: &str = "KEYCLAIM_PASSWORD";
const SECRET_FILES: &[(&str, &str)] = &[
    ("KEYCLAIM_PASSWORD_FILE", PASSWORD_ENV),
    ("KEYCLAIM_STORE_PASSWORD_FILE", "KEYCLAIM_STORE_PASSWORD"),
];

/// `KEYCLAIM_TEST_*` belongs to the test suites (e.g. `KEYCLAIM_TEST_PG`),
/// never to the server's config.
const TEST_ENV_PREFIX: &str = "KEYCLAIM_TEST_";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub server: ServerConfig,
    pub auth: AuthConfig,
    pub tls: TlsConfig,
    pub claims: ClaimsConfig,
    pub store: StoreConfig,
    pub metrics: MetricsConfig,
    pub log: LogConfig,
}

/// `[server]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on. Default "127.0.0.1:5433".
    pub listen: String,
    /// Connections served at once; more are refused with 53300. Default 1024.
    pub max_connections: usize,
    /// On SIGINT/SIGTERM, how long running statements may finish before
    /// their connections are closed. Default 10000.
    pub shutdown_grace_ms: u64,
    /// The PostgreSQL version keyclaim reports (`server_version`,
    /// `version()`), as `major.minor`. Default "15.18": keyclaim answers as
    /// PostgreSQL 15 does (its differential tests compare with 15), and
    /// pg_dump refuses servers newer than itself.
    pub server_version: String,
    /// Threads that serve connections. Default 0: one per CPU core. Fewer
    /// leave cores to what runs beside keyclaim (the app, a store node).
    pub workers: usize,
}

/// More worker threads than this is a typo, not a machine.
const MAX_WORKERS: usize = 1024;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:5433".into(),
            max_connections: 1024,
            shutdown_grace_ms: 10_000,
            server_version: crate::session::settings::DEFAULT_SERVER_VERSION.into(),
            workers: 0,
        }
    }
}

/// `[auth]`
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// "trust" (default), "cleartext" or "scram-sha-256".
    pub method: AuthMethod,
    /// Users allowed to log in with a password. Default none.
    pub users: Vec<UserConfig>,
    /// Start with `trust` on an address other clients can reach. Default
    /// false: such a start is refused, as PostgreSQL listens on localhost
    /// only and its image wants a password unless trust is asked for.
    pub allow_trust_beyond_loopback: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthMethod {
    /// Anyone may connect as any user, as PostgreSQL's `trust`.
    #[default]
    Trust,
    /// The password travels in clear text (use with TLS only).
    Cleartext,
    /// SCRAM-SHA-256, as PostgreSQL's default `scram-sha-256`.
    #[serde(rename = "scram-sha-256")]
    ScramSha256,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    pub name: String,
    pub password: String,
}

/// `[tls]`
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// Accept TLS (SSLRequest answered 'S'). Default false.
    pub enabled: bool,
    /// PEM certificate chain. Required when enabled.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1). Required when enabled.
    pub key: Option<PathBuf>,
}

/// `[claims]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimsConfig {
    /// Lease of an unbacked claim before others may fence it. Default 5000.
    pub lease_ms: u64,
    /// How long a statement waits on another's claim before 55P03. Default 30000.
    pub lock_timeout_ms: u64,
    /// Retries after an unknown store outcome before 40003. Default 5.
    pub max_retries: u32,
    /// The largest offset between the clocks of the hosts proxies run on.
    /// 0 (the default) for proxies on one host. A statement's snapshot
    /// reads twice this far ahead, so it sees every COMMIT answered before
    /// it began; a transaction committing within that window may then be
    /// seen in part (docs/transactions.md §9).
    pub max_clock_offset_ms: u64,
}

impl Default for ClaimsConfig {
    fn default() -> Self {
        let engine = EngineConfig::default();
        ClaimsConfig {
            lease_ms: engine.lease.as_millis() as u64,
            lock_timeout_ms: engine.lock_timeout.as_millis() as u64,
            max_retries: engine.max_retries,
            max_clock_offset_ms: engine.max_clock_offset.as_millis() as u64,
        }
    }
}

/// `[store]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// "memory" (default): the embedded store, which keeps nothing after exit;
    /// "cassandra": Apache Cassandra or ScyllaDB (the settings below).
    pub kind: StoreKind,
    /// Rows fetched per store page when scanning. Default 256.
    pub scan_page: usize,
    /// Nodes to connect to first, as host:port; the driver discovers the rest.
    /// A list, or one comma-separated string (handy in the environment).
    /// Default ["127.0.0.1:9042"].
    #[serde(deserialize_with = "list_or_csv")]
    pub contact_points: Vec<String>,
    /// The datacenter whose nodes serve requests first. Default none (any).
    pub local_datacenter: Option<String>,
    /// Keyspace holding keyclaim's tables; created when missing. Default "keyclaim".
    pub keyspace: String,
    /// Replication class of a keyspace keyclaim creates. Default:
    /// "NetworkTopologyStrategy" (the factor in `local_datacenter`) when
    /// `local_datacenter` is set, else "SimpleStrategy" (a single-node trial).
    pub replication_class: Option<String>,
    /// Replication factor of a keyspace keyclaim creates. Default 1.
    pub replication_factor: u32,
    /// Password authentication; both or neither. Default none.
    pub username: Option<String>,
    pub password: Option<String>,
    /// TLS to the nodes: PEM CA bundle to verify them. Default none (plain TCP).
    pub tls_ca_file: Option<PathBuf>,
    /// PEM client certificate and key, when the nodes require client auth. Default none.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// Client-side timeout of one request. Default 10000.
    pub request_timeout_ms: u64,
    /// A node that does not answer a heartbeat on a connection within this
    /// long (a long GC pause, a frozen host) has that connection closed:
    /// the requests waiting on it end as unknown outcomes, which the claim
    /// protocol repeats on other replicas, and new requests go to other
    /// replicas until the node answers again. Default 2000.
    pub node_timeout_ms: u64,
    /// Consistency of writes and non-deciding reads. Default "local_quorum".
    pub consistency: Consistency,
    /// Consistency of the Paxos round of LWTs and of deciding reads. Default "local_serial".
    pub serial_consistency: SerialConsistency,
    /// How often (at most) a proxy checks the shared catalog for DDL done by
    /// other proxies. Default 1000.
    pub catalog_refresh_ms: u64,
    /// Existing CQL tables to serve and constrain (`[[store.adopt]]`). Default none.
    pub adopt: Vec<AdoptConfig>,
}

/// `[[store.adopt]]`: serve an existing CQL table under a SQL name and
/// enforce UNIQUE constraints on it, claiming the keys its rows hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdoptConfig {
    /// The SQL table name clients use.
    pub table: String,
    /// The CQL table: "keyspace.table", or "table" in `store.keyspace`.
    pub cql_table: String,
    /// UNIQUE constraints, each a list of columns. Default none.
    #[serde(default)]
    pub unique: Vec<Vec<String>>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            kind: StoreKind::Memory,
            scan_page: EngineConfig::default().scan_page,
            contact_points: vec!["127.0.0.1:9042".into()],
            local_datacenter: None,
            keyspace: "keyclaim".into(),
            replication_class: None,
            replication_factor: 1,
            username: None,
            password: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            request_timeout_ms: 10_000,
            node_timeout_ms: 2_000,
            consistency: Consistency::LocalQuorum,
            serial_consistency: SerialConsistency::LocalSerial,
            catalog_refresh_ms: 1000,
            adopt: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    #[default]
    Memory,
    Cassandra,
}

/// `[metrics]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Address of the Prometheus endpoint (`GET /metrics`); "" turns it off.
    /// Default "127.0.0.1:9187".
    pub listen: String,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: "127.0.0.1:9187".into(),
        }
    }
}

/// Consistency levels that make LWT-managed data safe to read back: a
/// quorum, so that every read overlaps every Paxos commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    #[default]
    LocalQuorum,
    Quorum,
    EachQuorum,
    All,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SerialConsistency {
    #[default]
    LocalSerial,
    Serial,
}

fn list_or_csv<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        List(Vec<String>),
        Csv(String),
    }
    Ok(match Either::deserialize(d)? {
        Either::List(l) => l,
        Either::Csv(s) => s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

impl StoreConfig {
    fn validate(&self, problems: &mut Vec<String>) {
        if self.scan_page == 0 {
            problems.push("store.scan_page: must be at least 1".into());
        }
        if self.kind != StoreKind::Cassandra {
            if !self.adopt.is_empty() {
                problems.push(
                    "store.adopt: adopting existing tables needs store.kind = \"cassandra\"".into(),
                );
            }
            return;
        }
        let mut names = std::collections::BTreeSet::new();
        for a in &self.adopt {
            if a.table.is_empty() || !names.insert(a.table.as_str()) {
                problems.push(format!(
                    "store.adopt: table \"{}\" is empty or listed twice",
                    a.table
                ));
            }
            let parts: Vec<&str> = a.cql_table.split('.').collect();
            if parts.len() > 2 || parts.iter().any(|p| p.is_empty()) {
                problems.push(format!(
                    "store.adopt: cql_table \"{}\" is not keyspace.table or table",
                    a.cql_table
                ));
            }
            if a.unique.iter().any(Vec::is_empty) {
                problems.push(format!(
                    "store.adopt: table \"{}\" lists a unique constraint without columns",
                    a.table
                ));
            }
        }
        if self.contact_points.is_empty() {
            problems.push("store.contact_points: at least one host:port is needed".into());
        }
        for p in &self.contact_points {
            if p.rsplit_once(':')
                .is_none_or(|(_, port)| port.parse::<u16>().is_err())
            {
                problems.push(format!(
                    "store.contact_points: \"{p}\" is not host:port, e.g. 127.0.0.1:9042"
                ));
            }
        }
        if !is_cql_identifier(&self.keyspace) {
            problems.push(format!(
                "store.keyspace: \"{}\" is not a CQL name (letters, digits and _, at most 48, starting with a letter)",
                self.keyspace
            ));
        }
        if self.replication_factor == 0 {
            problems.push("store.replication_factor: must be at least 1".into());
        }
        if self.username.is_some() != self.password.is_some() {
            problems.push("store.username, store.password: set both or neither".into());
        }
        if self.tls_cert_file.is_some() != self.tls_key_file.is_some() {
            problems.push("store.tls_cert_file, store.tls_key_file: set both or neither".into());
        }
        let tls_files = [
            ("store.tls_ca_file", &self.tls_ca_file),
            ("store.tls_cert_file", &self.tls_cert_file),
            ("store.tls_key_file", &self.tls_key_file),
        ];
        for (field, path) in tls_files {
            match path {
                Some(p) if !cfg!(feature = "cassandra-tls") => problems.push(format!(
                    "{field}: {} is set, but this keyclaim was built without TLS to Cassandra (cargo feature cassandra-tls)",
                    p.display()
                )),
                Some(p) if !p.is_file() => {
                    problems.push(format!("{field}: no such file {}", p.display()))
                }
                _ => {}
            }
        }
        if self.request_timeout_ms == 0 {
            problems.push("store.request_timeout_ms: must be greater than 0".into());
        }
        if self.node_timeout_ms < 100 {
            problems.push("store.node_timeout_ms: must be at least 100".into());
        }
        if self.catalog_refresh_ms == 0 {
            problems.push("store.catalog_refresh_ms: must be greater than 0".into());
        }
    }
}

/// An unquoted CQL name as Cassandra accepts it for keyspaces and tables.
pub fn is_cql_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 48
}

/// `[log]`
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter: "info" (default), "debug", "keyclaim=debug,info", ...
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            level: "info".into(),
        }
    }
}

/// Every problem found while loading, reported together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<String>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Where a config comes from: the file (if any), the environment, the flags.
#[derive(Debug, Default)]
pub struct Sources<'a> {
    /// An explicit `--config`; it must exist.
    pub file: Option<&'a Path>,
    /// `./config.toml`-style fallback, read only if present.
    pub default_file: Option<&'a Path>,
    /// `(name, value)` pairs; only `KEYCLAIM_*` names are looked at.
    pub env: Vec<(String, String)>,
    /// `--listen`, which wins over file and environment.
    pub listen: Option<String>,
}

impl Config {
    /// Loads defaults < file < environment < flags, then validates.
    pub fn load(sources: Sources<'_>) -> Result<Config, ConfigErrors> {
        let mut problems = Vec::new();
        let mut table = read_file(&sources, &mut problems);
        apply_env(&mut table, &sources.env, &mut problems);
        if let Some(listen) = &sources.listen {
            section_mut(&mut table, "server").insert("listen".into(), listen.clone().into());
        }
        let config = Config::from_table(table, &mut problems);
        config.validate(&mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(problems))
        }
    }

    /// Parses TOML text (no environment), for tests and embedding.
    pub fn from_toml(text: &str) -> Result<Config, ConfigErrors> {
        let mut problems = Vec::new();
        let table = match text.parse::<toml::Table>() {
            Ok(t) => t,
            Err(e) => return Err(ConfigErrors(vec![format!("config: {e}")])),
        };
        let config = Config::from_table(table, &mut problems);
        config.validate(&mut problems);
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(problems))
        }
    }

    /// Each section is deserialized on its own so that a mistake in one does
    /// not hide the mistakes in the others.
    fn from_table(mut table: toml::Table, problems: &mut Vec<String>) -> Config {
        let config = Config {
            server: section(&mut table, "server", problems),
            auth: section(&mut table, "auth", problems),
            tls: section(&mut table, "tls", problems),
            claims: section(&mut table, "claims", problems),
            store: section(&mut table, "store", problems),
            metrics: section(&mut table, "metrics", problems),
            log: section(&mut table, "log", problems),
        };
        for unknown in table.keys() {
            problems.push(format!(
                "unknown section [{unknown}]; expected one of [server], [auth], [tls], [claims], [store], [metrics], [log]"
            ));
        }
        config
    }

    fn validate(&self, problems: &mut Vec<String>) {
        if crate::session::settings::version_num(&self.server.server_version).is_none() {
            problems.push(format!(
                "server.server_version: \"{}\" is not a version like 15.18 (major 10 or later)",
                self.server.server_version
            ));
        }
        if self.server.listen.parse::<SocketAddr>().is_err() {
            problems.push(format!(
                "server.listen: \"{}\" is not an address like 127.0.0.1:5433",
                self.server.listen
            ));
        }
        if self.server.max_connections == 0 {
            problems.push("server.max_connections: must be at least 1".into());
        }
        if self.server.workers > MAX_WORKERS {
            problems.push(format!(
                "server.workers: {} is more than {MAX_WORKERS} (0: one per CPU core)",
                self.server.workers
            ));
        }
        let reachable = self
            .server
            .listen
            .parse::<SocketAddr>()
            .is_ok_and(|a| !a.ip().is_loopback());
        if self.auth.method == AuthMethod::Trust
            && reachable
            && !self.auth.allow_trust_beyond_loopback
        {
            problems.push(format!(
                "auth.method: \"trust\" lets anyone who reaches server.listen ({}) connect as any user, and that is not a loopback address. \
                 Use a password (auth.method = \"scram-sha-256\" with [[auth.users]], and TLS across a network), listen on 127.0.0.1, \
                 or say auth.allow_trust_beyond_loopback = true (KEYCLAIM_AUTH_ALLOW_TRUST_BEYOND_LOOPBACK=true) if every client that can reach it may",
                self.server.listen
            ));
        }
        if self.auth.method != AuthMethod::Trust && self.auth.users.is_empty() {
            problems.push(
                "auth.users: a password method needs at least one user, e.g. users = [{ name = \"keyclaim\", password = \"...\" }]"
                    .into(),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for user in &self.auth.users {
            if user.name.is_empty() {
                problems.push("auth.users: a user has an empty name".into());
            } else if !seen.insert(user.name.as_str()) {
                problems.push(format!(
                    "auth.users: user \"{}\" is listed twice",
                    user.name
                ));
            }
        }
        if self.tls.enabled {
            for (field, path) in [("tls.cert", &self.tls.cert), ("tls.key", &self.tls.key)] {
                match path {
                    None => problems.push(format!("{field}: required when tls.enabled = true")),
                    Some(p) if !p.is_file() => {
                        problems.push(format!("{field}: no such file {}", p.display()))
                    }
                    Some(_) => {}
                }
            }
        }
        if self.claims.lease_ms == 0 {
            problems.push("claims.lease_ms: must be greater than 0".into());
        }
        self.store.validate(problems);
        if !self.metrics.listen.is_empty() && self.metrics.listen.parse::<SocketAddr>().is_err() {
            problems.push(format!(
                "metrics.listen: \"{}\" is not an address like 127.0.0.1:9187 (or \"\" for off)",
                self.metrics.listen
            ));
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            problems.push(format!(
                "log.level: \"{}\" is not a filter: {e}",
                self.log.level
            ));
        }
    }

    /// The listen address (validated by `load`).
    pub fn listen_addr(&self) -> std::io::Result<SocketAddr> {
        self.server.listen.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid listen address {}", self.server.listen),
            )
        })
    }

    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            lease: Duration::from_millis(self.claims.lease_ms),
            lock_timeout: Duration::from_millis(self.claims.lock_timeout_ms),
            max_retries: self.claims.max_retries,
            max_clock_offset: Duration::from_millis(self.claims.max_clock_offset_ms),
            scan_page: self.store.scan_page,
            // One process owns the embedded store: its cache is the truth.
            catalog_refresh: match self.store.kind {
                StoreKind::Memory => None,
                StoreKind::Cassandra => Some(Duration::from_millis(self.store.catalog_refresh_ms)),
            },
        }
    }
}

fn read_file(sources: &Sources<'_>, problems: &mut Vec<String>) -> toml::Table {
    let path = match (sources.file, sources.default_file) {
        (Some(explicit), _) => explicit,
        (None, Some(fallback)) if fallback.is_file() => fallback,
        _ => return toml::Table::new(),
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            problems.push(format!("{}: {e}", path.display()));
            return toml::Table::new();
        }
    };
    text.parse::<toml::Table>().unwrap_or_else(|e| {
        problems.push(format!("{}: {e}", path.display()));
        toml::Table::new()
    })
}

/// `KEYCLAIM_CLAIMS_LEASE_MS=100` sets `[claims] lease_ms = 100`. A value is
/// read as TOML when it parses as one (numbers, booleans, arrays such as
/// `[{name="a", password="b"}]`), otherwise as a plain string.
fn apply_env(table: &mut toml::Table, env: &[(String, String)], problems: &mut Vec<String>) {
    let env = with_secret_files(env, problems);
    let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    if let Some(password) = get(PASSWORD_ENV) {
        let name = get(USER_ENV).unwrap_or_else(|| "keyclaim".into());
        let mut user = toml::Table::new();
        user.insert("name".into(), name.into());
        user.insert("password".into(), password.into());
        let auth = section_mut(table, "auth");
        auth.insert("method".into(), "scram-sha-256".into());
        auth.insert("users".into(), toml::Value::Array(vec![user.into()]));
    } else if get(USER_ENV).is_some() {
        problems.push(format!(
            "{USER_ENV} needs {PASSWORD_ENV} or {PASSWORD_ENV}_FILE"
        ));
    }
    for (name, value) in &env {
        if name == USER_ENV || name == PASSWORD_ENV {
            continue;
        }
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if CLI_ENV.contains(&name.as_str()) || name.starts_with(TEST_ENV_PREFIX) {
            continue;
        }
        let Some((section, key)) = rest.split_once('_') else {
            problems.push(format!("{name}: expected {ENV_PREFIX}<SECTION>_<KEY>"));
            continue;
        };
        let value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.clone()));
        section_mut(table, &section.to_ascii_lowercase()).insert(key.to_ascii_lowercase(), value);
    }
}

/// The environment with each `..._FILE` secret replaced by the variable it
/// stands for, holding the file's content (without its final newline).
fn with_secret_files(
    env: &[(String, String)],
    problems: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(env.len());
    for (name, value) in env {
        match SECRET_FILES.iter().find(|(file, _)| file == name) {
            Some((_, target)) => match std::fs::read_to_string(value) {
                Ok(text) => out.push((
                    target.to_string(),
                    text.strip_suffix('\n').unwrap_or(&text).to_owned(),
                )),
                Err(e) => problems.push(format!("{name}: {value}: {e}")),
            },
            None => out.push((name.clone(), value.clone())),
        }
    }
    out
}

fn section_mut<'t>(table: &'t mut toml::Table, name: &str) -> &'t mut toml::Table {
    let entry = table
        .entry(name.to_owned())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    if !entry.is_table() {
        // A scalar where a section belongs: replace it; `section` reports it.
        *entry = toml::Value::Table(toml::Table::new());
    }
    entry.as_table_mut().expect("just made a table")
}

fn section<T: DeserializeOwned + Default>(
    table: &mut toml::Table,
    name: &str,
    problems: &mut Vec<String>,
) -> T {
    let Some(value) = table.remove(name) else {
        return T::default();
    };
    T::deserialize(value).unwrap_or_else(|e| {
        problems.push(format!("[{name}]: {}", e.message()));
        T::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The config from these environment variables alone.
    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
        Config::load(Sources {
            env: env(pairs),
            ..Default::default()
        })
    }

    #[test]
    fn a_password_from_the_environment_or_a_file_turns_on_scram() {
        let config = Config::load(Sources {
            env: env(&[("KEYCLAIM_USER", "app"), ("KEYCLAIM_PASSWORD", "s3cret")]),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(config.auth.method, AuthMethod::ScramSha256);
        assert_eq!(config.auth.users.len(), 1);
        assert_eq!(
            (
                config.auth.users[0].name.as_str(),
                config.auth.users[0].password.as_str()
            ),
            ("app", "s3cret")
        );
        let dir = std::env::temp_dir().join(format!("kc-secret-{}", std::process::id()));
        std::fs::write(&dir, "from-a-file\n").unwrap();
        let config = Config::load(Sources {
            env: env(&[("KEYCLAIM_PASSWORD_FILE", dir.to_str().unwrap())]),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(
            (
                config.auth.users[0].name.as_str(),
                config.auth.users[0].password.as_str()
            ),
            ("keyclaim", "from-a-file")
        );
        std::fs::remove_file(&dir).unwrap();
        let errors = Config::load(Sources {
            env: env(&[("KEYCLAIM_PASSWORD_FILE", "/nonexistent/secret")]),
            ..Sources::default()
        })
        .unwrap_err()
        .0;
        assert!(
            errors[0].starts_with("KEYCLAIM_PASSWORD_FILE: /nonexistent/secret"),
            "{errors:?}"
        );
        let errors = Config::load(Sources {
            env: env(&[("KEYCLAIM_USER", "app")]),
            ..Sources::default()
        })
        .unwrap_err()
        .0;
        assert!(errors[0].contains("KEYCLAIM_PASSWORD"), "{errors:?}");
    }

    #[test]
    fn defaults_without_any_source() {
        let config = Config::load(Sources::default()).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.server.listen, "127.0.0.1:5433");
        assert_eq!(config.claims.lease_ms, 5000);
        assert_eq!(config.claims.lock_timeout_ms, 30000);
        assert_eq!(config.claims.max_retries, 5);
    }

    #[test]
    fn the_shipped_config_toml_is_the_defaults() {
        let text = include_str!("../config.toml");
        assert_eq!(Config::from_toml(text).unwrap(), Config::default());
    }

    #[test]
    fn env_overrides_file_and_flag_overrides_env() {
        let config = Config::load(Sources {
            env: env(&[
                ("KEYCLAIM_CLAIMS_LEASE_MS", "100"),
                ("KEYCLAIM_AUTH_METHOD", "scram-sha-256"),
                ("KEYCLAIM_AUTH_USERS", r#"[{name = "a", password = "b"}]"#),
                ("KEYCLAIM_SERVER_LISTEN", "127.0.0.1:1"),
                ("KEYCLAIM_LISTEN", "ignored: clap reads it"),
                ("PATH", "/bin"),
            ]),
            listen: Some("127.0.0.1:2".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(config.claims.lease_ms, 100);
        assert_eq!(config.auth.method, AuthMethod::ScramSha256);
        assert_eq!(config.auth.users[0].name, "a");
        assert_eq!(config.server.listen, "127.0.0.1:2");
    }

    #[test]
    fn workers_are_one_per_core_unless_set() {
        assert_eq!(load(&[]).unwrap().server.workers, 0);
        let config = load(&[("KEYCLAIM_SERVER_WORKERS", "1")]).unwrap();
        assert_eq!(config.server.workers, 1);
        let errors = load(&[("KEYCLAIM_SERVER_WORKERS", "5000")]).unwrap_err().0;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("server.workers: 5000"), "{errors:?}");
    }

    #[test]
    fn trust_on_a_reachable_address_needs_saying_so() {
        let errors = load(&[("KEYCLAIM_SERVER_LISTEN", "0.0.0.0:5433")])
            .unwrap_err()
            .0;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("\"trust\""), "{errors:?}");
        assert!(
            errors[0].contains("allow_trust_beyond_loopback"),
            "{errors:?}"
        );
        // Loopback, a password method, or the explicit option start.
        for listen in ["127.0.0.1:5433", "[::1]:5433", "127.0.0.2:5433"] {
            load(&[("KEYCLAIM_SERVER_LISTEN", listen)]).unwrap();
        }
        load(&[
            ("KEYCLAIM_SERVER_LISTEN", "0.0.0.0:5433"),
            ("KEYCLAIM_AUTH_METHOD", "scram-sha-256"),
            ("KEYCLAIM_AUTH_USERS", r#"[{name = "a", password = "b"}]"#),
        ])
        .unwrap();
        let config = load(&[
            ("KEYCLAIM_SERVER_LISTEN", "10.1.2.3:5433"),
            ("KEYCLAIM_AUTH_ALLOW_TRUST_BEYOND_LOOPBACK", "true"),
        ])
        .unwrap();
        assert!(config.auth.allow_trust_beyond_loopback);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = r#"
            [server]
            listen = "nowhere"
            [claims]
            lease_ms = "soon"
            [tls]
            enabled = true
            [store]
            kind = "papyrus"
            [extra]
            x = 1
        "#;
        let errors = Config::from_toml(text).unwrap_err().0;
        let all = errors.join("\n");
        assert!(all.contains("server.listen"), "{all}");
        assert!(all.contains("[claims]"), "{all}");
        assert!(all.contains("tls.cert"), "{all}");
        assert!(all.contains("tls.key"), "{all}");
        assert!(all.contains("[store]"), "{all}");
        assert!(all.contains("[extra]"), "{all}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let errors = Config::from_toml("[claims]\nlease = 5").unwrap_err().0;
        assert!(errors[0].contains("unknown field `lease`"), "{errors:?}");
        let errors = Config::load(Sources {
            env: env(&[("KEYCLAIM_CLAIMS_LEASE", "5"), ("KEYCLAIM_NOPE", "1")]),
            ..Default::default()
        })
        .unwrap_err()
        .0;
        assert_eq!(errors.len(), 2, "{errors:?}");
    }

    #[test]
    fn store_settings_from_file_and_environment() {
        let text = r#"
            [store]
            kind = "cassandra"
            keyspace = "app"
            consistency = "quorum"
            serial_consistency = "serial"
            [[store.adopt]]
            table = "users"
            cql_table = "legacy.users"
            unique = [["email"], ["org", "handle"]]
        "#;
        let config = Config::from_toml(text).unwrap();
        assert_eq!(config.store.kind, StoreKind::Cassandra);
        assert_eq!(config.store.consistency, Consistency::Quorum);
        assert_eq!(config.store.serial_consistency, SerialConsistency::Serial);
        assert_eq!(config.store.adopt[0].unique[1], ["org", "handle"]);
        assert!(config.engine_config().catalog_refresh.is_some());
        let config = Config::load(Sources {
            env: env(&[
                ("KEYCLAIM_STORE_KIND", "cassandra"),
                (
                    "KEYCLAIM_STORE_CONTACT_POINTS",
                    "10.0.0.1:9042, 10.0.0.2:9042",
                ),
                ("KEYCLAIM_TEST_CASSANDRA", "not config"),
            ]),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            config.store.contact_points,
            ["10.0.0.1:9042", "10.0.0.2:9042"]
        );
        assert_eq!(Config::default().engine_config().catalog_refresh, None);
    }

    #[test]
    fn store_problems_are_reported() {
        let text = r#"
            [store]
            kind = "cassandra"
            contact_points = ["nohost"]
            keyspace = "1bad"
            username = "u"
            [[store.adopt]]
            table = "t"
            cql_table = "a.b.c"
        "#;
        let all = Config::from_toml(text).unwrap_err().0.join("\n");
        for part in ["nohost", "store.keyspace", "store.username", "a.b.c"] {
            assert!(all.contains(part), "{part}: {all}");
        }
        let all = Config::from_toml("[[store.adopt]]\ntable = \"t\"\ncql_table = \"t\"")
            .unwrap_err()
            .0
            .join("\n");
        assert!(all.contains("needs store.kind"), "{all}");
    }

    #[test]
    fn password_methods_need_users() {
        let errors = Config::from_toml("[auth]\nmethod = \"cleartext\"")
            .unwrap_err()
            .0;
        assert!(errors[0].contains("auth.users"), "{errors:?}");
    }
}
