//! Who may approve: the operator at a terminal, or a script holding the operator key — never a process the
//! agent or an upstream controls.
//!
//! Three facts are checked, each from something a process toolgate started cannot fake. Ancestry first: a
//! process descended from a running gateway (`harden::GATEWAY_NAME` on an ancestor; the gateway is a child
//! subreaper, so a `setsid` or double-forked descendant stays below it) is the agent's or an upstream's, and
//! is refused whatever else it presents. Then one of two proofs. The confirmation typed on the controlling
//! terminal (`/dev/tty`, never stdin, whose input any parent chooses): the gateway gives its terminal up, so
//! nothing it starts has one to type on or to push input into (`TIOCSTI`), and input typed before the prompt is
//! discarded. Or the operator key (`--operator-key FILE`, the state root's `operator.key`), which the sandbox
//! keeps from every command, hook and contained upstream: the way a script approves. A process that reads the
//! state root itself needs no CLI at all (it holds the approval key too); SECURITY.md says when that can be.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::harden::gateway_ancestor;

/// How the caller proved it is the operator.
pub(super) enum Operator {
    /// At a terminal: the confirmation is still to be typed on it.
    Terminal(File),
    /// Presented the operator key: no confirmation is read.
    Key,
}

/// Longest operator key file read; the key is 32 bytes.
const MAX_KEY_BYTES: u64 = 64;

/// Decides whether this process may approve, and how it confirms; `Err` is the refusal to show.
pub(super) fn operator(state_root: &Path, key_file: Option<&Path>) -> Result<Operator, String> {
    if let Some(why) = gateway_ancestor() {
        return Err(format!(
            "not approved: {why}; approve from the operator's own terminal or script, outside toolgate"
        ));
    }
    match key_file {
        Some(path) => check_key(state_root, path).map(|()| Operator::Key),
        None => terminal().map(Operator::Terminal),
    }
}

fn check_key(state_root: &Path, path: &Path) -> Result<(), String> {
    let mut presented = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_KEY_BYTES).read_to_end(&mut presented))
        .map_err(|e| {
            format!(
                "not approved: cannot read the operator key {}: {e}",
                path.display()
            )
        })?;
    match store::operator_key_matches(state_root, &presented) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "not approved: {} is not this state root's operator key ({}); the request is unchanged",
            path.display(),
            store::operator_key_path(state_root).display()
        )),
        Err(e) => Err(format!("not approved: cannot read the operator key: {e}")),
    }
}

/// The controlling terminal, opened for the confirmation.
fn terminal() -> Result<File, String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|_| {
            "not approved: approving needs the operator, and this process has no controlling terminal to \
             type the confirmation on (it is never read from stdin). From a script, pass --operator-key with \
             the state root's operator.key; the request is unchanged"
                .to_owned()
        })
}

/// Prompts on the terminal and reads one line from it, at most `max` bytes. Whatever was typed (or pushed)
/// before the prompt is discarded first, so only an answer to this prompt counts.
pub(super) fn confirm_on(tty: &mut File, prompt: &str, max: u64) -> std::io::Result<Vec<u8>> {
    // SAFETY: tcflush on an open descriptor; it only discards the terminal's pending input.
    unsafe {
        libc::tcflush(tty.as_raw_fd(), libc::TCIFLUSH);
    }
    tty.write_all(prompt.as_bytes())?;
    tty.flush()?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    // One byte at a time: a terminal delivers a line per read anyway, and nothing past the line is consumed.
    while (line.len() as u64) < max {
        match tty.read(&mut byte)? {
            0 => break,
            _ => {
                line.push(byte[0]);
                if byte[0] == b'\n' {
                    break;
                }
            }
        }
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_runner_descends_from_no_gateway() {
        assert_eq!(gateway_ancestor(), None);
    }
}
