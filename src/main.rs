//! The keyclaim binary: command line, config, logging, then serve until
//! SIGINT or SIGTERM.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use keyclaim::config::{Config, Sources, StoreKind};
use keyclaim::engine::Engine;
use keyclaim::server::{self, Server, ServerError};
use keyclaim::store::cassandra::connect;
use tracing::{error, info};

/// A PostgreSQL-wire proxy that enforces PRIMARY KEY and UNIQUE on
/// Cassandra-style stores. Every config setting can also be set from the
/// environment as KEYCLAIM_<SECTION>_<KEY> (e.g. KEYCLAIM_CLAIMS_LEASE_MS);
/// see config.toml for all of them and their defaults.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// TOML config file [default: ./config.toml if present, else built-in defaults]
    #[arg(long, env = "KEYCLAIM_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,
    /// Address to listen on, overriding [server] listen [default: 127.0.0.1:5433]
    #[arg(long, env = "KEYCLAIM_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// Connect to the configured store, create its keyspace and tables if
    /// missing, describe what was found, and exit (0: ready, 1: not).
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let config = match Config::load(Sources {
        file: cli.config.as_deref(),
        default_file: Some(Path::new("config.toml")),
        env,
        listen: cli.listen,
    }) {
        Ok(config) => config,
        Err(problems) => {
            // Logging is configured by the config, so this goes to stderr as is.
            eprintln!("keyclaim: the configuration has problems:");
            for problem in &problems.0 {
                eprintln!("  - {problem}");
            }
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&config.log.level))
        .init();
    keyclaim::session::settings::configure_server_version(&config.server.server_version);
    let runtime = match runtime(config.server.workers) {
        Ok(runtime) => runtime,
        Err(e) => {
            error!(cause = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    if cli.check {
        return runtime.block_on(check(&config));
    }
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("keyclaim cannot start: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The async runtime connections are served on: `workers` threads, or one
/// per CPU core for 0.
fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if workers > 0 {
        builder.worker_threads(workers);
    }
    builder.build()
}

/// `--check`: for operators, a yes or no on the store with what was found.
async fn check(config: &Config) -> ExitCode {
    match config.store.kind {
        StoreKind::Memory => {
            println!("store.kind = \"memory\": nothing to check (the embedded store keeps nothing after exit)");
            ExitCode::SUCCESS
        }
        StoreKind::Cassandra => match connect::check(&config.store).await {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("keyclaim --check: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

async fn run(config: Config) -> Result<(), ServerError> {
    let store = server::open_store(&config.store).await?;
    let engine = Engine::new(store, config.engine_config());
    server::adopt_tables(&engine, &config.store).await?;
    let server = Server::bind(&config, engine).await?;
    if let Ok(addr) = config.metrics.listen.parse() {
        keyclaim::metrics::serve(addr).map_err(ServerError::Setup)?;
        info!(%addr, "Prometheus metrics at http://{addr}/metrics");
    }
    info!(
        addr = %server.local_addr(),
        auth = ?config.auth.method,
        tls = config.tls.enabled,
        "keyclaim is listening"
    );
    server.run(shutdown_signal()).await;
    Ok(())
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => info!("SIGINT received"),
        _ = terminate => info!("SIGTERM received"),
    }
}

#[cfg(test)]
mod tests {
    use super::runtime;

    #[test]
    fn workers_set_the_runtimes_threads() {
        for workers in [1, 3] {
            let runtime = runtime(workers).unwrap();
            assert_eq!(runtime.metrics().num_workers(), workers);
        }
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(runtime(0).unwrap().metrics().num_workers(), cores);
    }
}
