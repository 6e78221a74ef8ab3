//! The README's tour, run as written: every ```sh block of "A tour" in order, in a fresh git
//! repository, with the one hand edit the prose asks for done where it asks for it; then
//! what a team does beyond it — a hand-flipped state, a bad promote, a label moved on two
//! branches — checked through the binary.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

/// The ```sh blocks of the README section headed `heading`, in order.
pub(crate) fn sh_blocks(heading: &str) -> Vec<String> {
    fenced(heading, "sh")
}

/// The fenced blocks in `lang` of the README section headed `heading`, in order.
pub(crate) fn fenced(heading: &str, lang: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(common::repo().join("README.md")).unwrap();
    let start = readme.find(&format!("\n## {heading}")).expect("the section exists");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let open = format!("```{lang}\n");
    let mut blocks = Vec::new();
    let mut rest = section;
    while let Some(at) = rest.find(&open) {
        let body = &rest[at + open.len()..];
        let end = body.find("\n```").unwrap();
        blocks.push(body[..end].to_string());
        rest = &body[end + 4..];
    }
    blocks
}

/// Runs a block with bash in `dir`, the binary first on the PATH, no provider settings.
pub(crate) fn bash(dir: &Path, script: &str) -> common::Out {
    let bin = Path::new(env!("CARGO_BIN_EXE_pactum")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("PACTUM_ACTOR", "tour@example.com")
        .env("GIT_AUTHOR_NAME", "tour")
        .env("GIT_AUTHOR_EMAIL", "tour@example.com")
        .env("GIT_COMMITTER_NAME", "tour")
        .env("GIT_COMMITTER_EMAIL", "tour@example.com");
    for var in common::PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd.output().unwrap().into()
}

fn pactum_json(dir: &Path, args: &str) -> (i32, Value) {
    let out = bash(dir, &format!("pactum {args} --json"));
    (out.code, serde_json::from_str(&out.stdout).unwrap_or(Value::Null))
}

#[test]
fn the_readme_tour_runs_as_written_with_labels_a_rollback_and_the_gate() {
    let home = tempfile::tempdir().unwrap();
    let blocks = sh_blocks("A tour: your own project, from `init` to `remove`");
    assert!(blocks.len() >= 8, "the tour's blocks: {blocks:#?}");
    let project = home.path().join("support-bot");
    for block in &blocks {
        // The model step needs a server; every other block runs as written.
        if block.contains("OPENAI_BASE_URL") {
            continue;
        }
        let dir = if project.is_dir() { project.as_path() } else { home.path() };
        let out = bash(dir, block);
        assert_eq!(out.code, 0, "README block failed:\n{block}\n{out}");
        // The prose's "Edit them", right after the block that scaffolds the contract.
        if block.contains("new contract PRC-SUMMARIZE-001") {
            common::write_placeholders(&project);
        }
        // The prose's hand edit, right after the block that makes 1.1.0.
        if block.contains("new version PRC-SUMMARIZE-001@1.1.0") {
            let file = project.join("contracts/summarize/1.1.0.json");
            let mut c: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            c["input_schema"]["properties"]["tone"] =
                json!({"type": "string", "description": "How the summary should sound."});
            std::fs::write(&file, serde_json::to_string_pretty(&c).unwrap()).unwrap();
        }
    }
    let p = project.as_path();
    // Where the tour leaves the label, and the history that moved it.
    let (_, list) = pactum_json(p, "registry list PRC-SUMMARIZE-001");
    assert_eq!(list["ids"][0]["labels"], json!({"production": "1.1.0"}), "{list:#}");
    let (_, log) = pactum_json(p, "registry log PRC-SUMMARIZE-001");
    let labeled = log.to_string().matches("\"labeled\"").count();
    assert_eq!(labeled, 4, "two promotes with --label, a rollback, a roll forward: {log:#}");
    // A work order that pins the label follows it.
    std::fs::write(
        p.join("work_orders/WO-PROD.json"),
        r#"{"work_order_id": "WO-PROD", "kind": "exchange", "contract": "PRC-SUMMARIZE-001@production", "input": {"input": "x"}}"#,
    )
    .unwrap();
    let (code, run) = pactum_json(p, "run work_orders/WO-PROD.json");
    assert_eq!(code, 0, "{run:#}");
    let (_, rolled) = pactum_json(p, "registry label PRC-SUMMARIZE-001 production 1.1.0");
    assert_eq!(rolled["ok"], true);
    // A bad promote: a draft whose pack uses an input the contract does not declare, and
    // whose example fails, is refused with every finding; nothing is frozen.
    assert_eq!(bash(p, "pactum new version PRC-SUMMARIZE-001@1.2.0 --pack").code, 0);
    let pack = p.join("prompt_packs/summarize/1.2.0.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&pack).unwrap()).unwrap();
    v["sections"]["task"] = json!("Summarize in a {{ mood }} tone: {{ input }}");
    std::fs::write(&pack, v.to_string()).unwrap();
    let before = std::fs::read(p.join("registry.json")).unwrap();
    let (code, refused) = pactum_json(p, "registry promote PRM-SUMMARIZE-001@1.2.0");
    assert_eq!(code, 1, "{refused:#}");
    let codes: Vec<&str> =
        refused["errors"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"template_variable_undeclared"), "{refused:#}");
    assert_eq!(
        std::fs::read(p.join("registry.json")).unwrap(),
        before,
        "a refused promote writes nothing"
    );
    // A hand-flipped state: the runtime refuses what the history does not account for.
    let mut reg: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("registry.json")).unwrap()).unwrap();
    for e in reg["contracts"].as_array_mut().unwrap() {
        if e["version"] == "1.2.0" {
            e["state"] = json!("active");
        }
    }
    std::fs::write(p.join("registry.json"), serde_json::to_string_pretty(&reg).unwrap()).unwrap();
    for args in [
        "resolve PRC-SUMMARIZE-001@1.2.0",
        "resolve PRC-SUMMARIZE-001",
        "run work_orders/WO-SUMMARIZE-1.json",
    ] {
        let (code, out) = pactum_json(p, args);
        assert_eq!(code, 1, "{args}: {out:#}");
        assert_eq!(out["code"], "registry_history_mismatch", "{args}: {out:#}");
    }
    let (code, verify) = pactum_json(p, "registry verify");
    assert_eq!(
        (code, verify["code"].as_str()),
        (1, Some("registry_history_mismatch")),
        "{verify:#}"
    );
    std::fs::write(p.join("registry.json"), &before).unwrap();
    // The label still resolves, through the history's account of it.
    let (code, resolved) = pactum_json(p, "resolve PRC-SUMMARIZE-001@production");
    assert_eq!((code, resolved["version"].as_str()), (0, Some("1.1.0")), "{resolved:#}");
}

