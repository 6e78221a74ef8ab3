//! Every hint names a command or flag that exists (SPEC §17): each `` `pactum ...` `` command
//! line written in the sources (messages, help lines, docs) and the README is checked
//! against the binary's own `--help`, subcommand by subcommand, flag by flag; a bare
//! `--flag` a message mentions must exist on some command.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{pactum_in, repo};

/// One command's subcommands and flags, read from its `--help`.
#[derive(Default, Debug)]
pub(crate) struct Help {
    subcommands: BTreeSet<String>,
    flags: BTreeSet<String>,
}

fn help_of(path: &[String]) -> Help {
    let out = pactum_in(&repo()).args(path).arg("--help").output().unwrap();
    assert!(out.status.success(), "pactum {} --help fails", path.join(" "));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut help = Help::default();
    let mut section = "";
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = line;
            continue;
        }
        let trimmed = line.trim_start();
        match section {
            // A command's line is indented by two; its wrapped description by more.
            "Commands:" if line.starts_with("  ") && !line.starts_with("   ") => {
                if let Some(name) = trimmed.split_whitespace().next().filter(|n| *n != "help") {
                    help.subcommands.insert(name.to_string());
                }
            }
            "Options:" => {
                for word in trimmed.split([' ', ',']) {
                    if let Some(flag) = word.strip_prefix("--") {
                        help.flags.insert(flag.trim_end_matches(['=', '<']).to_string());
                    }
                }
            }
            _ => {}
        }
    }
    help
}

/// The command tree, read once for every test that needs it.
pub(crate) fn shared_tree() -> &'static BTreeMap<Vec<String>, Help> {
    static TREE: std::sync::OnceLock<BTreeMap<Vec<String>, Help>> = std::sync::OnceLock::new();
    TREE.get_or_init(tree)
}

/// The hints in what `pactum ARGS` printed that name nothing real on the command that
/// printed them: a bare `--flag` that command does not have, or a `` `pactum ...` `` line
/// naming a command or flag that does not exist.
pub(crate) fn hint_problems(args: &[&str], printed: &str) -> Vec<String> {
    let tree = shared_tree();
    let mut path: Vec<String> = Vec::new();
    for arg in args {
        let mut next = path.clone();
        next.push((*arg).to_string());
        if tree.contains_key(&next) {
            path = next;
        } else {
            break;
        }
    }
    let own = &tree[&path].flags;
    let mut problems = Vec::new();
    for line in command_lines(printed) {
        problems.extend(check_line(tree, &line).into_iter().map(|p| format!("`{line}`: {p}")));
    }
    // Bare flags outside the `pactum ...` lines: meant for the command that printed them.
    let mut rest = printed.to_string();
    for line in command_lines(printed) {
        rest = rest.replace(&line, "");
    }
    for token in rest.split(|c: char| c.is_whitespace() || "`(),;\"'".contains(c)) {
        if let Some(flag) = flag_of(token)
            && !own.contains(&flag)
        {
            problems.push(format!(
                "`pactum {}` prints --{flag}, which it does not have",
                path.join(" ")
            ));
        }
    }
    problems
}

/// Every command path's help, from `pactum` down.
fn tree() -> BTreeMap<Vec<String>, Help> {
    let mut out = BTreeMap::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        for sub in &help.subcommands {
            let mut next = path.clone();
            next.push(sub.clone());
            todo.push(next);
        }
        out.insert(path, help);
    }
    out
}

/// The text of every file a hint can live in.
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![repo().join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.push(repo().join("docs/error-codes.md"));
    files.push(repo().join("README.md"));
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(repo()).unwrap_or(&p).display().to_string();
            let mut text = std::fs::read_to_string(&p).unwrap();
            if name.ends_with("error-codes.md") {
                // The one section whose example is a wrong command line on purpose.
                text = without_section(&text, "usage_error");
                assert!(!text.contains("--strictt"), "the usage_error section was cut");
            }
            (name, text)
        })
        .collect()
}

/// `text` without its `## heading` section.
fn without_section(text: &str, heading: &str) -> String {
    let start = text.find(&format!("\n## {heading}\n")).expect("the section exists") + 1;
    let end = text[start..].find("\n## ").map_or(text.len(), |i| start + i + 1);
    format!("{}{}", &text[..start], &text[end..])
}

