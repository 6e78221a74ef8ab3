//! `pactum.tools.lock` (SPEC §24): what the tool servers of `pactum.toml` list, committed
//! beside it, so that `validate` checks the tools packs and work orders name without
//! starting a program or opening a connection.
//!
//! `pactum tools lock` starts every configured server, lists its tools and writes the
//! lock: per server, how it is reached (its `command` or `url`, as pactum.toml says) and
//! every tool it lists (name, description, input schema), sorted, as pretty JSON with a
//! newline at the end (a diff of it reads like a diff of the servers). `validate` reads the
//! lock; `run` compares what a server lists when it starts with what the lock says and
//! refuses a difference (`tools_lock_stale`): what `validate` checked is what runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ListedTool;
use crate::config::ToolServerSettings;
use crate::error::{Error, Result};

/// The lock's file name, next to `pactum.toml`.
pub const FILE_NAME: &str = "pactum.tools.lock";
/// The largest lock pactum reads.
pub const MAX_LOCK_BYTES: u64 = 16 * 1024 * 1024;

/// The lock: every configured server's tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub lock_version: u32,
    pub servers: BTreeMap<String, LockedServer>,
}

/// One server as the lock records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedServer {
    /// The program and its arguments (stdio), as pactum.toml says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The endpoint (streamable HTTP), as pactum.toml says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Every tool it lists, by name.
    pub tools: Vec<LockedTool>,
}

/// One tool of a server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
}

impl LockedTool {
    fn of(t: &ListedTool) -> LockedTool {
        LockedTool {
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
        }
    }
}

impl Lock {
    /// The lock of servers (`settings` by name) and the tools each listed.
    pub fn of<'a>(
        listings: impl IntoIterator<Item = (&'a str, &'a ToolServerSettings, &'a [ListedTool])>,
    ) -> Lock {
        let servers = listings
            .into_iter()
            .map(|(name, settings, tools)| {
                let mut tools: Vec<LockedTool> = tools.iter().map(LockedTool::of).collect();
                tools.sort_by(|a, b| a.name.cmp(&b.name));
                let server = LockedServer {
                    command: settings.command.clone(),
                    url: settings.url.clone(),
                    tools,
                };
                (name.to_string(), server)
            })
            .collect();
        Lock { lock_version: 1, servers }
    }

    /// The lock's text: pretty JSON, keys in a fixed order, a newline at the end.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads `root/pactum.tools.lock`; `None` when there is none. A lock that is no lock
    /// (not JSON, another shape, another version) is `tools_lock_stale`, naming the fix.
    pub fn load(root: &Path) -> Result<Option<Lock>> {
        let path = root.join(FILE_NAME);
        if crate::confine::entry_at(&path).is_none() {
            return Ok(None);
        }
        let shown = Path::new(FILE_NAME);
        let real = crate::confine::Root::new(root).file(shown).map_err(|r| r.into_error(shown))?;
        let bytes = crate::document::read_limited(&real, MAX_LOCK_BYTES)?;
        let lock: Lock = serde_json::from_slice(&bytes).map_err(|e| Error::ToolsLockStale {
            message: format!(
                "{FILE_NAME}:{}:{}: not a tool lock ({}); write it again with `pactum tools lock`",
                e.line(),
                e.column(),
                crate::document::json_message(&e)
            ),
        })?;
        if lock.lock_version != 1 {
            return Err(Error::ToolsLockStale {
                message: format!(
                    "{FILE_NAME}: lock_version {} is not 1; write it again with `pactum tools lock`",
                    lock.lock_version
                ),
            });
        }
        Ok(Some(lock))
    }

    /// Writes the lock to `root/pactum.tools.lock`, atomically.
    pub fn write(&self, root: &Path) -> Result<()> {
        let target = crate::confine::Root::new(root).writable(Path::new(FILE_NAME), false)?;
        crate::confine::write_atomic(&target, self.to_text().as_bytes())
    }

    /// How the lock disagrees with the servers pactum.toml configures (a server missing
    /// from either, or reached another way), one sentence each; empty when it agrees.
    pub fn disagreements(&self, configured: &BTreeMap<String, ToolServerSettings>) -> Vec<String> {
        let mut out = Vec::new();
        for (name, settings) in configured {
            match self.servers.get(name) {
                None => out.push(format!("tool server `{name}` is not in {FILE_NAME}")),
                Some(locked)
                    if locked.command != settings.command || locked.url != settings.url =>
                {
                    out.push(format!(
                        "tool server `{name}` is reached another way than {FILE_NAME} records (its `command` or `url` changed)"
                    ));
                }
                Some(_) => {}
            }
        }
        for name in self.servers.keys().filter(|n| !configured.contains_key(*n)) {
            out.push(format!(
                "{FILE_NAME} records tool server `{name}`, which pactum.toml does not configure"
            ));
        }
        out
    }

