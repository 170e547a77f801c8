//! What sealed approvals cost, as p50/p99 in microseconds:
//!
//! - `seal`: sealing an ask's request state (once per asked call on a
//!   2026-07-28 client);
//! - `open`: checking a retry's request state;
//! - `ask`: the approvals book writing a new ask down (in memory), as
//!   before sealing existed;
//! - `ask+seal`: the same plus the seal: what an asked call costs now;
//! - `answer`: a retry carrying the person's answer, as before sealing
//!   (record the answer, consume it);
//! - `open+answer`: the same with the state opened and the answer bound
//!   to the call: what a retry costs now.
//!
//! cargo bench -p warden-mcp --bench approval [-- SAMPLES]

#![allow(clippy::unwrap_used, clippy::panic, reason = "benchmarks fail loudly")]
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use warden_api::{ApprovalAnswer, ApprovalRequest, Approver};
use warden_gate::ApprovalBook;
use warden_mcp::{Purpose, Sealer};

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn ask(n: usize) -> ApprovalRequest {
    ApprovalRequest {
        id: String::new(),
        agent: "bench".into(),
        request_id: n.to_string(),
        tool: "fs_write".into(),
        call: format!("fs_write(/workspace/file-{n}.txt)"),
        reason: "`fs_write` has side effects and no allow rule covers it".into(),
        suggested_rule: format!("fs_write(//workspace/file-{n}.txt)"),
        args_fingerprint: format!("sha256:{n:064x}"),
        arguments: serde_json::json!({"path": format!("file-{n}.txt"), "content": "x"}),
        always_offered: true,
    }
}

fn pending(book: &ApprovalBook, request: ApprovalRequest) -> String {
    match ready(book.ask(request)) {
        ApprovalAnswer::Pending { id } => id,
        other => panic!("expected a pending ask, got {other:?}"),
    }
}

/// The book's futures are ready at once.
fn ready<T>(f: warden_api::BoxFuture<'_, T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn report(label: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{label:<12} p50 {:>7.2} us   p99 {:>7.2} us   ({} samples)",
        percentile(&times, 0.50),
        percentile(&times, 0.99),
        times.len()
    );
}

fn main() {
    let samples: usize = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let sealer = Sealer::new(b"a-benchmark-request-state-key-0123456789").unwrap();
    let ttl = Duration::from_secs(300);
    let mut asked = ask(0);
    asked.id = "ap-1".into();
    let state = sealer.seal(&asked, ttl, Purpose::Answer);

    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        black_box(sealer.seal(black_box(&asked), ttl, Purpose::Answer));
        times.push(t.elapsed());
    }
    report("seal", times);

    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        black_box(
            sealer
                .open(black_box(&state), &asked, Purpose::Answer)
                .unwrap(),
        );
        times.push(t.elapsed());
    }
    report("open", times);

    // Asks and retries run against a book holding `samples` other asks.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (label, with_seal) in [("ask", false), ("ask+seal", true)] {
        let book = ApprovalBook::new(ttl);
        let mut times = Vec::with_capacity(samples);
        for n in 0..samples {
            let request = ask(n);
            let t = Instant::now();
            let answer = rt.block_on(book.ask(request.clone()));
            if with_seal {
                let ApprovalAnswer::Pending { id } = &answer else {
                    panic!("expected a pending ask");
                };
                let mut sealed = request;
                sealed.id = id.clone();
                black_box(sealer.seal(&sealed, ttl, Purpose::Answer));
            }
            times.push(t.elapsed());
        }
        report(label, times);
    }
    for (label, with_seal) in [("answer", false), ("open+answer", true)] {
        let book = ApprovalBook::new(ttl);
        let asks: Vec<(ApprovalRequest, String)> = (0..samples)
            .map(|n| {
                let mut request = ask(n);
                request.id = pending(&book, request.clone());
                let state = sealer.seal(&request, ttl, Purpose::Answer);
                request.id = String::new();
                (request, state)
            })
            .collect();
        let mut times = Vec::with_capacity(samples);
        for (request, state) in asks {
            let t = Instant::now();
            if with_seal {
                let id = sealer.open(&state, &request, Purpose::Answer).unwrap();
                let waiting = book.get(&id).unwrap();
                black_box(&waiting);
                book.answer_for_call(&id, &request, ApprovalAnswer::AllowOnce)
                    .unwrap();
            } else {
                let id = format!("ap-{}", request.request_id.parse::<u64>().unwrap() + 1);
                book.answer(&id, ApprovalAnswer::AllowOnce).unwrap();
            }
            let answer = rt.block_on(book.ask(request));
            assert_eq!(answer, ApprovalAnswer::AllowOnce);
            times.push(t.elapsed());
        }
        report(label, times);
    }
}
