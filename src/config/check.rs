//! Checking `pactum.toml` before it is deserialized: every syntax error, unknown key,
//! wrong type and out-of-range number, each with its line and column (`config_invalid`),
//! and the settings that could leak a secret (`config_insecure`, SPEC §18).
//!
//! Serde stops at the first problem; a config file in a pull request should show them all.
//! Numbers are bounded so that nothing downstream can overflow or panic on them (a
//! `timeout_s` of `1e300` is not a duration).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::error::Located;

/// What a setting holds.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Flag,
    /// An integer in this closed range.
    Integer(i64, i64),
    /// A number (integer or float) in `(0, max]`.
    Positive(f64),
    /// A number (integer or float) in `[0, max]`.
    NonNegative(f64),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An array of strings.
    TextList,
    /// A table whose values are strings.
    TextTable,
}

const PROJECT: &[(&str, Kind)] = &[("deprecation_days", Kind::Integer(0, 36_500))];
const DEFAULTS: &[(&str, Kind)] =
    &[("provider", Kind::Text), ("timeout_s", Kind::Positive(3600.0)), ("model", Kind::Text)];
const RETRY: &[(&str, Kind)] = &[
    ("attempts", Kind::Integer(1, 10)),
    ("base_delay_ms", Kind::Integer(0, 60_000)),
    ("max_delay_ms", Kind::Integer(0, 600_000)),
    ("max_retry_after_s", Kind::Integer(0, 3600)),
];
const PROVIDER: &[(&str, Kind)] = &[
    ("kind", Kind::OneOf(crate::gateway::KINDS)),
    ("base_url", Kind::Text),
    ("model", Kind::Text),
    ("api_key_env", Kind::Text),
    ("fixtures", Kind::Text),
    ("cassette", Kind::Text),
    ("mode", Kind::OneOf(&["replay", "record"])),
    ("record_with", Kind::Text),
    ("max_completion_tokens", Kind::Flag),
    ("system_messages", Kind::Flag),
];
const PRICE: &[(&str, Kind)] = &[
    ("prompt_per_mtok", Kind::NonNegative(1_000_000.0)),
    ("completion_per_mtok", Kind::NonNegative(1_000_000.0)),
];
const GATE: &[(&str, Kind)] =
    &[("eval", Kind::Flag), ("provider", Kind::Text), ("signers", Kind::Text)];
const LINT: &[(&str, Kind)] = &[("select", Kind::TextList), ("ignore", Kind::TextList)];
const TOOLS: &[(&str, Kind)] = &[
    ("command", Kind::TextList),
    ("url", Kind::Text),
    ("allow", Kind::TextList),
    ("timeout_s", Kind::Positive(3600.0)),
    ("prefix", Kind::Text),
    ("rename", Kind::TextTable),
];
const TELEMETRY: &[(&str, Kind)] = &[("otlp_endpoint", Kind::Text), ("content", Kind::Flag)];
const GENERATE: &[(&str, Kind)] = &[("python", Kind::Text), ("typescript", Kind::Text)];
const LEDGER: &[(&str, Kind)] = &[("inputs", Kind::Flag), ("url", Kind::Text)];
const SECTIONS: &[&str] = &[
    "project",
    "defaults",
    "providers",
    "retry",
    "lint",
    "prices",
    "gate",
    "tools",
    "telemetry",
    "generate",
    "ledger",
];

struct Checker<'t> {
    text: &'t str,
    out: Vec<Located>,
}

