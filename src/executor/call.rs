//! One contract call through the gateway: resolve the pin → validate the input (no call
//! when it is invalid) → assemble the required context ([`crate::context`]) → render → check the budget → call the
//! provider → validate the output → append a ledger record. Compiled validators and packs
//! are cached per file hash, so repeated calls of a contract cost no compilation.
//!
//! When the pack has summarized sections, the call is a bounded tool-calling loop
//! ([`crate::disclosure`]): the model's tool calls are answered (each a ledger record with
//! verdict `tool_calls`) and the provider is called again, until it answers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::disclosure::{DEFAULT_MAX_DISCLOSURES, Disclosed, Disclosure};
use crate::error::{Error, Result};
use crate::exchange::{self, Output};
use crate::gateway::select::ProviderSet;
use crate::gateway::{
    Message, PromptRequest, Provider, ProviderResponse, ResponseBody, ToolTurn, Usage,
    estimate_tokens, prompt_hash,
};
use crate::id::Pin;
use crate::ledger::{Kind, Ledger};
use crate::project::{Project, Resolved, Validators};
use crate::render::CompiledPack;
use crate::resolve::{ResolveOptions, Warning};
use crate::work_order::WorkOrder;

use super::budget::Budget;

/// The contract a reply is validated against (the called contract, or for a repair the
/// contract whose output is being repaired).
#[derive(Clone)]
pub struct Target {
    pub contract: Arc<crate::contract::Contract>,
    pub validators: Arc<Validators>,
}

/// Which of a contract's schemas.
#[derive(Clone, Copy)]
enum Schema {
    Input,
    Output,
}

/// A call that reached the provider.
#[derive(Debug)]
pub struct Exchanged {
    pub resolved: Resolved,
    /// The provider that answered.
    pub provider: String,
    pub response: ProviderResponse,
    /// The output check against the target contract.
    pub output: Result<Output>,
    pub prompt_hash: String,
}

/// A second question to the model about its own reply: the reply, then what was wrong with
/// it as data (a judge's verdict, never prose of pactum's: prompt text lives in packs).
#[derive(Clone, Debug)]
pub struct Reask {
    /// The model's previous reply, verbatim.
    pub previous: String,
    /// What was wrong with it (`{"semantic_check": {judge, criteria, verdict, attempt}}`).
    pub feedback: Value,
}

impl Reask {
    /// The messages that follow the rendered prompt: the previous reply as the model's
    /// turn, the feedback as the next user turn.
    pub fn messages(&self) -> Vec<Message> {
        vec![
            Message { role: crate::gateway::Role::Assistant, content: self.previous.clone() },
            Message::user(self.feedback.to_string()),
        ]
    }
}

impl Target {
    /// The contract's output schema, or `true` (anything) when it has none.
    pub fn output_schema(&self) -> Value {
        self.contract.output_schema.clone().unwrap_or(Value::Bool(true))
    }
}

impl Exchanged {
    /// The output's JSON value (`null` for a text output), or the validation errors.
    pub fn json(&self) -> std::result::Result<Value, Vec<String>> {
        let output = self.output.as_ref().map_err(super::supervisor::error_messages)?;
        Ok(output.value().cloned().unwrap_or(Value::Null))
    }

    /// The supervisor problem "this reply is not valid JSON for `target`".
    pub fn malformed_json(&self, target: &Target) -> super::supervisor::Problem {
        super::supervisor::Problem::MalformedJson {
            contract_id: self.resolved.contract.key(),
            output_schema: target.output_schema(),
        }
    }

    /// The reply's raw text (an envelope's `text`, or the envelope as JSON).
    pub fn raw_text(&self) -> String {
        match &self.response.body {
            ResponseBody::Text(t) => t.clone(),
            ResponseBody::Envelope(v) => v
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string()),
        }
    }
}

