//! pactum's own cost per eval case, next to the model call: `Evaluator::suite` over a
//! dataset of 256 cases of the shipped classify contract (the suite of
//! `examples/eval-classify`: `one_of` and `between` on every case, an `equals` of its own),
//! answered at once by the scripted provider, one job. Each case is read from the dataset,
//! its input validated, the pack rendered, the reply extracted and validated against
//! `output_schema`, its three assertions checked and its verdict tallied; the time per
//! iteration divided by 256 is the overhead per case (BENCHMARKS.md). The variant with a
//! ledger also appends every exchange to a hash-chained ledger, as `pactum eval` does.
//!
//! Run: `cargo bench --bench eval`.
#![allow(clippy::disallowed_methods)] // tests, benches and examples build their trees directly

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pactum::eval::{Evaluator, Options, Plan, Suite, Version};
use pactum::gateway::scripted::ScriptedProvider;
use pactum::gateway::select::ProviderSet;
use pactum::id::Pin;
use pactum::ledger::{Durability, Ledger, Location};
use pactum::project::Project;
use pactum::validate::NoProgress;
use serde_json::json;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CASES: usize = 256;

const LABELS: [&str; 4] = ["billing", "technical", "account", "other"];

fn main() {
    divan::main();
}

/// A copy of the example project with a dataset of [`CASES`] cases and the scripted
/// replies for them (one per case, in order).
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    replies: PathBuf,
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval-classify"), &root);
    let mut cases = String::new();
    let mut responses = Vec::new();
    for i in 0..CASES {
        let label = LABELS[i % LABELS.len()];
        let message =
            format!("Support message number {i}, about something a {label} queue handles.");
        cases.push_str(
            &json!({"id": format!("case-{i}"), "input": {"user_input": message},
                    "expect": [{"kind": "equals", "pointer": "/label", "value": label}]})
            .to_string(),
        );
        cases.push('\n');
        responses.push(json!({
            "contract_id": "PRC-CLASSIFY-001",
            "text": format!("Here you go.\n```json\n{{\"label\": \"{label}\", \"confidence\": 0.9, \"reasons\": [\"case {i}\"]}}\n```"),
            "usage": {"prompt_tokens": 230, "completion_tokens": 24},
        }));
    }
    std::fs::write(root.join("evals/classify/cases.jsonl"), cases).unwrap();
    let replies = root.join("replies.json");
    std::fs::write(&replies, json!({"responses": responses}).to_string()).unwrap();
    Fixture { _dir: dir, root, replies }
}

fn run(bencher: divan::Bencher, ledger: Option<Durability>) {
    let f = fixture();
    let project = Project::open(&f.root.join("registry.json")).unwrap();
    let suite =
        Suite::load(&f.root, &f.root.join("evals/classify/EVAL-CLASSIFY-001.json")).unwrap();
    let plan = Plan {
        candidate: Version {
            pin: Pin::parse("PRC-CLASSIFY-001@1.0.0").unwrap(),
            allow_draft: false,
        },
        baseline: None,
    };
    let ledger = ledger.map(|durability| {
        Ledger::open(&Location::project(&f.root)).unwrap().with_durability(durability)
    });
    bencher
        .counter(divan::counter::ItemsCount::new(CASES))
        .with_inputs(|| {
            ProviderSet::single(Arc::new(ScriptedProvider::load(&f.replies, &f.root).unwrap()))
        })
        .bench_local_refs(|providers| {
            let evaluator = Evaluator {
                project: &project,
                providers,
                ledger: ledger.as_ref(),
                options: Options { jobs: 1, repeat: None, filter: None },
                run: ledger.as_ref().map(|_| pactum::eval::Run::start()),
            };
            let outcome = evaluator.suite(&suite, &plan, &NoProgress).unwrap();
            assert_eq!(outcome.versions[0].passed, CASES as u64);
            if let Some(ledger) = &ledger {
                ledger.commit().unwrap();
            }
            outcome
        });
}

/// 256 cases through the evaluator, no ledger: time / 256 is the overhead per case.
#[divan::bench(sample_count = 30)]
fn eval_256_cases(bencher: divan::Bencher) {
    run(bencher, None);
}

/// The same with every exchange appended to the project's ledger and the records synced
/// together once the suite has run, as `pactum eval` does (group commit).
#[divan::bench(sample_count = 30)]
fn eval_256_cases_with_ledger(bencher: divan::Bencher) {
    run(bencher, Some(Durability::Grouped));
}

/// The same with each record synced before its exchange returns, as `pactum run` does:
/// what group commit saves.
#[divan::bench(sample_count = 30)]
fn eval_256_cases_with_ledger_synced_per_record(bencher: divan::Bencher) {
    run(bencher, Some(Durability::EachRecord));
}
