//! The README's "Know that a new version is better", run as written on a copy of
//! `examples/eval-classify`: the suite passes on 1.0.0 from the recorded cassette, the
//! comparison with the candidate 1.1.0 prints the Markdown table the README shows (and
//! exits 1), and the eval gate refuses to promote 1.1.0 with the error the README shows.

use std::path::Path;

use serde_json::Value;

use crate::common;
use crate::readme_tour::{bash, fenced, sh_blocks};

const SECTION: &str = "Know that a new version is better";

#[test]
fn the_readme_eval_example_runs_offline_as_written() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("examples/eval-classify");
    common::copy_tree(&common::repo().join("examples/eval-classify"), &project);
    // The example's 1.0.0 is the shipped classify contract, with the shipped pack.
    for file in ["contracts/classify/1.0.0.json", "prompt_packs/classify/1.0.0.json"] {
        assert_eq!(
            std::fs::read(project.join(file)).unwrap(),
            std::fs::read(common::repo().join(file)).unwrap(),
            "{file} is not the shipped one"
        );
    }
    let blocks = sh_blocks(SECTION);
    let texts = fenced(SECTION, "text");
    let markdown = fenced(SECTION, "markdown");
    assert_eq!((blocks.len(), texts.len(), markdown.len()), (3, 2, 1), "{blocks:#?}");

    // From the repository's root: validate, then the suite on the active version.
    let out = bash(home.path(), &blocks[0]);
    assert_eq!(out.code, 0, "{}\n{out}", blocks[0]);
    assert!(out.stdout.ends_with(&format!("{}\n", texts[0])), "README shows:\n{}\n{out}", texts[0]);

    // The candidate against the baseline, as Markdown: exit 1, the README's table exactly.
    assert!(
        blocks[1].starts_with("pactum eval --contract PRC-CLASSIFY-001@1.1.0"),
        "{}",
        blocks[1]
    );
    let out = bash(&project, &blocks[1]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stdout, format!("{}\n", markdown[0]), "{out}");

    // The gate refuses the promotion, with the README's words; 1.1.0 stays a draft.
    let out = bash(&project, &blocks[2]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stderr, format!("{}\n", texts[1]), "{out}");
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join("registry.json")).unwrap())
            .unwrap();
    let candidate =
        registry["contracts"].as_array().unwrap().iter().find(|e| e["version"] == "1.1.0").unwrap();
    assert_eq!(candidate["state"], "draft");

    // Nothing was recorded anew: the cassette answered every call.
    assert_eq!(
        std::fs::read(project.join("evals/classify/cassette.json")).unwrap(),
        std::fs::read(common::repo().join("examples/eval-classify/evals/classify/cassette.json"))
            .unwrap()
    );
    // Each evaluation is one eval_completed record, as the README says.
    let out = bash(&project, "pactum ledger query --event eval_completed --json");
    assert_eq!(out.code, 0, "{out}");
    let records = ledger_records(&project);
    let evals: Vec<&Value> = records.iter().filter(|r| r["event"] == "eval_completed").collect();
    assert_eq!(evals.len(), 3, "{records:#?}");
    assert!(evals.iter().all(|r| r["cassette"] == "evals/classify/cassette.json"), "{evals:#?}");
    assert_eq!(
        common::check_ledger_chain_independently(&project.join(".pactum/ledger.jsonl")),
        records.len()
    );
}

fn ledger_records(project: &Path) -> Vec<Value> {
    std::fs::read_to_string(project.join(".pactum/ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