/// Everything calls of one work order share.
pub struct Caller<'a> {
    pub project: &'a Project,
    pub providers: &'a ProviderSet,
    pub ledger: Option<&'a Ledger>,
    pub work_order: &'a WorkOrder,
    pub budget: &'a Budget,
    pub allow_draft: bool,
    usage: Mutex<Usage>,
    warnings: Mutex<Vec<Warning>>,
    /// The run's tools, which sections' tools are answered through (`None`: the built-ins
    /// over a memory of each exchange's own).
    tools: Option<Arc<super::toolbox::Toolbox>>,
    /// What the run's records name as theirs: the hash of the work order's
    /// `work_order_started` record, or the evaluation run an eval case belongs to
    /// (`eval_run`), with the field that names it.
    belongs_to: Option<(&'static str, String)>,
    /// The last exchange record written (its `seq` and `hash`), for the caller to publish.
    last_record: Mutex<Option<(u64, String)>>,
}

impl<'a> Caller<'a> {
    pub fn new(
        project: &'a Project,
        providers: &'a ProviderSet,
        ledger: Option<&'a Ledger>,
        work_order: &'a WorkOrder,
        budget: &'a Budget,
        allow_draft: bool,
    ) -> Caller<'a> {
        Caller {
            project,
            providers,
            ledger,
            work_order,
            budget,
            allow_draft,
            usage: Mutex::default(),
            warnings: Mutex::default(),
            tools: None,
            belongs_to: None,
            last_record: Mutex::default(),
        }
    }

    /// The `seq` and `hash` of the last exchange record this caller wrote.
    pub fn last_record(&self) -> Option<(u64, String)> {
        self.last_record.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Names `hash`, the work order's `work_order_started` record, in every record written
    /// from now on (`work_order_started`): a record then says whose it is on its own — in a
    /// cycle log of its own, beside a run of the same id at once — and its spans hang under
    /// that work order's trace (SPEC §22).
    #[must_use]
    pub fn with_start_record(mut self, hash: Option<String>) -> Self {
        self.belongs_to = hash.map(|h| ("work_order_started", h));
        self
    }

    /// Names `id`, the evaluation run a case belongs to, in every record written from now
    /// on (`eval_run`): the run's `eval_completed` record names it too, and the cases'
    /// spans hang under the run's `eval` span, in its trace (SPEC §22).
    #[must_use]
    pub fn with_eval_run(mut self, id: Option<String>) -> Self {
        self.belongs_to = id.map(|id| ("eval_run", id));
        self
    }

    /// Adds `work_order_started` (or `eval_run`) to a record's `fields`, when the run has
    /// one.
    pub fn name_start_record(&self, fields: &mut Map<String, Value>) {
        if let Some((field, hash)) = &self.belongs_to {
            fields.insert((*field).into(), json!(hash));
        }
    }

    /// Answers sections' tools through the run's registry (default: the built-ins over a
    /// memory of each exchange's own, as an evaluation's cases need).
    #[must_use]
    pub fn with_tools(mut self, tools: Arc<super::toolbox::Toolbox>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Usage charged so far.
    pub fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Warnings collected so far (deprecated contracts or packs, ambiguous extractions),
    /// deduplicated.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = self.warnings.lock().unwrap_or_else(|p| p.into_inner()).clone();
        w.dedup();
        w
    }

    /// Resolves a pin to its contract and pack.
    pub fn resolve(&self, pin: &Pin) -> Result<Resolved> {
        let options =
            ResolveOptions { allow_draft: self.allow_draft, route: Some(self.work_order.route()) };
        let resolved = self.project.resolve(pin, options)?;
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        for w in &resolved.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        Ok(resolved)
    }

    /// The compiled validators of a resolved contract, as a [`Target`].
    pub fn target(&self, resolved: &Resolved) -> Result<Target> {
        Ok(Target {
            contract: resolved.contract.clone(),
            validators: self.project.validators(&resolved.contract)?,
        })
    }

    /// Teaches the ledger's masker every value `contract`'s input or output schema marks
    /// `x-secret` in `instance` ([`crate::redact`]), following `$ref`s into the schema files
    /// beside the contract.
    fn mark_secrets(
        &self,
        contract: &crate::contract::Contract,
        which: Schema,
        instance: &Value,
    ) -> Result<()> {
        let Some(ledger) = self.ledger else { return Ok(()) };
        let schema = match which {
            Schema::Input => contract.input_schema.as_ref(),
            Schema::Output => contract.output_schema.as_ref(),
        };
        ledger.redactor().add_marked_at(schema, instance, contract.dir(), &self.project.root)
    }

    fn compiled(&self, resolved: &Resolved) -> Result<Arc<CompiledPack>> {
        self.project.compiled_pack(&resolved.pack)
    }

    /// Calls the contract `pin` on `input`. Failures before the provider answers are `Err`
    /// (no call is made for an invalid input, missing context or an exhausted budget);
    /// once it answered, the output check against `target` (default: the called contract)
    /// is in [`Exchanged::output`]. Every call that got past resolution is in the ledger.
    pub fn call(
        &self,
        pin: &Pin,
        input: &Value,
        target: Option<&Target>,
        repair_attempt: u32,
        role: Option<&str>,
    ) -> Result<Exchanged> {
        self.exchange(pin, input, target, (repair_attempt, role), &[])
    }

    /// Calls the contract `pin` on `input` again, its rendered prompt followed by the
    /// model's previous reply and what was wrong with it ([`Reask`]): the re-ask of a
    /// `semantic_check` with `on_fail: retry`. Recorded like any call, with `attempt` as
    /// its repair attempt.
    pub fn call_again(
        &self,
        pin: &Pin,
        input: &Value,
        attempt: u32,
        role: Option<&str>,
        reask: &Reask,
    ) -> Result<Exchanged> {
        self.exchange(pin, input, None, (attempt, role), &reask.messages())
    }

    /// One exchange; `appended` follows the rendered messages in every request of it. The
    /// stages, in order (each failing one writes the exchange's record and ends it):
    /// [`Exchange::begin`] resolves and picks the provider, [`Exchange::prepare`] masks the
    /// input's secrets, checks the input and assembles the context, [`Exchange::open`]
    /// renders through the disclosure and checks the budget, [`Exchange::converse`] is the
    /// tool-calling loop with the provider, [`Exchange::check`] extracts and validates the
    /// reply and writes the record.
    fn exchange(
        &self,
        pin: &Pin,
        input: &Value,
        target: Option<&Target>,
        (repair_attempt, role): (u32, Option<&str>),
        appended: &[Message],
    ) -> Result<Exchanged> {
        let mut ex = Exchange::begin(self, pin, input, repair_attempt, role)?;
        let prepared = ex.prepare()?;
        let mut disclosure = ex.open(&prepared, appended)?;
        let conversation = ex.converse(&mut disclosure, input, appended)?;
        ex.check(conversation, target, prepared.own)
    }

    /// The context `contract` requires, assembled from the project and the ledger this
    /// run writes to, around what the work order gives (SPEC §16).
    pub fn assemble(
        &self,
        contract: &crate::contract::Contract,
    ) -> Result<crate::context::Assembled> {
        let wo = self.work_order;
        let sources = crate::context::Sources {
            root: &self.project.root,
            ledger: self.ledger.map(Ledger::location),
            now: jiff::Timestamp::now(),
        };
        let request = crate::context::Request::of(wo);
        crate::context::assemble(contract, request, &sources)
    }

    /// Charges what a call used to the budget and the run's usage: the provider's count,
    /// else an estimate from the request and the reply.
    fn charge(&self, request: &PromptRequest, response: &ProviderResponse) {
        let used = response.usage.unwrap_or_else(|| Usage {
            prompt_tokens: request.estimated_prompt_tokens(),
            completion_tokens: match &response.body {
                ResponseBody::Text(t) => (t.len() as u64).div_ceil(4),
                ResponseBody::Envelope(v) => (v.to_string().len() as u64).div_ceil(4),
            },
        });
        self.budget.charge(used.total());
        let mut total = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        *total = total.plus(used);
    }

    /// Adds a run warning (once).
    fn warn(&self, warning: Warning) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    fn request(
        &self,
        resolved: &Resolved,
        input: &Value,
        messages: Vec<crate::gateway::Message>,
    ) -> PromptRequest {
        let c = &resolved.contract;
        let wo = self.work_order;
        PromptRequest {
            contract_id: c.id.clone(),
            contract_version: c.version.to_string(),
            prompt_pack_id: resolved.pack.id.clone(),
            prompt_pack_version: resolved.pack.version.to_string(),
            boundary: c.boundary.clone(),
            input_schema: c.input_schema.clone(),
            output_schema: c.output_schema.clone(),
            template_variables: input.clone(),
            messages,
            work_order_id: Some(wo.id.clone()),
            session_id: wo.session_id.clone(),
            agent_id: wo.agent_id.clone(),
            agent_class: wo.agent_class.clone().or_else(|| c.agent_class.clone()),
            tier: wo.tier.clone().or_else(|| c.tier.clone()),
            timeout: wo
                .constraints
                .timeout_s
                .filter(|t| t.is_finite() && *t > 0.0)
                .and_then(|t| Duration::try_from_secs_f64(t).ok()),
            tools: Vec::new(),
            turns: Vec::new(),
        }
    }

    /// The fields every exchange record has (SPEC §10): the event, the work order and who
    /// ran it, the contract and pack with their hashes, the prompt's hash, the provider, its
    /// raw reply with what it cost, and the call's repair attempt and kernel role.
    fn exchange_fields(
        &self,
        resolved: &Resolved,
        provider: &dyn Provider,
        prompt_hash: Option<&str>,
        response: Option<&ProviderResponse>,
        (repair_attempt, role): (u32, Option<&str>),
    ) -> Map<String, Value> {
        let mut fields = Map::new();
        let c = &resolved.contract;
        let wo = self.work_order;
        fields.insert("event".into(), json!("exchange"));
        fields.insert("work_order_id".into(), json!(wo.id));
        self.name_start_record(&mut fields);
        who(&mut fields, wo, Some(c));
        fields.insert("contract_id".into(), json!(c.id));
        fields.insert("contract_version".into(), json!(c.version.to_string()));
        fields.insert("contract_sha256".into(), json!(c.sha256));
        fields.insert("prompt_pack_id".into(), json!(resolved.pack.id));
        fields.insert("prompt_pack_version".into(), json!(resolved.pack.version.to_string()));
        fields.insert("prompt_pack_sha256".into(), json!(resolved.pack.sha256));
        // A pin through a label: which one, and the weight of the target a canary chose.
        if let Some((label, weight)) = &resolved.label {
            fields.insert("label".into(), json!(label));
            if let Some(w) = weight {
                fields.insert("label_weight".into(), json!(w));
            }
        }
        fields.insert("prompt_hash".into(), json!(prompt_hash.unwrap_or(crate::digest::ZERO_HASH)));
        fields.insert("provider".into(), json!(provider.name()));
        // Its kind, when the name is a table's of pactum.toml (`oa` for an `openai`).
        if provider.kind() != provider.name() {
            fields.insert("provider_kind".into(), json!(provider.kind()));
        }
        // The model asked and the model that answered (when either is known), for the
        // span's `gen_ai.request.model` and `gen_ai.response.model` (SPEC §22).
        if let Some(model) = provider.model() {
            fields.insert("model".into(), json!(model));
        }
        if let Some(model) = response.and_then(|r| r.model.as_deref()) {
            fields.insert("response_model".into(), json!(model));
        }
        fields.insert(
            "raw_response".into(),
            match response.map(|r| &r.body) {
                Some(ResponseBody::Text(t)) => json!(t),
                Some(ResponseBody::Envelope(v)) => v.clone(),
                None => Value::Null,
            },
        );
        fields
            .insert("finish_reason".into(), json!(response.and_then(|r| r.finish_reason.clone())));
        fields.insert("usage".into(), json!(response.and_then(|r| r.usage)));
        let (latency, attempts) = response.map_or((Duration::ZERO, 0), |r| (r.latency, r.attempts));
        fields.insert("latency_ms".into(), json!(latency.as_millis() as u64));
        // A replayed or scripted latency: the recording's, not this call's.
        if response.is_some_and(|r| r.latency_recorded) {
            fields.insert("latency_recorded".into(), json!(true));
        }
        fields.insert("attempts".into(), json!(attempts));
        fields.insert("repair_attempt".into(), json!(repair_attempt));
        if let Some(role) = role {
            fields.insert("role".into(), json!(role));
        }
        fields
    }
}

