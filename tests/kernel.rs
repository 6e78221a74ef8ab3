//! Scenario tests of the kernel loop through the `pactum` binary, offline on scripted
//! fixtures (SPEC §8.1–§8.4, §9): thought → tool → thought, tool failures, subplans,
//! refinement over two passes, memory tools, and every supervisor repair (malformed JSON,
//! a plan failing its schema, tool arguments failing the tool's schema, an unknown tool),
//! repaired and unrecoverable.
//!
//! TTL, budget and provider failures are in `kernel_limits.rs`; the cycle log and the CLI
//! in `kernel_cli.rs`; Phase E through the library in `kernel_phase_e.rs`. Each scenario
//! lives in `tests/fixtures/kernel/<name>/` (work order + scripted replies).

use crate::kernel_harness as harness;

use harness::{DEFAULT_TTL, Project, check_run, pairs, statuses, step};
use serde_json::{Value, json};

// --- the happy path --------------------------------------------------------------------

#[test]
fn thought_tool_thought_converges_with_the_calculators_result() {
    let p = Project::scenario("thought_tool_thought");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.json["ok"], true);
    assert_eq!(run.out.code, 0);
    assert_eq!(run.json["errors"], json!([]));
    assert_eq!(run.cycles(), 6, "profile, plan, 2 reasoning steps, semantic, convergence");
    assert_eq!(run.ttl_remaining(), 4);
    assert!(run.json.get("supervisor_actions").is_none(), "no repair: {:#}", run.json);
    // The scripted s3 and synthesis replies are served only to prompts holding s2's
    // calculator result (their `expect_prompt`), so this 15 follows from the tool.
    assert!(run.answer_text().contains("15"), "{}", run.answer_text());
    assert_eq!(run.answer()["confidence"], 0.95);
    assert_eq!(run.answer()["used_step_ids"], json!(["s2", "s3"]));
    assert!(run.answer().get("ttl_exhausted").is_none(), "{:#}", run.answer());

    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        [
            "task_profile",
            "plan",
            "reasoning_step",
            "reasoning_step",
            "semantic_validation",
            "convergence",
            "synthesis"
        ]
    );
    // The calculator ran once, in plan order between the two reasoning steps, and its call
    // is logged with the next cycle.
    let calls = ledger.tool_calls();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["step_id"], "s2");
    assert_eq!(calls[0]["tool"], "calculator");
    assert_eq!(calls[0]["arguments"], json!({"expression": "5 + 10"}));
    assert_eq!(calls[0]["output"], json!({"result": 15}));
    let logged_with = ledger
        .cycles()
        .into_iter()
        .find(|c| c["tool_calls"].as_array().is_some_and(|a| !a.is_empty()))
        .unwrap();
    assert_eq!(logged_with["role"], "reasoning_step");
    assert_eq!(logged_with["step_number"], 4, "the cycle of s3, right after the tool ran");

    let plan = ledger.final_plan();
    assert_eq!(
        statuses(&plan),
        pairs(&[("s1", "complete"), ("s2", "complete"), ("s3", "complete")])
    );
    assert_eq!(step(&plan, "s1")["result"], "The numbers to add are 5 and 10.");
    assert_eq!(step(&plan, "s2")["result"], json!({"result": 15}));
    assert!(step(&plan, "s3")["result"].as_str().unwrap().contains("15"));
}

#[test]
fn plan_states_in_the_cycle_log_only_move_forward_in_plan_order() {
    let p = Project::scenario("thought_tool_thought");
    p.run(&[]);
    let ledger = p.ledger();
    // Each cycle record shows the plan as it was when the cycle ran: statuses only move
    // forward, one step at a time, in plan order.
    let order = |s: &str| match s {
        "pending" => 0,
        "running" => 1,
        "complete" | "failed" => 2,
        other => panic!("unknown status {other}"),
    };
    let mut last = vec![0; 3];
    for c in ledger.cycles() {
        if c["plan_state"].is_null() {
            continue;
        }
        let now: Vec<i32> = statuses(&c["plan_state"]).iter().map(|(_, s)| order(s)).collect();
        assert!(
            now.iter().zip(&last).all(|(n, l)| n >= l),
            "a status went back: {now:?} after {last:?}"
        );
        assert!(
            now.windows(2).all(|w| w[0] >= w[1]),
            "a later step ran before an earlier one: {now:?}"
        );
        last = now;
    }
    assert_eq!(last, [2, 2, 2]);
}