/// The `` `pactum ...` `` command lines in a text, and the `pactum ...` lines of its
/// ```sh blocks (comments cut, `&&` chains split).
fn command_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            in_sh = t == "```sh" || t == "```bash" || t == "```console";
            continue;
        }
        if in_sh {
            let code = t.trim_start_matches("$ ");
            let code = code.split(" #").next().unwrap_or(code);
            for part in code.split("&&") {
                let part = part.trim();
                if part.starts_with("pactum ") {
                    out.push(part.to_string());
                }
            }
        }
    }
    let mut rest = text;
    while let Some(at) = rest.find("`pactum ") {
        rest = &rest[at + 1..];
        let Some(end) = rest.find('`') else { break };
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

fn flag_of(token: &str) -> Option<String> {
    let t = token.trim_start_matches(['[', '(']);
    let name = t.strip_prefix("--")?;
    let name: String =
        name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    (!name.is_empty()).then_some(name)
}

/// Problems with one command line, or none.
fn check_line(tree: &BTreeMap<Vec<String>, Help>, line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut tokens = line.split_whitespace().skip(1).peekable();
    // Descend through subcommands.
    while let Some(token) = tokens.peek() {
        let help = &tree[&path];
        if help.subcommands.is_empty() {
            break;
        }
        if help.subcommands.contains(*token) {
            path.push(tokens.next().unwrap().to_string());
            continue;
        }
        if token.contains('|') && !token.starts_with('[') {
            for alt in token.split('|') {
                if !help.subcommands.contains(alt) {
                    problems.push(format!("`pactum {} {alt}` is not a command", path.join(" ")));
                }
            }
            tokens.next();
        } else if !token.starts_with('-')
            && token.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        {
            problems.push(format!("`pactum {} {token}` is not a command", path.join(" ")));
        }
        break;
    }
    let flags = &tree[&path].flags;
    for token in tokens {
        for part in token.split('|') {
            if let Some(flag) = flag_of(part)
                && !flags.contains(&flag)
            {
                problems.push(format!("`pactum {}` has no --{flag}", path.join(" ")));
            }
        }
    }
    problems
}

#[test]
fn every_command_line_in_messages_and_docs_exists() {
    let tree = shared_tree();
    assert!(tree.len() > 20, "the command tree was read: {:?}", tree.keys());
    let mut problems = Vec::new();
    let mut checked = 0;
    for (file, text) in sources() {
        for line in command_lines(&text) {
            checked += 1;
            for p in check_line(tree, &line) {
                problems.push(format!("{file}: `{line}`: {p}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} command lines found");
    assert!(problems.is_empty(), "hints that name nothing real:\n{}", problems.join("\n"));
}

#[test]
fn every_flag_a_message_mentions_exists_on_some_command() {
    let tree = shared_tree();
    let all: BTreeSet<&String> = tree.values().flat_map(|h| h.flags.iter()).collect();
    let mut problems = Vec::new();
    // git.rs passes git's own flags to git.
    for (file, text) in
        sources().into_iter().filter(|(f, _)| f.starts_with("src") && f != "src/git.rs")
    {
        // Flags in string literals (`(--flag)`, `` `--flag` ``, "--flag ..."), not comments,
        // and not in unit tests (which make up bad flags on purpose).
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, _) in text.match_indices("--") {
            let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
            let before_on_line = &text[line_start..i];
            // Comments, and git's own flags in a hint about a git command.
            if before_on_line.trim_start().starts_with("//") || before_on_line.contains("git ") {
                continue;
            }
            let before = text[..i].chars().last().unwrap_or(' ');
            if !matches!(before, '(' | '`' | ' ' | '"' | '[') {
                continue;
            }
            let Some(flag) = flag_of(&text[i..]) else { continue };
            if flag.len() < 3 || !flag.chars().next().unwrap().is_ascii_lowercase() {
                continue;
            }
            if !all.contains(&flag) {
                let line = text[..i].lines().count();
                problems.push(format!("{file}:{line}: --{flag}"));
            }
        }
    }
    assert!(problems.is_empty(), "flags no command has:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_catches_a_made_up_command_and_flag() {
    let tree = shared_tree();
    assert!(
        check_line(tree, "pactum registry refresh FILE")
            .iter()
            .any(|p| p.contains("not a command"))
    );
    assert!(check_line(tree, "pactum validate --fast").iter().any(|p| p.contains("no --fast")));
    assert!(check_line(tree, "pactum registry add FILE").is_empty());
    assert!(check_line(tree, "pactum ledger verify --expect-head HASH").is_empty());
}

/// The hints a user follows in the tour: each command it suggests runs, and no flag it
/// names is missing from the command that printed it.
#[test]
fn the_hints_of_promote_new_version_and_render_work_where_they_are_printed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run =
        |args: &[&str]| -> common::Out { pactum_in(root).args(args).output().unwrap().into() };
    assert_eq!(run(&["init"]).code, 0);
    assert_eq!(run(&["new", "contract", "PRC-HINT-001"]).code, 0);
    common::write_placeholders(root);
    // promote with its pack still a draft: the hint names promote, not --allow-draft.
    let out = run(&["registry", "promote", "PRC-HINT-001@1.0.0"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(!out.stderr.contains("--allow-draft"), "{out}");
    assert!(hint_problems(&["registry", "promote"], &out.stderr).is_empty(), "{out}");
    assert!(out.stderr.contains("pactum registry promote PRM-HINT-001@1.0.0"), "{out}");
    assert_eq!(run(&["registry", "promote", "PRM-HINT-001@1.0.0"]).code, 0);
    assert_eq!(run(&["registry", "promote", "PRC-HINT-001@1.0.0"]).code, 0);
    // new version of a pack: no `pactum diff PRM-...` (diff compares contracts).
    let out = run(&["new", "version", "PRM-HINT-001@1.1.0"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(!out.stdout.contains("pactum diff PRM"), "{out}");
    // new version of a contract: the suggested diff runs.
    let out = run(&["new", "version", "PRC-HINT-001@1.1.0"]);
    let diff = out.stdout.split('`').find(|s| s.starts_with("pactum diff ")).expect("a diff hint");
    let args: Vec<&str> = diff.split_whitespace().skip(1).collect();
    assert_eq!(run(&args).code, 0, "`{diff}` fails");
    // render --input of a pack that reads the assembled context: the hint does not ask for
    // `assembled_context` in an input its schema would refuse.
    let pack = root.join("prompt_packs/hint/1.1.0.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pack).unwrap()).unwrap();
    v["sections"]["context"] = serde_json::json!("{{ assembled_context.files['docs/a.md'] }}");
    std::fs::write(&pack, v.to_string()).unwrap();
    let contract = root.join("contracts/hint/1.1.0.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&contract).unwrap()).unwrap();
    c["prompt_pack_version"] = serde_json::json!("1.1.0");
    std::fs::write(&contract, c.to_string()).unwrap();
    std::fs::write(root.join("input.json"), "{\"input\": \"x\"}").unwrap();
    let out = run(&["render", "PRC-HINT-001@1.1.0", "--allow-draft", "--input", "input.json"]);
    assert!(out.stderr.contains("pactum render --work-order"), "{out}");
    assert!(!out.stderr.contains("pass it in the input"), "{out}");
    assert!(hint_problems(&["render"], &out.stderr).is_empty(), "{out}");
}

/// The zsh completion script is the whole command tree with the help text of every
/// command, option and positional argument (clap_complete writes `'--flag[help]'`,
/// `':name -- help:…'` and `'command:about'`): none is empty. Generating it builds every
/// command, which in a build with clap's debug assertions (the dev profile keeps them for
/// clap_builder: Cargo.toml) runs clap's checks of the definition on each (conflicting
/// names, missing references, …): a broken definition panics, and pactum exits 2.
#[test]
fn every_command_and_argument_has_help_text_and_the_definition_holds() {
    let out = pactum_in(&repo()).args(["completions", "zsh"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let script = String::from_utf8(out.stdout).unwrap();
    let (mut options, mut positionals, mut commands) = (0, 0, 0);
    let mut missing = Vec::new();
    for line in script.lines() {
        let Some(entry) = line.strip_prefix('\'').and_then(|l| l.strip_suffix("' \\")) else {
            continue;
        };
        // Options: an optional `(conflicts)` group and `*`, then the flag, then `[help]`
        // (a `]` inside the help is escaped).
        let flag = entry
            .strip_prefix('(')
            .map_or(entry, |rest| rest.split_once(')').map_or(rest, |(_, after)| after));
        let flag = flag.trim_start_matches('*');
        if flag.starts_with('-') {
            options += 1;
            let help = flag.split_once('[').map(|(_, rest)| rest).unwrap_or("");
            if help.is_empty() || help.starts_with(']') {
                missing.push(format!("option without help: {entry}"));
            }
        } else if flag.starts_with(':') {
            positionals += 1;
            if !entry.contains(" -- ") {
                missing.push(format!("argument without help: {entry}"));
            }
        } else if let Some((name, about)) = entry.split_once(':') {
            commands += 1;
            if about.trim().is_empty() {
                missing.push(format!("command without about: {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // The script is what the test reads it as: many of each kind were seen.
    assert!(
        options > 200 && positionals > 20 && commands > 30,
        "{options} {positionals} {commands}"
    );
    assert!(script.contains("'--strict[Treat warnings as errors]'"), "the option form changed");
    for shell in ["bash", "fish", "powershell", "elvish"] {
        let out = pactum_in(&repo()).args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("validate") && text.contains("strict"), "{shell}: {text}");
    }
    let out = pactum_in(&repo()).arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH pactum"), "{page}");
}