/// One exchange in progress: what every stage reads, and what its record carries.
struct Exchange<'c, 'a> {
    caller: &'c Caller<'a>,
    /// The input, as the caller gave it (the record keeps it once its secrets are marked).
    input: &'c Value,
    /// Whether every value the input schema marks `x-secret` is known to the masker: until
    /// then (and for good when marking was refused) no record carries the input.
    masked: bool,
    resolved: Resolved,
    provider: Arc<dyn Provider>,
    repair_attempt: u32,
    role: Option<&'c str>,
    /// The `context_truncated` warning of this exchange, for its record (SPEC §16).
    truncated: Option<Warning>,
    /// The exchange's own tools when the run has none.
    fresh: std::sync::OnceLock<super::toolbox::Toolbox>,
}

/// What [`Exchange::prepare`] gives: the contract's own target, its compiled pack, and the
/// template variables (the input and the assembled context).
struct Prepared {
    own: Target,
    compiled: Arc<CompiledPack>,
    variables: Value,
}

/// What the conversation with the provider ended with.
struct Conversation {
    hash: String,
    request: PromptRequest,
    response: ProviderResponse,
    /// Set when `max_disclosures` ended it: why, and the calls of the last reply.
    stopped: Option<(Error, Vec<Disclosed>)>,
}

