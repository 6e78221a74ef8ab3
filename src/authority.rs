//! The one rule for what acts on the world (SPEC §24): **no repository file is authority to
//! start a program, contact a host, or send a credential or content.**
//!
//! Everything pactum does that reaches outside its process goes through this module, and
//! only this module may do it (`clippy.toml` forbids `std::process::Command::new`,
//! `std::net::TcpStream::connect*` and building a `ureq` agent anywhere else;
//! `tests/invariants.rs` checks the allow is here alone):
//! - [`command`] builds the [`Command`] that starts a program;
//! - [`connect`] opens a TCP connection;
//! - [`Outbound`] is an HTTP agent bound to one origin: it sends nowhere else.
//!
//! Each takes a [`Permit`], and a permit says where its value came from ([`Source`]):
//! pactum itself (a program it names, such as `git`; a public default URL), the environment
//! or a command-line flag (read by the binary), the application's own code (a library
//! caller), or a repository file the environment confirmed. A value read from a repository
//! file (`pactum.toml`'s `[tools]` commands and URLs, `[telemetry]` endpoint and `content`,
//! provider base URLs) becomes a permit only through [`Trust::confirm`], which grants it
//! only when the environment confirms committed settings (`PACTUM_TRUST_CONFIG=1`, or
//! `--trust-config`), exactly as provider keys already go only where the environment
//! confirms. Otherwise the setting is [`Unconfirmed`]: the command refuses or ignores it
//! and says how to confirm it, and `validate` notes it (`config_unconfirmed`).
//!
//! The constructors that make a permit out of thin air ([`Permit::environment`],
//! [`Permit::flag`], [`Permit::application`]) are forbidden in the library by `clippy.toml`
//! too; the binary calls them where it read the environment or its arguments, with an
//! explicit allow, and tests where they play the application.

use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

/// Where a permit's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// pactum itself: a program it names (`git`) or a public default URL.
    Pactum,
    /// An environment variable the binary read.
    Environment,
    /// A command-line flag.
    Flag,
    /// The application's own code (a library caller).
    Application,
    /// A repository file, confirmed by the environment ([`Trust::confirm`]).
    ConfirmedFile,
}

/// A value that may act: a program to start, a host to contact. Only this module's
/// constructors make one; its value cannot be swapped afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permit<T> {
    value: T,
    source: Source,
}

impl<T> Permit<T> {
    /// A value the binary read from the environment.
    pub fn environment(value: T) -> Permit<T> {
        Permit { value, source: Source::Environment }
    }

    /// A value given on the command line.
    pub fn flag(value: T) -> Permit<T> {
        Permit { value, source: Source::Flag }
    }

    /// A value the application's own code chose (a library caller, a test).
    pub fn application(value: T) -> Permit<T> {
        Permit { value, source: Source::Application }
    }

    /// A value pactum itself names.
    pub(crate) fn pactum(value: T) -> Permit<T> {
        Permit { value, source: Source::Pactum }
    }

    /// Another form of the same value (a URL normalised, a suffix joined), from the same
    /// source. Crate-internal: a permit is never re-pointed at another value.
    pub(crate) fn normalised<U>(&self, value: U) -> Permit<U> {
        Permit { value, source: self.source }
    }

    pub fn get(&self) -> &T {
        &self.value
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// Whether the value came from the environment or a flag (not from a file, however
    /// confirmed, nor from pactum's defaults).
    pub fn named_by_the_operator(&self) -> bool {
        matches!(self.source, Source::Environment | Source::Flag | Source::Application)
    }
}

/// Whether the environment confirms the settings of repository files. The binary builds it
/// from `PACTUM_TRUST_CONFIG` and `--trust-config` (through `Config::apply_env`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    confirmed: bool,
}

impl Trust {
    /// Committed settings confirmed (`PACTUM_TRUST_CONFIG=1`, `--trust-config`).
    pub fn confirmed() -> Trust {
        Trust { confirmed: true }
    }

    /// Nothing confirmed.
    pub fn none() -> Trust {
        Trust { confirmed: false }
    }

    /// The trust of a config the binary filled in from the environment.
    pub fn of(config: &crate::config::Config) -> Trust {
        Trust { confirmed: config.env.trust_config }
    }

    pub fn is_confirmed(&self) -> bool {
        self.confirmed
    }

    /// A value a repository file set (`setting`, e.g. `tools.crm.command`, in `file`): a
    /// permit when the environment confirms committed settings, else why not.
    pub fn confirm<T>(
        &self,
        value: T,
        file: &str,
        setting: &str,
    ) -> Result<Permit<T>, Unconfirmed> {
        if self.confirmed {
            Ok(Permit { value, source: Source::ConfirmedFile })
        } else {
            Err(Unconfirmed { file: file.to_string(), setting: setting.to_string() })
        }
    }
}

/// A committed setting the environment did not confirm: it does not act.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unconfirmed {
    /// The file that set it (`pactum.toml`).
    pub file: String,
    /// Its dotted name (`tools.crm.command`).
    pub setting: String,
}