    /// How what server `name` listed now differs from the lock (`None`: it does not).
    pub fn differs(&self, name: &str, listed: &[ListedTool]) -> Option<String> {
        let Some(locked) = self.servers.get(name) else {
            return Some(format!("tool server `{name}` is not in {FILE_NAME}"));
        };
        let mut now: Vec<LockedTool> = listed.iter().map(LockedTool::of).collect();
        now.sort_by(|a, b| a.name.cmp(&b.name));
        if now == locked.tools {
            return None;
        }
        let names = |tools: &[LockedTool]| -> Vec<String> {
            tools.iter().map(|t| t.name.clone()).collect()
        };
        let (was, is) = (names(&locked.tools), names(&now));
        let added: Vec<&String> = is.iter().filter(|n| !was.contains(n)).collect();
        let gone: Vec<&String> = was.iter().filter(|n| !is.contains(n)).collect();
        let what = if added.is_empty() && gone.is_empty() {
            "a tool's description or input schema changed".to_string()
        } else {
            let list = |v: &[&String]| {
                v.iter()
                    .map(|n| format!("`{}`", crate::terminal::escape_line(n)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut parts = Vec::new();
            if !added.is_empty() {
                parts.push(format!("it now also lists {}", list(&added)));
            }
            if !gone.is_empty() {
                parts.push(format!("it no longer lists {}", list(&gone)));
            }
            parts.join("; ")
        };
        Some(format!(
            "tool server `{name}` lists other tools than {FILE_NAME} records: {what}; check the server, then write the lock again with `pactum tools lock` (and let `pactum validate` check the change)"
        ))
    }

    /// The names of server `name`'s tools, when the lock has it.
    pub fn names(&self, name: &str) -> Option<Vec<String>> {
        Some(self.servers.get(name)?.tools.iter().map(|t| t.name.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> ListedTool {
        ListedTool {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
        }
    }

    fn settings(command: &[&str]) -> ToolServerSettings {
        ToolServerSettings {
            command: Some(command.iter().map(|s| s.to_string()).collect()),
            ..Default::default()
        }
    }

    #[test]
    fn a_lock_records_sorted_tools_and_reads_back() {
        let crm = settings(&["python3", "crm.py"]);
        let tools = [tool("b", "B"), tool("a", "A")];
        let lock = Lock::of([("crm", &crm, &tools[..])]);
        let text = lock.to_text();
        assert!(text.ends_with("}\n"));
        let back: Lock = serde_json::from_str(&text).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.names("crm").unwrap(), ["a", "b"]);
        assert_eq!(lock.differs("crm", &[tool("a", "A"), tool("b", "B")]), None);
    }

    #[test]
    fn differences_name_what_changed() {
        let crm = settings(&["python3", "crm.py"]);
        let lock = Lock::of([("crm", &crm, &[tool("a", "A")][..])]);
        let added = lock.differs("crm", &[tool("a", "A"), tool("drop_tables", "")]).unwrap();
        assert!(added.contains("it now also lists `drop_tables`"), "{added}");
        let gone = lock.differs("crm", &[]).unwrap();
        assert!(gone.contains("it no longer lists `a`"), "{gone}");
        let changed = lock.differs("crm", &[tool("a", "now does something else")]).unwrap();
        assert!(changed.contains("description or input schema changed"), "{changed}");
        assert!(lock.differs("other", &[]).unwrap().contains("not in pactum.tools.lock"));
    }

    #[test]
    fn disagreements_with_the_config_are_each_named() {
        let crm = settings(&["python3", "crm.py"]);
        let lock = Lock::of([("crm", &crm, &[][..]), ("old", &crm, &[][..])]);
        let mut configured = BTreeMap::new();
        configured.insert("crm".to_string(), settings(&["python3", "evil.py"]));
        configured.insert("new".to_string(), crm.clone());
        let said = lock.disagreements(&configured);
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].contains("`crm` is reached another way"));
        assert!(said[1].contains("`new` is not in"));
        assert!(said[2].contains("`old`, which pactum.toml does not configure"));
        configured.insert("crm".to_string(), crm.clone());
        configured.remove("new");
        configured.insert("old".to_string(), crm);
        assert!(lock.disagreements(&configured).is_empty());
    }
}