impl<'c, 'a> Exchange<'c, 'a> {
    /// Resolves `pin` and picks the provider its contract is called through.
    fn begin(
        caller: &'c Caller<'a>,
        pin: &Pin,
        input: &'c Value,
        repair_attempt: u32,
        role: Option<&'c str>,
    ) -> Result<Self> {
        let resolved = caller.resolve(pin)?;
        let provider =
            caller.providers.for_contract(resolved.contract.boundary.provider_id.as_deref())?;
        Ok(Exchange {
            caller,
            input,
            resolved,
            provider,
            repair_attempt,
            role,
            masked: false,
            truncated: None,
            fresh: std::sync::OnceLock::new(),
        })
    }

    /// Writes the exchange's record with `verdict` and ends it with `e`.
    fn refuse<T>(
        &self,
        sent: Option<Sent>,
        response: Option<&ProviderResponse>,
        e: Error,
    ) -> Result<T> {
        self.record(sent, response, Err(&e), &[])?;
        Err(e)
    }

    /// The fields of this exchange's records: [`Caller::exchange_fields`], and the input
    /// (masked like the whole record; left out with `[ledger] inputs = false`, SPEC §26).
    fn fields(
        &self,
        sent: Option<&str>,
        response: Option<&ProviderResponse>,
    ) -> Map<String, Value> {
        let caller = self.caller;
        let mut fields = caller.exchange_fields(
            &self.resolved,
            self.provider.as_ref(),
            sent,
            response,
            (self.repair_attempt, self.role),
        );
        if self.masked && caller.project.config.ledger.inputs {
            fields.insert("input".into(), self.input.clone());
        }
        fields
    }

