//! Any command line: parsing, matching, the read-only check and the
//! circuit breakers must return, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warden_shell::{
    CommandLine, Pattern, allowed_by_patterns, circuit_breaker, is_read_only, matches_any_pattern,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (line, pattern) = text.split_once('\u{1}').unwrap_or((&text, "rm *"));
    let parsed = CommandLine::parse(line);
    let _ = parsed.opaque_reasons();
    let _ = parsed.unread_reason();
    let p = Pattern::parse(pattern);
    let _ = matches_any_pattern(&p, &parsed);
    let _ = allowed_by_patterns(&[&p], &parsed);
    let _ = is_read_only(&parsed, "/work", "/work/sub", "/home/u");
    let _ = circuit_breaker(&parsed, "/work", "/work", "/home/u");
});