#[test]
fn frozen_files_and_label_moves_on_two_branches() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let ok = |script: &str| {
        let out = bash(p, script);
        assert_eq!(out.code, 0, "{script}\n{out}");
        out
    };
    ok(
        "git init -q -b main && pactum init >/dev/null && pactum new contract PRC-SUMMARIZE-001 >/dev/null",
    );
    common::write_placeholders(p);
    // 1.0.0 declares an input no template uses: a warning on a file that will be frozen.
    let file = p.join("contracts/summarize/1.0.0.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    c["input_schema"]["properties"]["unused"] = json!({"type": "string"});
    std::fs::write(&file, serde_json::to_string_pretty(&c).unwrap()).unwrap();
    ok(
        "pactum registry promote PRM-SUMMARIZE-001@1.0.0 && pactum registry promote PRC-SUMMARIZE-001@1.0.0 --label production",
    );
    let (code, report) = pactum_json(p, "validate --strict");
    assert_eq!(code, 1, "an active, current version's warning still counts: {report:#}");
    let help = report["diagnostics"][0]["help"].as_str().unwrap();
    assert!(help.contains("pactum new version PRC-SUMMARIZE-001@1.0.1"), "{help}");
    // 2.0.0 supersedes it (dropping an input is a major change): the frozen warning is a note, and --strict passes.
    ok("pactum new version PRC-SUMMARIZE-001@2.0.0 >/dev/null");
    let file = p.join("contracts/summarize/2.0.0.json");
    let mut c: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    c["input_schema"]["properties"].as_object_mut().unwrap().remove("unused");
    std::fs::write(&file, serde_json::to_string_pretty(&c).unwrap()).unwrap();
    ok("pactum registry promote PRC-SUMMARIZE-001@2.0.0");
    let (code, report) = pactum_json(p, "validate --strict");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["diagnostics"][0]["severity"], "note", "{report:#}");
    // Removing 1.0.0: the label must move first; a work order pinning it exactly is
    // listed and, with nothing left to resolve to, refuses the removal without --force.
    std::fs::write(
        p.join("work_orders/WO-OLD.json"),
        r#"{"work_order_id": "WO-OLD", "kind": "exchange", "contract": "PRC-SUMMARIZE-001@1.0.0", "input": {"input": "x"}}"#,
    )
    .unwrap();
    ok("pactum registry deprecate PRC-SUMMARIZE-001@1.0.0 --successor 2.0.0");
    let (code, out) = pactum_json(p, "registry remove PRC-SUMMARIZE-001@1.0.0");
    assert_eq!(code, 1, "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("label `production`"), "{out:#}");
    ok("pactum registry label PRC-SUMMARIZE-001 production 2.0.0");
    let (code, out) = pactum_json(p, "registry remove PRC-SUMMARIZE-001@1.0.0");
    assert_eq!(code, 1, "{out:#}");
    assert!(out["message"].as_str().unwrap().contains("WO-OLD"), "{out:#}");
    let (code, out) = pactum_json(p, "registry remove PRC-SUMMARIZE-001@1.0.0 --force");
    assert_eq!((code, out["pinned_by"][0]["work_order"].as_str()), (0, Some("WO-OLD")), "{out:#}");
    std::fs::remove_file(p.join("work_orders/WO-OLD.json")).unwrap();
    // The removed version's content findings are gone: a broken file stays quiet.
    std::fs::write(p.join("contracts/summarize/1.0.0.json"), "{ not json").unwrap();
    let (_, report) = pactum_json(p, "validate");
    let on_removed: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"] == "contracts/summarize/1.0.0.json")
        .collect();
    assert!(on_removed.iter().all(|d| d["code"] == "contract_hash_mismatch"), "{on_removed:#?}");
    ok("git checkout -q -- contracts/summarize/1.0.0.json 2>/dev/null || true");
    // Two branches move the same label to different versions: the merge driver says so.
    ok(
        "pactum new version PRC-SUMMARIZE-001@2.1.0 >/dev/null && pactum registry promote PRC-SUMMARIZE-001@2.1.0 && git add -A && git commit -qm base",
    );
    ok(
        "git checkout -q -b alice && pactum registry label PRC-SUMMARIZE-001 staging 2.1.0 && git commit -qam alice",
    );
    ok(
        "git checkout -q main && pactum registry label PRC-SUMMARIZE-001 staging 2.0.0 && git commit -qam main",
    );
    let out = bash(p, "git merge -q alice -m merge");
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains("label `staging`") || out.stderr.contains("label `staging`"),
        "{out}"
    );
    ok("git merge --abort");
    // Moves that do not contradict merge, and the result verifies.
    ok(
        "git checkout -q -b bob main~1 && pactum registry label PRC-SUMMARIZE-001 canary 2.1.0 && git commit -qam bob",
    );
    ok("git checkout -q main && git merge -q bob -m merge-bob");
    let (_, list) = pactum_json(p, "registry list PRC-SUMMARIZE-001");
    assert_eq!(
        list["ids"][0]["labels"],
        json!({"canary": "2.1.0", "production": "2.0.0", "staging": "2.0.0"}),
        "{list:#}"
    );
    ok("pactum registry verify");
}