    /// The ledger record of a reply that called tools: verdict `tool_calls`, and per call
    /// the tool, its arguments, the keys opened or file read, the reason and the result.
    fn record_tool_calls(
        &self,
        sent: Sent,
        response: &ProviderResponse,
        answered: &[Disclosed],
    ) -> Result<()> {
        let Some(ledger) = self.caller.ledger else { return Ok(()) };
        let mut fields = self.fields(Some(sent.hash), Some(response));
        fields.insert("extraction_method".into(), Value::Null);
        fields.insert("verdict".into(), json!("tool_calls"));
        fields.insert("errors".into(), json!([]));
        fields.insert(
            "disclosures".into(),
            Value::Array(answered.iter().map(Disclosed::to_json).collect()),
        );
        ledger.append_attached(Kind::Exchange, fields, || sent.attachments()).map(|_| ())
    }

    /// The ledger record of the exchange: its verdict (`ok`, or the failure's code with the
    /// error), the extraction method, the validated output, the warnings (deprecated
    /// contracts or packs, context cuts), and the tool calls of a reply that ended the
    /// exchange (`disclosures`: past `max_disclosures`, refused ones too).
    fn record(
        &self,
        sent: Option<Sent>,
        response: Option<&ProviderResponse>,
        verdict: std::result::Result<&Output, &Error>,
        calls: &[Disclosed],
    ) -> Result<()> {
        let Some(ledger) = self.caller.ledger else { return Ok(()) };
        let mut fields = self.fields(sent.map(|s| s.hash), response);
        let (verdict_text, method, errors) = match verdict {
            Ok(out) => {
                ("ok".to_string(), out.extraction().map(|x| x.method.as_str().to_string()), vec![])
            }
            Err(e) => (e.code().to_string(), None, vec![error_json(e)]),
        };
        fields.insert("extraction_method".into(), json!(method));
        fields.insert("verdict".into(), json!(verdict_text));
        fields.insert("errors".into(), Value::Array(errors));
        // What later prompts see of this exchange (`ledger_queries`, SPEC §16): the
        // validated output, not the raw reply with its fences and prose.
        if let Ok(out) = verdict {
            fields.insert("output".into(), out.clone().into_value());
        }
        if !calls.is_empty() {
            fields.insert(
                "disclosures".into(),
                Value::Array(calls.iter().map(Disclosed::to_json).collect()),
            );
        }
        // A failed call has no response; a provider error still says what it cost.
        if let (None, Err(Error::Provider { elapsed, attempts, .. })) = (response, verdict) {
            fields.insert("latency_ms".into(), json!(elapsed.as_millis() as u64));
            fields.insert("attempts".into(), json!(attempts));
        }
        let warnings: Vec<&Warning> =
            self.resolved.warnings.iter().chain(self.truncated.iter()).collect();
        if !warnings.is_empty() {
            fields.insert("warnings".into(), json!(warnings));
        }
        let attach = || sent.map(Sent::attachments).unwrap_or_default();
        let record = ledger.append_attached(Kind::Exchange, fields, attach)?;
        if let (Some(seq), Some(hash)) =
            (record.get("seq").and_then(Value::as_u64), record.get("hash").and_then(Value::as_str))
        {
            *self.caller.last_record.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((seq, hash.to_string()));
        }
        Ok(())
    }

