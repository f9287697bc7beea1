//! W3C trace context (`traceparent`, version 00): read from a client's request so its span becomes the call's
//! parent, and written for an upstream's request so the upstream's spans join the same trace. An invalid header
//! is ignored, as the recommendation says (the call starts a trace of its own); nothing here is trusted for
//! anything but linking spans.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The header's name, as HTTP carries it.
pub const TRACEPARENT: &str = "traceparent";

/// The remote span context a `traceparent` value names; `None` for anything but a valid version-00 header (or a
/// later version's first four fields, which version 00 readers accept).
pub fn parse(value: &str) -> Option<SpanContext> {
    let value = value.trim();
    let mut parts = value.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let extra = parts.next();
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !lower_hex(version, 2) || version == "ff" || (version == "00" && extra.is_some()) {
        return None;
    }
    if !lower_hex(trace, 32) || !lower_hex(span, 16) || !lower_hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let sampled = TraceFlags::new(flags & TraceFlags::SAMPLED.to_u8());
    Some(SpanContext::new(
        trace_id,
        span_id,
        sampled,
        true,
        TraceState::default(),
    ))
}

/// The `traceparent` value naming `context` as the parent of whatever the request causes.
pub fn format(context: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        context.trace_id(),
        context.span_id(),
        context.trace_flags().to_u8()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_header_round_trips() {
        let cx = parse(GOOD).unwrap();
        assert!(cx.is_remote() && cx.is_sampled());
        assert_eq!(format(&cx), GOOD);
    }

    #[test]
    fn invalid_headers_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more";
        let cx = parse(later).unwrap();
        assert!(!cx.is_sampled());
    }
}