// --- steps, tools, subplans, refinement ------------------------------------------------

#[test]
fn a_failing_tool_fails_its_step_and_the_loop_goes_on() {
    let p = Project::scenario("tool_failure");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.out.code, 0);
    assert_eq!(run.error_codes(), ["tool_failed"], "the tool error is logged in the result");
    assert!(run.json["errors"][0]["message"].as_str().unwrap().contains("division by zero"));

    let ledger = p.ledger();
    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "failed"), ("s2", "complete")]));
    assert!(step(&plan, "s1")["error"].as_str().unwrap().contains("division by zero"));
    assert_eq!(step(&plan, "s2")["result"], json!({"result": 5}));

    let calls = ledger.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["step_id"], "s1");
    assert_eq!(calls[0]["error"]["code"], "tool_failed");
    assert!(calls[0].get("output").is_none());
    assert_eq!(calls[1]["step_id"], "s2");
    assert_eq!(calls[1]["output"], json!({"result": 5}));

    // The failure is passed on to the next cycle: the semantic validation cycle carries it
    // in its plan state.
    let semantic =
        ledger.cycles().into_iter().find(|c| c["role"] == "semantic_validation").unwrap();
    assert_eq!(step(&semantic["plan_state"], "s1")["status"], "failed");
}

#[test]
fn memory_tools_write_read_and_search_and_a_missing_key_is_a_value() {
    let p = Project::scenario("memory");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.json["errors"], json!([]));
    let plan = p.ledger().final_plan();
    assert_eq!(
        statuses(&plan),
        pairs(&[("s1", "complete"), ("s2", "complete"), ("s3", "complete"), ("s4", "complete")])
    );
    assert_eq!(step(&plan, "s1")["result"]["written"], true);
    assert_eq!(step(&plan, "s2")["result"], json!({"found": true, "value": 15}));
    assert_eq!(step(&plan, "s3")["result"], json!({"found": false}));
    assert_eq!(
        step(&plan, "s4")["result"],
        json!({"matches": [{"key": "notes/sum", "value": 15}]})
    );
}

#[test]
fn a_decomposed_step_runs_its_subplan_in_order_then_completes() {
    let p = Project::scenario("subplan");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.cycles(), 7, "profile, plan, subplan, 2 reasoning steps, semantic, convergence");
    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        [
            "task_profile",
            "plan",
            "subplan",
            "reasoning_step",
            "reasoning_step",
            "semantic_validation",
            "convergence",
            "synthesis"
        ]
    );
    let calls: Vec<(Value, Value)> =
        ledger.tool_calls().iter().map(|c| (c["step_id"].clone(), c["output"].clone())).collect();
    assert_eq!(
        calls,
        [(json!("s1.1"), json!({"result": 15})), (json!("s1.2"), json!({"result": 30}))]
    );

    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "complete"), ("s2", "complete")]));
    let parent = step(&plan, "s1");
    assert_eq!(parent["result"], json!({"substeps": 3}));
    assert_eq!(
        statuses(&json!({"steps": parent["substeps"]})),
        pairs(&[("s1.1", "complete"), ("s1.2", "complete"), ("s1.3", "complete")])
    );
    assert_eq!(parent["substeps"][2]["result"], "30 is twice 15: correct.");
    assert_eq!(step(&plan, "s2")["result"], "The result is 30.");
    // s2 ran after every substep: its reasoning reply is the second one.
    let s2_cycle = &ledger.cycles()[4];
    assert_eq!(s2_cycle["role"], "reasoning_step");
    assert_eq!(s2_cycle["llm_output"], "The result is 30.");
}