    /// Values the contract marks `x-secret` are masked from here on (SPEC §18; when they
    /// cannot all be, nothing of the input goes on); the input fits `input_schema`; the
    /// required context is assembled (SPEC §16); the pack is compiled.
    fn prepare(&mut self) -> Result<Prepared> {
        let caller = self.caller;
        let input = self.input;
        let contract = &self.resolved.contract;
        if let Err(e) = caller.mark_secrets(contract, Schema::Input, input) {
            return self.refuse(None, None, e);
        }
        self.masked = true;
        let own = caller.target(&self.resolved)?;
        let checked = (|| {
            exchange::check_input(contract, &own.validators, input)?;
            let assembled = caller.assemble(contract)?;
            let mut variables = input.clone();
            if let (Value::Object(map), Some(ctx)) = (&mut variables, assembled.context) {
                map.entry("assembled_context").or_insert(ctx);
            }
            Ok((caller.compiled(&self.resolved)?, variables, assembled.truncated))
        })();
        match checked {
            Ok((compiled, variables, truncated)) => {
                if let Some(w) = truncated {
                    caller.warn(w.clone());
                    self.truncated = Some(w);
                }
                Ok(Prepared { own, compiled, variables })
            }
            Err(e) => self.refuse(None, None, e),
        }
    }

    /// The prompt through the disclosure (the run's tools, `max_disclosures`), the budget
    /// checked for it, the context files written, the output area made when the pack
    /// expects files.
    fn open<'d>(&'d self, prepared: &'d Prepared, appended: &[Message]) -> Result<Disclosure<'d>> {
        let caller = self.caller;
        let resolved = &self.resolved;
        // The run's one registry; servers start only if a section names a tool of theirs.
        // Without one (an evaluation's case), the built-ins over a memory of this exchange's
        // own (their compiled schemas are shared: `ToolRegistry::builtin`).
        let toolbox: &super::toolbox::Toolbox = match &caller.tools {
            Some(t) => t,
            None => self.fresh.get_or_init(super::toolbox::Toolbox::default),
        };
        let tools = match toolbox.registry_for(prepared.compiled.declared_tool_names()) {
            Ok(t) => t,
            Err(e) => return self.refuse(None, None, e),
        };
        let max = caller
            .work_order
            .constraints
            .max_disclosures
            .or(resolved.contract.max_disclosures)
            .unwrap_or(DEFAULT_MAX_DISCLOSURES);
        let opened = Disclosure::new(
            &prepared.compiled,
            &prepared.variables,
            self.provider.supports_system_messages(),
            tools,
            max,
        )
        .and_then(|d| {
            let estimate = estimate_tokens(&with_appended(d.messages(), appended));
            caller.budget.check(estimate, u64::from(resolved.contract.boundary.max_tokens))?;
            super::files::write_context(
                &caller.project.root,
                caller.work_order,
                &resolved.contract.key(),
                d.files(),
            )?;
            // A provider that writes the expected files itself writes them into the
            // output area, which exists (and is checked) before the call: a refused output
            // folder costs no tokens.
            if !resolved.pack.expected_outputs().is_empty() {
                super::files::output_area(&caller.project.root, caller.work_order)?;
            }
            Ok(d)
        });
        opened.or_else(|e| self.refuse(None, None, e))
    }

