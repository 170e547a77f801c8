//! Command output on stdout. A reader that goes away (`warden plugin
//! inspect X | head`) ends the command quietly, as Unix tools do, instead
//! of the panic `println!` raises on a broken pipe.

use std::io::{ErrorKind, Write as _};

/// `println!` for command output; see the module doc.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use out;

/// Writes one line to stdout and flushes it. On a closed pipe the process
/// exits with status 0: whoever read the output has what they wanted.
/// Any other write error is reported once, on stderr, with status 2.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            #[expect(clippy::print_stderr, reason = "stdout itself failed")]
            {
                eprintln!("error: writing to stdout: {e}");
            }
            std::process::exit(2);
        }
    }
}

/// An error and its causes on one line, each said once: a cause whose
/// text an outer message already contains (because the outer message
/// embeds it and also names it as its source) is left out.
pub fn causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::causes;

    #[derive(Debug, thiserror::Error)]
    #[error("signed by unknown key {0}: no trusted publisher has it")]
    struct Unknown(&'static str);

    #[derive(Debug, thiserror::Error)]
    #[error("{path} refused: {source}")]
    struct Refused {
        path: &'static str,
        source: Unknown,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("loading plugins")]
    struct Loading {
        source: Refused,
    }

    #[test]
    fn each_cause_is_said_once() {
        let e = Loading {
            source: Refused {
                path: "a.wasm",
                source: Unknown("k1"),
            },
        };
        assert_eq!(
            causes(&e),
            "loading plugins: a.wasm refused: signed by unknown key k1: no trusted publisher has it"
        );
    }

    #[test]
    fn an_anyhow_chain_is_said_once() {
        let e = anyhow::Error::new(Refused {
            path: "a.wasm",
            source: Unknown("k1"),
        })
        .context("verifying");
        assert_eq!(
            causes(e.as_ref()),
            "verifying: a.wasm refused: signed by unknown key k1: no trusted publisher has it"
        );
    }
}
