//! One-line fields stay on one line and secrets stay masked (issue 44): a value from a
//! file printed on one line of text output (a history event's actor, a file name, an error
//! message) cannot print a line of its own, and a secret in a provider base URL's query is
//! masked like a key, in every encoding.

use std::path::Path;

use crate::common::{Out, copy_shipped, copy_tree, pactum_in, repo};

/// A line feed, then what a forged line would say.
const FORGED: &str = "\nerror[contract_hash_mismatch]: forged";

/// Whether any line of `text` starts (after white space) like the forged one.
fn has_forged_line(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("error[contract_hash_mismatch]: forged"))
}

#[test]
fn an_actor_with_a_line_feed_stays_on_its_event_line_in_registry_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    Out::of(pactum_in(root).args(["init"])).status(0);
    let actor = "mallory\n  99  2026-01-01T00:00:00Z  promote   PRC-EVIL-001@9.9.9";
    Out::of(pactum_in(root).args(["new", "contract", "PRC-LOG-001"]).env("PACTUM_ACTOR", actor))
        .status(0);
    crate::common::write_placeholders(root);
    let out = Out::of(pactum_in(root).args(["registry", "log", "PRC-LOG-001"]));
    out.status(0);
    // One event, one line: the actor's line feed is shown as `\n`.
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].ends_with("mallory\\n  99  2026-01-01T00:00:00Z  promote   PRC-EVIL-001@9.9.9")
    );
    // The JSON keeps the exact value.
    let doc = Out::of(pactum_in(root).args(["registry", "log", "PRC-LOG-001", "--json"])).json();
    assert_eq!(doc["events"][0]["actor"], actor);
}

#[test]
fn a_file_name_with_a_line_feed_prints_no_finding_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    Out::of(pactum_in(root).args(["init"])).status(0);
    let name = format!("a{FORGED}.json");
    std::fs::create_dir_all(root.join("contracts/x")).unwrap();
    std::fs::write(root.join("contracts/x").join(&name), "{ not json").unwrap();
    for args in
        [&["validate"][..], &["validate", "contracts/x"], &["validate", "--format", "github"]]
    {
        let out = Out::of(pactum_in(root).args(args));
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(!has_forged_line(&out.stdout), "{args:?}: {out}");
    }
    let out = Out::of(pactum_in(root).args(["validate"]));
    assert!(
        out.stdout
            .contains(" --> contracts/x/a\\nerror[contract_hash_mismatch]: forged.json:1:3\n"),
        "{out}"
    );
    // GitHub annotations: one command per finding, the file name escaped in its property.
    let out = Out::of(pactum_in(root).args(["validate", "--format", "github"]));
    let commands: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(commands.len(), 1, "{out}");
    assert!(
        commands[0].contains("file=contracts/x/a%0Aerror[contract_hash_mismatch]%3A forged.json"),
        "{out}"
    );
}

#[test]
fn an_error_naming_a_path_with_a_line_feed_stays_on_one_line_on_stderr() {
    // A variant: another command, another printer (stderr's `error[...]` line).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    Out::of(pactum_in(root).args(["init"])).status(0);
    let out = Out::of(pactum_in(root).args(["run", &format!("work_orders/missing{FORGED}.json")]));
    assert_eq!(out.code, 2, "{out}");
    assert!(!has_forged_line(&out.stderr), "{out}");
    assert_eq!(out.stderr.lines().filter(|l| l.starts_with("error[")).count(), 1, "{out}");
}

/// The repository's demo project, copied: contracts, packs, work orders and fixtures.
fn demo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_shipped(dir.path());
    for folder in ["work_orders", "fixtures", "frameworks"] {
        copy_tree(&repo().join(folder), &dir.path().join(folder));
    }
    dir
}

/// `run` of the classify demo against a provider that refuses connections, with
/// `OPENAI_BASE_URL` set to `base_url`: stderr and the ledger's text.
fn run_against(root: &Path, base_url: &str) -> (Out, String) {
    let out = Out::of(
        pactum_in(root)
            .args(["run", "work_orders/WO-DEMO-CLASSIFY-001.json", "--provider", "openai"])
            .env("OPENAI_API_KEY", "sk-test-0123456789")
            .env("OPENAI_BASE_URL", base_url)
            .env("PACTUM_MODEL", "m"),
    );
    let ledger = std::fs::read_to_string(root.join(".pactum/ledger.jsonl")).unwrap_or_default();
    (out, ledger)
}