    /// The tool-calling loop (SPEC §15): it ends when the model answers, the provider
    /// fails, or `max_disclosures` is spent. Every reply that called tools is a record of
    /// its own; usage is charged to the budget after every call, and the budget checked
    /// before every further round.
    fn converse(
        &self,
        disclosure: &mut Disclosure<'_>,
        input: &Value,
        appended: &[Message],
    ) -> Result<Conversation> {
        let caller = self.caller;
        let resolved = &self.resolved;
        let mut request =
            caller.request(resolved, input, with_appended(disclosure.messages(), appended));
        request.tools = disclosure.tool_specs();
        loop {
            let hash = prompt_hash(&request.messages);
            let response = match self.provider.complete(&request) {
                Ok(r) => r,
                Err(e) => return self.refuse(Some(Sent::of(&hash, &request)), None, e),
            };
            caller.charge(&request, &response);
            if response.tool_calls.is_empty() {
                return Ok(Conversation { hash, request, response, stopped: None });
            }
            let answered = disclosure.answer(&response.tool_calls);
            if let Some(e) = answered.stop {
                // The calls that ended the exchange go in its last record, refused ones too.
                return Ok(Conversation {
                    hash,
                    request,
                    response,
                    stopped: Some((e, answered.calls)),
                });
            }
            let answered = answered.calls;
            self.record_tool_calls(Sent::of(&hash, &request), &response, &answered)?;
            let text = match &response.body {
                ResponseBody::Text(t) => t.clone(),
                ResponseBody::Envelope(v) => v.to_string(),
            };
            request.turns.push(ToolTurn {
                text,
                calls: response.tool_calls.clone(),
                results: answered.into_iter().map(|d| d.result).collect(),
            });
            request.messages = with_appended(disclosure.messages(), appended);
            request.tools = disclosure.tool_specs();
            // A section opened now may hold summarized sections of its own: their files
            // join the context folder, which stays the record of what the model could read.
            let more = super::files::write_context(
                &caller.project.root,
                caller.work_order,
                &resolved.contract.key(),
                disclosure.files(),
            )
            .and_then(|()| {
                caller.budget.check(
                    request.estimated_prompt_tokens(),
                    u64::from(resolved.contract.boundary.max_tokens),
                )
            });
            if let Err(e) = more {
                return self.refuse(Some(Sent::hash_only(&hash)), Some(&response), e);
            }
        }
    }

    /// The reply checked against `target` (default: the called contract): a file result
    /// (SPEC §8.5) is its `response`, never sent to extraction or repair; anything else is
    /// extracted and validated (SPEC §6.2). Its marked values are masked (when they cannot
    /// all be, it is neither recorded nor returned); then the record is written.
    fn check(
        self,
        conversation: Conversation,
        target: Option<&Target>,
        own: Target,
    ) -> Result<Exchanged> {
        let Conversation { hash, request, response, stopped } = conversation;
        // An envelope with its own `text` keeps that text as the reply to check.
        let has_text =
            matches!(&response.body, ResponseBody::Envelope(v) if v.get("text").is_some());
        let file_result = (target.is_none() && !has_text)
            .then(|| super::files::file_result(&self.resolved.pack, &response.body))
            .flatten();
        let target = target.cloned().unwrap_or(own);
        let output = match (stopped, file_result) {
            (Some((e, calls)), _) => {
                self.record(Some(Sent::of(&hash, &request)), Some(&response), Err(&e), &calls)?;
                return Ok(self.exchanged(response, Err(e), hash));
            }
            (None, Some(result)) => Ok(Output::Text(result.response.unwrap_or_default())),
            (None, None) => exchange::check_output(
                &target.contract,
                &target.validators,
                &response.body,
                response.finish_reason.as_ref(),
            ),
        };
        let value = match &output {
            Ok(out) => out.value(),
            Err(Error::OutputSchemaInvalid { value, .. }) => Some(value),
            Err(_) => None,
        };
        if let Some(value) = value
            && let Err(e) = self.caller.mark_secrets(&target.contract, Schema::Output, value)
        {
            return self.refuse(Some(Sent::of(&hash, &request)), None, e);
        }
        self.record(Some(Sent::of(&hash, &request)), Some(&response), output.as_ref(), &[])?;
        if let Some(warning) = output
            .as_ref()
            .ok()
            .and_then(Output::extraction)
            .and_then(|x| exchange::ambiguity_warning(&target.contract, x))
        {
            self.caller.warn(warning);
        }
        Ok(self.exchanged(response, output, hash))
    }