impl Checker<'_> {
    fn push(&mut self, span: Range<usize>, key: &str, message: String) {
        let (line, column) = crate::source::line_col(self.text, span.start);
        self.out.push(Located { line, column, key: key.to_string(), message });
    }

    fn table(&mut self, value: &Spanned<DeValue<'_>>, at: &str, keys: &[(&str, Kind)]) {
        let Some(table) = value.get_ref().as_table() else {
            self.push(value.span(), at, format!("`{at}` must be a table ([{at}])"));
            return;
        };
        for (key, value) in table.iter() {
            let name = key.get_ref().as_ref();
            let dotted = format!("{at}.{name}");
            match keys.iter().find(|(k, _)| *k == name) {
                Some((_, kind)) => self.value(value, &dotted, *kind),
                None => {
                    let known: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
                    let close: Vec<&str> = known
                        .iter()
                        .copied()
                        .filter(|k| crate::id::levenshtein(k, name) <= 2)
                        .collect();
                    let hint = match close.as_slice() {
                        [one] => format!("did you mean `{one}`?"),
                        _ => format!("expected one of {}", known.join(", ")),
                    };
                    self.push(key.span(), &dotted, format!("unknown setting `{dotted}`; {hint}"));
                }
            }
        }
    }

    fn value(&mut self, value: &Spanned<DeValue<'_>>, key: &str, kind: Kind) {
        let v = value.get_ref();
        // Numbers are quoted as written (`1e300`, not 301 digits).
        let written = self.text.get(value.span()).unwrap_or("").trim().to_string();
        let problem = match kind {
            Kind::Text => (!v.is_str()).then(|| format!("`{key}` must be a string")),
            Kind::Flag => (!v.is_bool()).then(|| format!("`{key}` must be true or false")),
            Kind::TextList => match v.as_array() {
                Some(items) if items.iter().all(|i| i.get_ref().is_str()) => None,
                _ => Some(format!("`{key}` must be a list of strings")),
            },
            Kind::TextTable => match v.as_table() {
                Some(t) if t.values().all(|i| i.get_ref().is_str()) => None,
                _ => Some(format!("`{key}` must be a table of strings (`{{\"old\" = \"new\"}}`)")),
            },
            Kind::OneOf(allowed) => match v.as_str() {
                Some(s) if allowed.contains(&s) => None,
                Some(s) => Some(format!("`{key}` = `{s}` is not one of {}", allowed.join(", "))),
                None => Some(format!("`{key}` must be one of {}", allowed.join(", "))),
            },
            Kind::Integer(min, max) => match integer(v) {
                Some(n) if (i128::from(min)..=i128::from(max)).contains(&n) => None,
                Some(_) => Some(format!("`{key}` = {written} is out of range; use {min} to {max}")),
                None => Some(format!("`{key}` must be a whole number from {min} to {max}")),
            },
            Kind::NonNegative(max) => match number(v) {
                Some(x) if (0.0..=max).contains(&x) => None,
                Some(_) => Some(format!(
                    "`{key}` = {written} is out of range; use a number from 0 to {max}"
                )),
                None => Some(format!("`{key}` must be a number from 0 to {max}")),
            },
            Kind::Positive(max) => match number(v) {
                Some(x) if x > 0.0 && x <= max => None,
                Some(_) => Some(format!(
                    "`{key}` = {written} is out of range; use a number above 0 and at most {max}"
                )),
                None => Some(format!("`{key}` must be a number above 0 and at most {max}")),
            },
        };
        if let Some(message) = problem {
            self.push(value.span(), key, message);
        }
    }
}

impl Checker<'_> {
    /// `[tools.NAME]`: the keys of [`TOOLS`], exactly one of `command` (a non-empty list)
    /// and `url` (http or https).
    fn tool_server(&mut self, name: &str, span: Range<usize>, server: &Spanned<DeValue<'_>>) {
        let at = format!("tools.{name}");
        self.table(server, &at, TOOLS);
        let Some(t) = server.get_ref().as_table() else { return };
        match (t.get("command"), t.get("url")) {
            (None, None) => self.push(
                span,
                &at,
                format!("`{at}` has neither `command` (a stdio server) nor `url` (a streamable HTTP server); set one"),
            ),
            (Some(_), Some(url)) => self.push(
                url.span(),
                &format!("{at}.url"),
                format!("`{at}` has both `command` and `url`; a server is one or the other"),
            ),
            (Some(command), None) => {
                if command.get_ref().as_array().is_some_and(|a| a.is_empty()) {
                    self.push(
                        command.span(),
                        &format!("{at}.command"),
                        format!("`{at}.command` is empty; name the program and its arguments, e.g. [\"python3\", \"tools/server.py\"]"),
                    );
                }
            }
            (None, Some(url)) => {
                if let Some(text) = url.get_ref().as_str() {
                    let lower = text.trim().to_ascii_lowercase();
                    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                        self.push(
                            url.span(),
                            &format!("{at}.url"),
                            format!(
                                "`{at}.url` = `{}` is not an http:// or https:// URL",
                                crate::redact::shown_url(text)
                            ),
                        );
                    }
                }
            }
        }
    }
}

