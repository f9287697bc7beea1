//! The handoff's bytes: what one contained start needs, from toolgate to its launcher.
//!
//! Layout, all integers little-endian: the magic (which names this layout, so a launcher from another build
//! refuses instead of misreading), the length of the rest, the parent's pid, the six layer modes, the limits,
//! whether a Landlock ruleset and the socket filter come along and whether this is a probe, then the working
//! directory, the program, its arguments and its environment as length-prefixed strings. The descriptors travel
//! beside the bytes (`SCM_RIGHTS`), not in them.

use std::ffi::CString;

use crate::child::{LimitList, PlanLayers};
use crate::spec::LayerMode;

/// Names this layout; bumped whenever it changes.
pub(crate) const MAGIC: &[u8; 8] = b"TGLNCH02";

/// The most the rest of a handoff may hold: the kernel's own ceiling on arguments and environment is lower.
pub(crate) const MAX_LEN: usize = 64 << 20;

/// Bytes before the rest: the magic and the rest's length.
pub(crate) const HEADER_LEN: usize = MAGIC.len() + 4;

/// One contained start, as the launcher needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Handoff {
    pub layers: PlanLayers,
    /// A Landlock ruleset comes along (the third descriptor).
    pub landlock: bool,
    /// The launcher compiles the socket filter and installs it last.
    pub socket_filter: bool,
    /// Set the layers up and exit instead of exec'ing anything (`probe`): the program and its vectors are unused.
    pub probe: bool,
    pub cwd: CString,
    pub program: CString,
    /// The program's whole argument vector, `argv[0]` first.
    pub argv: Vec<CString>,
    /// `NAME=value` strings.
    pub envp: Vec<CString>,
}

fn mode_code(mode: LayerMode) -> u8 {
    match mode {
        LayerMode::Off => 0,
        LayerMode::BestEffort => 1,
        LayerMode::Required => 2,
    }
}