    fn exchanged(
        self,
        response: ProviderResponse,
        output: Result<Output>,
        hash: String,
    ) -> Exchanged {
        Exchanged {
            provider: self.provider.name().to_string(),
            resolved: self.resolved,
            response,
            output,
            prompt_hash: hash,
        }
    }
}

/// `messages`, then `appended` (a re-ask's turns).
fn with_appended(messages: &[Message], appended: &[Message]) -> Vec<Message> {
    let mut all = messages.to_vec();
    all.extend_from_slice(appended);
    all
}

/// The prompt an exchange sent: its hash (in the ledger record) and, where the record is
/// written while they are at hand, its rendered messages and the earlier rounds of tool use
/// after them (for observers only, SPEC §22's `--otlp-content`; the ledger keeps the hash).
#[derive(Clone, Copy)]
struct Sent<'a> {
    hash: &'a str,
    request: Option<&'a PromptRequest>,
}

impl<'a> Sent<'a> {
    fn of(hash: &'a str, request: &'a PromptRequest) -> Sent<'a> {
        Sent { hash, request: Some(request) }
    }

    fn hash_only(hash: &'a str) -> Sent<'a> {
        Sent { hash, request: None }
    }

    fn attachments(self) -> Map<String, Value> {
        let mut map = Map::new();
        if let Some(request) = self.request {
            map.insert("prompt".into(), json!(request.messages));
            if !request.turns.is_empty() {
                map.insert("turns".into(), json!(request.turns));
            }
        }
        map
    }
}

/// The `session_id`, `agent_id`, `agent_class` and `tier` of a ledger record, where known
/// (the work order's, else the contract's class and tier; SPEC §10).
pub fn who(
    fields: &mut Map<String, Value>,
    wo: &WorkOrder,
    contract: Option<&crate::contract::Contract>,
) {
    let class = wo.agent_class.clone().or_else(|| contract.and_then(|c| c.agent_class.clone()));
    let tier = wo.tier.clone().or_else(|| contract.and_then(|c| c.tier.clone()));
    for (key, value) in [
        ("session_id", wo.session_id.clone()),
        ("agent_id", wo.agent_id.clone()),
        ("agent_class", class),
        ("tier", tier),
    ] {
        if let Some(v) = value {
            fields.insert(key.into(), json!(v));
        }
    }
}

/// Every failure of an error as `{code, pointer?, message}` entries: one per finding, or
/// one for the whole error (the `errors` of SPEC §12).
pub fn error_entries(e: &Error) -> Vec<Value> {
    if let Error::PromotionRefused { findings, .. } = e {
        // Each finding with its own code and place, as `validate --format json` has them.
        return findings
            .iter()
            .map(|d| {
                json!({"code": d.code, "file": d.file, "line": d.line, "column": d.column,
                       "pointer": d.pointer, "message": d.message})
            })
            .collect();
    }
    if e.findings().is_empty() {
        vec![json!({"code": e.code(), "message": e.to_string()})]
    } else {
        e.findings()
            .iter()
            .map(|f| json!({"code": e.code(), "pointer": f.pointer, "message": f.message}))
            .collect()
    }
}

/// An error as a JSON object: `{code, message, findings?}`.
pub fn error_json(e: &Error) -> Value {
    let mut v = json!({"code": e.code(), "message": e.to_string()});
    if !e.findings().is_empty() {
        v["findings"] = json!(e.findings());
    }
    v
}
