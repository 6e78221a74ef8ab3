//! `pactum render ID[@REQ] --input FILE|-`: the messages a contract's pack renders to,
//! after the input is validated against `input_schema`, and the tools they offer the model
//! (SPEC §15); `--open KEY` shows a summarized section in full.
//! `pactum render --work-order WO.json [--ledger FILE]`: the same for an exchange work
//! order, with the context its contract requires assembled as `run` would (SPEC §16), and
//! that context shown.

use std::io::Read;
use std::path::{Path, PathBuf};

use pactum::Code;
use pactum::error::{DocKind, Error, Finding, Result};
use pactum::gateway::Role;
use pactum::id::Pin;
use pactum::resolve::ResolveOptions;
use pactum::work_order::{Task, WorkOrder};
use serde_json::{Value, json};

use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    /// The contract: PRC-CLASSIFY-001, PRC-CLASSIFY-001@^1.2, PRC-CLASSIFY-001@1.2.0.
    #[arg(required_unless_present = "work_order")]
    pin: Option<String>,
    /// The template variables: a JSON or YAML file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-", required_unless_present = "work_order")]
    input: Option<String>,
    /// Render an exchange work order instead: its pinned contract on its input, with the
    /// assembled context (files, frameworks, ledger history) shown.
    #[arg(long, value_name = "WO.json", conflicts_with_all = ["pin", "input"])]
    work_order: Option<PathBuf>,
    /// The ledger `ledger_queries` read (default: .pactum/ledger.jsonl under the project root).
    #[arg(long, value_name = "FILE", requires = "work_order")]
    ledger: Option<PathBuf>,
    /// Join system and user sections into one message (providers without system messages).
    #[arg(long)]
    single_message: bool,
    /// Let drafts resolve.
    #[arg(long)]
    allow_draft: bool,
    /// Show the summarized section KEY (a dotted key such as `reference.api`) in full, as
    /// after the model opened it. Repeatable.
    #[arg(long = "open", value_name = "KEY")]
    open: Vec<String>,
    #[command(flatten)]
    common: Common,
}

/// Reads `--input` (a file or `-`) as JSON, or YAML for .yaml/.yml files.
pub fn read_input(spec: &str) -> Result<Value> {
    let (text, yaml) = if spec == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| Error::io("<stdin>", e))?;
        (text, false)
    } else {
        let path = PathBuf::from(spec);
        let bytes = pactum::document::read_limited(&path, pactum::document::MAX_FILE_BYTES)?;
        let yaml = pactum::document::syntax_for(&path) == pactum::document::Syntax::Yaml;
        (
            String::from_utf8(bytes)
                .map_err(|_| Error::InputParse { message: format!("{spec} is not UTF-8") })?,
            yaml,
        )
    };
    let syntax = if yaml { pactum::document::Syntax::Yaml } else { pactum::document::Syntax::Json };
    pactum::document::parse(&text, syntax, std::path::Path::new(spec), None).map_err(|e| {
        Error::InputParse {
            message: format!("{e}; --input must be a JSON object of template variables"),
        }
    })
}

/// What a work order renders from: its pin and input, and the context assembled for it.
struct FromWorkOrder {
    pin: Pin,
    input: Value,
    wo: WorkOrder,
}

