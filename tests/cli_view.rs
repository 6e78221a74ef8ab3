//! `pactum view` and `pactum eval --format html` (SPEC §26), through the binary: each eval
//! keeps its report under `.pactum/evals/`; the HTML comparison is one self-contained page
//! whose model outputs are text; the viewer answers its pages over HTTP on 127.0.0.1 with
//! strict headers and refuses what is not a bounded GET for it. The browser test drives
//! headless Chromium over the same pages (`tests/support/view_browser.cjs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::cli_eval::EvalProject;
use crate::common;

const SCRIPT: &str = "<script>window.pwned=1</script>";
const IMG: &str = "<img src=x onerror=\"window.pwned=1\">";

/// The eval project with a model whose 1.1.0 answers two cases with markup (two
/// regressions) and whose 1.0.0 gets `office` wrong (an improvement), evaluated once
/// (with `more` arguments); a demo work order run too, for the runs page.
fn evaluated(more: &[&str]) -> (EvalProject, common::Out) {
    let p = EvalProject::new();
    p.model(&[
        ("1.1.0", "double-charge", SCRIPT),
        ("1.1.0", "upload-crash", IMG),
        ("1.0.0", "office", "billing"),
    ]);
    p.config("");
    let mut args =
        vec!["eval", "--contract", "PRC-TRIAGE-001@1.1.0", "--against", "PRC-TRIAGE-001@1.0.0"];
    args.extend_from_slice(more);
    let out = p.pactum(&args);
    (p, out)
}

fn kept_reports(p: &EvalProject) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(p.path(".pactum/evals"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn each_eval_keeps_its_json_report_under_pactum_evals() {
    let (p, first) = evaluated(&[]);
    first.status(0);
    assert_eq!(kept_reports(&p).len(), 1, "{first}");
    let json = p.pactum(&[
        "eval",
        "--contract",
        "PRC-TRIAGE-001@1.1.0",
        "--against",
        "PRC-TRIAGE-001@1.0.0",
        "--json",
    ]);
    json.status(0);
    let files = kept_reports(&p);
    assert_eq!(files.len(), 2, "{files:?}");
    // Names sort by time: the newest is the run that printed its JSON, and it kept exactly
    // that document.
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[1]).unwrap()).unwrap();
    assert_eq!(kept, json.json());
    let name = files[1].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with(".json") && name.starts_with("20"), "{name}");
    // A regression row keeps the case's input with both outputs.
    let candidate = &kept["suites"][1];
    assert_eq!(candidate["results"][0]["case_id"], "double-charge");
    assert_eq!(
        candidate["results"][0]["input"]["message"].as_str().map(|s| s.contains("charged")),
        Some(true),
        "{:#}",
        candidate["results"][0]
    );
    // .pactum/ is git-ignored by init, so kept reports never reach a commit.
    assert!(pactum::init::GITIGNORE_LINES.contains(&".pactum/"));
}