#[test]
fn a_failing_substep_fails_its_parent_and_the_loop_goes_on() {
    let p = Project::scenario("subplan");
    p.edit("fixtures.json", |f| {
        let subplan = f["responses"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["contract_id"] == "PRC-SUBPLAN-001")
            .unwrap();
        let text = subplan["text"].as_str().unwrap().replace("15 * 2", "15 / 0");
        subplan["text"] = json!(text);
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged");
    assert_eq!(run.error_codes(), ["tool_failed"]);
    let plan = p.ledger().final_plan();
    let parent = step(&plan, "s1");
    assert_eq!(parent["status"], "failed", "{parent:#}");
    assert!(parent["error"].as_str().unwrap().contains("s1.2"), "{parent:#}");
    assert_eq!(
        statuses(&json!({"steps": parent["substeps"]})),
        pairs(&[("s1.1", "complete"), ("s1.2", "failed"), ("s1.3", "complete")])
    );
    assert_eq!(step(&plan, "s2")["status"], "complete");
}

#[test]
fn a_second_pass_refines_the_plan_and_keeps_finished_steps() {
    let p = Project::scenario("refinement");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.cycles(), 8);
    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        [
            "task_profile",
            "plan",
            "semantic_validation",
            "convergence",
            "task_profile_update",
            "refinement",
            "semantic_validation",
            "convergence",
            "synthesis"
        ]
    );
    // s1 finished in pass 1 and is unchanged in the refined plan: it is not run again.
    let calls: Vec<Value> = ledger.tool_calls().iter().map(|c| c["step_id"].clone()).collect();
    assert_eq!(calls, [json!("s1"), json!("s2")]);
    let plan = ledger.final_plan();
    assert_eq!(plan["goal"], "Add 5 and 10, then double the sum.");
    assert_eq!(statuses(&plan), pairs(&[("s1", "complete"), ("s2", "complete")]));
    assert_eq!(step(&plan, "s2")["result"], json!({"result": 30}));
}

#[test]
fn phase_e_is_told_about_both_passes_and_the_refinement() {
    // Without a synthesis reply Phase E degrades and its text states the counts it was given.
    let p = Project::scenario("refinement");
    p.drop_replies("PRC-SYNTH-001");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged");
    let text = run.answer_text();
    assert!(text.contains("2 passes ran with 1 refinement"), "{text}");
    assert!(text.contains("convergence status: converged"), "{text}");
    assert_eq!(run.answer()["metadata"]["degraded"], true);
    assert!(
        run.answer()["metadata"]["reason"].as_str().unwrap().contains("script_exhausted"),
        "{:#}",
        run.answer()
    );
    assert_eq!(run.answer()["used_step_ids"], json!(["s1", "s2"]));
}

#[test]
fn a_refinement_cut_off_by_the_ttl_is_not_counted() {
    // TTL 5: pass 1 takes 4 cycles, pass 2 gets its profile update (TTL 0) and the TTL
    // expires before the refinement call. Phase E must not be told a refinement happened.
    let p = Project::scenario("refinement");
    p.constrain("ttl", json!(5));
    p.drop_replies("PRC-SYNTH-001");
    let run = p.run(&[]);
    check_run(&p, &run, 5, "ledger.jsonl");

    assert_eq!(run.status(), "ttl_expired");
    let roles = p.ledger().exchange_roles();
    assert!(!roles.contains(&"refinement".to_string()), "{roles:?}");
    let text = run.answer_text();
    assert!(text.contains("with 0 refinements"), "no refinement call was made: {text}");
}

// --- supervisor --------------------------------------------------------------------------