/// How to confirm committed settings, for every message that says one was not.
pub const HOW_TO_CONFIRM: &str = "where you trust this checkout, set PACTUM_TRUST_CONFIG=1 or pass --trust-config (a pull request can change any file of it)";

impl Unconfirmed {
    /// `what` (e.g. "starts the program `python3`") for messages: the setting, the file, the
    /// rule and the fix.
    pub fn message(&self, what: &str) -> String {
        format!(
            "`{}` in {} {what}, and the environment does not confirm committed settings; {HOW_TO_CONFIRM}",
            self.setting, self.file
        )
    }

    /// The error a command that cannot go on without the setting fails with.
    pub fn into_error(self, what: &str) -> crate::Error {
        crate::Error::ConfigUnconfirmed { message: self.message(what) }
    }
}

/// The command that starts `program` (its first element; the rest are arguments). The
/// caller sets the environment, folder and streams. `None` when the list is empty.
pub fn command(program: &Permit<Vec<String>>) -> Option<Command> {
    let (name, args) = program.value.split_first()?;
    #[allow(clippy::disallowed_methods)] // the one door for starting programs
    let mut cmd = Command::new(name);
    cmd.args(args);
    Some(cmd)
}

/// The command that runs git, a program pactum names itself.
pub(crate) fn git() -> Command {
    #[allow(clippy::disallowed_methods)] // the one door for starting programs
    Command::new("git")
}

/// The command that runs OpenSSH's `ssh-keygen`, a program pactum names itself (it signs
/// and verifies registry events and ledger checkpoints as git signs commits).
pub(crate) fn ssh_keygen() -> Command {
    #[allow(clippy::disallowed_methods)] // the one door for starting programs
    Command::new("ssh-keygen")
}

/// A TCP connection to `address`, one of the addresses of a host a permit names (the
/// caller resolved it from the permitted value).
pub fn connect<T>(
    _named: &Permit<T>,
    address: &SocketAddr,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    #[allow(clippy::disallowed_methods)] // the one door for connections
    TcpStream::connect_timeout(address, timeout)
}

/// The scheme, host and port of an `http(s)://` URL, lower-cased (`None` for anything
/// else): what [`Outbound`] compares.
pub fn origin(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.trim().parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = uri.host()?.to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some(format!("{scheme}://{host}:{port}"))
}

/// An HTTP agent bound to one origin (scheme, host and port): every request it sends goes
/// to the origin its permit names, and a URL elsewhere is refused before anything is sent.
/// It follows no redirect, so an answer cannot send it on either.
#[derive(Clone, Debug)]
pub struct Outbound {
    agent: ureq::Agent,
    origin: String,
    source: Source,
}

impl Outbound {
    /// An agent for the origin of `url` with `config` (which must follow no redirect:
    /// `max_redirects(0)` is set here whatever it says); `Err` names a URL that is no
    /// `http(s)://` URL with a host.
    pub fn new(
        url: &Permit<String>,
        config: ureq::config::ConfigBuilder<ureq::typestate::AgentScope>,
    ) -> Result<Outbound, String> {
        let origin = origin(&url.value).ok_or_else(|| {
            format!(
                "`{}` is not an http:// or https:// URL with a host",
                crate::redact::shown_url(&url.value)
            )
        })?;
        let config = config.max_redirects(0).build();
        #[allow(clippy::disallowed_methods)] // the one door for outbound HTTP
        let agent = ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::new(),
            LiteralFirst::default(),
        );
        Ok(Outbound { agent, origin, source: url.source })
    }

    /// Where the permit came from.
    pub fn source(&self) -> Source {
        self.source
    }

    fn check(&self, url: &str) -> Result<(), String> {
        match origin(url) {
            Some(o) if o == self.origin => Ok(()),
            _ => Err(format!(
                "`{}` is not at {}, the only origin this connection may reach",
                crate::redact::shown_url(url),
                self.origin
            )),
        }
    }

    /// A `POST` to `url`, which must be at the permitted origin.
    pub fn post(
        &self,
        url: &str,
    ) -> Result<ureq::RequestBuilder<ureq::typestate::WithBody>, String> {
        self.check(url)?;
        Ok(self.agent.post(url))
    }

    /// A `DELETE` of `url`, which must be at the permitted origin.
    pub fn delete(
        &self,
        url: &str,
    ) -> Result<ureq::RequestBuilder<ureq::typestate::WithoutBody>, String> {
        self.check(url)?;
        Ok(self.agent.delete(url))
    }

    /// Sends a request built elsewhere (the OTLP exporter's), which must be for the
    /// permitted origin; `timeout` bounds it as a whole.
    pub fn run(
        &self,
        request: ureq::http::Request<Vec<u8>>,
        timeout: Duration,
    ) -> Result<ureq::http::Response<ureq::Body>, String> {
        self.check(&request.uri().to_string())?;
        let request = self.agent.configure_request(request).timeout_global(Some(timeout)).build();
        self.agent.run(request).map_err(|e| e.to_string())
    }
}

