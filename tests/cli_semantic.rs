//! Semantic validation of exchanges (SPEC §19, `semantic_check`) through the `pactum`
//! binary, offline with the scripted provider: after the output passed extraction and
//! `output_schema`, the judge contract (PRC-JUDGE-001, called through pactum's own
//! exchange and recorded in the ledger) decides; `retry` re-asks the model with the
//! judge's reason (the scripted reply's `expect_prompt` fails the run when the reason is
//! not in the re-ask), `escalate` fails with `semantic_rejected`, `accept` keeps the
//! output with a `semantic_rejected` warning. Also: the contract's own check and the work
//! order's precedence, a judge that gives no verdict, kernel runs (the final answer is
//! judged), `validate` on the judge pin, and the re-ask's messages through the library.

use crate::exchange_harness as harness;
use crate::kernel_harness;

use std::sync::{Arc, Mutex};

use harness::{Project, first_code};
use pactum::gateway::{PromptRequest, Provider, ProviderResponse, Role};
use serde_json::{Value, json};

const CRITERIA: &str = "The label names the queue that handles the customer's problem.";
const REASON: &str = "A double charge is a billing problem, not a technical one.";
const WRONG: &str = r#"{"label": "technical", "confidence": 0.6}"#;
const RIGHT: &str = r#"{"label": "billing", "confidence": 0.95}"#;

fn verdict(pass: bool, reason: &str) -> Value {
    json!({"contract_id": "PRC-JUDGE-001",
           "text": json!({"pass": pass, "score": if pass { 0.9 } else { 0.1 }, "reason": reason}).to_string()})
}

fn classify(text: &str) -> Value {
    json!({"contract_id": "PRC-CLASSIFY-001", "text": text})
}

/// An exchange work order of PRC-CLASSIFY-001 with `semantic_check` (on_fail `on_fail`),
/// scripted by `responses`, plus `extra` fields.
fn checked_wo(
    p: &Project,
    id: &str,
    on_fail: &str,
    responses: Value,
    extra: Value,
) -> std::path::PathBuf {
    let fixtures = format!("{id}.fixtures.json");
    p.fixtures(&fixtures, responses);
    let mut wo = json!({
        "provider": {"fixtures": fixtures},
        "semantic_check": {"judge": "PRC-JUDGE-001@^1", "criteria": CRITERIA, "on_fail": on_fail},
    });
    harness::merge(&mut wo, extra);
    p.classify_wo(id, wo)
}