#[test]
fn a_secret_in_the_base_urls_query_is_masked_like_a_key() {
    let dir = demo();
    let root = dir.path();
    let secret = "QUERYSECRET-42xyz";
    let (out, ledger) = run_against(
        root,
        &format!("http://127.0.0.1:9/v1?api-version=2024-02-01&api-key={secret}"),
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("api-key=[redacted]"), "the URL is still named: {out}");
    assert!(!ledger.is_empty());
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("ledger", &ledger)] {
        assert!(!text.contains(secret), "{what}: {text}");
    }
    // A parameter that is no credential is not masked.
    assert!(out.stderr.contains("api-version=2024-02-01"), "{out}");
}

#[test]
fn a_percent_encoded_query_secret_is_masked_decoded_and_in_base64_too() {
    // A variant: the key written percent-encoded in the URL, and the input carrying it
    // decoded and in base64 (what the ledger records of the exchange).
    let dir = demo();
    let root = dir.path();
    let decoded = "tok+en/QUERY-77abc";
    let encoded = "tok%2Ben%2FQUERY-77abc";
    let b64 = base64(decoded.as_bytes());
    let wo = root.join("work_orders/WO-DEMO-CLASSIFY-001.json");
    let text = std::fs::read_to_string(&wo).unwrap();
    let from = "\"user_input\": \"";
    assert!(text.contains(from));
    std::fs::write(&wo, text.replacen(from, &format!("{from}{decoded} {b64} "), 1)).unwrap();
    let (out, ledger) = run_against(root, &format!("http://127.0.0.1:9/v1?access_token={encoded}"));
    assert_eq!(out.code, 1, "{out}");
    assert!(ledger.contains("[redacted]"), "{ledger}");
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("ledger", &ledger)] {
        for form in [decoded, encoded, b64.as_str()] {
            assert!(!text.contains(form), "{what} holds {form}: {text}");
        }
    }
}

#[test]
fn secrets_in_the_base_urls_path_code_parameter_and_fragment_are_masked_too() {
    // Variants of the query secret: a token as a path segment, Azure Functions' `?code=`,
    // and a fragment (never sent, never shown).
    let dir = demo();
    let root = dir.path();
    let (path_token, code, fragment) = ("Xy7Qw9Zr2Lm4Np6Tv8Ks", "fnc0de-Secret", "frag-T0KEN-9");
    let (out, ledger) = run_against(
        root,
        &format!("http://127.0.0.1:9/tenant/{path_token}/v1?code={code}&api-version=1#{fragment}"),
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(!ledger.is_empty());
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("ledger", &ledger)] {
        for secret in [path_token, code, fragment] {
            assert!(!text.contains(secret), "{what} holds {secret}: {text}");
        }
    }
}

