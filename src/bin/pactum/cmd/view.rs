//! `pactum view [--port N] [--root DIR]`: the read-only web UI of a project (SPEC §26) on
//! 127.0.0.1 — registry and history, kept eval runs and their comparison, runs from the
//! ledger, stats as charts. Prints its URL; Ctrl-C stops it.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use pactum::error::Error;
use pactum::view::{View, server};

use crate::output::{self, OK};

#[derive(clap::Args)]
pub struct Args {
    /// Port to listen on (0: any free port).
    #[arg(long, value_name = "N", default_value_t = 8765)]
    port: u16,
    /// Address to listen on: a loopback address only (127.0.0.1, ::1); any other is refused.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    host: String,
    /// Project root (the folder of registry.json); default: the nearest one above.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

/// The loopback address `host` names; anything else is a usage error (the viewer shows
/// the ledger's inputs and outputs, for this machine only).
fn loopback(host: &str) -> Result<IpAddr, Error> {
    let ip = match host {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        other => other.parse::<IpAddr>().map_err(|_| Error::Usage {
            message: format!(
                "--host `{other}` is not an IP address; the viewer listens on 127.0.0.1 or ::1"
            ),
        })?,
    };
    if !ip.is_loopback() {
        return Err(Error::Usage {
            message: format!(
                "--host {ip} is not a loopback address: the viewer shows prompts, inputs and outputs, and listens on this machine only (127.0.0.1 or ::1)"
            ),
        });
    }
    Ok(ip)
}

pub fn exec(args: Args) -> u8 {
    let result = (|| {
        let ip = loopback(&args.host)?;
        let root = output::root_or_here(args.root.as_deref());
        let mut config = pactum::config::Config::load(&root)?;
        config.apply_env(&output::env_lookup);
        let ledgers = vec![crate::cmd::ledger::project_ledger(&root, &config)?];
        let addr = SocketAddr::new(ip, args.port);
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| Error::Io { path: PathBuf::from(addr.to_string()), source: e })?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::Io { path: PathBuf::from(addr.to_string()), source: e })?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "pactum view: http://{bound}/ (read-only; Ctrl-C stops it)");
        let _ = out.flush();
        drop(out);
        server::serve(listener, View { root, ledgers, config })
            .map_err(|e| Error::Io { path: PathBuf::from(bound.to_string()), source: e })
    })();
    match result {
        Ok(()) => OK,
        Err(e) => output::fail(&e, false),
    }
}