/// Resolves a host written as an IP address where it stands, any other name as ureq's
/// default resolver does (in a thread the call's timeout bounds). ureq resolves before every
/// request, a pooled connection's too, so a server at an address (a model server on
/// 127.0.0.1, a provider's IP) cost a thread per call: a tenth of an eval case's CPU over
/// HTTP (BENCHMARKS.md, issue 40).
#[derive(Debug, Default)]
struct LiteralFirst(ureq::unversioned::resolver::DefaultResolver);

impl ureq::unversioned::resolver::Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        match literal_address(uri) {
            Some(address) => {
                let mut addresses = self.empty();
                addresses.push(address);
                Ok(addresses)
            }
            None => self.0.resolve(uri, config, timeout),
        }
    }
}

/// The socket address of a URL whose host is an IP address (`http://127.0.0.1:8000`,
/// `https://[::1]/`), with the scheme's port when it names none.
fn literal_address(uri: &ureq::http::Uri) -> Option<SocketAddr> {
    let host = uri.host()?;
    let ip: std::net::IpAddr = host.trim_start_matches('[').trim_end_matches(']').parse().ok()?;
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })?;
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests play the application: their values are permits
mod tests {
    use super::*;

    #[test]
    fn a_committed_setting_is_a_permit_only_when_the_environment_confirms() {
        let refused =
            Trust::none().confirm(vec!["sh".to_string()], "pactum.toml", "tools.x.command");
        let why = refused.unwrap_err();
        assert_eq!(why.setting, "tools.x.command");
        let message = why.message("starts the program `sh`");
        assert!(
            message.contains("`tools.x.command` in pactum.toml starts the program `sh`"),
            "{message}"
        );
        assert!(message.contains("PACTUM_TRUST_CONFIG=1"), "{message}");
        let granted = Trust::confirmed().confirm(1, "pactum.toml", "x").unwrap();
        assert_eq!(granted.source(), Source::ConfirmedFile);
        assert!(!granted.named_by_the_operator());
        assert!(Permit::flag(1).named_by_the_operator());
        assert!(Permit::environment(1).named_by_the_operator());
        assert!(!Permit::pactum(1).named_by_the_operator());
    }

    #[test]
    fn an_address_written_as_one_is_resolved_where_it_stands() {
        let at = |url: &str| literal_address(&url.parse().unwrap());
        assert_eq!(at("http://127.0.0.1:8000/v1"), Some("127.0.0.1:8000".parse().unwrap()));
        assert_eq!(at("https://[::1]/v1"), Some("[::1]:443".parse().unwrap()));
        assert_eq!(at("http://10.0.0.2/"), Some("10.0.0.2:80".parse().unwrap()));
        // A name goes to the resolver (and its thread, bounded by the call's timeout).
        assert_eq!(at("http://localhost:8000/"), None);
        assert_eq!(at("https://api.openai.com/v1"), None);
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin("http://LocalHost:80/v1").as_deref(), Some("http://localhost:80"));
        assert_eq!(
            origin("https://api.example.com/v1/x").as_deref(),
            Some("https://api.example.com:443")
        );
        assert_eq!(origin("http://u:p@h:8080/").as_deref(), Some("http://h:8080"));
        assert_eq!(origin("file:///etc/passwd"), None);
        assert_eq!(origin("not a url"), None);
        assert_eq!(origin("http:///nohost"), None);
    }

    #[test]
    fn an_outbound_agent_sends_nowhere_but_its_origin() {
        let out = Outbound::new(
            &Permit::application("http://127.0.0.1:9/v1".to_string()),
            ureq::Agent::config_builder(),
        )
        .unwrap();
        assert!(out.post("http://127.0.0.1:9/v1/chat/completions").is_ok());
        for elsewhere in [
            "http://127.0.0.1:10/v1",
            "https://127.0.0.1:9/v1",
            "http://127.0.0.2:9/v1",
            "http://127.0.0.1:9@evil.example/v1",
            "ftp://127.0.0.1:9/",
        ] {
            let e = out.post(elsewhere).err().unwrap_or_else(|| panic!("{elsewhere} was allowed"));
            assert!(e.contains("the only origin"), "{e}");
            assert!(out.delete(elsewhere).is_err());
        }
        let request =
            ureq::http::Request::post("http://evil.example/v1/traces").body(Vec::new()).unwrap();
        assert!(out.run(request, Duration::from_secs(1)).unwrap_err().contains("the only origin"));
        assert!(
            Outbound::new(&Permit::application("file:///x".into()), ureq::Agent::config_builder())
                .is_err()
        );
    }

    #[test]
    fn an_empty_command_starts_nothing() {
        assert!(command(&Permit::application(Vec::new())).is_none());
        let cmd = command(&Permit::application(vec!["prog".into(), "a".into()])).unwrap();
        assert_eq!(cmd.get_program(), "prog");
        assert_eq!(cmd.get_args().collect::<Vec<_>>(), ["a"]);
    }
}