fn exchange_records(p: &Project) -> Vec<(String, String, u64)> {
    p.records()
        .iter()
        .map(|r| {
            (
                r["contract_id"].as_str().unwrap_or_default().to_string(),
                r["verdict"].as_str().unwrap_or_default().to_string(),
                r["repair_attempt"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

fn rec(contract: &str, verdict: &str, attempt: u64) -> (String, String, u64) {
    (contract.to_string(), verdict.to_string(), attempt)
}

#[test]
fn a_passing_judge_lets_the_output_stand_and_is_in_the_ledger() {
    let p = Project::new();
    // The judge is asked about this output by these criteria: its prompt must hold both.
    let mut judge = verdict(true, "Billing is right.");
    judge["expect_prompt"] = json!([CRITERIA, "billing"]);
    let wo = checked_wo(&p, "WO-SEM-PASS", "escalate", json!([classify(RIGHT), judge]), json!({}));

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!((r["ok"].as_bool(), r["status"].as_str()), (Some(true), Some("completed")), "{r:#}");
    assert_eq!(r["output"]["label"], "billing");
    assert_eq!(r["warnings"], json!([]), "{r:#}");
    assert_eq!(r["repair_attempts"], 0);
    assert_eq!(
        exchange_records(&p),
        [rec("PRC-CLASSIFY-001", "ok", 0), rec("PRC-JUDGE-001", "ok", 0)]
    );
    // The judge's exchange is a record like any other: its role, its contract and hash,
    // its raw verdict, the same work order.
    let records = p.records();
    let judge = &records[1];
    assert_eq!(
        (judge["role"].as_str(), judge["work_order_id"].as_str()),
        (Some("judge"), Some("WO-SEM-PASS"))
    );
    assert_eq!(judge["contract_version"], "1.0.0");
    assert!(judge["raw_response"].as_str().unwrap().contains("Billing is right."));
    harness::check_ledger_chain_independently(&p.ledger());
}

#[test]
fn retry_reasks_with_the_judges_reason_and_keeps_the_second_answer() {
    let p = Project::new();
    // The second answer is served only to a prompt holding the judge's reason and the
    // rejected answer: without them the run fails with script_prompt_mismatch.
    let mut second = classify(RIGHT);
    second["expect_prompt"] = json!([REASON, "\"label\": \"technical\"", CRITERIA]);
    let wo = checked_wo(
        &p,
        "WO-SEM-RETRY",
        "retry",
        json!([classify(WRONG), verdict(false, REASON), second, verdict(true, "Now billing.")]),
        json!({"constraints": {"max_repair_attempts": 2}}),
    );

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(r["output"]["label"], "billing", "the re-asked answer stands");
    assert_eq!(r["repair_attempts"], 1);
    assert_eq!(
        exchange_records(&p),
        [
            rec("PRC-CLASSIFY-001", "ok", 0),
            rec("PRC-JUDGE-001", "ok", 0),
            rec("PRC-CLASSIFY-001", "ok", 1),
            rec("PRC-JUDGE-001", "ok", 0),
        ]
    );
    // The re-ask is a different prompt (the first reply and the verdict follow it).
    let records = p.records();
    assert_ne!(records[0]["prompt_hash"], records[2]["prompt_hash"]);
}

#[test]
fn a_reasked_reply_that_does_not_fit_is_reasked_with_its_errors_while_attempts_remain() {
    let p = Project::new();
    // The first re-ask answers prose (no JSON): the next re-ask holds that reply and the
    // extraction's code, and its answer is judged again.
    let prose = "Billing, I think.";
    let mut third = classify(RIGHT);
    third["expect_prompt"] = json!([prose, "output_json_extraction_failed"]);
    let wo = checked_wo(
        &p,
        "WO-SEM-REASK-BAD",
        "retry",
        json!([
            classify(WRONG),
            verdict(false, REASON),
            classify(prose),
            third,
            verdict(true, "Now billing.")
        ]),
        json!({"constraints": {"max_repair_attempts": 2}}),
    );

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(r["output"]["label"], "billing");
    assert_eq!(r["repair_attempts"], 2);
    assert_eq!(
        exchange_records(&p),
        [
            rec("PRC-CLASSIFY-001", "ok", 0),
            rec("PRC-JUDGE-001", "ok", 0),
            rec("PRC-CLASSIFY-001", "output_json_extraction_failed", 1),
            rec("PRC-CLASSIFY-001", "ok", 2),
            rec("PRC-JUDGE-001", "ok", 0),
        ]
    );

    // With one re-ask only, the reply that does not fit ends the check with its own code.
    let p = Project::new();
    let wo = checked_wo(
        &p,
        "WO-SEM-REASK-SPENT",
        "retry",
        json!([classify(WRONG), verdict(false, REASON), classify(prose)]),
        json!({"constraints": {"max_repair_attempts": 1}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(1);
    assert_eq!(first_code(&r), "output_json_extraction_failed", "{r:#}");
    assert_eq!(r["repair_attempts"], 1);
}

/// `retry` with the work order's re-asks spent: the replies (the classify answers and the
/// judge's verdicts, in turn), the re-asks allowed, and what the rejection says.
struct Spent {
    name: &'static str,
    id: &'static str,
    responses: Value,
    reasks: u64,
    says: &'static [&'static str],
}

fn spent() -> Vec<Spent> {
    vec![
        Spent {
            name: "one re-ask allowed and rejected again",
            id: "WO-SEM-SPENT",
            responses: json!([
                classify(WRONG),
                verdict(false, REASON),
                classify(WRONG),
                verdict(false, "Still technical.")
            ]),
            reasks: 1,
            says: &["Still technical.", "after 1 re-ask(s)"],
        },
        Spent {
            name: "max_repair_attempts 0 makes no re-ask",
            id: "WO-SEM-NONE",
            responses: json!([classify(WRONG), verdict(false, REASON)]),
            reasks: 0,
            says: &[REASON],
        },
    ]
}

#[test]
fn retry_with_its_attempts_spent_is_semantic_rejected() {
    harness::check_cases(
        &spent(),
        |case| case.name,
        |case| {
            let p = Project::new();
            let constraints = json!({"constraints": {"max_repair_attempts": case.reasks}});
            let wo = checked_wo(&p, case.id, "retry", case.responses.clone(), constraints);

            let (out, r) = p.run_json(&wo, &[], &[]);

            out.status(1);
            assert_eq!(r["ok"], false);
            assert_eq!(first_code(&r), "semantic_rejected", "{r:#}");
            let message = r["message"].as_str().unwrap();
            for part in case.says {
                assert!(message.contains(part), "`{part}` missing: {message}");
            }
            assert_eq!(r["repair_attempts"], case.reasks);
            assert!(r.get("output").is_none(), "a rejected output is not returned: {r:#}");
            // Exactly the re-asks the work order allows: an answer and a verdict each.
            let records = exchange_records(&p);
            assert_eq!(records.len() as u64, 2 * (1 + case.reasks), "{records:?}");
        },
    );
}

#[test]
fn escalate_fails_with_semantic_rejected_naming_the_judge_the_criteria_and_the_reason() {
    let p = Project::new();
    let wo = checked_wo(
        &p,
        "WO-SEM-ESC",
        "escalate",
        json!([classify(WRONG), verdict(false, REASON)]),
        json!({}),
    );

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(1);
    assert_eq!((r["ok"].as_bool(), r["status"].as_str()), (Some(false), Some("failed")));
    assert_eq!(r["code"], "semantic_rejected", "{r:#}");
    let message = r["message"].as_str().unwrap();
    for part in ["PRC-JUDGE-001@1.0.0", CRITERIA, REASON] {
        assert!(message.contains(part), "{part} in {message}");
    }
    // Without --json, as people read it.
    p.fixtures("WO-SEM-ESC.fixtures.json", json!([classify(WRONG), verdict(false, REASON)]));
    let out = p.run(&[&wo], &[], &[]);
    out.status(1);
    assert!(
        out.stdout.contains("error[semantic_rejected]")
            || out.stderr.contains("error[semantic_rejected]"),
        "{out:?}"
    );
    // The ledger says how the run ended.
    let last = p.all_records().pop().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["code"].as_str()),
        (Some("work_order_failed"), Some("semantic_rejected"))
    );
}

#[test]
fn accept_keeps_the_output_with_a_semantic_rejected_warning() {
    let p = Project::new();
    let wo = checked_wo(
        &p,
        "WO-SEM-ACC",
        "accept",
        json!([classify(WRONG), verdict(false, REASON)]),
        json!({}),
    );

    let (out, r) = p.run_json(&wo, &[], &[]);

    out.status(0);
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(r["output"]["label"], "technical", "the output is kept");
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{r:#}");
    assert_eq!(warnings[0]["code"], "semantic_rejected");
    assert!(warnings[0]["message"].as_str().unwrap().contains(REASON));
    let last = p.all_records().pop().unwrap();
    assert_eq!(last["event"], "work_order_completed");
    assert_eq!(last["warnings"][0]["code"], "semantic_rejected");
}

#[test]
fn a_judge_that_gives_no_verdict_fails_the_check_with_its_own_code() {
    let p = Project::new();
    // A judge reply that is not a verdict (no `pass`), one that is not JSON, and no judge
    // reply at all: each fails the run, never a silent pass.
    let cases = [
        (
            "a reply that is not a verdict",
            "WO-SEM-NOVERDICT-0",
            json!({"contract_id": "PRC-JUDGE-001", "text": "{\"score\": 0.9, \"reason\": \"fine\"}"}),
            "output_schema_invalid",
        ),
        (
            "a reply that is not JSON",
            "WO-SEM-NOVERDICT-1",
            json!({"contract_id": "PRC-JUDGE-001", "text": "Looks good to me."}),
            "output_json_extraction_failed",
        ),
        (
            "no judge reply at all",
            "WO-SEM-NOVERDICT-2",
            json!({"contract_id": "PRC-JUDGE-001", "error": {"code": "provider_unreachable", "message": "down"}}),
            "provider_unreachable",
        ),
    ];
    harness::check_cases(
        &cases,
        |case| case.0,
        |(_, id, judge, code)| {
            let wo = checked_wo(&p, id, "accept", json!([classify(RIGHT), judge]), json!({}));
            let (out, r) = p.run_json(&wo, &[], &[]);
            out.status(1);
            assert_eq!((r["ok"].as_bool(), first_code(&r)), (Some(false), *code), "{r:#}");
            let message = r["message"].as_str().unwrap();
            assert!(message.contains("the semantic check's judge PRC-JUDGE-001"), "{message}");
        },
    );
}

#[test]
fn the_contracts_semantic_check_applies_and_the_work_orders_replaces_it() {
    let p = Project::new();
    // PRC-CHECKED-001: the classify contract with a check of its own (escalate).
    let mut contract: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path("contracts/classify/1.0.0.json")).unwrap(),
    )
    .unwrap();
    contract["contract_id"] = json!("PRC-CHECKED-001");
    contract["semantic_check"] =
        json!({"judge": "PRC-JUDGE-001@^1", "criteria": CRITERIA, "on_fail": "escalate"});
    contract.as_object_mut().unwrap().remove("examples");
    let file = p.write_json("contracts/checked/1.0.0.json", &contract);
    let root = p.root().display().to_string();
    p.pactum(&["registry", "add", "--root", &root, &file.display().to_string()], &[]).status(0);
    p.pactum(&["registry", "promote", "--root", &root, "PRC-CHECKED-001@1.0.0"], &[]).status(0);
    let reply = |text: &str| json!({"contract_id": "PRC-CHECKED-001", "text": text});

    // The contract's own check: escalate.
    p.fixtures("own.json", json!([reply(WRONG), verdict(false, REASON)]));
    let wo = p.classify_wo(
        "WO-SEM-OWN",
        json!({"contract": "PRC-CHECKED-001@^1", "provider": {"fixtures": "own.json"}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(1);
    assert_eq!(first_code(&r), "semantic_rejected", "{r:#}");

    // The work order's check replaces it: accept.
    p.fixtures("over.json", json!([reply(WRONG), verdict(false, REASON)]));
    let wo = p.classify_wo(
        "WO-SEM-OVER",
        json!({"contract": "PRC-CHECKED-001@^1", "provider": {"fixtures": "over.json"},
               "semantic_check": {"judge": "PRC-JUDGE-001", "criteria": "Any label will do.", "on_fail": "accept"}}),
    );
    let (out, r) = p.run_json(&wo, &[], &[]);
    out.status(0);
    assert_eq!(r["warnings"][0]["code"], "semantic_rejected", "{r:#}");
    assert!(r["warnings"][0]["message"].as_str().unwrap().contains("Any label will do."));
}

// --- kernel --------------------------------------------------------------------------------

/// The `tool_failure` kernel scenario with a `semantic_check` on its final answer and the
/// judge's (and any re-asked synthesis) replies appended.
fn kernel_with_check(on_fail: &str, extra: Value) -> kernel_harness::Project {
    let p = kernel_harness::Project::scenario("tool_failure");
    p.edit("wo.json", |wo| {
        wo["semantic_check"] =
            json!({"judge": "PRC-JUDGE-001@^1", "criteria": "The answer gives both quotients.", "on_fail": on_fail});
    });
    p.edit("fixtures.json", |f| {
        f["responses"].as_array_mut().unwrap().extend(extra.as_array().unwrap().iter().cloned());
    });
    p
}

#[test]
fn a_kernel_run_judges_its_final_answer_and_retries_phase_e() {
    let reason = "It says nothing about 10 / 2.";
    let second =
        "{\"answer_text\": \"1 / 0 is undefined; 10 / 2 is 5, as asked.\", \"metadata\": {}}";
    let p = kernel_with_check(
        "retry",
        json!([
            {"contract_id": "PRC-JUDGE-001", "text": json!({"pass": false, "reason": reason}).to_string()},
            {"contract_id": "PRC-SYNTH-001", "expect_prompt": [reason], "text": second},
            {"contract_id": "PRC-JUDGE-001", "text": "{\"pass\": true, \"reason\": \"Both are there.\"}"},
        ]),
    );

    let run = p.run(&[]);

    kernel_harness::check_run(&p, &run, kernel_harness::DEFAULT_TTL, "ledger.jsonl");
    assert_eq!((run.status(), run.out.code), ("converged", 0), "{:#}", run.json);
    assert_eq!(run.answer_text(), "1 / 0 is undefined; 10 / 2 is 5, as asked.");
    let roles = p.ledger().exchange_roles();
    assert_eq!(
        &roles[roles.len() - 4..],
        ["synthesis", "judge", "synthesis", "judge"],
        "{roles:?}"
    );
    // The Phase E record carries the reply that stands.
    let phase_e = p.ledger().cycles().last().cloned().cloned().unwrap();
    assert!(phase_e["llm_output"].as_str().unwrap().contains("as asked"), "{phase_e:#}");
}

#[test]
fn a_kernel_run_whose_answer_is_rejected_fails_with_semantic_rejected() {
    let p = kernel_with_check(
        "escalate",
        json!([{"contract_id": "PRC-JUDGE-001", "text": "{\"pass\": false, \"reason\": \"It hedges.\"}"}]),
    );

    let run = p.run(&[]);

    kernel_harness::check_run(&p, &run, kernel_harness::DEFAULT_TTL, "ledger.jsonl");
    assert_eq!((run.status(), run.out.code), ("failed", 1), "{:#}", run.json);
    assert_eq!(run.json["code"], "semantic_rejected", "{:#}", run.json);
    assert!(run.json["message"].as_str().unwrap().contains("It hedges."));
    assert!(run.answer()["answer_text"].is_string(), "the answer is still reported");
    // Accept keeps it, with the warning.
    let p = kernel_with_check(
        "accept",
        json!([{"contract_id": "PRC-JUDGE-001", "text": "{\"pass\": false, \"reason\": \"It hedges.\"}"}]),
    );
    let run = p.run(&[]);
    assert_eq!((run.status(), run.out.code), ("converged", 0), "{:#}", run.json);
    let codes: Vec<&str> = run.json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert_eq!(codes, ["semantic_rejected"], "{:#}", run.json);
}

// --- validate ------------------------------------------------------------------------------

#[test]
fn validate_checks_the_judge_of_a_semantic_check_and_its_on_fail() {
    let p = Project::new();
    let wo = |id: &str, judge: &str, on_fail: &str| {
        let wo = json!({"work_order_id": id, "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1",
                        "input": {"user_input": "I was charged twice."},
                        "semantic_check": {"judge": judge, "criteria": CRITERIA, "on_fail": on_fail}});
        p.write_json(&format!("work_orders/{id}.json"), &wo);
    };
    wo("WO-SEM-V-GOOD", "PRC-JUDGE-001@^1", "retry");
    // Not a judge: the classify contract answers {label, confidence}.
    wo("WO-SEM-V-SHAPE", "PRC-CLASSIFY-001@^1", "retry");
    wo("WO-SEM-V-NONE", "PRC-NOPE-001", "accept");
    wo("WO-SEM-V-ONFAIL", "PRC-JUDGE-001", "ignore");
    // A contract's own check gets the same judge check.
    let mut contract: Value = serde_json::from_str(
        &std::fs::read_to_string(p.path("contracts/classify/1.0.0.json")).unwrap(),
    )
    .unwrap();
    contract["contract_id"] = json!("PRC-SEMV-001");
    contract["semantic_check"] =
        json!({"judge": "PRC-CLASSIFY-001@^1", "criteria": CRITERIA, "on_fail": "retry"});
    p.write_json("contracts/semv/1.0.0.json", &contract);

    let out = p.pactum(&["validate", ".", "--format", "json"], &[]);

    out.status(1);
    let report = out.json();
    let found: Vec<(String, String, String)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"].as_str().unwrap_or_default().contains("WO-SEM-V"))
        .map(|d| {
            (
                d["file"].as_str().unwrap().rsplit('/').next().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
                d["pointer"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expect = |file: &str, pointer: &str| {
        ("WO-SEM-V-".to_string() + file, "work_order_invalid".to_string(), pointer.to_string())
    };
    let mut expected = vec![
        expect("NONE.json", "/semantic_check/judge"),
        expect("ONFAIL.json", "/semantic_check/on_fail"),
        expect("SHAPE.json", "/semantic_check/judge"),
    ];
    expected.sort();
    let mut found = found;
    found.sort();
    assert_eq!(found, expected, "{report:#}");
    let on_contract: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["file"] == "contracts/semv/1.0.0.json" && d["pointer"] == "/semantic_check/judge"
        })
        .collect();
    assert_eq!(on_contract.len(), 1, "{report:#}");
    assert_eq!(on_contract[0]["code"], "contract_schema_invalid");
    assert!(
        on_contract[0]["message"].as_str().unwrap().contains("PRC-CLASSIFY-001@1.0.0 cannot judge")
    );
    let messages = report["diagnostics"].to_string();
    assert!(messages.contains("cannot judge"), "{messages}");
    assert!(messages.contains("does not resolve"), "{messages}");
}

// --- library -------------------------------------------------------------------------------

/// Answers the classify contract with `answers` in turn and the judge with `verdicts`,
/// keeping every request.
struct Scripted {
    answers: Mutex<Vec<&'static str>>,
    verdicts: Mutex<Vec<Value>>,
    requests: Mutex<Vec<PromptRequest>>,
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "test"
    }

    fn complete(&self, request: &PromptRequest) -> pactum::error::Result<ProviderResponse> {
        self.requests.lock().unwrap().push(request.clone());
        let text = if request.contract_id == "PRC-JUDGE-001" {
            self.verdicts.lock().unwrap().remove(0).to_string()
        } else {
            self.answers.lock().unwrap().remove(0).to_string()
        };
        Ok(ProviderResponse::text(text))
    }
}

#[test]
fn library_runs_reask_with_the_previous_reply_and_the_verdict_as_data() {
    let project =
        pactum::project::Project::open(&crate::common::repo().join("registry.json")).unwrap();
    let provider = Arc::new(Scripted {
        answers: Mutex::new(vec![WRONG, RIGHT]),
        verdicts: Mutex::new(vec![
            json!({"pass": false, "score": 0.1, "reason": REASON}),
            json!({"pass": true, "reason": "ok"}),
        ]),
        requests: Mutex::default(),
    });
    let wo = pactum::work_order::WorkOrder::from_value(
        &json!({"work_order_id": "WO-SEM-LIB", "kind": "exchange", "contract": "PRC-CLASSIFY-001@^1",
                "input": {"user_input": "I was charged twice."},
                "semantic_check": {"judge": "PRC-JUDGE-001@^1", "criteria": CRITERIA, "on_fail": "retry"}}),
        std::path::Path::new("wo.json"),
    )
    .unwrap();
    let runner = pactum::executor::Runner {
        project: &project,
        providers: pactum::gateway::select::ProviderSet::single(provider.clone()),
        ledger: None,
        cycle_log: None,
        allow_draft: false,
    };

    let result = runner.run(&wo);

    assert!(result.ok, "{result:#?}");
    assert_eq!(result.output.as_ref().unwrap()["label"], "billing");
    assert_eq!(result.repair_attempts, 1);
    let requests = provider.requests.lock().unwrap();
    let ids: Vec<&str> = requests.iter().map(|r| r.contract_id.as_str()).collect();
    assert_eq!(ids, ["PRC-CLASSIFY-001", "PRC-JUDGE-001", "PRC-CLASSIFY-001", "PRC-JUDGE-001"]);
    // The judge was asked {input, output, criteria} of this exchange.
    let question = &requests[1].template_variables;
    assert_eq!(question["input"], json!({"user_input": "I was charged twice."}));
    assert_eq!(question["output"]["label"], "technical");
    assert_eq!(question["criteria"], CRITERIA);
    // The re-ask is the first prompt, then the rejected reply, then the verdict as data.
    let (first, again) = (&requests[0].messages, &requests[2].messages);
    assert_eq!(again[..first.len()], first[..]);
    assert_eq!(again.len(), first.len() + 2);
    assert_eq!(
        (again[first.len()].role, again[first.len()].content.as_str()),
        (Role::Assistant, WRONG)
    );
    let feedback: Value = serde_json::from_str(&again[first.len() + 1].content).unwrap();
    assert_eq!(again[first.len() + 1].role, Role::User);
    assert_eq!(feedback["semantic_check"]["verdict"]["reason"], REASON);
    assert_eq!(feedback["semantic_check"]["verdict"]["pass"], false);
    assert_eq!(feedback["semantic_check"]["judge"], "PRC-JUDGE-001@1.0.0");
    assert_eq!(feedback["semantic_check"]["criteria"], CRITERIA);
    assert_eq!(
        (
            feedback["semantic_check"]["attempt"].as_u64(),
            feedback["semantic_check"]["max_attempts"].as_u64()
        ),
        (Some(1), Some(2))
    );
}