fn integer(v: &DeValue<'_>) -> Option<i128> {
    let i = v.as_integer()?;
    i128::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok()
}

fn number(v: &DeValue<'_>) -> Option<f64> {
    match v {
        DeValue::Integer(_) => integer(v).map(|n| n as f64),
        DeValue::Float(f) => f.as_str().replace('_', "").parse::<f64>().ok(),
        _ => None,
    }
}

/// Every problem with the text as a config file, in file order.
pub(super) fn check(text: &str) -> Vec<Located> {
    let (doc, errors) = DeTable::parse_recoverable(text);
    let mut c = Checker { text, out: Vec::new() };
    if !errors.is_empty() {
        for e in errors {
            let span = e.span().unwrap_or(0..0);
            c.push(span, "", e.message().trim().to_string());
        }
        return c.out;
    }
    for (key, value) in doc.get_ref().iter() {
        match key.get_ref().as_ref() {
            "project" => c.table(value, "project", PROJECT),
            "defaults" => c.table(value, "defaults", DEFAULTS),
            "retry" => c.table(value, "retry", RETRY),
            "lint" => match value.get_ref().as_table() {
                Some(lint) => {
                    for (name, v) in lint.iter() {
                        let key = format!("lint.{}", name.get_ref());
                        match name.get_ref().as_ref() {
                            "per-path-ignores" => match v.get_ref().as_table() {
                                Some(paths) => {
                                    for (glob, codes) in paths.iter() {
                                        let at = format!("{key}.\"{}\"", glob.get_ref());
                                        c.value(codes, &at, Kind::TextList);
                                    }
                                }
                                None => c.push(v.span(), &key, format!("`{key}` must be a table of path globs to code lists")),
                            },
                            other => match LINT.iter().find(|(k, _)| *k == other) {
                                Some((_, kind)) => c.value(v, &key, *kind),
                                None => c.push(name.span(), &key, format!("unknown setting `{key}`; expected one of select, ignore, per-path-ignores")),
                            },
                        }
                    }
                }
                None => c.push(value.span(), "lint", "`lint` must be a table ([lint])".into()),
            },
            "gate" => c.table(value, "gate", GATE),
            "telemetry" => c.table(value, "telemetry", TELEMETRY),
            "generate" => c.table(value, "generate", GENERATE),
            "ledger" => c.table(value, "ledger", LEDGER),
            "prices" => match value.get_ref().as_table() {
                Some(prices) => {
                    for (model, price) in prices.iter() {
                        c.table(price, &format!("prices.\"{}\"", model.get_ref()), PRICE);
                    }
                }
                None => c.push(value.span(), "prices", "`prices` must be a table".into()),
            },
            "providers" => match value.get_ref().as_table() {
                Some(providers) => {
                    for (name, provider) in providers.iter() {
                        let at = format!("providers.{}", name.get_ref());
                        c.table(provider, &at, PROVIDER);
                        if provider.get_ref().as_table().is_some_and(|t| t.get("kind").is_none()) {
                            c.push(
                                name.span(),
                                &at,
                                format!(
                                    "`{at}` has no `kind`; set one of {}",
                                    crate::gateway::KINDS.join(", ")
                                ),
                            );
                        }
                    }
                }
                None => c.push(value.span(), "providers", "`providers` must be a table".into()),
            },
            "tools" => match value.get_ref().as_table() {
                Some(servers) => {
                    for (name, server) in servers.iter() {
                        c.tool_server(name.get_ref(), name.span(), server);
                    }
                }
                None => c.push(value.span(), "tools", "`tools` must be a table".into()),
            },
            other => {
                c.push(
                    key.span(),
                    other,
                    format!("unknown section `{other}`; expected one of {}", SECTIONS.join(", ")),
                );
            }
        }
    }
    c.out.sort_by_key(|p| (p.line, p.column));
    c.out
}

