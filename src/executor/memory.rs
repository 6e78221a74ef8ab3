//! The kernel's key/value memory (SPEC §8.4): outside the kernel, reached only through
//! this interface and the memory tools. `read` of a missing key is a value (`found:
//! false`), never an error; `search` is a prefix match in key order.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

/// An in-memory key/value store, safe to share between threads.
#[derive(Debug, Default)]
pub struct Memory {
    entries: Mutex<BTreeMap<String, Value>>,
}

impl Memory {
    pub fn new() -> Self {
        Memory::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `value` under `key`, returning the value it replaced.
    pub fn write(&self, key: &str, value: Value) -> Option<Value> {
        self.lock().insert(key.to_string(), value)
    }

    /// The value under `key`, if any.
    pub fn read(&self, key: &str) -> Option<Value> {
        self.lock().get(key).cloned()
    }

    /// Every entry whose key starts with `prefix`, in key order.
    pub fn search(&self, prefix: &str) -> Vec<(String, Value)> {
        self.lock()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests build their fixture trees directly
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn write_read_search() {
        let m = Memory::new();
        assert_eq!(m.read("a"), None);
        assert_eq!(m.write("user/name", json!("Ada")), None);
        m.write("user/age", json!(36));
        m.write("users", json!([]));
        m.write("other", json!(1));
        assert_eq!(m.write("user/name", json!("Grace")), Some(json!("Ada")));
        assert_eq!(m.read("user/name"), Some(json!("Grace")));
        let keys: Vec<String> = m.search("user/").into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["user/age", "user/name"]);
        assert_eq!(m.search("user").len(), 3);
        assert!(m.search("zzz").is_empty());
        assert_eq!(m.search("").len(), 4);
    }
}