fn mode_of(code: u8) -> Option<LayerMode> {
    match code {
        0 => Some(LayerMode::Off),
        1 => Some(LayerMode::BestEffort),
        2 => Some(LayerMode::Required),
        _ => None,
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

impl Handoff {
    /// The whole handoff: header and rest.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let l = &self.layers;
        let mut rest = Vec::with_capacity(256);
        rest.extend_from_slice(&l.parent_pid.to_le_bytes());
        for mode in [
            l.pid_namespace,
            l.no_network,
            l.rlimits,
            l.no_new_privs,
            l.landlock,
            l.socket_filter,
        ] {
            rest.push(mode_code(mode));
        }
        rest.push(
            u8::from(self.landlock)
                | (u8::from(self.socket_filter) << 1)
                | (u8::from(self.probe) << 2),
        );
        rest.push(l.limit_count as u8);
        // The resource's and the value's C types differ between C libraries; the wire's do not.
        #[allow(clippy::unnecessary_cast)]
        for &(resource, value) in l.limits.iter().take(l.limit_count) {
            rest.extend_from_slice(&(resource as u32).to_le_bytes());
            rest.extend_from_slice(&(value as u64).to_le_bytes());
        }
        put_bytes(&mut rest, self.cwd.as_bytes());
        put_bytes(&mut rest, self.program.as_bytes());
        for list in [&self.argv, &self.envp] {
            rest.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for s in list {
                put_bytes(&mut rest, s.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(HEADER_LEN + rest.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(rest.len() as u32).to_le_bytes());
        out.extend_from_slice(&rest);
        out
    }

    /// The length of the rest, from a header; `None` for a header of another layout or an oversized rest.
    pub(crate) fn rest_len(header: &[u8]) -> Option<usize> {
        let (magic, len) = header.get(..HEADER_LEN)?.split_at(MAGIC.len());
        if magic != MAGIC {
            return None;
        }
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        (len <= MAX_LEN).then_some(len)
    }

    /// Reads the rest; `None` for anything malformed (short, trailing bytes, a NUL inside a string, an
    /// unknown mode, more limits than there are).
    pub(crate) fn decode(rest: &[u8]) -> Option<Self> {
        let mut r = Reader(rest);
        let parent_pid = i32::from_le_bytes(r.take(4)?.try_into().ok()?);
        let mut modes = [LayerMode::Off; 6];
        for mode in &mut modes {
            *mode = mode_of(r.byte()?)?;
        }
        let flags = r.byte()?;
        if flags > 7 {
            return None;
        }
        let limit_count = usize::from(r.byte()?);
        let mut limits: LimitList = [(libc::RLIMIT_CORE, 0); 5];
        if limit_count > limits.len() {
            return None;
        }
        for slot in limits.iter_mut().take(limit_count) {
            let resource = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
            let value = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
            *slot = (resource as _, value as _);
        }
        let cwd = r.string()?;
        let program = r.string()?;
        let argv = r.strings()?;
        let envp = r.strings()?;
        if !r.0.is_empty() {
            return None;
        }
        let [pid_namespace, no_network, rlimits, no_new_privs, landlock, socket_filter] = modes;
        Some(Handoff {
            layers: PlanLayers {
                parent_pid,
                pid_namespace,
                no_network,
                rlimits,
                limits,
                limit_count,
                no_new_privs,
                landlock,
                socket_filter,
            },
            landlock: flags & 1 != 0,
            socket_filter: flags & 2 != 0,
            probe: flags & 4 != 0,
            cwd,
            program,
            argv,
            envp,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn len(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn string(&mut self) -> Option<CString> {
        let n = self.len()?;
        CString::new(self.take(n)?).ok()
    }

    fn strings(&mut self) -> Option<Vec<CString>> {
        let count = self.len()?;
        // Each string takes at least its four length bytes: a count beyond that is a lie, not an allocation.
        if count > self.0.len() / 4 {
            return None;
        }
        (0..count).map(|_| self.string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Handoff {
        let mut limits: LimitList = [(libc::RLIMIT_CORE, 0); 5];
        limits[0] = (libc::RLIMIT_NOFILE, 256);
        limits[1] = (libc::RLIMIT_AS, u64::MAX as libc::rlim_t);
        Handoff {
            layers: PlanLayers {
                parent_pid: 4321,
                pid_namespace: LayerMode::Required,
                no_network: LayerMode::BestEffort,
                rlimits: LayerMode::BestEffort,
                limits,
                limit_count: 2,
                no_new_privs: LayerMode::Off,
                landlock: LayerMode::Required,
                socket_filter: LayerMode::BestEffort,
            },
            landlock: true,
            socket_filter: true,
            probe: false,
            cwd: c"/work dir".into(),
            program: c"/bin/sh".into(),
            argv: vec![
                c"/bin/sh".into(),
                c"-c".into(),
                c"echo é".into(),
                c"".into(),
            ],
            envp: vec![c"A=1".into(), c"PATH=/usr/bin".into()],
        }
    }

    #[test]
    fn a_handoff_reads_back_as_written() {
        let probe = Handoff {
            probe: true,
            argv: Vec::new(),
            envp: Vec::new(),
            ..sample()
        };
        for h in [sample(), probe] {
            let bytes = h.encode();
            let len = Handoff::rest_len(&bytes).unwrap();
            assert_eq!(len, bytes.len() - HEADER_LEN);
            assert_eq!(Handoff::decode(&bytes[HEADER_LEN..]), Some(h));
        }
    }

    #[test]
    fn every_truncation_and_any_trailing_byte_is_refused() {
        let bytes = sample().encode();
        let rest = &bytes[HEADER_LEN..];
        for cut in 0..rest.len() {
            assert_eq!(Handoff::decode(&rest[..cut]), None, "cut at {cut}");
        }
        let mut longer = rest.to_vec();
        longer.push(0);
        assert_eq!(Handoff::decode(&longer), None);
    }

    #[test]
    fn another_layout_or_an_oversized_rest_is_refused() {
        let mut bytes = sample().encode();
        bytes[7] = b'9';
        assert_eq!(Handoff::rest_len(&bytes), None);
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&((MAX_LEN + 1) as u32).to_le_bytes());
        assert_eq!(Handoff::rest_len(&huge), None);
    }

    #[test]
    fn an_unknown_mode_a_lying_count_or_a_nul_is_refused() {
        let h = sample();
        let rest = h.encode()[HEADER_LEN..].to_vec();
        let mut bad_mode = rest.clone();
        bad_mode[4] = 3;
        assert_eq!(Handoff::decode(&bad_mode), None);
        let mut bad_limits = rest.clone();
        bad_limits[11] = 6;
        assert_eq!(Handoff::decode(&bad_limits), None);
        let mut nul = h.clone();
        nul.envp.clear();
        let mut bytes = nul.encode()[HEADER_LEN..].to_vec();
        let at = bytes.windows(2).position(|w| w == b"-c").unwrap();
        bytes[at] = 0;
        assert_eq!(Handoff::decode(&bytes), None);
        let count_at = bytes.len() - 4;
        let mut lying = nul.encode()[HEADER_LEN..].to_vec();
        lying[count_at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Handoff::decode(&lying), None);
    }
}