fn load_work_order(path: &Path) -> Result<FromWorkOrder> {
    let wo = WorkOrder::load(path)?;
    match &wo.task {
        Task::Exchange { contract, input } => {
            Ok(FromWorkOrder { pin: contract.clone(), input: input.clone(), wo })
        }
        Task::Kernel { .. } => Err(Error::SchemaInvalid {
            doc: DocKind::WorkOrder,
            path: path.to_path_buf(),
            findings: vec![Finding::new(
                "/kind",
                "`pactum render --work-order` renders exchange work orders; a kernel work order's prompts are rendered by `pactum run` (see them in its ledger)",
            )],
        }),
    }
}

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let input_spec = args.input.clone().unwrap_or_default();
    let result = (|| {
        let from_wo = args.work_order.as_deref().map(load_work_order).transpose()?;
        let (pin, input) = match &from_wo {
            Some(w) => (w.pin.clone(), w.input.clone()),
            None => {
                (Pin::parse(args.pin.as_deref().unwrap_or_default())?, read_input(&input_spec)?)
            }
        };
        let project = args.common.project()?;
        let resolved = project
            .resolve(&pin, ResolveOptions { allow_draft: args.allow_draft, route: None })
            .map_err(pactum::Error::with_allow_draft_hint)?;
        // Values the contract marks `x-secret` are masked in what is printed (SPEC §18).
        output::redactor().add_marked_at(
            resolved.contract.input_schema.as_ref(),
            &input,
            resolved.contract.dir(),
            &project.root,
        )?;
        let validators = project.validators(&resolved.contract)?;
        pactum::exchange::check_input(&resolved.contract, &validators, &input)?;
        let mut variables = input;
        let mut assembled = None;
        if let Some(FromWorkOrder { wo, .. }) = &from_wo {
            // The project's own ledger stays inside the project and passes no symlink
            // (a `--ledger FILE` is the caller's choice).
            let ledger = match &args.ledger {
                Some(l) => crate::cmd::ledger::given_ledger(l)?,
                None => crate::cmd::ledger::project_ledger(&project.root, &project.config)?,
            };
            let sources = pactum::context::Sources {
                root: &project.root,
                ledger: Some(&ledger),
                now: jiff::Timestamp::now(),
            };
            let request = pactum::context::Request::of(wo);
            let got = pactum::context::assemble(&resolved.contract, request, &sources)?;
            if let (Value::Object(map), Some(ctx)) = (&mut variables, &got.context) {
                map.entry("assembled_context").or_insert_with(|| ctx.clone());
            }
            assembled = Some(got);
        }
        let compiled = pactum::render::CompiledPack::compile(&resolved.pack)?;
        compiled.check_keys(&args.open)?;
        let open = args.open.iter().cloned().collect();
        let rendered = compiled.render_open(&variables, !args.single_message, &open)?;
        // The tools a run would offer: the built-ins and the project's tool servers (started
        // only when a section names a tool no built-in provides), under the work order's
        // allow-list.
        let toolbox = pactum::executor::toolbox::Toolbox::new(
            Default::default(),
            &[],
            pactum::mcp::ServerSpec::from_config(
                &project.config.tools,
                &project.root,
                &project.config.env.tool_env,
                pactum::authority::Trust::of(&project.config),
            )
            .with_lock(&project.root),
            from_wo.as_ref().and_then(|f| f.wo.tools.clone()),
        );
        let tools = toolbox.registry_for(rendered.tools.iter().map(String::as_str))?;
        let specs = pactum::disclosure::specs(&rendered.tools, tools);
        Ok::<_, Error>((resolved, rendered.messages, specs, assembled))
    })();
    let (resolved, messages, tools, assembled) = match result {
        Ok(x) => x,
        Err(e)
            if !json
                && e.code() == Code::InputSchemaInvalid
                && args.work_order.is_none()
                && input_spec != "-" =>
        {
            let origin = output::Origin::read(Path::new(&input_spec), "");
            output::eprint_error_in(&e, origin.as_ref());
            return output::status_of(&e);
        }
        Err(e) => return output::fail(&e, json),
    };
    let mut warnings = resolved.warnings.clone();
    warnings.extend(assembled.as_ref().and_then(|a| a.truncated.clone()));
    let context = assembled.as_ref().map(|a| a.context.clone().unwrap_or(Value::Null));
    if json {
        let mut shown = json!({"ok": true, "contract": resolved.contract.key(), "prompt_pack": resolved.pack.key(),
                               "messages": messages, "tools": tools, "warnings": warnings});
        if let Some(ctx) = &context {
            shown["assembled_context"] = ctx.clone();
        }
        output::print_json(&shown);
    } else {
        let mut text = String::new();
        if let Some(ctx) = &context {
            text.push_str(&format!(
                "--- assembled_context ---\n{}\n\n",
                serde_json::to_string_pretty(ctx).unwrap_or_default()
            ));
        }
        for (i, m) in messages.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let role = match m.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            text.push_str(&format!("--- {role} ---\n{}\n", m.content));
        }
        if !tools.is_empty() {
            text.push_str("\n--- tools offered ---\n");
            for t in &tools {
                text.push_str(&format!("{}: {}\n", t.name, t.description));
            }
        }
        output::print_text(&text);
        for w in &warnings {
            output::eprint_warning(w.code, &w.message);
        }
    }
    OK
}
