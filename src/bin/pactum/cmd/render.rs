//! `pactum render ID[@REQ] --input FILE|-`: the messages a contract's pack renders to,
//! after the input is validated against `input_schema`, and the tools they offer the model
//! (SPEC §15); `--open KEY` shows a summarized section in full.

use std::io::Read;
use std::path::{Path, PathBuf};

use pactum::Code;
use pactum::error::{Error, Result};
use pactum::gateway::Role;
use pactum::id::Pin;
use pactum::resolve::ResolveOptions;
use serde_json::{Value, json};

use crate::output::{self, Common, OK};

#[derive(clap::Args)]
pub struct Args {
    /// The contract: PRC-CLASSIFY-001, PRC-CLASSIFY-001@^1.2, PRC-CLASSIFY-001@1.2.0.
    pin: String,
    /// The template variables: a JSON or YAML file, or `-` for stdin.
    #[arg(long, value_name = "FILE|-")]
    input: String,
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

pub fn exec(args: Args) -> u8 {
    let json = args.common.json();
    let result = (|| {
        let pin = Pin::parse(&args.pin)?;
        let input = read_input(&args.input)?;
        let project = args.common.project()?;
        let resolved = project.resolve(&pin, ResolveOptions { allow_draft: args.allow_draft })?;
        // Values the contract marks `x-secret` are masked in what is printed (SPEC §18).
        output::redactor().add_marked(resolved.contract.input_schema.as_ref(), &input);
        let validators = project.validators(&resolved.contract)?;
        pactum::exchange::check_input(&resolved.contract, &validators, &input)?;
        let compiled = pactum::render::CompiledPack::compile(&resolved.pack)?;
        compiled.check_keys(&args.open)?;
        let open = args.open.iter().cloned().collect();
        let rendered = compiled.render_open(&input, !args.single_message, &open)?;
        let tools = pactum::executor::tools::ToolRegistry::builtin(Default::default());
        let specs = pactum::disclosure::specs(&rendered.tools, &tools);
        Ok::<_, Error>((resolved, rendered.messages, specs))
    })();
    let (resolved, messages, tools) = match result {
        Ok(x) => x,
        Err(e) if !json && e.code() == Code::InputSchemaInvalid && args.input != "-" => {
            let origin = output::Origin::read(Path::new(&args.input), "");
            output::eprint_error_in(&e, origin.as_ref());
            return output::status_of(&e);
        }
        Err(e) => return output::fail(&e, json),
    };
    if json {
        output::print_json(
            &json!({"ok": true, "contract": resolved.contract.key(), "prompt_pack": resolved.pack.key(),
                                   "messages": messages, "tools": tools, "warnings": resolved.warnings}),
        );
    } else {
        let mut text = String::new();
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
        for w in &resolved.warnings {
            output::eprint_warning(w.code, &w.message);
        }
    }
    OK
}
