//! Signed registry events and ledger checkpoints (SPEC §24), SSHSIG as git signs commits:
//! through OpenSSH's `ssh-keygen -Y sign | find-principals | verify` (no cryptography of
//! pactum's own), in the namespace [`NAMESPACE`], over the signed thing's hash.
//!
//! Who may sign is an `allowed_signers` file in git's format (one line per signer:
//! principals, optional options such as `namespaces="pactum-registry"`, the public key),
//! which `--base` reads from the base revision: a pull request cannot add its author.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::error::{Error, Result};

/// The SSHSIG namespace of registry events and ledger checkpoints.
pub const NAMESPACE: &str = "pactum-registry";

/// The key a signature is made with: a private key file, or a public key file (or a
/// `key::` literal, as git's `user.signingkey` may hold) whose private half an ssh-agent
/// holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SigningKey {
    File(PathBuf),
    Literal(String),
}

impl SigningKey {
    /// A key as git's `user.signingkey` (or `--sign-key`) spells it.
    pub fn parse(text: &str) -> SigningKey {
        match text.trim().strip_prefix("key::") {
            Some(literal) => SigningKey::Literal(literal.trim().to_string()),
            None => SigningKey::File(PathBuf::from(text.trim())),
        }
    }
}

fn unsigned(why: String) -> Error {
    Error::Io { path: PathBuf::from("ssh-keygen"), source: std::io::Error::other(why) }
}

/// The armored SSHSIG signature of `message` by `key`.
pub fn sign(key: &SigningKey, message: &str) -> Result<String> {
    let literal;
    let path: &Path = match key {
        SigningKey::File(p) => p,
        SigningKey::Literal(text) => {
            literal = crate::confine::Scratch::new(format!("{text}\n").as_bytes())?;
            literal.path()
        }
    };
    let mut child = crate::authority::ssh_keygen()
        .args(["-q", "-Y", "sign", "-n", NAMESPACE, "-f"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            unsigned(format!("cannot run ssh-keygen to sign ({e}); install OpenSSH's client"))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(message.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| unsigned(e.to_string()))?;
    let signature = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || !signature.contains("BEGIN SSH SIGNATURE") {
        return Err(unsigned(format!(
            "ssh-keygen could not sign with {}: {}; give a key with --sign-key FILE or git's user.signingkey",
            match key {
                SigningKey::File(p) => p.display().to_string(),
                SigningKey::Literal(_) => "the key literal".to_string(),
            },
            crate::terminal::escape_line(String::from_utf8_lossy(&out.stderr).trim())
        )));
    }
    Ok(signature)
}

/// The principal of `allowed_signers` whose key made `signature` over `message` in
/// [`NAMESPACE`]; `Err` says why none did.
pub fn verify(
    allowed_signers: &[u8],
    signature: &str,
    message: &str,
) -> std::result::Result<String, String> {
    if !signature.contains("BEGIN SSH SIGNATURE") {
        return Err("the signature is no SSH signature".into());
    }
    let io = |e: Error| e.to_string();
    let allowed = crate::confine::Scratch::new(allowed_signers).map_err(io)?;
    let sig = crate::confine::Scratch::new(signature.as_bytes()).map_err(io)?;
    let found = crate::authority::ssh_keygen()
        .args(["-Y", "find-principals", "-s"])
        .arg(sig.path())
        .arg("-f")
        .arg(allowed.path())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ssh-keygen to verify ({e}); install OpenSSH's client"))?;
    let principals = String::from_utf8_lossy(&found.stdout).into_owned();
    let principals: Vec<&str> =
        principals.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if !found.status.success() || principals.is_empty() {
        return Err("its key is not in the allowed signers".into());
    }
    for principal in principals {
        let mut child = crate::authority::ssh_keygen()
            .args(["-Y", "verify", "-n", NAMESPACE, "-I", principal, "-f"])
            .arg(allowed.path())
            .arg("-s")
            .arg(sig.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run ssh-keygen to verify ({e})"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(message.as_bytes());
        }
        if child.wait().is_ok_and(|s| s.success()) {
            return Ok(principal.to_string());
        }
    }
    Err("it does not verify against the allowed signer its key belongs to (another message, another namespace, or an expired key)".into())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests make their keys with ssh-keygen directly
mod tests {
    use super::*;

    /// A fresh ed25519 key pair in `dir`: (private key path, its allowed-signers line for
    /// `principal`).
    fn key(dir: &Path, name: &str, principal: &str) -> (PathBuf, String) {
        let path = dir.join(name);
        let ok = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", principal, "-f"])
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
        (path, format!("{principal} {}", public.trim()))
    }

    #[test]
    fn a_signature_verifies_only_for_its_message_and_an_allowed_signer() {
        let dir = tempfile::tempdir().unwrap();
        let (alice, alice_line) = key(dir.path(), "alice", "alice@example.com");
        let (mallory, _) = key(dir.path(), "mallory", "mallory@example.com");
        let allowed = format!("{alice_line}\n");
        let message = "0".repeat(64);
        let signature = sign(&SigningKey::File(alice.clone()), &message).unwrap();
        assert_eq!(verify(allowed.as_bytes(), &signature, &message).unwrap(), "alice@example.com");
        // Another message: refused.
        let other = "1".repeat(64);
        assert!(verify(allowed.as_bytes(), &signature, &other).is_err());
        // Another signer's key: not allowed.
        let forged = sign(&SigningKey::File(mallory), &message).unwrap();
        assert!(
            verify(allowed.as_bytes(), &forged, &message)
                .unwrap_err()
                .contains("not in the allowed signers")
        );
        // A key allowed only in another namespace: refused.
        let git_only = format!(
            "{} namespaces=\"git\" {}\n",
            "alice@example.com",
            alice_line.split_once(' ').unwrap().1
        );
        assert!(verify(git_only.as_bytes(), &signature, &message).is_err());
        // No signature at all.
        assert!(verify(allowed.as_bytes(), "not a signature", &message).is_err());
    }

    #[test]
    fn a_key_that_does_not_sign_is_a_clear_failure() {
        let e = sign(&SigningKey::File(PathBuf::from("/nonexistent/key")), "m").unwrap_err();
        assert!(e.to_string().contains("--sign-key"), "{e}");
        assert_eq!(
            SigningKey::parse("key::ssh-ed25519 AAAA x"),
            SigningKey::Literal("ssh-ed25519 AAAA x".into())
        );
        assert_eq!(SigningKey::parse("~/.ssh/id"), SigningKey::File(PathBuf::from("~/.ssh/id")));
    }
}