#[test]
fn eval_format_html_is_one_self_contained_page_with_outputs_as_text() {
    let (_p, out) = evaluated(&["--format", "html"]);
    out.status(0);
    let html = &out.stdout;
    assert!(html.starts_with("<!DOCTYPE html>"), "{out}");
    assert!(html.contains("<style>"), "the style is inline");
    for fetched in ["<link", "<script", "<img", "<iframe", "http://", "https://", "@import"] {
        assert!(!html.contains(fetched), "the page holds `{fetched}`:\n{html}");
    }
    // The markup the model answered is there, escaped.
    assert!(html.contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"), "{html}");
    assert!(html.contains("&lt;img src=x onerror=\\&quot;window.pwned=1\\&quot;&gt;"), "{html}");
    // Regressions first, then the improvement, then the cases both pass; the p-value.
    let kinds: Vec<&str> = html
        .match_indices("data-kind=\"")
        .map(|(at, m)| {
            let rest = &html[at + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "regression",
            "regression",
            "improvement",
            "passed",
            "passed",
            "passed",
            "passed",
            "passed"
        ]
    );
    // Two regressions, one improvement: exact McNemar p = 1.0.
    assert!(html.contains("<b class=\"p-value\">1.0000</b>"), "{html}");
    assert!(html.contains("I was charged twice this month"), "the case's input is shown");
}

/// A running `pactum view`, stopped when dropped.
struct Viewer {
    child: Child,
    addr: String,
}

impl Viewer {
    fn start(p: &EvalProject) -> Viewer {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pactum"))
            .current_dir(p.root())
            .env("NO_COLOR", "1")
            .args(["view", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| {
            panic!("no URL in `{line}`");
        });
        let addr = url.trim_start_matches("http://").trim_end_matches('/').to_string();
        assert!(addr.starts_with("127.0.0.1:"), "{line}");
        Viewer { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends `request` as it is; the status, the head and the body of the answer.
    fn raw(&self, request: &[u8]) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.write_all(request).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, head.to_string(), body.to_string())
    }

    fn get(&self, path: &str) -> (u16, String, String) {
        self.raw(format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr).as_bytes())
    }

    /// The body of a page that must be there (200).
    fn page(&self, path: &str) -> String {
        let (status, head, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {head}\n{body}");
        body
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first `href="PREFIX..."` of `html`.
fn link(html: &str, prefix: &str) -> String {
    let start = html.find(&format!("href=\"{prefix}")).unwrap_or_else(|| {
        panic!("no link to {prefix} in:\n{html}");
    }) + 6;
    html[start..start + html[start..].find('"').unwrap()].to_string()
}

/// The viewer's project: the evaluated one, with a kernel work order run (tool calls).
fn viewed() -> EvalProject {
    let (p, out) = evaluated(&[]);
    out.status(0);
    let order = "work_orders/WO-DEMO-SUM-001.json";
    for file in [order, "fixtures/demo_sum.json"] {
        p.write(file, &std::fs::read_to_string(common::repo().join(file)).unwrap());
    }
    p.pactum(&["run", order]).status(0);
    p
}

#[test]
fn view_serves_every_page_over_http_with_strict_headers() {
    let p = viewed();
    let v = Viewer::start(&p);
    let (status, head, body) = v.get("/");
    assert_eq!(status, 200, "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("content-security-policy: default-src 'none'; style-src 'self' 'unsafe-inline'; img-src data:"),
        "{head}"
    );
    assert!(lower.contains("x-content-type-options: nosniff"), "{head}");
    assert!(body.contains("href=\"/registry\""), "{body}");

    // The registry links each version to its history.
    let registry = v.page("/registry");
    assert!(registry.contains("PRC-TRIAGE-001"), "{registry}");
    let history = link(&registry, "/history/PRC-TRIAGE-001/1.1.0");
    let timeline = v.page(&history);
    assert!(timeline.contains("History of PRC-TRIAGE-001@1.1.0"), "{timeline}");
    assert!(timeline.contains("<b>promote</b> PRC-TRIAGE-001@1.1.0"), "{timeline}");
    assert!(!timeline.contains("PRC-TRIAGE-001@1.0.0"), "one version's events: {timeline}");

    // The eval run links to its comparison; the model's markup is text there.
    let evals = v.page("/evals");
    let run = link(&evals, "/evals/");
    let comparison = v.page(&run);
    assert!(comparison.contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"), "{comparison}");
    assert!(!comparison.contains("<script") && !comparison.contains("<img"), "{comparison}");
    let first = comparison.find("data-kind=\"").unwrap();
    assert!(comparison[first..].starts_with("data-kind=\"regression\""), "{comparison}");

    // The run of the work order: its exchanges and the calculator's call with its time.
    let runs = v.page("/runs");
    assert!(runs.contains("WO-DEMO-SUM-001"), "{runs}");
    let one = v.page(&link(&runs, "/runs/"));
    assert!(one.contains("exchange PRC-PLAN-001@"), "{one}");
    assert!(one.contains("tool <b>calculator</b>"), "{one}");

    let stats = v.page("/stats");
    assert!(stats.contains("<svg") && stats.contains("PRC-TRIAGE-001@1.1.0"), "{stats}");
    let (status, head, css) = v.get("/assets/style.css");
    assert_eq!(status, 200);
    assert!(head.contains("text/css") && css.contains("font"), "{head}");
}

#[test]
fn view_refuses_what_is_not_a_bounded_get_for_it() {
    let p = viewed();
    let v = Viewer::start(&p);
    let host = v.addr.clone();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("an unknown page", format!("GET /nope HTTP/1.1\r\nHost: {host}\r\n\r\n").into(), 404),
        (
            "an unknown run",
            format!("GET /evals/missing HTTP/1.1\r\nHost: {host}\r\n\r\n").into(),
            404,
        ),
        (
            "a name that climbs",
            format!("GET /evals/..%2F..%2Fregistry HTTP/1.1\r\nHost: {host}\r\n\r\n").into(),
            404,
        ),
        (
            "an unknown contract",
            format!("GET /history/PRC-NOPE-001 HTTP/1.1\r\nHost: {host}\r\n\r\n").into(),
            404,
        ),
        (
            "a POST",
            format!("POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n").into(),
            405,
        ),
        ("a DELETE", format!("DELETE /evals HTTP/1.1\r\nHost: {host}\r\n\r\n").into(), 405),
        ("another host", b"GET / HTTP/1.1\r\nHost: attacker.example\r\n\r\n".to_vec(), 421),
        ("no request line", b"hello\r\n\r\n".to_vec(), 400),
        (
            "a head past 8 KiB",
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nX-Big: {}\r\n\r\n", "a".repeat(9000)).into(),
            431,
        ),
    ];
    for (what, request, want) in cases {
        let (status, head, _) = v.raw(&request);
        assert_eq!(status, want, "{what}: {head}");
        if want == 405 {
            assert!(head.contains("Allow: GET"), "{head}");
        }
    }
    // A client that sends half a head and waits is dropped with 408, and the server
    // answers others meanwhile.
    let mut slow = TcpStream::connect(&v.addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    assert_eq!(v.get("/").0, 200);
    slow.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn view_listens_on_loopback_only_and_names_a_busy_port() {
    let p = EvalProject::new();
    for host in ["0.0.0.0", "192.168.1.10", "example.com", "::"] {
        let out = p.pactum(&["view", "--host", host, "--port", "0"]);
        out.status(2);
        assert!(
            out.stderr.contains("usage_error") && out.stderr.contains("loopback")
                || out.stderr.contains("not an IP address"),
            "{host}: {out}"
        );
    }
    // Ctrl-C (SIGINT) stops a running viewer.
    let mut v = Viewer::start(&p);
    assert_eq!(v.get("/").0, 200);
    let pid = v.child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    // A bound a loaded machine meets; a viewer that ignored SIGINT would never exit.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while v.child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the viewer outlived SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(TcpStream::connect(&v.addr).is_err(), "nothing listens any more");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = p.pactum(&["view", "--port", &port]);
    out.status(2);
    assert!(out.stderr.contains("io_error"), "{out}");
}

/// playwright-core, which `.ci/run` installs into the CI tools folder.
fn playwright_core() -> PathBuf {
    let dir = std::env::var_os("PACTUM_CI_TOOLS").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "this test needs playwright-core, which .ci/run installs into target/ci-tools and \
             names in PACTUM_CI_TOOLS; run it there, or without --ignored"
        )
    });
    let package = dir.join("playwright-core/package");
    assert!(package.join("index.js").is_file(), "{} is not installed", package.display());
    package
}

#[test]
#[ignore = "needs chromium + playwright-core; .ci/run installs"]
fn the_viewer_in_headless_chromium_follows_links_and_runs_no_model_markup() {
    let playwright = playwright_core();
    common::require_tool("/usr/bin/chromium", "the viewer's browser test");
    let p = viewed();
    let html = p.pactum(&[
        "eval",
        "--contract",
        "PRC-TRIAGE-001@1.1.0",
        "--against",
        "PRC-TRIAGE-001@1.0.0",
        "--format",
        "html",
    ]);
    html.status(0);
    let file = p.path("comparison.html");
    std::fs::write(&file, &html.stdout).unwrap();
    let v = Viewer::start(&p);
    let shots = common::repo().join("target/test-artifacts");
    std::fs::create_dir_all(&shots).unwrap();
    let screenshot = shots.join("view-comparison.png");
    let _ = std::fs::remove_file(&screenshot);
    let profile = tempfile::tempdir().unwrap();
    let out = common::Out::from(
        std::process::Command::new("node")
            .arg(common::repo().join("tests/support/view_browser.cjs"))
            .arg(&playwright)
            .arg(v.url())
            .arg(&screenshot)
            .arg(profile.path())
            .arg(&file)
            .output()
            .unwrap(),
    );
    out.status(0);
    let report: Value = serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!("the browser script printed no JSON ({e}): {out}");
    });
    for page in ["/", "/registry", "/evals", "/runs", "/stats"] {
        assert_eq!(report["pages"][page]["status"], 200, "{report:#}");
        assert_eq!(report["pages"][page]["pwned"], "undefined", "{page}: {report:#}");
    }
    assert_eq!(report["history"]["title"], "History of PRC-TRIAGE-001@1.1.0", "{report:#}");
    let kinds: Vec<&str> = report["comparison"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(kinds[..3], ["regression", "regression", "improvement"], "{report:#}");
    for shown in ["comparison", "file"] {
        let page = &report[shown];
        assert_eq!(page["pwned"], "undefined", "{shown}: {report:#}");
        assert_eq!(page["elements"], 0, "no img or script element: {report:#}");
        assert_eq!(page["script_text"], true, "<script> shown as text: {report:#}");
        assert_eq!(page["img_text"], true, "<img onerror> shown as text: {report:#}");
    }
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{} bytes", png.len());
}
