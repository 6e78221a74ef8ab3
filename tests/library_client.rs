//! `pactum::Client`, the front door for applications (SPEC §25): a call is one governed
//! exchange — the input checked before any call, the output validated, the record in the
//! ledger — through one client that threads share.

use std::sync::Arc;

use pactum::client::{Environment, LedgerChoice};
use pactum::gateway::scripted::ScriptedProvider;
use pactum::{Client, Code, Error};
use serde_json::json;

use crate::common;

/// The shipped project copied, and a client over it answering from the demo's scripted
/// classification reply, recording in the project's ledger.
fn client() -> (tempfile::TempDir, Client) {
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    common::copy_tree(&common::repo().join("fixtures"), &dir.path().join("fixtures"));
    let replies =
        ScriptedProvider::load(&dir.path().join("fixtures/demo_classify.json"), dir.path())
            .unwrap();
    let client = Client::builder(dir.path())
        .with_provider(Arc::new(replies))
        .environment(Environment::default())
        .build()
        .unwrap();
    (dir, client)
}

const TWICE: &str = "Hi, I was charged twice for my subscription this month, can you help?";

#[test]
fn a_call_returns_the_validated_output_and_its_ledger_record() {
    let (dir, client) = client();
    let call = client
        .call(
            "PRC-CLASSIFY-001@^1",
            &json!({"user_input": TWICE, "history": [], "mode": "careful"}),
        )
        .unwrap();
    assert_eq!(call.output["label"], "billing", "{call:?}");
    assert_eq!((call.contract_id.as_str(), call.version.as_str()), ("PRC-CLASSIFY-001", "1.0.0"));
    assert!(call.usage.total() > 0);
    // The record the call names is the ledger's exchange record, by place and hash.
    let text = std::fs::read_to_string(dir.path().join(".pactum/ledger.jsonl")).unwrap();
    let records: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let named =
        records.iter().find(|r| Some(r["seq"].as_u64().unwrap()) == call.ledger_seq).unwrap();
    assert_eq!(named["event"], "exchange");
    assert_eq!(named["hash"].as_str(), call.ledger_hash.as_deref());
    assert_eq!(named["verdict"], "ok");
}

#[test]
fn an_input_that_does_not_fit_fails_before_any_call_with_its_code() {
    let (dir, client) = client();
    let e = client.call("PRC-CLASSIFY-001@^1", &json!({"user_input": 42})).unwrap_err();
    assert_eq!(e.code(), Code::InputSchemaInvalid);
    let Error::CallFailed { errors, .. } = &e else { panic!("{e:?}") };
    assert!(errors.iter().any(|x| x["pointer"] == "/user_input"), "{errors:?}");
    // Recorded, and no model was asked (the scripted reply is still there to serve).
    let text = std::fs::read_to_string(dir.path().join(".pactum/ledger.jsonl")).unwrap();
    assert!(text.contains("\"verdict\":\"input_schema_invalid\""), "{text}");
    let again = client.call(
        "PRC-CLASSIFY-001@^1",
        &json!({"user_input": TWICE, "history": [], "mode": "careful"}),
    );
    assert!(again.is_ok(), "{again:?}");
    // An unknown contract is its own code.
    let e = client.call("PRC-NOPE-001", &json!({})).unwrap_err();
    assert_eq!(e.code(), Code::ContractNotFound);
}

#[test]
fn eight_threads_share_one_client_and_every_call_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_shipped(dir.path());
    let client = Client::builder(dir.path())
        .provider("dry-run")
        .environment(Environment::default())
        .ledger_choice(LedgerChoice::Project)
        .build()
        .unwrap();
    assert!(client.offline().is_none(), "a named provider is not the offline fallback");
    let hashes: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let client = &client;
                s.spawn(move || {
                    (0..5)
                        .map(|j| {
                            let input = json!({"user_input": format!("message {i}-{j}"), "history": [], "mode": "careful"});
                            client.call("PRC-CLASSIFY-001@^1", &input).unwrap().ledger_hash.unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(hashes.len(), 40);
    let mut unique = hashes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 40, "every call has a record of its own");
    let ledger = dir.path().join(".pactum/ledger.jsonl");
    assert_eq!(
        common::check_ledger_chain_independently(&ledger),
        40 * 3,
        "start, exchange and end of each call, one chain"
    );
}
