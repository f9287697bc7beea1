//! Ports for servers a test starts: free on 127.0.0.1 when chosen, and outside the range connections take their
//! own local ports from.

// A machine with no free port on loopback cannot run the test that asked: it stops, saying so.
#![allow(clippy::expect_used)]

use std::net::TcpListener;
use std::time::{SystemTime, UNIX_EPOCH};

/// A port for a server a test starts to listen on, free on 127.0.0.1 now, and below the kernel's ephemeral range
/// when it can be. A port taken from that range (bind to port 0, release, hand the number over) could be taken
/// again before the server bound it, as the local port of any loopback connection another test opened meanwhile:
/// the server's start then failed with "Address already in use".
pub fn free_port() -> u16 {
    let below = ephemeral_low().unwrap_or(32_768);
    if below > LOW_PORTS_FROM {
        let span = u64::from(below - LOW_PORTS_FROM);
        for attempt in 0..200u64 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let mixed = (nanos ^ u64::from(std::process::id()) << 20 ^ attempt)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let port = LOW_PORTS_FROM + ((mixed >> 32) % span) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return port;
            }
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("no free port on 127.0.0.1");
    listener.local_addr().expect("a bound port").port()
}

/// Where the ports chosen start: above the well-known and common service ports.
const LOW_PORTS_FROM: u16 = 20_000;

/// The first port of the kernel's ephemeral range (`ip_local_port_range`).
fn ephemeral_low() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's port is never one a loopback connection could be holding as its own local port.
    #[test]
    fn a_servers_port_is_free_and_outside_the_range_connections_take_ports_from() {
        let below = ephemeral_low().expect("the kernel's ephemeral port range");
        for _ in 0..20 {
            let port = free_port();
            if below > LOW_PORTS_FROM {
                assert!((LOW_PORTS_FROM..below).contains(&port), "{port}");
            }
            assert!(TcpListener::bind(("127.0.0.1", port)).is_ok(), "{port}");
        }
    }
}
