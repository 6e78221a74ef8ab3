//! Signed ledger heads (SPEC §24): `pactum ledger checkpoint` appends the verified head of
//! the project's ledger, signed (SSHSIG, as registry events are) by a key of the project's
//! `[gate] signers`, to `.pactum/checkpoints.jsonl`; `pactum ledger verify` then requires
//! every checkpoint's signature to verify and its head to be in the ledger. Whoever can
//! rewrite the ledger and re-chain it cannot make a signature for the new head, and a
//! head kept anywhere else (a CI log, `run --json`, a span) is checked with `--expect-head`.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::registry::sign::{self, SigningKey};

/// The checkpoints' file, relative to the project root.
pub const FILE: &str = ".pactum/checkpoints.jsonl";

/// One signed head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub at: String,
    pub seq: u64,
    pub hash: String,
    pub signature: String,
}

impl Checkpoint {
    /// What the signature signs.
    pub fn message(seq: u64, hash: &str) -> String {
        format!("pactum ledger head {seq} {hash}")
    }

    /// The head `seq`/`hash`, signed now with `key`.
    pub fn sign(seq: u64, hash: &str, key: &SigningKey) -> Result<Checkpoint> {
        Ok(Checkpoint {
            at: crate::registry::lifecycle::now(),
            seq,
            hash: hash.to_string(),
            signature: sign::sign(key, &Checkpoint::message(seq, hash))?,
        })
    }
}

/// Appends `checkpoint` to the project's checkpoints file (created with `.pactum/`).
pub fn append(root: &Path, checkpoint: &Checkpoint) -> Result<()> {
    let path = crate::confine::Root::new(root).writable(Path::new(FILE), true)?;
    let mut file = crate::confine::open_for_update(&path, true)?;
    let mut line = serde_json::to_string(checkpoint)
        .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
    line.push('\n');
    file.write_all(line.as_bytes()).map_err(|e| Error::io(&path, e))?;
    file.sync_data().map_err(|e| Error::io(&path, e))
}

/// The project's checkpoints (none when there is no file).
pub fn read(root: &Path) -> Result<Vec<Checkpoint>> {
    let rel = Path::new(FILE);
    let root = crate::confine::Root::new(root);
    let path = match root.file(rel) {
        Ok(p) => p,
        Err(crate::confine::Refusal::Missing) => return Ok(Vec::new()),
        Err(r) => return Err(r.into_error(rel)),
    };
    let bytes = crate::document::read_limited(&path, crate::document::MAX_FILE_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| Error::LedgerRewritten {
                message: format!(
                    "{FILE}:{}: not a checkpoint ({}); restore the file or remove the line",
                    i + 1,
                    crate::document::json_message(&e)
                ),
            })
        })
        .collect()
}

/// The heads of `checkpoints` whose signatures verify against `allowed_signers`;
/// `ledger_rewritten` naming the first that does not verify.
pub fn verified_heads(checkpoints: &[Checkpoint], allowed_signers: &[u8]) -> Result<Vec<String>> {
    checkpoints
        .iter()
        .enumerate()
        .map(|(i, c)| {
            sign::verify(allowed_signers, &c.signature, &Checkpoint::message(c.seq, &c.hash))
                .map(|_| c.hash.clone())
                .map_err(|why| Error::LedgerRewritten {
                    message: format!(
                        "{FILE}:{}: the checkpoint of record {} does not verify ({why}): it was not made by an allowed signer of [gate] signers",
                        i + 1,
                        c.seq
                    ),
                })
        })
        .collect()
}
