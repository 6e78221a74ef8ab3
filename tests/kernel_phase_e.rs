//! Phase E through the library (SPEC §9): `synthesize` with complete state, an expired TTL,
//! missing optional and required fields, zero passes, a synthesis call that fails and one
//! that returns invalid output — and a property test over random partial inputs and
//! replies. Every answer must fit `schemas/final_answer.schema.json`; nothing may panic.

use pactum::Error;
use pactum::error::ProviderFailure;
use pactum::synthesis::{FinalAnswer, PhaseEInput, degraded, synthesize};
use proptest::prelude::*;
use serde_json::{Value, json};

fn repo_json(rel: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn final_answer_schema() -> jsonschema::Validator {
    jsonschema::draft202012::new(&repo_json("schemas/final_answer.schema.json")).unwrap()
}

/// The synthesis contract's input schema: what the kernel's call would check.
fn synth_input_schema() -> jsonschema::Validator {
    let contract = repo_json("contracts/synth/1.0.0.json");
    jsonschema::draft202012::new(&contract["input_schema"]).unwrap()
}

#[track_caller]
fn assert_valid(answer: &FinalAnswer) {
    let value = answer.to_value();
    let errors: Vec<String> = final_answer_schema()
        .iter_errors(&value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{value:#}");
    assert!(!answer.answer_text.trim().is_empty());
    assert_eq!(FinalAnswer::from_value(&value).as_ref(), Ok(answer), "round trip");
}

#[track_caller]
fn assert_degraded(answer: &FinalAnswer, reason_prefix: &str) {
    assert_valid(answer);
    assert!(answer.is_degraded(), "{:#}", answer.to_value());
    assert_eq!(answer.metadata["degraded"], true);
    let reason = answer.metadata["reason"].as_str().expect("a reason");
    assert!(reason.starts_with(reason_prefix), "reason {reason:?} should start {reason_prefix:?}");
    let missing = answer.metadata["missing_fields"].as_array().expect("missing_fields");
    assert!(missing.iter().all(Value::is_string));
}

fn complete() -> PhaseEInput {
    PhaseEInput {
        request: Some("calculate the sum of 5 and 10".into()),
        correlation_id: Some("WO-KERNEL-TTT-0123456789ab".into()),
        execution_start_timestamp: Some("2026-01-01T00:00:00Z".into()),
        convergence_status: Some("converged".into()),
        total_passes: Some(1),
        total_refinements: Some(0),
        ttl_remaining: Some(6),
        plan_state: Some(json!({"goal": "sum", "steps": [
            {"step_id": "s1", "description": "Add 5 and 10.", "status": "complete",
             "tool": "calculator", "arguments": {"expression": "5 + 10"}, "result": {"result": 15}}]})),
        execution_results: Some(
            json!({"s1": {"status": "complete", "result": {"result": 15}, "error": null}}),
        ),
        convergence_assessment: Some(json!({"converged": true, "reason": "15"})),
        execution_passes: Some(
            json!([{"pass": 1, "steps_run": ["s1"], "failed_steps": 0, "converged": true}]),
        ),
        semantic_validation: Some(json!("s1 returned 15.")),
        task_profile: Some(json!("Exact arithmetic.")),
    }
}

fn good_reply() -> Value {
    json!({"answer_text": "The sum of 5 and 10 is 15.", "confidence": 0.9,
           "used_step_ids": ["s1"], "notes": null, "ttl_exhausted": false, "metadata": {}})
}

fn unreachable() -> Error {
    Error::provider("openai", ProviderFailure::Unreachable, "connection refused")
}

// --- scenarios ---------------------------------------------------------------------------

#[test]
fn complete_state_is_synthesized_by_the_model_from_a_valid_input() {
    let mut seen = Vec::new();
    let answer = synthesize(&complete(), false, &mut |input| {
        seen.push(input.clone());
        Ok(good_reply())
    });
    assert_valid(&answer);
    assert!(!answer.is_degraded());
    assert_eq!(answer.answer_text, "The sum of 5 and 10 is 15.");
    assert_eq!(answer.confidence, Some(0.9));
    assert_eq!(answer.used_step_ids, Some(vec!["s1".to_string()]));
    assert_eq!(answer.ttl_exhausted, Some(false));
    assert!(answer.metadata.is_empty());

    assert_eq!(seen.len(), 1, "one call");
    let errors: Vec<String> =
        synth_input_schema().iter_errors(&seen[0]).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "the synthesis input fits PRC-SYNTH-001: {errors:?}");
    assert_eq!(seen[0]["total_passes"], 1);
    assert_eq!(seen[0]["plan_state"]["steps"][0]["result"], json!({"result": 15}));
}

#[test]
fn an_expired_ttl_is_flagged_whatever_the_model_says() {
    let mut input = complete();
    input.convergence_status = Some("ttl_expired".into());
    input.ttl_remaining = Some(0);
    let answer = synthesize(&input, true, &mut |_| Ok(good_reply()));
    assert_valid(&answer);
    assert_eq!(answer.ttl_exhausted, Some(true));
    assert!(!answer.is_degraded());

    // Degraded answers carry the flag too.
    let answer = synthesize(&input, true, &mut |_| Err(unreachable()));
    assert_degraded(&answer, "synthesis_failed");
    assert_eq!(answer.ttl_exhausted, Some(true));
    assert!(answer.answer_text.contains("time limit"), "{}", answer.answer_text);
}

#[test]
fn missing_optional_fields_mark_the_model_answer_degraded_and_list_them() {
    let mut input = complete();
    input.execution_passes = None;
    input.semantic_validation = Some(Value::Null);
    input.task_profile = None;
    let mut reply = good_reply();
    reply["metadata"] = json!({"source": "model"});
    // The model claims a step the plan never had: only completed steps are kept.
    reply["used_step_ids"] = json!(["s1", "s9"]);
    let answer = synthesize(&input, false, &mut |_| Ok(reply.clone()));
    assert_degraded(&answer, "incomplete_state");
    let text = &answer.answer_text;
    assert!(text.starts_with("The sum of 5 and 10 is 15. (Based on part of the run: "), "{text}");
    assert!(
        text.ends_with("Not available: execution_passes, semantic_validation, task_profile.)"),
        "pactum says what the model did not have: {text}"
    );
    assert_eq!(answer.used_step_ids, Some(vec!["s1".to_string()]));
    assert_eq!(
        answer.metadata["missing_fields"],
        json!(["execution_passes", "semantic_validation", "task_profile"])
    );
    assert_eq!(answer.metadata["source"], "model", "the model's metadata is kept");
    // The artifacts that were present travel under their own names.
    assert_eq!(answer.metadata["plan_state"], complete().plan_state.unwrap());
    assert_eq!(answer.metadata["execution_results"], complete().execution_results.unwrap());
    assert!(answer.metadata.get("task_profile").is_none());
}

#[test]
fn missing_required_fields_degrade_without_calling_the_model() {
    for drop in [
        "request",
        "correlation_id",
        "execution_start_timestamp",
        "convergence_status",
        "total_passes",
        "total_refinements",
        "ttl_remaining",
    ] {
        let mut input = complete();
        match drop {
            "request" => input.request = Some("   ".into()),
            "correlation_id" => input.correlation_id = None,
            "execution_start_timestamp" => input.execution_start_timestamp = None,
            "convergence_status" => input.convergence_status = None,
            "total_passes" => input.total_passes = None,
            "total_refinements" => input.total_refinements = None,
            _ => input.ttl_remaining = None,
        }
        let mut called = false;
        let answer = synthesize(&input, false, &mut |_| {
            called = true;
            Ok(good_reply())
        });
        assert!(!called, "{drop}: no call with a required field missing");
        assert_degraded(&answer, "incomplete_state: required input missing");
        assert!(answer.metadata["reason"].as_str().unwrap().contains(drop), "{drop}");
        assert_eq!(answer.metadata["missing_fields"], json!([drop]), "{drop}");
        assert_eq!(answer.metadata["plan_state"], complete().plan_state.unwrap());
        assert!(answer.answer_text.contains("s1 (Add 5 and 10.) gave"), "{}", answer.answer_text);
        assert_eq!(answer.used_step_ids, Some(vec!["s1".to_string()]));
    }
    // Nothing at all.
    let answer = synthesize(&PhaseEInput::default(), true, &mut |_| Ok(good_reply()));
    assert_degraded(&answer, "incomplete_state");
    assert_eq!(answer.metadata["missing_fields"].as_array().unwrap().len(), 13);
    assert_eq!(answer.ttl_exhausted, Some(true));
}

#[test]
fn zero_passes_are_explained_when_phase_e_builds_the_answer() {
    let input = PhaseEInput {
        request: Some("calculate the sum of 5 and 10".into()),
        correlation_id: Some("c".into()),
        execution_start_timestamp: Some("2026-01-01T00:00:00Z".into()),
        convergence_status: Some("ttl_expired".into()),
        total_passes: Some(0),
        total_refinements: Some(0),
        ttl_remaining: Some(0),
        ..PhaseEInput::default()
    };
    let answer = synthesize(&input, true, &mut |_| Err(unreachable()));
    assert_degraded(&answer, "synthesis_failed");
    let text = &answer.answer_text;
    assert!(text.contains("No execution pass took place"), "{text}");
    assert!(text.contains("0 passes ran with 0 refinements"), "{text}");
    assert!(text.contains("calculate the sum of 5 and 10"), "{text}");
    assert_eq!(answer.used_step_ids, None);
    assert_eq!(answer.metadata["missing_fields"].as_array().unwrap().len(), 6);

    // With the model reachable, it gets total_passes 0 and the input still fits the contract.
    let mut seen = Value::Null;
    let answer = synthesize(&input, true, &mut |v| {
        seen = v.clone();
        Ok(json!({"answer_text": "Nothing ran.", "metadata": {}}))
    });
    assert_degraded(&answer, "incomplete_state");
    assert_eq!(seen["total_passes"], 0);
    assert!(synth_input_schema().is_valid(&seen), "{seen:#}");
}

#[test]
fn a_failing_synthesis_call_degrades_with_its_error() {
    let answer = synthesize(&complete(), false, &mut |_| Err(unreachable()));
    assert_degraded(&answer, "synthesis_failed: provider_unreachable");
    assert!(answer.metadata["reason"].as_str().unwrap().contains("connection refused"));
    assert_eq!(answer.metadata["missing_fields"], json!([]));
    assert!(answer.answer_text.contains("convergence status: converged"));
    assert!(answer.answer_text.contains("gave {\"result\":15}"), "{}", answer.answer_text);
    assert_eq!(answer.confidence, None, "no confidence is invented");
    assert!(answer.notes.as_deref().unwrap().contains("degraded"));
    for key in ["plan_state", "execution_results", "convergence_assessment", "task_profile"] {
        assert!(answer.metadata.contains_key(key), "{key}");
    }
}

#[test]
fn invalid_synthesis_output_degrades() {
    let invalid = [
        json!({"answer_text": "15", "metadata": {}, "extra": true}),
        json!({"answer_text": "", "metadata": {}}),
        json!({"answer_text": "   \n", "metadata": {}}),
        json!({"answer_text": "15"}),
        json!({"answer_text": "15", "metadata": null}),
        json!({"answer_text": "15", "metadata": {}, "confidence": 1.5}),
        json!({"answer_text": "15", "metadata": {}, "confidence": "high"}),
        json!({"answer_text": "15", "metadata": {}, "used_step_ids": "s1"}),
        json!({"answer_text": "15", "metadata": {"degraded": "no"}}),
        json!({"answer_text": 15, "metadata": {}}),
        json!(["15"]),
        json!("The sum is 15."),
        Value::Null,
    ];
    for reply in invalid {
        let answer = synthesize(&complete(), false, &mut |_| Ok(reply.clone()));
        assert_degraded(&answer, "synthesis_output_invalid");
        assert!(answer.answer_text.starts_with("No synthesized answer is available"), "{reply}");
    }
}

#[test]
fn null_optional_answer_fields_are_accepted_and_dropped() {
    let reply = json!({"answer_text": "15", "confidence": null, "used_step_ids": null,
                       "notes": null, "ttl_exhausted": null, "metadata": {}});
    let answer = synthesize(&complete(), false, &mut |_| Ok(reply.clone()));
    assert_valid(&answer);
    assert!(!answer.is_degraded());
    assert_eq!(answer.to_value(), json!({"answer_text": "15", "metadata": {}}));
}

#[test]
fn degraded_copes_with_odd_plan_states_and_long_unicode_results() {
    let long = "é😀".repeat(200);
    let odd_plans = [
        json!({"steps": "not a list"}),
        json!({"steps": [1, null, "x", {"status": 3}, {"step_id": 7, "status": "complete"}]}),
        json!({"steps": [{"step_id": "s1", "status": "complete", "result": long}]}),
        json!({"steps": [{"step_id": "s1", "status": "failed"}, {"step_id": "s2", "status": "running"}]}),
        json!({"steps": []}),
        json!([1, 2, 3]),
        json!("plan"),
    ];
    for plan in odd_plans {
        let input = PhaseEInput { plan_state: Some(plan.clone()), ..complete() };
        for ttl in [false, true] {
            let answer = degraded(&input, "test", &["x"], ttl);
            assert_degraded(&answer, "test");
            assert_eq!(answer.metadata["plan_state"], plan);
            assert_eq!(answer.ttl_exhausted, ttl.then_some(true));
        }
    }
    let input = PhaseEInput {
        plan_state: Some(
            json!({"steps": [{"step_id": "s1", "status": "complete", "result": long}]}),
        ),
        ..complete()
    };
    let text = degraded(&input, "r", &[], false).answer_text;
    assert!(text.contains('…'), "long results are cut: {text}");
    assert!(text.chars().count() < 600, "{text}");
}

// --- property: never panics, always a valid FinalAnswer ----------------------------------

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-2.0f64..2.0).prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
        Just(json!("")),
        Just(json!("   ")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A plan-like value: sometimes well-formed steps, sometimes anything.
fn plan_value() -> impl Strategy<Value = Value> {
    let status = prop_oneof![
        Just(json!("pending")),
        Just(json!("running")),
        Just(json!("complete")),
        Just(json!("failed")),
        json_value(),
    ];
    let step = (any::<String>(), status, json_value(), json_value()).prop_map(
        |(id, status, result, error)| {
            json!({"step_id": id, "description": "d", "status": status, "result": result, "error": error})
        },
    );
    prop_oneof![
        prop::collection::vec(step, 0..5).prop_map(|steps| json!({"goal": "g", "steps": steps})),
        json_value(),
    ]
}

/// What the synthesis call does.
#[derive(Clone, Debug)]
enum Reply {
    Fails,
    Valid(Value),
    Anything(Value),
}

fn reply() -> impl Strategy<Value = Reply> {
    let valid = (
        "[ -~]{0,40}",
        prop::option::of(-0.5f64..1.5),
        prop::option::of(prop::collection::vec(any::<String>(), 0..3)),
        prop::option::of(any::<bool>()),
        prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..3),
    )
        .prop_map(|(text, confidence, used, ttl, meta)| {
            let mut v =
                json!({"answer_text": text, "metadata": Value::Object(meta.into_iter().collect())});
            if let Some(c) = confidence {
                v["confidence"] = json!(c);
            }
            if let Some(u) = used {
                v["used_step_ids"] = json!(u);
            }
            if let Some(t) = ttl {
                v["ttl_exhausted"] = json!(t);
            }
            v
        });
    prop_oneof![
        Just(Reply::Fails),
        valid.prop_map(Reply::Valid),
        json_value().prop_map(Reply::Anything)
    ]
}

prop_compose! {
    fn phase_e_input()(
        request in prop::option::of(prop_oneof![Just("  ".to_string()), any::<String>()]),
        correlation_id in prop::option::of(any::<String>()),
        started in prop::option::of(any::<String>()),
        status in prop::option::of(prop_oneof![
            Just("converged".to_string()), Just("ttl_expired".to_string()), any::<String>()]),
        passes in prop::option::of(0u64..5),
        refinements in prop::option::of(0u64..5),
        ttl in prop::option::of(0u64..20),
        plan_state in prop::option::of(plan_value()),
        execution_results in prop::option::of(json_value()),
        convergence_assessment in prop::option::of(json_value()),
        execution_passes in prop::option::of(json_value()),
        semantic_validation in prop::option::of(json_value()),
        task_profile in prop::option::of(json_value()),
    ) -> PhaseEInput {
        PhaseEInput {
            request,
            correlation_id,
            execution_start_timestamp: started,
            convergence_status: status,
            total_passes: passes,
            total_refinements: refinements,
            ttl_remaining: ttl,
            plan_state,
            execution_results,
            convergence_assessment,
            execution_passes,
            semantic_validation,
            task_profile,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn synthesize_always_returns_a_schema_valid_final_answer(
        input in phase_e_input(),
        reply in reply(),
        ttl_exhausted in any::<bool>(),
    ) {
        let mut calls = 0;
        let answer = synthesize(&input, ttl_exhausted, &mut |value| {
            calls += 1;
            for field in ["request", "correlation_id", "execution_start_timestamp",
                          "convergence_status", "total_passes", "total_refinements",
                          "ttl_remaining"] {
                assert!(value.get(field).is_some(), "called without {field}");
            }
            match &reply {
                Reply::Fails => Err(unreachable()),
                Reply::Valid(v) | Reply::Anything(v) => Ok(v.clone()),
            }
        });
        assert_valid(&answer);
        let required_missing = !input.missing_required().is_empty();
        prop_assert_eq!(calls, usize::from(!required_missing), "one call unless required state is missing");
        if ttl_exhausted {
            prop_assert_eq!(answer.ttl_exhausted, Some(true));
        }
        let model_answer = match &reply {
            Reply::Valid(v) | Reply::Anything(v) if !required_missing => FinalAnswer::from_value(v).ok(),
            _ => None,
        };
        match model_answer {
            None => {
                prop_assert!(answer.is_degraded());
                let reason = answer.metadata["reason"].as_str().unwrap();
                let expected = if required_missing {
                    "incomplete_state: required input missing"
                } else if matches!(reply, Reply::Fails) {
                    "synthesis_failed"
                } else {
                    "synthesis_output_invalid"
                };
                prop_assert!(reason.starts_with(expected), "{} vs {}", reason, expected);
            }
            Some(model) => {
                let optional_missing = !input.missing_optional().is_empty();
                if optional_missing {
                    // The model's text first, then what pactum adds about the early exit.
                    prop_assert!(answer.answer_text.starts_with(model.answer_text.trim_end()));
                    prop_assert!(answer.answer_text.contains("(Based on part of the run: "));
                } else {
                    prop_assert_eq!(&answer.answer_text, &model.answer_text);
                }
                prop_assert_eq!(answer.is_degraded(), optional_missing || model.is_degraded());
            }
        }
        if answer.is_degraded() {
            prop_assert!(answer.metadata["missing_fields"].is_array());
            prop_assert!(answer.metadata["reason"].is_string());
        }
    }
}
