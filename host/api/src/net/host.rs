//! Host names and IP literals as a URL or a grant spells them, parsed the
//! way a resolver would read them.
//!
//! Attack: an address hidden in an unusual spelling. `2130706433`,
//! `0x7f.1`, `0177.0.0.1` and `127.1` all reach 127.0.0.1 through
//! `inet_aton`, which system resolvers and most HTTP clients use; a check
//! that compares text would let them through. Every spelling that ends in
//! a number is parsed as an IPv4 literal (the WHATWG URL rules), so the
//! address rules see the address it really is.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::NetError;

/// A host as a request or grant names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name: lower-case ASCII, no trailing dot.
    Name(String),
    /// An IP literal, IPv4-mapped IPv6 folded to IPv4.
    Ip(IpAddr),
}

impl Host {
    /// Parses a host: `[v6]`, a bare IPv6 literal, any IPv4 spelling, or a
    /// DNS name (letters, digits, `-`, `_`; labels of at most 63 bytes).
    pub fn parse(text: &str) -> Result<Host, NetError> {
        let bad = |why: &str| NetError::InvalidHost {
            host: text.to_owned(),
            reason: why.to_owned(),
        };
        if text.is_empty() {
            return Err(bad("the host is empty"));
        }
        if let Some(inner) = text.strip_prefix('[') {
            let inner = inner.strip_suffix(']').ok_or_else(|| bad("unclosed `[`"))?;
            let v6: Ipv6Addr = inner.parse().map_err(|_| bad("not an IPv6 address"))?;
            return Ok(Host::Ip(canonical(IpAddr::V6(v6))));
        }
        if text.contains(':') {
            let v6: Ipv6Addr = text.parse().map_err(|_| bad("not an IPv6 address"))?;
            return Ok(Host::Ip(canonical(IpAddr::V6(v6))));
        }
        if !text.is_ascii() {
            return Err(bad("non-ASCII host; use its punycode (xn--) form"));
        }
        let lower = text.to_ascii_lowercase();
        if let Some(v4) = parse_ipv4(&lower).map_err(bad)? {
            return Ok(Host::Ip(IpAddr::V4(v4)));
        }
        let name = lower.strip_suffix('.').unwrap_or(&lower);
        if name.len() > 253 {
            return Err(bad("longer than 253 bytes"));
        }
        for label in name.split('.') {
            if label.is_empty() {
                return Err(bad("empty label"));
            }
            if label.len() > 63 {
                return Err(bad("a label is longer than 63 bytes"));
            }
            if !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(bad("only letters, digits, `-`, `_` and `.` may appear"));
            }
        }
        Ok(Host::Name(name.to_owned()))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(v6)) => write!(f, "[{v6}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as the IPv4 address it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// An IPv4 literal in any spelling `inet_aton` accepts: one to four parts,
/// each decimal, octal (leading `0`) or hex (`0x`), the last filling the
/// remaining bytes; one trailing dot allowed. `Ok(None)` when the text does
/// not end in a number (so it is a name); an error when it does but is not
/// a valid address (such a host must never be resolved as a name).
pub fn parse_ipv4(text: &str) -> Result<Option<Ipv4Addr>, &'static str> {
    let trimmed = text.strip_suffix('.').unwrap_or(text);
    let parts: Vec<&str> = trimmed.split('.').collect();
    let Some(last) = parts.last() else {
        return Ok(None);
    };
    if !is_number(last) {
        return Ok(None);
    }
    if parts.len() > 4 {
        return Err("an IPv4 literal has at most four parts");
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(parse_part(part).ok_or("not a valid IPv4 literal")?);
    }
    let (last, init) = numbers.split_last().ok_or("not a valid IPv4 literal")?;
    if init.iter().any(|n| *n > 255) {
        return Err("an IPv4 part is over 255");
    }
    let room = 8 * (5 - numbers.len() as u32);
    if room < 32 && *last >= 1u64 << room {
        return Err("the last IPv4 part is too large");
    }
    if *last > u64::from(u32::MAX) {
        return Err("the IPv4 literal is too large");
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value += n << (8 * (3 - i as u32));
    }
    let value = u32::try_from(value).map_err(|_| "the IPv4 literal is too large")?;
    Ok(Some(Ipv4Addr::from(value)))
}

fn is_number(part: &str) -> bool {
    if part.is_empty() {
        return false;
    }
    if let Some(hex) = part.strip_prefix("0x") {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    part.bytes().all(|b| b.is_ascii_digit())
}

fn parse_part(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x") {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return Some(0);
    }
    // Longer than any u32 in any radix: refuse rather than overflow.
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}