/// Shapes the first rules missed: user-info without a scheme or with a `/` in the password,
/// a lower-case hex or base64 token in the path, a `;key=` path parameter, `?pwd=` and
/// `?jwt=`; and a pactum.toml base URL refused as insecure, or named by `validate`, which
/// no environment variable taught the masker.
#[test]
fn every_shape_of_a_url_secret_is_masked_in_every_message() {
    let dir = demo();
    let root = dir.path();
    for (url, secret) in [
        ("user:pwSECRET77@127.0.0.1:9/v1", "pwSECRET77"),
        ("//user:pwSECRET77@127.0.0.1:9/v1", "pwSECRET77"),
        ("http:/user:pwSECRET77@127.0.0.1:9/v1", "pwSECRET77"),
        ("http://u:Ab/Secret96@127.0.0.1:9/v1", "Secret96"),
        ("http://127.0.0.1:9/v1/a1b2c3d4e5f6a7b8c9d0e1f2/x", "a1b2c3d4e5f6a7b8c9d0e1f2"),
        ("http://127.0.0.1:9/v1/AbCdEf1234567890XyZq+/x", "AbCdEf1234567890XyZq"),
        ("http://127.0.0.1:9/v1;key=AbCdEf12345/x", "AbCdEf12345"),
        ("http://127.0.0.1:9/v1?pwd=hunter2pw", "hunter2pw"),
        ("http://127.0.0.1:9/v1?jwt=eyJabc.def", "eyJabc.def"),
    ] {
        let _ = std::fs::remove_file(root.join(".pactum/ledger.jsonl"));
        let (out, ledger) = run_against(root, url);
        assert_ne!(out.code, 0, "{url}: {out}");
        for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("ledger", &ledger)]
        {
            assert!(!text.contains(secret), "{url}: {what} holds {secret}: {text}");
        }
    }
    // A committed base URL: refused as insecure (run), named as unconfirmed (validate).
    let (token, key, fragment) = ("Xy7Qw9Zr2Lm4Np6Tv8Ks", "TOMLSECRET-1", "frag-T0KEN-9");
    for (host, args) in [
        (
            "http://evil.example",
            &["run", "work_orders/WO-DEMO-CLASSIFY-001.json", "--provider", "p"][..],
        ),
        (
            "http://evil.example",
            &["run", "work_orders/WO-DEMO-CLASSIFY-001.json", "--provider", "p", "--json"][..],
        ),
        ("https://h.example", &["validate", "--json"][..]),
        ("https://h.example", &["validate"][..]),
    ] {
        std::fs::write(
            root.join("pactum.toml"),
            format!("[providers.p]\nkind = \"openai\"\nbase_url = \"{host}/t/{token}/v1?api-key={key}#{fragment}\"\napi_key_env = \"P_API_KEY\"\nmodel = \"m\"\n"),
        )
        .unwrap();
        let out = Out::of(pactum_in(root).args(args).env("P_API_KEY", "sk-abcdef123456"));
        let text = format!("{}{}", out.stdout, out.stderr);
        assert!(text.contains("/t/[redacted]/v1"), "{args:?}: the URL is still named: {out}");
        for secret in [token, key, fragment] {
            assert!(!text.contains(secret), "{args:?} shows {secret}: {out}");
        }
    }
}

#[test]
fn a_base_url_with_a_query_keeps_it_after_the_endpoints_path() {
    let server =
        crate::mock_http::MockServer::start(vec![crate::mock_http::MockReply::text(500, "down")]);
    let dir = demo();
    let root = dir.path();
    let (out, _) = run_against(
        root,
        &format!("{}/v1?api-version=2024-02-01&api-key=Q-secret-77", server.url()),
    );
    assert_eq!(out.code, 1, "{out}");
    let requests = server.requests();
    assert!(!requests.is_empty(), "{out}");
    assert_eq!(requests[0].path, "/v1/chat/completions?api-version=2024-02-01&api-key=Q-secret-77");
    assert!(!out.stderr.contains("Q-secret-77"), "{out}");
}

/// Standard base64 with padding (the tests' own, not the redactor's).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_key_in_a_configured_base_url_is_masked_too() {
    // A variant: the base URL comes from pactum.toml, not the environment.
    let dir = demo();
    let root = dir.path();
    let secret = "TOMLSECRET-9988zz";
    std::fs::write(
        root.join("pactum.toml"),
        format!(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1?key={secret}\"\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
    let out = Out::of(pactum_in(root).args([
        "run",
        "work_orders/WO-DEMO-CLASSIFY-001.json",
        "--provider",
        "local",
        // The checkout is trusted: the provider's URL acts (SPEC §24), and is named when
        // the run cannot reach it.
        "--trust-config",
    ]));
    assert!(out.stderr.contains("127.0.0.1:9"), "{out}");
    assert!(out.stderr.contains("key=[redacted]"), "{out}");
    let ledger = std::fs::read_to_string(root.join(".pactum/ledger.jsonl")).unwrap_or_default();
    for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("ledger", &ledger)] {
        assert!(!text.contains(secret), "{what}: {text}");
    }
}
