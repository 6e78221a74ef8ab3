//! `--otlp URL` and `--otlp-content` (SPEC §22), for `run`, `worker` and `eval` alike: the
//! exporter observes the ledgers the command writes, and says at the end what its collector
//! did not take.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use pactum::authority::Permit;
use pactum::config::Config;
use pactum::error::{Code, Error};
use pactum::ledger::Ledger;
use pactum::telemetry::{Settings, Telemetry};

use crate::output;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct OtlpArgs {
    /// Send every exchange, tool call and work order as OpenTelemetry spans (GenAI
    /// conventions, OTLP/HTTP) to this collector: its base URL (http://localhost:4318) or
    /// its /v1/traces URL. Default: OTEL_EXPORTER_OTLP_ENDPOINT, else [telemetry]
    /// otlp_endpoint in pactum.toml.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// Put prompt and reply text (secrets masked) on the spans; without it spans carry
    /// hashes, ids, models, token counts and verdicts only.
    #[arg(long)]
    pub otlp_content: bool,
}

/// A command's exporter, when one is configured. Dropped unfinished (a command that failed
/// half way), it finishes then: the spans of what did run still go out.
#[derive(Default)]
pub struct Exporter {
    telemetry: Option<Arc<Telemetry>>,
    finished: AtomicBool,
}

impl OtlpArgs {
    /// Starts the exporter `config` and these arguments ask for (none when no collector is
    /// named); `instance` is the worker's id.
    pub fn start(&self, config: &Config, instance: Option<&str>) -> Result<Exporter, Error> {
        #[allow(clippy::disallowed_methods)] // the flag's value: the operator named it
        let flag = self.otlp.clone().map(Permit::flag);
        let chosen = Settings::choose(flag.as_ref(), self.otlp_content, config, instance)?;
        for ignored in &chosen.ignored {
            output::eprint_warning(Code::ConfigUnconfirmed, ignored);
        }
        let settings = chosen.settings;
        if let Some(s) = &settings {
            mask_collector_secrets(s.endpoint.get());
        }
        let telemetry =
            settings.map(|s| Telemetry::start(&s, output::redactor().clone())).transpose()?;
        Ok(Exporter { telemetry, finished: AtomicBool::new(false) })
    }
}

impl Exporter {
    /// `ledger`, its records exported as spans from now on.
    pub fn attach(&self, ledger: Ledger) -> Ledger {
        match &self.telemetry {
            Some(t) => ledger.observed_by(t.clone()),
            None => ledger,
        }
    }

    /// Sends what is queued and stops; a warning on stderr when the collector did not take
    /// every span (the run's own result stands: telemetry never fails a run).
    pub fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(problem) = self.telemetry.as_ref().and_then(|t| t.finish().problem()) {
            output::eprint_warning(Code::OtlpExportFailed, &problem);
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The collector's headers the environment holds, for an endpoint the command line names.
pub fn env_headers() -> pactum::telemetry::Headers {
    ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"]
        .into_iter()
        .find_map(|name| output::env_lookup(name).filter(|v| !v.is_empty()))
        .map(|list| pactum::telemetry::Headers::parse(&list))
        .unwrap_or_default()
}

/// The collector's token (the values of OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, which the OTLP
/// exporter reads itself) and the credentials of its URL are masked wherever pactum prints,
/// records or exports, in every form the exporter sends them.
pub fn mask_collector_secrets(endpoint: &str) {
    let headers: Vec<String> = ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]
        .into_iter()
        .filter_map(output::env_lookup)
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    for secret in pactum::telemetry::collector_secrets(&headers, Some(endpoint)) {
        output::redactor().add(&secret);
    }
}