#[test]
fn a_malformed_plan_is_repaired_on_the_first_attempt() {
    let p = Project::scenario("repair_json_plan");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.cycles(), 5, "the repair is a cycle and costs TTL");
    assert_eq!(run.ttl_remaining(), 5);
    assert_eq!(run.actions(), [("repair_json".to_string(), "repaired".to_string())]);
    assert_eq!(run.json["supervisor_actions"][0]["attempt"], 1);
    assert!(run.answer_text().contains("15"));

    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        ["task_profile", "plan", "repair_json", "semantic_validation", "convergence", "synthesis"]
    );
    let exchanges = ledger.exchanges();
    assert_eq!(exchanges[1]["verdict"], "output_json_extraction_failed");
    assert_eq!(exchanges[2]["contract_id"], "PRC-REPAIRJSON-001");
    assert_eq!(exchanges[2]["repair_attempt"], 1);
    assert_eq!(exchanges[2]["verdict"], "ok", "the repair is checked against the plan schema");
    let cycles = ledger.cycles();
    assert_eq!(cycles[1]["errors"][0]["code"], "output_json_extraction_failed");
    assert_eq!(cycles[2]["supervisor_actions"], json!([{"role": "repair_json", "attempt": 1}]));
    assert_eq!(statuses(&ledger.final_plan()), pairs(&[("s1", "complete")]));
}

#[test]
fn two_failed_repairs_are_unrecoverable_and_phase_e_still_answers() {
    let p = Project::scenario("repair_exhausted");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "unrecoverable", "{:#}", run.json);
    assert_eq!(run.json["ok"], false);
    assert_eq!(run.out.code, 1);
    assert_eq!(run.error_codes(), ["supervisor_unrecoverable"]);
    let message = run.json["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("2 attempt"), "{message}");
    assert_eq!(
        run.actions(),
        [
            ("repair_json".to_string(), "rejected".to_string()),
            ("repair_json".to_string(), "rejected".to_string())
        ]
    );
    assert_eq!(run.cycles(), 4, "profile, plan, two repairs");
    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        ["task_profile", "plan", "repair_json", "repair_json", "synthesis"]
    );
    let attempts: Vec<&Value> = ledger.exchanges().iter().map(|x| &x["repair_attempt"]).collect();
    assert_eq!(attempts, [&json!(0), &json!(0), &json!(1), &json!(2), &json!(0)]);

    // The model's answer, degraded by pactum: the loop left no plan behind.
    let answer = run.answer();
    let text = answer["answer_text"].as_str().unwrap();
    assert!(text.starts_with("No plan could be made, so the sum was not computed. "), "{text}");
    assert!(text.contains("convergence status: unrecoverable"), "the early exit is said: {text}");
    assert!(text.contains("Not available: plan_state"), "{text}");
    // The stop is logged: the Phase E record names supervisor_unrecoverable.
    let phase_e = ledger.cycles().last().cloned().cloned().unwrap();
    assert_eq!(phase_e["phase"], "E");
    assert_eq!(phase_e["errors"][0]["code"], "supervisor_unrecoverable", "{phase_e:#}");
    assert_eq!(phase_e["degraded"], true);
    assert_eq!(phase_e["degraded_reason"], "incomplete_state");
    let meta = &answer["metadata"];
    assert_eq!(meta["degraded"], true, "{answer:#}");
    assert!(meta["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let missing = meta["missing_fields"].as_array().unwrap();
    for field in ["plan_state", "execution_results", "convergence_assessment"] {
        assert!(missing.contains(&json!(field)), "{field} missing: {meta:#}");
    }
    assert!(!missing.contains(&json!("task_profile")), "the profile was made: {meta:#}");
    assert!(meta["task_profile"].is_string(), "present artifacts are carried: {meta:#}");
}

#[test]
fn unrecoverable_without_a_synthesis_reply_degrades_to_a_built_answer() {
    let p = Project::scenario("repair_exhausted");
    p.drop_replies("PRC-SYNTH-001");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "unrecoverable");
    let answer = run.answer();
    assert_eq!(answer["metadata"]["degraded"], true);
    assert!(answer["metadata"]["reason"].as_str().unwrap().starts_with("synthesis_failed"));
    let text = run.answer_text();
    assert!(text.contains("calculate the sum of 5 and 10"), "the request is restated: {text}");
    assert!(text.contains("convergence status: unrecoverable"), "{text}");
}

