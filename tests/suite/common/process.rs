//! keyclaim as a real process, over the test Cassandra (the embedded store
//! lives and dies with its process, so processes cannot share one): what
//! the tests that kill, freeze and restart proxies run.

use std::net::SocketAddr;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use keyclaim::config::Config;

/// A port no one listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A keyclaim process on 127.0.0.1, killed when this value is dropped,
/// however the test ends.
pub struct Proxy {
    child: Child,
    pub addr: SocketAddr,
}

impl Proxy {
    /// Starts keyclaim on `port` over the store `config` names (see
    /// [`super::configure_store`]), with claims leased for `lease_ms`.
    pub fn spawn(config: &Config, port: u16, lease_ms: u64) -> Proxy {
        let store = &config.store;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_keyclaim"));
        // Only the settings below: none the test's own environment has.
        for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("KEYCLAIM_")) {
            cmd.env_remove(name);
        }
        cmd.env("KEYCLAIM_CONFIG", "/dev/null")
            .env("KEYCLAIM_LISTEN", format!("127.0.0.1:{port}"))
            .env("KEYCLAIM_STORE_KIND", "cassandra")
            .env(
                "KEYCLAIM_STORE_CONTACT_POINTS",
                store.contact_points.join(","),
            )
            .env("KEYCLAIM_STORE_KEYSPACE", &store.keyspace)
            .env(
                "KEYCLAIM_STORE_REPLICATION_FACTOR",
                store.replication_factor.to_string(),
            )
            .env("KEYCLAIM_STORE_CATALOG_REFRESH_MS", "50")
            .env("KEYCLAIM_CLAIMS_LEASE_MS", lease_ms.to_string())
            .env("KEYCLAIM_METRICS_LISTEN", "")
            .env("KEYCLAIM_LOG_LEVEL", "warn");
        if let Some(dc) = &store.local_datacenter {
            cmd.env("KEYCLAIM_STORE_LOCAL_DATACENTER", dc);
        }
        Proxy {
            child: cmd.spawn().expect("keyclaim starts"),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and wait for it to be gone.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends `sig` ("-STOP", "-CONT", ...) to the process.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.pid().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }

    /// A client of this proxy, waiting up to a minute for it to listen.
    pub async fn connect(&self) -> tokio_postgres::Client {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match super::connect_with(super::client_config(self.addr, super::USER)).await {
                Ok(client) => return client,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("keyclaim on {} did not come up: {e}", self.addr),
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