/// Whether an API key may be sent to `url`: `https://`, or plain `http://` to a loopback
/// address only.
pub fn key_may_go_to(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("https://") || (lower.starts_with("http://") && is_loopback_url(&lower))
}

/// Whether `url` (http or https) names this machine: `localhost`, `*.localhost` or a
/// loopback address.
pub fn is_loopback_url(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `name` may be read as an API key variable: `SOMETHING_API_KEY`.
pub fn is_key_variable(name: &str) -> bool {
    name.strip_suffix("_API_KEY").is_some_and(|stem| {
        !stem.is_empty()
            && stem.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Settings of a (syntactically valid) config that could leak a secret: an `api_key_env`
/// that names any variable but an API key, and a key sent over plain http to a host that
/// is not this machine.
pub(super) fn insecure(text: &str) -> Vec<Located> {
    let Ok(doc) = DeTable::parse(text) else { return Vec::new() };
    let mut c = Checker { text, out: Vec::new() };
    if let Some(url) = doc
        .get_ref()
        .get("telemetry")
        .and_then(|t| t.get_ref().as_table())
        .and_then(|t| t.get("otlp_endpoint"))
        && let Some(text) = url.get_ref().as_str()
        && (crate::redact::mask_url_credentials(text) != text || text.contains('?'))
    {
        c.push(
            url.span(),
            "telemetry.otlp_endpoint",
            format!(
                "`telemetry.otlp_endpoint` = `{}` holds credentials in a committed file; give the collector's URL alone, and its token in OTEL_EXPORTER_OTLP_HEADERS (e.g. `Authorization=Bearer ...`)",
                crate::redact::shown_url(text)
            ),
        );
    }
    if let Some(url) =
        doc.get_ref().get("ledger").and_then(|t| t.get_ref().as_table()).and_then(|t| t.get("url"))
        && let Some(text) = url.get_ref().as_str()
        && text.split_once("://").is_some_and(|(_, rest)| {
            rest.split(['/', '?'])
                .next()
                .and_then(|a| a.rsplit_once('@'))
                .is_some_and(|(u, _)| u.contains(':'))
        })
    {
        c.push(
            url.span(),
            "ledger.url",
            format!(
                "`ledger.url` = `{}` holds a password in a committed file; give the URL without it, and the password in PGPASSWORD",
                crate::redact::shown_url(text)
            ),
        );
    }
    let Some(providers) = doc.get_ref().get("providers").and_then(|p| p.get_ref().as_table())
    else {
        return c.out;
    };
    for (name, provider) in providers.iter() {
        let Some(p) = provider.get_ref().as_table() else { continue };
        let at = format!("providers.{}", name.get_ref());
        let key_env = p.get("api_key_env");
        if let Some(var) = key_env
            && let Some(text) = var.get_ref().as_str()
            && !is_key_variable(text)
        {
            c.push(
                var.span(),
                &format!("{at}.api_key_env"),
                format!(
                    "`{at}.api_key_env` = `{text}` is not an API key variable: pactum reads only variables named `*_API_KEY` (a committed config could otherwise send any secret of the environment, such as GITHUB_TOKEN, to its base_url); rename the variable, e.g. `{}_API_KEY`",
                    name.get_ref().to_ascii_uppercase().replace('-', "_")
                ),
            );
        }
        let sends_key = matches!(
            p.get("kind").and_then(|k| k.get_ref().as_str()),
            Some("openai" | "anthropic")
        ) && key_env.is_some();
        if sends_key
            && let Some(url) = p.get("base_url")
            && let Some(text) = url.get_ref().as_str()
            && !key_may_go_to(text)
        {
            c.push(
                url.span(),
                &format!("{at}.base_url"),
                format!(
                    "`{at}` would send its API key to `{}` without https; use an https:// URL, or http:// only to this machine (localhost, 127.0.0.1, [::1])",
                    crate::redact::shown_url(text)
                ),
            );
        }
    }
    c.out.sort_by_key(|p| (p.line, p.column));
    c.out
}

/// The settings of a (syntactically valid) config that would act on the world once the
/// environment confirms them (SPEC §24, [`crate::authority`]): a tool server's `command`
/// (starts a program) or `url`, the telemetry endpoint and `content`, a provider's
/// `base_url` (contacts a host, sends content). Each with its position and a message that
/// says what it would do; `validate` reports them as `config_unconfirmed` warnings when the
/// environment does not confirm them.
pub(super) fn acting(text: &str) -> Vec<Located> {
    let Ok(doc) = DeTable::parse(text) else { return Vec::new() };
    let mut c = Checker { text, out: Vec::new() };
    let top = doc.get_ref();
    if let Some(tools) = top.get("tools").and_then(|t| t.get_ref().as_table()) {
        for (name, server) in tools.iter() {
            let Some(server) = server.get_ref().as_table() else { continue };
            let at = format!("tools.{}", name.get_ref());
            if let Some(command) = server.get("command") {
                let program = command
                    .get_ref()
                    .as_array()
                    .and_then(|a| a.first())
                    .and_then(|p| p.get_ref().as_str())
                    .unwrap_or("");
                c.push(
                    command.span(),
                    &format!("{at}.command"),
                    format!(
                        "`{at}.command` starts the program `{}`",
                        crate::terminal::escape_line(program)
                    ),
                );
            }
            if let Some(url) = server.get("url") {
                let shown =
                    url.get_ref().as_str().map(crate::redact::shown_url).unwrap_or_default();
                c.push(url.span(), &format!("{at}.url"), format!("`{at}.url` contacts {shown}"));
            }
        }
    }
    if let Some(url) =
        top.get("ledger").and_then(|t| t.get_ref().as_table()).and_then(|t| t.get("url"))
    {
        let shown = url.get_ref().as_str().map(crate::redact::shown_url).unwrap_or_default();
        c.push(url.span(), "ledger.url", format!("`ledger.url` writes the ledger to {shown}"));
    }
    if let Some(telemetry) = top.get("telemetry").and_then(|t| t.get_ref().as_table()) {
        if let Some(url) = telemetry.get("otlp_endpoint") {
            let shown = url.get_ref().as_str().map(crate::redact::shown_url).unwrap_or_default();
            c.push(
                url.span(),
                "telemetry.otlp_endpoint",
                format!("`telemetry.otlp_endpoint` sends spans to {shown}"),
            );
        }
        if let Some(content) = telemetry.get("content")
            && content.get_ref().as_bool() == Some(true)
        {
            c.push(
                content.span(),
                "telemetry.content",
                "`telemetry.content` sends prompts and replies on the spans".to_string(),
            );
        }
    }
    if let Some(providers) = top.get("providers").and_then(|t| t.get_ref().as_table()) {
        for (name, provider) in providers.iter() {
            let Some(p) = provider.get_ref().as_table() else { continue };
            let online = matches!(
                p.get("kind").and_then(|k| k.get_ref().as_str()),
                Some("openai" | "anthropic")
            );
            if let Some(url) = p.get("base_url").filter(|_| online) {
                let at = format!("providers.{}.base_url", name.get_ref());
                let shown =
                    url.get_ref().as_str().map(crate::redact::shown_url).unwrap_or_default();
                c.push(
                    url.span(),
                    &at,
                    format!("`{at}` sends requests (prompts, and an API key) to {shown}"),
                );
            }
        }
    }
    c.out.sort_by_key(|p| (p.line, p.column));
    c.out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<(usize, usize, String)> {
        check(text).into_iter().map(|p| (p.line, p.column, p.key)).collect()
    }

    #[test]
    fn every_bad_key_is_reported_with_its_position() {
        let text = "[project]\ndeprecation_dayz = 3\n[defaults]\ntimeout_s = 1e300\nprovider = 7\n[retry]\nattempts = -1\n[sugar]\nx = 1\n[providers.a]\nkind = \"gpt\"\nbase = \"x\"\n";
        assert_eq!(
            problems(text),
            vec![
                (2, 1, "project.deprecation_dayz".to_string()),
                (4, 13, "defaults.timeout_s".to_string()),
                (5, 12, "defaults.provider".to_string()),
                (7, 12, "retry.attempts".to_string()),
                (8, 2, "sugar".to_string()),
                (11, 8, "providers.a.kind".to_string()),
                (12, 1, "providers.a.base".to_string()),
            ]
        );
        assert!(check("[project]\ndeprecation_days = 3\n").is_empty());
        let prices = "[prices.\"gpt-4o\"]\nprompt_per_mtok = 2.5\ncompletion_per_mtok = -1\ncached = 1\n[gate]\neval = \"yes\"\nprovider = \"ci\"\n";
        assert_eq!(
            problems(prices),
            vec![
                (3, 23, "prices.\"gpt-4o\".completion_per_mtok".to_string()),
                (4, 1, "prices.\"gpt-4o\".cached".to_string()),
                (6, 8, "gate.eval".to_string()),
            ]
        );
        let syntax = check("[project\nx = \n");
        assert!(!syntax.is_empty() && syntax[0].line == 1, "{syntax:?}");
    }

    #[test]
    fn tool_servers_have_exactly_one_transport() {
        let ok = "[tools.crm]\ncommand = [\"python3\", \"crm.py\"]\nallow = [\"lookup\"]\ntimeout_s = 5\n[tools.web]\nurl = \"http://127.0.0.1:8931/mcp\"\n";
        assert!(check(ok).is_empty(), "{:?}", check(ok));
        let bad = "[tools.a]\nallow = [\"x\"]\n[tools.b]\ncommand = [\"x\"]\nurl = \"http://h\"\n[tools.c]\ncommand = []\n[tools.d]\nurl = \"ftp://h\"\ntimeout_s = 0\nargs = 1\n[tools.e]\ncommand = \"python3 x.py\"\n";
        let found: Vec<(usize, String)> = check(bad).into_iter().map(|p| (p.line, p.key)).collect();
        assert_eq!(
            found,
            [
                (1, "tools.a".to_string()),
                (5, "tools.b.url".to_string()),
                (7, "tools.c.command".to_string()),
                (9, "tools.d.url".to_string()),
                (10, "tools.d.timeout_s".to_string()),
                (11, "tools.d.args".to_string()),
                (13, "tools.e.command".to_string()),
            ]
        );
    }

    #[test]
    fn keys_go_only_over_https_or_to_this_machine() {
        for ok in [
            "https://api.openai.com/v1",
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080",
            "http://[::1]:80/x",
            "HTTP://LOCALHOST",
        ] {
            assert!(key_may_go_to(ok), "{ok}");
        }
        for bad in [
            "http://example.com/v1",
            "http://10.0.0.5:8080",
            "http://localhost.evil.com",
            "ftp://x",
            "http://127.0.0.1.evil.com",
        ] {
            assert!(!key_may_go_to(bad), "{bad}");
        }
        assert!(is_key_variable("OPENAI_API_KEY") && is_key_variable("MY_LLM_2_API_KEY"));
        for bad in ["GITHUB_TOKEN", "_API_KEY", "openai_api_key", "AWS_SECRET_ACCESS_KEY"] {
            assert!(!is_key_variable(bad), "{bad}");
        }
    }

    #[test]
    fn insecure_settings_are_named_at_their_position() {
        let text = "[providers.x]\nkind = \"openai\"\nbase_url = \"http://user:pw@evil.example/v1\"\napi_key_env = \"GITHUB_TOKEN\"\n";
        let found: Vec<(usize, String)> =
            insecure(text).into_iter().map(|p| (p.line, p.message)).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, 3);
        assert!(!found[0].1.contains("pw@"), "credentials are masked: {}", found[0].1);
        assert_eq!(found[1].0, 4);
        assert!(insecure("[providers.x]\nkind = \"openai\"\nbase_url = \"http://localhost:1/v1\"\napi_key_env = \"X_API_KEY\"\n").is_empty());
        let telemetry = "[telemetry]\notlp_endpoint = \"https://u:hunter2@otel.example\"\n";
        let found = insecure(telemetry);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].key.as_str()), (2, "telemetry.otlp_endpoint"));
        assert!(!found[0].message.contains("hunter2"), "{}", found[0].message);
        assert!(insecure("[telemetry]\notlp_endpoint = \"http://localhost:4318\"\n").is_empty());
    }
}