#[test]
fn no_repair_attempts_allowed_means_the_first_bad_plan_is_unrecoverable() {
    let p = Project::scenario("repair_json_plan");
    p.constrain("max_repair_attempts", json!(0));
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "unrecoverable");
    assert_eq!(run.error_codes(), ["supervisor_unrecoverable"]);
    assert_eq!(run.cycles(), 2);
    assert!(run.actions().is_empty());
    assert!(!p.ledger().exchange_roles().contains(&"repair_json".to_string()));
}

#[test]
fn a_plan_failing_its_schema_is_repaired_by_the_plan_repair_contract() {
    let p = Project::scenario("repair_plan_schema");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_plan".to_string(), "repaired".to_string())]);
    let ledger = p.ledger();
    assert_eq!(ledger.exchanges()[1]["verdict"], "output_schema_invalid");
    assert_eq!(ledger.exchanges()[2]["contract_id"], "PRC-REPAIRPLAN-001");
    let plan = ledger.final_plan();
    assert_eq!(statuses(&plan), pairs(&[("s1", "complete")]));
    assert!(step(&plan, "s1").get("priority").is_none());
}

#[test]
fn tool_arguments_failing_the_tool_schema_are_repaired() {
    let p = Project::scenario("repair_tool_args");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_tool_call".to_string(), "repaired".to_string())]);
    let ledger = p.ledger();
    assert_eq!(ledger.exchanges()[2]["contract_id"], "PRC-REPAIRTOOL-001");
    let plan = ledger.final_plan();
    assert_eq!(step(&plan, "s1")["arguments"], json!({"expression": "5 + 10"}));
    assert_eq!(step(&plan, "s1")["result"], json!({"result": 15}));
    let calls = ledger.tool_calls();
    assert_eq!(calls.len(), 1, "the bad arguments never reached the tool");
    assert_eq!(calls[0]["arguments"], json!({"expression": "5 + 10"}));
}

#[test]
fn tool_arguments_that_stay_invalid_after_two_repairs_are_unrecoverable() {
    let p = Project::scenario("repair_tool_args");
    p.edit("fixtures.json", |f| {
        let responses = f["responses"].as_array_mut().unwrap();
        let bad = json!({"contract_id": "PRC-REPAIRTOOL-001", "text": "{\"arguments\": {\"expression\": 15}}"});
        responses[2] = bad.clone();
        responses.insert(3, bad);
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "unrecoverable", "{:#}", run.json);
    assert_eq!(run.error_codes(), ["supervisor_unrecoverable"]);
    assert!(run.json["errors"][0]["message"].as_str().unwrap().contains("calculator"));
    assert_eq!(run.actions().len(), 2);
    assert!(p.ledger().tool_calls().is_empty(), "invalid arguments never reach the tool");
}

#[test]
fn an_unknown_tool_is_repaired_to_an_available_one_and_the_step_completes() {
    let p = Project::scenario("missing_tool");
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_missing_tool".to_string(), "repaired".to_string())]);
    assert_eq!(run.cycles(), 5);
    let ledger = p.ledger();
    assert_eq!(
        ledger.exchange_roles(),
        [
            "task_profile",
            "plan",
            "repair_missing_tool",
            "semantic_validation",
            "convergence",
            "synthesis"
        ]
    );
    assert_eq!(ledger.exchanges()[2]["contract_id"], "PRC-MISSINGTOOL-001");
    let plan = ledger.final_plan();
    let s1 = step(&plan, "s1");
    assert_eq!(s1["status"], "complete");
    assert_eq!(s1["tool"], "calculator");
    assert_eq!(s1["result"], json!({"result": 15}));
    let calls = ledger.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["tool"], "calculator");
}

