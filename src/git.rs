//! The few questions pactum asks git: is a folder inside a work tree, where is its top
//! level, what is a config value; and one change, registering the registry merge driver
//! (SPEC §17). Each runs the `git` on PATH in the given folder; git missing or failing is
//! an answer ("not a work tree", "no value"), never a panic.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::{Error, Result};

/// The merge driver's name in `.gitattributes` and git's config.
pub const MERGE_DRIVER: &str = "pactum-registry";
/// The driver's command line as git runs it (`%O` base, `%A` ours, `%B` theirs).
pub const MERGE_DRIVER_COMMAND: &str = "pactum registry merge %O %A %B";

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = crate::authority::git()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim_end_matches(['\n', '\r']).to_string())
}

/// `git ARGS` in `dir`: its standard output as bytes, or `None` when git is missing or
/// failed.
fn git_bytes(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = crate::authority::git()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The commit `rev` names (`origin/main`, a tag, a SHA), as a full SHA, when it names one
/// in the repository `dir` is in.
pub fn commit_of(dir: &Path, rev: &str) -> Option<String> {
    if rev.starts_with('-') {
        return None;
    }
    git(
        dir,
        &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{rev}^{{commit}}")],
    )
    .filter(|s| !s.is_empty())
}

/// The bytes of `rel` (relative to `dir`) in commit `commit` (a full SHA from
/// [`commit_of`]); `None` when the commit has no such file.
pub fn file_at(dir: &Path, commit: &str, rel: &str) -> Option<Vec<u8>> {
    let spec = format!("{commit}:./{}", rel.trim_start_matches("./"));
    git(dir, &["cat-file", "-e", &spec])?;
    git_bytes(dir, &["cat-file", "blob", &spec])
}

/// The paths, relative to the top level of the repository `dir` is in, of every file
/// named `name` in commit `commit` (`None` when git cannot answer).
pub fn files_named(dir: &Path, commit: &str, name: &str) -> Option<Vec<String>> {
    let mut listing = ls_tree(dir, &["--full-tree", commit])?;
    listing.retain(|p| p.rsplit('/').next() == Some(name));
    Some(listing)
}

/// The paths, relative to `dir`, of every file below `dir`'s folder `folder` in commit
/// `commit` (`None` when git cannot answer).
pub fn files_under(dir: &Path, commit: &str, folder: &str) -> Option<Vec<String>> {
    ls_tree(dir, &[commit, "--", &format!(":(literal)./{folder}/")])
}

/// `git ls-tree -r --name-only -z ARGS`: each path as it is, whatever bytes its name has
/// (without `-z` git quotes and escapes a name with a non-ASCII byte or a line feed).
fn ls_tree(dir: &Path, args: &[&str]) -> Option<Vec<String>> {
    let mut all = vec!["ls-tree", "-r", "--name-only", "-z"];
    all.extend_from_slice(args);
    let listing = git_bytes(dir, &all)?;
    Some(
        listing
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_string))
            .collect(),
    )
}

/// The top level of the git work tree `dir` is in, if any.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    git(dir, &["rev-parse", "--show-toplevel"]).filter(|s| !s.is_empty()).map(PathBuf::from)
}

/// The files git tracks at or below `paths` (absolute), in the work tree `dir` is in:
/// `None` when `dir` is in no work tree or git cannot answer. What [`crate::confine::OutputArea`]
/// needs to know before a model's file is written (SPEC §24).
pub fn tracked(dir: &Path, paths: &[&Path]) -> Option<Vec<PathBuf>> {
    let top = toplevel(dir)?;
    let mut args = vec!["ls-files".to_string(), "-z".into(), "--full-name".into(), "--".into()];
    // Pathspecs taken literally (a folder named `*` is not a glob).
    args.extend(paths.iter().map(|p| format!(":(literal){}", p.display())));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let listed = git(&top, &args)?;
    Some(listed.split('\0').filter(|f| !f.is_empty()).map(|f| top.join(f)).collect())
}

/// A git config value as seen from `dir` (repository, then global), if set.
pub fn config_get(dir: &Path, key: &str) -> Option<String> {
    git(dir, &["config", "--get", key]).filter(|s| !s.is_empty())
}

/// Registers the registry merge driver in the config of the repository `dir` is in (not
/// the global config: every clone runs `pactum init` once). Returns false when it was
/// already registered with the same command.
pub fn register_merge_driver(dir: &Path) -> Result<bool> {
    let key = format!("merge.{MERGE_DRIVER}.driver");
    if config_get(dir, &key).as_deref() == Some(MERGE_DRIVER_COMMAND) {
        return Ok(false);
    }
    for (k, v) in [
        (format!("merge.{MERGE_DRIVER}.name"), "pactum registry.json merge driver"),
        (key, MERGE_DRIVER_COMMAND),
    ] {
        if git(dir, &["config", "--local", &k, v]).is_none() {
            return Err(Error::io(
                dir,
                std::io::Error::other(format!(
                    "`git config --local {k} \"{v}\"` failed; run it yourself in the repository"
                )),
            ));
        }
    }
    Ok(true)
}

/// Why git cannot run the registry merge driver in the repository `dir` is in, if it
/// cannot: it is not registered in git's config, or the program of its command is on no
/// folder of `path_var` (the `PATH` git runs it with; the caller passes it, the library
/// reads no environment). Without a working driver git merges registry.json as text: a
/// conflict on every concurrent change. `None` outside a work tree, or when it works.
pub fn merge_driver_problem(dir: &Path, path_var: Option<&std::ffi::OsStr>) -> Option<String> {
    toplevel(dir)?;
    let command = config_get(dir, &format!("merge.{MERGE_DRIVER}.driver"));
    let Some(command) = command else {
        return Some(format!(
            "the registry.json merge driver is not registered in this clone's git config; run `pactum init` in the project once per clone (or `git config merge.{MERGE_DRIVER}.driver \"{MERGE_DRIVER_COMMAND}\"`)"
        ));
    };
    let program = command.split_whitespace().next().unwrap_or_default();
    let found = if program.contains('/') {
        crate::confine::is_executable(Path::new(program))
    } else {
        path_var
            .map(|p| {
                std::env::split_paths(p).any(|d| crate::confine::is_executable(&d.join(program)))
            })
            .unwrap_or(false)
    };
    (!found).then(|| {
        format!(
            "git runs the registry.json merge driver as `{command}`, but `{program}` is not on PATH: until it is (`cargo install --locked --path .` puts pactum in ~/.cargo/bin), git merges registry.json as text and concurrent changes conflict"
        )
    })
}