#[test]
fn a_missing_tool_repair_that_keeps_naming_unknown_tools_is_unrecoverable() {
    let p = Project::scenario("missing_tool");
    p.edit("fixtures.json", |f| {
        let responses = f["responses"].as_array_mut().unwrap();
        let bad = json!({"contract_id": "PRC-MISSINGTOOL-001",
                         "text": "{\"step_id\": \"s1\", \"description\": \"Add.\", \"tool\": \"adder\"}"});
        responses[2] = bad.clone();
        responses.insert(3, bad);
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "unrecoverable", "{:#}", run.json);
    assert_eq!(
        run.actions(),
        [
            ("repair_missing_tool".to_string(), "rejected".to_string()),
            ("repair_missing_tool".to_string(), "rejected".to_string())
        ]
    );
    let why = run.json["supervisor_actions"][0]["errors"][0].as_str().unwrap();
    assert!(why.contains("adder"), "{why}");
    assert!(p.ledger().tool_calls().is_empty(), "no tool ran");
    let plan = p.ledger().final_plan();
    assert_ne!(step(&plan, "s1")["status"], "complete", "{plan:#}");
    assert!(step(&plan, "s1").get("result").is_none(), "{plan:#}");
}

#[test]
fn a_malformed_convergence_verdict_is_repaired_as_json() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("fixtures.json", |f| {
        let responses = f["responses"].as_array_mut().unwrap();
        let at = responses.iter().position(|r| r["contract_id"] == "PRC-CONVERGE-001").unwrap();
        responses[at]["text"] = json!("converged: yes, because 15");
        responses.insert(
            at + 1,
            json!({"contract_id": "PRC-REPAIRJSON-001",
                   "text": "{\"converged\": true, \"reason\": \"15 answers the request.\"}"}),
        );
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_json".to_string(), "repaired".to_string())]);
    assert_eq!(run.cycles(), 7);
    let ledger = p.ledger();
    let repair = ledger.cycles().into_iter().find(|c| c["role"] == "repair_json").unwrap();
    assert_eq!(repair["phase"], "D");
}

// --- the plan is the kernel's ------------------------------------------------------------

#[test]
fn statuses_proposed_by_the_model_are_ignored_and_every_step_runs() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("fixtures.json", |f| {
        let plan = &mut f["responses"][1];
        let text = plan["text"].as_str().unwrap();
        let text = text.replacen("\"pending\"", "\"complete\"", 2).replacen(
            "\"pending\"",
            "\"failed\"",
            1,
        );
        assert!(!text.contains("pending"));
        plan["text"] = json!(text);
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    let ledger = p.ledger();
    assert_eq!(ledger.tool_calls().len(), 1, "s2 ran although the model called it complete");
    let reasoning = ledger.exchange_roles().iter().filter(|r| *r == "reasoning_step").count();
    assert_eq!(reasoning, 2);
    let plan = ledger.final_plan();
    assert_eq!(
        statuses(&plan),
        pairs(&[("s1", "complete"), ("s2", "complete"), ("s3", "complete")])
    );
    // The statuses the model sent were reset: the first step's cycle shows the others
    // pending.
    let first = ledger.cycles().into_iter().find(|c| c["role"] == "reasoning_step").unwrap();
    let now = statuses(&first["plan_state"]);
    assert_eq!(now[1..], pairs(&[("s2", "pending"), ("s3", "pending")]), "{now:?}");
}

#[test]
fn the_cycle_of_a_step_logs_that_step_as_running() {
    let p = Project::scenario("thought_tool_thought");
    p.run(&[]);
    let ledger = p.ledger();
    let steps: Vec<Vec<(String, String)>> = ledger
        .cycles()
        .into_iter()
        .filter(|c| c["role"] == "reasoning_step")
        .map(|c| statuses(&c["plan_state"]))
        .collect();
    assert_eq!(steps[0], pairs(&[("s1", "running"), ("s2", "pending"), ("s3", "pending")]));
    assert_eq!(steps[1], pairs(&[("s1", "complete"), ("s2", "complete"), ("s3", "running")]));
}

#[test]
fn a_plan_with_duplicate_step_ids_goes_to_the_plan_repair() {
    let p = Project::scenario("repair_plan_schema");
    p.edit("fixtures.json", |f| {
        let twice = json!({"goal": "Report the sum.", "steps": [
            {"step_id": "s1", "description": "Add.", "status": "pending", "tool": "calculator", "arguments": {"expression": "5 + 10"}},
            {"step_id": "s1", "description": "Add again.", "status": "pending", "tool": "calculator", "arguments": {"expression": "10 + 5"}}]});
        f["responses"][1]["text"] = json!(twice.to_string());
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.actions(), [("repair_plan".to_string(), "repaired".to_string())]);
    let ledger = p.ledger();
    assert_eq!(ledger.exchanges()[1]["verdict"], "ok", "the plan fits its schema");
    assert_eq!(ledger.tool_calls().len(), 1, "only the repaired plan ran");
}

#[test]
fn template_syntax_in_the_request_is_data_not_template() {
    let p = Project::scenario("thought_tool_thought");
    p.edit("wo.json", |wo| {
        wo["request"] =
            json!("calculate {{ 5 + 10 }} {% if x %}the sum{% endif %} of 5 and 10 — «15»?")
    });
    let run = p.run(&[]);
    check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");
    assert_eq!(run.status(), "converged", "{:#}", run.json);
    assert_eq!(run.json["errors"], json!([]));
}

// --- Phase E in a run ----------------------------------------------------------------------

#[test]
fn a_bad_synthesis_reply_degrades_the_answer_but_not_the_converged_run() {
    let bad_replies = [
        json!({"contract_id": "PRC-SYNTH-001",
               "text": "{\"answer_text\": \"15\", \"metadata\": {}, \"verdict\": \"done\"}"}),
        json!({"contract_id": "PRC-SYNTH-001", "text": "The answer is 15."}),
        json!({"contract_id": "PRC-SYNTH-001", "text": "{\"answer_text\": \"\", \"metadata\": {}}"}),
        json!({"contract_id": "PRC-SYNTH-001", "error": {"code": "provider_error", "message": "HTTP 500"}}),
    ];
    for bad in bad_replies {
        let p = Project::scenario("thought_tool_thought");
        p.edit("fixtures.json", |f| {
            *f["responses"].as_array_mut().unwrap().last_mut().unwrap() = bad.clone()
        });
        let run = p.run(&[]);
        check_run(&p, &run, DEFAULT_TTL, "ledger.jsonl");

        assert_eq!(run.status(), "converged", "{bad}");
        assert_eq!(run.out.code, 0, "{bad}");
        let answer = run.answer();
        assert_eq!(answer["metadata"]["degraded"], true, "{bad}: {answer:#}");
        assert!(
            answer["metadata"]["reason"].as_str().unwrap().starts_with("synthesis_"),
            "{answer:#}"
        );
        // What the run established still reaches the user.
        let text = run.answer_text();
        assert!(text.contains("{\"result\":15}"), "{bad}: {text}");
        assert_eq!(answer["used_step_ids"], json!(["s1", "s2", "s3"]));
        let phase_e = p.ledger().cycles().last().cloned().cloned().unwrap();
        assert_eq!(phase_e["degraded"], true, "{phase_e:#}");
        assert!(phase_e["degraded_reason"].as_str().unwrap().starts_with("synthesis_"));
        if bad.get("error").is_some() {
            assert_eq!(phase_e["errors"][0]["code"], "provider_error", "{phase_e:#}");
        }
    }
}
